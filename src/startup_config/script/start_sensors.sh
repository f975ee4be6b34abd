#!/usr/bin/env bash
# Window sensors: the cameras and the lidar.
#   R1_SIM=1  roslaunch r1_sim r1_sim_sensors.launch (the simulated sensors)
#   else      roslaunch HDAS r1_sensors.launch (the vendor's camera and lidar drivers)
#   R1_SENSORS_LAUNCH="<package> <file>" runs another launch file instead (your own drivers)
# When the launch file is not there, says so and leaves the rest of the stack alone.
set -eo pipefail
# shellcheck disable=SC1091
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/prestart/prestart_prepare.sh"
R1_LOG_TAG=sensors
if [ "${R1_SIM:-0}" = 1 ]; then pkg=r1_sim; file=r1_sim_sensors.launch; else pkg=HDAS; file=r1_sensors.launch; fi
if [ -n "${R1_SENSORS_LAUNCH:-}" ]; then read -r pkg file <<< "$R1_SENSORS_LAUNCH"; fi
if ! r1_find_launch "$pkg" "$file" >/dev/null; then
  r1_warn "package $pkg has no launch/$file (not in this build yet): no sensors; the rest of the stack runs without them"
  exit 0
fi
r1_wait_master
if [ "${R1_SIM:-0}" = 1 ]; then
  r1_say "waiting for the simulator /r1_sim"
  r1_wait_node /r1_sim
fi
r1_say "roslaunch $pkg $file"
exec roslaunch "$pkg" "$file"
