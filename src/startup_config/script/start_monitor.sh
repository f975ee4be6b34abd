#!/usr/bin/env bash
# Window monitor: rosrun HDAS r1_monitor (the driver's live status), when HDAS has it.
set -eo pipefail
# shellcheck disable=SC1091
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/prestart/prestart_prepare.sh"
R1_LOG_TAG=monitor
if ! r1_find_executable HDAS r1_monitor >/dev/null; then
  r1_warn "package HDAS has no r1_monitor (not in this build yet): no monitor; the rest of the stack runs without it"
  exit 0
fi
r1_wait_master
r1_say "waiting for the driver /HDAS"
r1_wait_node /HDAS
r1_say "rosrun HDAS r1_monitor"
exec rosrun HDAS r1_monitor
