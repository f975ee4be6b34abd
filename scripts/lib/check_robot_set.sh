#!/usr/bin/env bash
# The robot's set of Python packages (requirements/robot-test.txt: robot.txt and what its tests need, or the
# file given) resolves
#   - for CPython 3.8 on manylinux aarch64 and x86_64 (glibc 2.31, Ubuntu 20.04's) with wheels only, except
#     Ruckig, whose source distribution must resolve instead (no release of it for Python 3.8 has a wheel);
#   - to exactly requirements/robot-lock.txt (the versions every install of it takes);
#   - for CPython 3.11 on this machine's x86_64 with wheels only (the lock, and robot-test-overrides.txt):
#     scripts/test's second pass runs every test on it.
#
# uv does the resolving: pip's --python-version/--platform choose wheels for the target, but pip
# (23-25) evaluates dependencies' markers with the running interpreter, so from Python 3.11 it picked
# cmeel-boost's numpy >= 2.2 (meant for Python >= 3.10) and refused the set. uv resolves for the target.
# Needs PyPI (the network) and uv (requirements/dev-test.txt). Exit 1 with the resolver's reason on failure.
set -eo pipefail
WS="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
REQ="${1:-$WS/requirements/robot-test.txt}"
LOCK="$WS/requirements/robot-lock.txt"
UV="$(command -v uv || echo "${R1_VENV:-/opt/r1_venv}/bin/uv")"
[ -x "$UV" ] || { echo "check_robot_set: no uv (requirements/dev-test.txt installs it)" >&2; exit 1; }
export UV_PYTHON_DOWNLOADS=never          # resolving needs no interpreter of the target's version
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# the requirement file with its -r includes followed, then split: Ruckig apart
(cd "$(dirname "$REQ")" && awk '/^ *-r /{while ((getline line < $2) > 0) print line; next} {print}' "$REQ") \
  | sed 's/#.*//; /^\s*$/d' > "$tmp/all.txt"
grep -v -i -E '^\s*ruckig\b' "$tmp/all.txt" > "$tmp/wheels.txt" || true
grep -i -E '^\s*ruckig\b' "$tmp/all.txt" > "$tmp/source.txt" || true
status=0
compile() {   # compile LABEL ARGS...: uv pip compile, the reason shown on failure
  local label="$1"
  shift
  if ! "$UV" pip compile --quiet --no-header --no-annotate "$@" 2>"$tmp/err"; then
    echo "robot set, $label: does not resolve:" >&2
    grep -v -E '^(warning|  Caused by)' "$tmp/err" >&2
    status=1
    return 1
  fi
}
for platform in aarch64-manylinux_2_31 x86_64-manylinux_2_31; do
  label="CPython 3.8 on $platform"
  compile "$label (wheels only)" --python-version 3.8 --python-platform "$platform" --only-binary :all: \
    "$tmp/wheels.txt" -o "$tmp/wheels.lock" \
    && echo "robot set, $label: $(grep -c '==' "$tmp/wheels.lock") packages, every one a wheel"
  if [ -s "$tmp/source.txt" ]; then
    compile "$label ($(cat "$tmp/source.txt") from its source)" --python-version 3.8 --python-platform "$platform" \
      --build-constraints "$WS/requirements/build-constraints.txt" "$tmp/source.txt" -o "$tmp/src.lock" \
      && echo "robot set, $label: $(grep '==' "$tmp/src.lock" | tr '\n' ' ')from its source"
  fi
  if [ "$REQ" = "$WS/requirements/robot-test.txt" ] && compile "$label (the whole set)" --python-version 3.8 \
       --python-platform "$platform" --build-constraints "$WS/requirements/build-constraints.txt" "$REQ" \
       -o "$tmp/full.lock"; then
    if ! diff <(grep '==' "$tmp/full.lock") <(grep '==' "$LOCK") >"$tmp/diff"; then
      echo "robot set, $label: resolves to other versions than requirements/robot-lock.txt (regenerate it," \
           "the command is in its header):" >&2
      cat "$tmp/diff" >&2
      status=1
    else
      echo "robot set, $label: the same versions as requirements/robot-lock.txt"
    fi
  fi
done
if [ "$REQ" = "$WS/requirements/robot-test.txt" ]; then
  compile "CPython 3.11 on x86_64-manylinux_2_36 (wheels only)" --python-version 3.11 \
    --python-platform x86_64-manylinux_2_36 --only-binary :all: -c "$LOCK" \
    --override "$WS/requirements/robot-test-overrides.txt" "$tmp/wheels.txt" -o "$tmp/py311.lock" \
    && echo "robot set, CPython 3.11 on x86_64 (this machine's, scripts/test's second pass):" \
            "$(grep -c '==' "$tmp/py311.lock") packages, every one a wheel, Ruckig from its source"
fi
exit "$status"
