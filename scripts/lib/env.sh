# Environment of the R1 workspace, sourced by scripts/run and scripts/test after set-up:
# the venv (pinocchio, ruckig, python-can...), the catkin devel space (our packages and
# Debian's ROS 1) and the variables that keep ROS local and quiet on a headless machine.
WS="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${R1_VENV:-/opt/r1_venv}"
# shellcheck disable=SC1091
source "$VENV/bin/activate"
set +u   # /etc/catkin/profile.d trips over `set -u`
# shellcheck disable=SC1091
source "$WS/devel/setup.bash"
export ROS_HOME="${ROS_HOME:-$WS/.ros}"          # logs and test results stay in the workspace
export ROS_HOSTNAME="${ROS_HOSTNAME:-localhost}"  # a hostname missing from /etc/hosts kills roscore
export PYTHONUNBUFFERED=1                        # live output when not on a TTY
