#!/usr/bin/env bash
# Window HDAS: the driver.
#   R1_SIM=1  the simulated robot: roslaunch HDAS r1_sim.launch (its own bus namespace per boot;
#             R1_SIM_LAUNCH_ARGS adds arguments; unset, light:=true below 4 cores)
#   else      the robot: brings can0..can3 (the channels of r1_can/config/r1_buses_robot.yaml, or
#             R1_CAN_CHANNELS) up at 1 Mbit/s when they are down, then roslaunch HDAS r1.launch
set -eo pipefail
# shellcheck disable=SC1091
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/prestart/prestart_prepare.sh"
R1_LOG_TAG=HDAS

if [ "${R1_SIM:-0}" = 1 ]; then
  r1_wait_master
  ns="${R1_SIM_NAMESPACE:-boot_${R1_BOOT_ID:-$$}}"
  # Below 4 cores the stock bus rates starve the simulator (docs/stack.md "Profiles"): the light
  # profile, as scripts/run, unless R1_SIM_LAUNCH_ARGS says otherwise (e.g. "light:=false").
  if [ -z "${R1_SIM_LAUNCH_ARGS+x}" ] && [ "$(nproc)" -lt 4 ]; then R1_SIM_LAUNCH_ARGS="light:=true"; fi
  r1_say "roslaunch HDAS r1_sim.launch sim_namespace:=$ns ${R1_SIM_LAUNCH_ARGS:-}"
  # shellcheck disable=SC2086
  exec roslaunch HDAS r1_sim.launch sim_namespace:="$ns" ${R1_SIM_LAUNCH_ARGS:-}
fi

# --- the robot: CAN buses --------------------------------------------------------------------
IP="$(command -v ip || true)"
[ -n "$IP" ] || r1_die "the ip command is missing (apt-get install iproute2): cannot check the CAN buses"
channels="${R1_CAN_CHANNELS:-}"
if [ -z "$channels" ]; then
  buses="$(rospack find r1_can)/config/r1_buses_robot.yaml"
  channels="$(sed -n 's/.*channel:[[:space:]]*\(can[0-9]*\).*/\1/p' "$buses" 2>/dev/null | paste -sd ' ')"
  channels="${channels:-can0 can1 can2 can3}"
fi
for ch in $channels; do
  [ -e "/sys/class/net/$ch" ] \
    || r1_die "no CAN interface $ch: is the CAN adapter connected and its driver loaded? (ip link show)"
  flags="$("$IP" -o link show dev "$ch")"
  flags="${flags#*<}"; flags="${flags%%>*}"
  if [[ ",$flags," == *,UP,* ]]; then
    rate="$("$IP" -details link show dev "$ch" | grep -oE '(^|[[:space:]])bitrate [0-9]+' | head -n 1 | grep -oE '[0-9]+' || true)"
    if [ "$rate" != 1000000 ]; then
      r1_warn "$ch is up at ${rate:-an unknown} bit/s, not 1000000; to change it: ip link set $ch down; ip link set $ch up type can bitrate 1000000 restart-ms 100"
    fi
    r1_say "$ch: up"
    continue
  fi
  r1_say "$ch: down; bringing it up at 1 Mbit/s"
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo -n)   # never a password here: -n fails instead of asking
  if ! "${as_root[@]}" "$IP" link set "$ch" up type can bitrate 1000000 restart-ms 100; then
    r1_die "cannot bring $ch up (needs root). Either bring the buses up once as root:
    for n in $channels; do sudo ip link set \$n up type can bitrate 1000000 restart-ms 100; done
  or let this user run ip without a password: echo \"$(id -un) ALL=(root) NOPASSWD: $IP\" | sudo tee /etc/sudoers.d/r1-can"
  fi
  r1_say "$ch: up at 1 Mbit/s"
done
r1_wait_master
r1_say "roslaunch HDAS r1.launch"
exec roslaunch HDAS r1.launch
