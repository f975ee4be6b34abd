# shellcheck shell=bash
# ensure_system_python: /usr/bin/python3, installed with apt when it is missing (a minimal Debian 12, e.g.
# debootstrap --variant=minbase, has none; the set-up's own choices are made in Python). Sourced by
# scripts/setup and scripts/test; exits 1 with the reason when it cannot.
ensure_system_python() {
  [ -x /usr/bin/python3 ] && return 0
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  if ! command -v apt-get >/dev/null || { [ -n "$sudo" ] && ! command -v sudo >/dev/null; }; then
    printf '\033[1;31m[setup] FAILED:\033[0m %s\n' "no /usr/bin/python3, and no apt-get (as root or with sudo) to install it" >&2
    exit 1
  fi
  printf '\033[1;34m[setup]\033[0m %s\n' "no /usr/bin/python3 (a minimal system): installing python3 with apt"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get update -q >/dev/null \
    && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends python3 >/dev/null \
    || { printf '\033[1;31m[setup] FAILED:\033[0m %s\n' "apt-get install python3" >&2; exit 1; }
}
