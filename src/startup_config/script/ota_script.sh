#!/usr/bin/env bash
# One-shot boot of the R1 stack (the vendor's ota_script.sh):
#   ota_script.sh boot [--sim]   start the tmux sessions master and R1_modules (tmuxp);
#                                --sim: the simulated robot instead of the hardware
#   ota_script.sh kill           stop exactly what boot started
# Runs from the source tree (src/startup_config/script) or the install tree
# (install/share/startup_config/script). See docs/startup.md.
set -eo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
  echo "usage: $(basename "$0") boot [--sim] | kill    (use boot or kill)" >&2
  exit 2
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
sim=0
for arg in "$@"; do
  case "$arg" in
    --sim) sim=1 ;;
    *) usage ;;
  esac
done

case "$cmd" in
  boot) R1_SIM="$sim" exec "$HERE/boot/start.sh" ;;
  kill) exec "$HERE/boot/stop.sh" ;;
  *) usage ;;
esac
