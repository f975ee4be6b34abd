#!/usr/bin/env bash
# sessions.sh start|stop: the tmux sessions of the one-shot boot (called by boot/start.sh and
# boot/stop.sh, as the vendor's).
#   start  loads sessions.d/master.yaml, then every other sessions.d/*.yaml, with `tmuxp load -d`;
#          refuses when a boot of ours, a tmux session of the same name, or a master at
#          ROS_MASTER_URI is already there.
#   stop   stops exactly what start started (prestart/r1_boot.py stop): SIGINT to each pane's
#          foreground job (modules first, then the master), SIGTERM/SIGKILL after a timeout,
#          then `tmux kill-session` for our sessions only. The vendor's stop SIGTERMs every
#          roscore/roslaunch on the machine; this one leaves other stacks alone.
# Environment: R1_SIM=1 runs the simulated robot (ota_script.sh boot --sim), R1_KILL_TIMEOUT
# (default 30 s) is how long stop waits after SIGINT; TMUX_TMPDIR/TMUX choose the tmux server.
set -eo pipefail
# shellcheck disable=SC1091
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/prestart/prestart_prepare.sh"
R1_LOG_TAG=ota_script
export START_DIR="${START_DIR:-$R1_SCRIPT_DIR}"
SESSIONS_D="$R1_SCRIPT_DIR/sessions.d"

session_name() { sed -n 's/^session_name:[[:space:]]*//p' "$1" | head -n 1 | tr -d "\"' \r"; }

# master.yaml first, then every other file, skipping the one whose session is master (the vendor's order)
[ -f "$SESSIONS_D/master.yaml" ] || r1_die "missing $SESSIONS_D/master.yaml"
yamls=("$SESSIONS_D/master.yaml")
for f in "$SESSIONS_D"/*.yaml; do
  [ "$(session_name "$f")" = master ] || yamls+=("$f")
done
names=()
for f in "${yamls[@]}"; do names+=("$(session_name "$f")"); done
stop_order=()
for (( i=${#names[@]}-1; i>=0; i-- )); do stop_order+=("${names[i]}"); done

# The state of a boot is kept per tmux server (sessions are per server): the key is its socket.
if [ -n "${TMUX:-}" ]; then tmux_socket="${TMUX%%,*}"; else tmux_socket="${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/default"; fi
STATE_DIR="$ROS_HOME/startup_config"
key="$(printf %s "$tmux_socket" | md5sum | cut -c1-8)"
STATE="$STATE_DIR/boot-$key.state"
ENVF="$STATE_DIR/boot-$key.env"
LOG="$STATE_DIR/boot-$key.tmuxp.log"

need_tmux() {
  command -v tmux >/dev/null || r1_die "tmux is not installed: apt-get install tmux (scripts/setup installs it)"
}

start() {
  need_tmux
  command -v tmuxp >/dev/null \
    || r1_die "tmuxp is not installed: it comes with the venv $R1_VENV (scripts/setup, or pip install -r requirements.txt)"
  local msg
  msg="$(python3 "$R1_BOOT_PY" check-free --state "$STATE" --sessions "${names[@]}" 2>&1)" || r1_die "$msg"
  if python3 "$R1_BOOT_PY" wait-master --timeout 0; then
    r1_die "a ROS master already answers at $ROS_MASTER_URI and it is not ours; stop it or set ROS_MASTER_URI to a free port"
  fi

  local boot_id v
  boot_id="$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
  mkdir -p "$STATE_DIR"
  # The panes read the caller's ROS variables from this file (a running tmux server would
  # otherwise give new panes its own environment, not ours).
  : >"$ENVF"
  for v in ROS_MASTER_URI ROS_HOSTNAME ROS_IP ROS_HOME R1_VENV R1_SIM_LAUNCH_ARGS R1_SENSORS_LAUNCH R1_CAN_CHANNELS \
           R1_WAIT_MASTER_S R1_WAIT_DRIVER_S; do
    if [ -n "${!v+x}" ]; then printf 'export %s=%q\n' "$v" "${!v}" >>"$ENVF"; fi
  done
  {
    echo "boot_id=$boot_id"
    echo "started=$(date '+%Y-%m-%d %H:%M:%S')"
    echo "sim=${R1_SIM:-0}"
    echo "master_uri=$ROS_MASTER_URI"
    echo "tree=$R1_TREE"
    echo "root=$PROJECT_ROOT_DIR"
    echo "tmux_socket=$tmux_socket"
  } >"$STATE"

  # tmuxp expands ${VAR} in the yaml from its own environment; these reach the panes as
  # R1_BOOT_ID, R1_BOOT_ENV and R1_SIM (the session's environment).
  export R1_TMUXP_BOOT_ID="$boot_id" R1_TMUXP_BOOT_ENV="$ENVF" R1_TMUXP_SIM="${R1_SIM:-0}"
  export TMUXP_PROGRESS=0
  r1_say "boot $boot_id: $([ "${R1_SIM:-0}" = 1 ] && echo 'simulated robot' || echo robot), master $ROS_MASTER_URI, $R1_TREE tree $PROJECT_ROOT_DIR"
  : >"$LOG"
  local f name
  for f in "${yamls[@]}"; do
    name="$(session_name "$f")"
    if ! tmuxp load -d "$f" </dev/null >>"$LOG" 2>&1 || ! tmux has-session -t "=$name" 2>/dev/null; then
      tail -n 30 "$LOG" >&2
      r1_warn "tmuxp load $f failed (log: $LOG); stopping what was started"
      python3 "$R1_BOOT_PY" stop --state "$STATE" --sessions "${stop_order[@]}" >&2 || true
      r1_die "boot failed"
    fi
    r1_say "session $name: windows $(tmux list-windows -t "=$name" -F '#{window_name}' | paste -sd ' ')"
  done
  python3 "$R1_BOOT_PY" record --state "$STATE" --sessions "${names[@]}"
  r1_say "started; the panes wait for the master and the driver before they launch."
  r1_say "watch: tmux attach -t R1_modules (Ctrl-b n/p: next/previous window, Ctrl-b d: detach)"
  r1_say "stop:  $R1_SCRIPT_DIR/ota_script.sh kill"
}

stop() {
  need_tmux
  python3 "$R1_BOOT_PY" stop --state "$STATE" --sessions "${stop_order[@]}"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
