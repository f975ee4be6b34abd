#!/usr/bin/env bash
# Window roscore of session master: the ROS master on the port of ROS_MASTER_URI.
set -eo pipefail
# shellcheck disable=SC1091
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/prestart/prestart_prepare.sh"
R1_LOG_TAG=roscore
port="${ROS_MASTER_URI##*:}"; port="${port%%/*}"
r1_say "roscore -p $port"
exec roscore -p "$port"
