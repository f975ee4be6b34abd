# Sourced by every script of startup_config (as the vendor's prestart/prestart_prepare.sh):
# finds the workspace, sources the venv and the workspace's setup.bash, and sets the ROS
# variables the stack needs. Works from the source tree (<root>/src/startup_config/script) and
# from the install tree (<root>/install/share/startup_config/script, four levels up as the
# vendor's).
#
# Sets: R1_SCRIPT_DIR (this script directory's parent), PROJECT_ROOT_DIR, R1_TREE
# (source|install), R1_SETUP (the setup.bash sourced); exports ROS_MASTER_URI
# (default http://localhost:11311), ROS_HOSTNAME (localhost unless ROS_HOSTNAME or ROS_IP is
# set), ROS_HOME (default <root>/.ros), PYTHONUNBUFFERED.
# In a pane of the boot's tmux sessions, R1_BOOT_ENV names the file with the ROS variables
# of the `ota_script.sh boot` call, which is read first, so every pane sees the caller's master.

R1_SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

r1_say() { printf '[%s] %s\n' "${R1_LOG_TAG:-startup_config}" "$*"; }
r1_warn() { printf '\033[1;33m[%s] WARNING:\033[0m %s\n' "${R1_LOG_TAG:-startup_config}" "$*" >&2; }
r1_die() { printf '\033[1;31m[%s] ERROR:\033[0m %s\n' "${R1_LOG_TAG:-startup_config}" "$*" >&2; exit 1; }

if [ -n "${R1_BOOT_ENV:-}" ] && [ -r "$R1_BOOT_ENV" ]; then
  # shellcheck disable=SC1090
  source "$R1_BOOT_ENV"
fi

if [ -f "$R1_SCRIPT_DIR/../../../setup.bash" ] && [ -f "$R1_SCRIPT_DIR/../../../.catkin" ]; then
  # install tree: <prefix>/share/startup_config/script, <prefix> = <root>/install
  R1_TREE=install
  R1_SETUP="$(cd "$R1_SCRIPT_DIR/../../.." && pwd)/setup.bash"
  PROJECT_ROOT_DIR="$(cd "$R1_SCRIPT_DIR/../../../.." && pwd)"
elif [ -f "$R1_SCRIPT_DIR/../../../devel/setup.bash" ]; then
  # source tree: <root>/src/startup_config/script
  R1_TREE=source
  PROJECT_ROOT_DIR="$(cd "$R1_SCRIPT_DIR/../../.." && pwd)"
  R1_SETUP="$PROJECT_ROOT_DIR/devel/setup.bash"
else
  r1_die "no workspace around $R1_SCRIPT_DIR: expected <root>/devel/setup.bash (source tree) or <prefix>/setup.bash (install tree); build first (scripts/setup)"
fi

R1_VENV="${R1_VENV:-/opt/r1_venv}"
[ -f "$R1_VENV/bin/activate" ] || r1_die "no venv at $R1_VENV (set R1_VENV, or run scripts/setup)"
# shellcheck disable=SC1091
source "$R1_VENV/bin/activate"
r1_nounset=0; case $- in *u*) r1_nounset=1; set +u;; esac   # /etc/catkin/profile.d trips over `set -u`
# shellcheck disable=SC1090
source "$R1_SETUP" || r1_die "sourcing $R1_SETUP failed"
[ "$r1_nounset" = 1 ] && set -u

export ROS_MASTER_URI="${ROS_MASTER_URI:-http://localhost:11311}"
if [ -z "${ROS_HOSTNAME:-}" ] && [ -z "${ROS_IP:-}" ]; then
  export ROS_HOSTNAME=localhost   # a hostname missing from /etc/hosts kills roscore
fi
export ROS_HOME="${ROS_HOME:-$PROJECT_ROOT_DIR/.ros}"
export PYTHONUNBUFFERED=1
export R1_VENV PROJECT_ROOT_DIR

R1_BOOT_PY="$R1_SCRIPT_DIR/prestart/r1_boot.py"

# r1_wait_master [timeout_s]: wait until the master at ROS_MASTER_URI answers.
r1_wait_master() {
  python3 "$R1_BOOT_PY" wait-master --timeout "${1:-${R1_WAIT_MASTER_S:-120}}" \
    || r1_die "no ROS master at $ROS_MASTER_URI after ${1:-${R1_WAIT_MASTER_S:-120}} s"
}

# r1_wait_node NODE [timeout_s]: wait until NODE is registered; warn (and go on) on timeout.
r1_wait_node() {
  python3 "$R1_BOOT_PY" wait-node "$1" --timeout "${2:-${R1_WAIT_DRIVER_S:-300}}" \
    || r1_warn "$1 not registered after ${2:-${R1_WAIT_DRIVER_S:-300}} s; starting anyway"
}

# r1_find_executable PKG NAME: path of an executable rosrun would run, or nothing.
r1_find_executable() {
  local d
  for d in $(catkin_find --libexec "$1" 2>/dev/null) $(rospack find "$1" 2>/dev/null); do
    find -L "$d" -name "$2" -type f -perm -u+x 2>/dev/null | head -n 1 | grep . && return 0
  done
  return 1
}

# r1_find_launch PKG FILE: path of PKG's launch file FILE, or nothing.
r1_find_launch() {
  local d; d="$(rospack find "$1" 2>/dev/null)" || return 1
  [ -f "$d/launch/$2" ] && echo "$d/launch/$2"
}
