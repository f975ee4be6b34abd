# Environment of the R1 workspace, sourced by scripts/run and scripts/test after set-up:
# the venv (pinocchio, ruckig, python-can...), the catkin devel space (our packages and
# Debian's ROS 1) and the variables that keep ROS local and quiet on a headless machine.
WS="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# R1_SET=robot: the robot's set of versions on this machine (scripts/setup --robot-set), as scripts/test's
# second pass uses it; otherwise the development set (on the robot itself, its only set)
if [ "${R1_SET:-dev}" = robot ]; then
  VENV="${R1_ROBOT_VENV:-/opt/r1_venv_robot}"
  DEVEL="$WS/devel_robot"
  export NUMBA_CACHE_DIR="$WS/build_robot/numba_cache"    # its numba's cache apart (scripts/setup)
else
  VENV="${R1_VENV:-/opt/r1_venv}"
  DEVEL="$WS/devel"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"
set +u   # /etc/catkin/profile.d trips over `set -u`
# shellcheck disable=SC1091
source "$DEVEL/setup.bash"
export ROS_HOME="${ROS_HOME:-$WS/.ros}"          # logs and test results stay in the workspace
export ROS_HOSTNAME="${ROS_HOSTNAME:-localhost}"  # a hostname missing from /etc/hosts kills roscore
export PYTHONUNBUFFERED=1                        # live output when not on a TTY
# one BLAS thread for the tests' own processes too (every node's script asks for it: r1_common.blas_threads)
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
