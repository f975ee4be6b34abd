#!/usr/bin/env bash
# Window mobiman_chassis|mobiman_joint, left pane: the chassis control.
# Waits for the driver: on the simulated robot the nodes must find /use_sim_time set.
set -eo pipefail
# shellcheck disable=SC1091
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/prestart/prestart_prepare.sh"
R1_LOG_TAG=mobiman_chassis
r1_wait_master
r1_say "waiting for the driver /HDAS"
r1_wait_node /HDAS
r1_say "roslaunch mobiman r1_chassis_control.launch robot_tf:=true"
exec roslaunch mobiman r1_chassis_control.launch robot_tf:=true
