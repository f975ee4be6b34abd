#!/usr/bin/env bash
# ota_script.sh kill: stop exactly what ota_script.sh boot started.
set -eo pipefail
START_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export START_DIR
exec "$START_DIR/sessions.sh" stop
