#!/usr/bin/env bash
# Window mobiman_chassis|mobiman_joint, right pane: the joint tracker.
# Waits for the driver: on the simulated robot the nodes must find /use_sim_time set.
set -eo pipefail
# shellcheck disable=SC1091
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/prestart/prestart_prepare.sh"
R1_LOG_TAG=mobiman_joint
r1_wait_master
r1_say "waiting for the driver /HDAS"
r1_wait_node /HDAS
# The chassis pane's pose estimator publishes /joint_states (the vendor's split): one publisher only.
r1_say "roslaunch mobiman r1_jointTrackerdemo.launch feedback_joint_states:=false state_publisher:=false"
exec roslaunch mobiman r1_jointTrackerdemo.launch feedback_joint_states:=false state_publisher:=false
