#!/usr/bin/env bash
# ota_script.sh boot: start the sessions (R1_SIM=1: the simulated robot).
set -eo pipefail
START_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export START_DIR R1_SIM="${R1_SIM:-0}"
exec "$START_DIR/sessions.sh" start
