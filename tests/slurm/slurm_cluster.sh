# shellcheck shell=bash
# A throw-away single-node Slurm on localhost, for the tests: sourced by slurm_sweep_test.sh.
# slurm_up DIR writes DIR/slurm.conf (this machine's CPUs and memory from `slurmd -C`), a munge
# key, starts munged, slurmctld and slurmd in the background (pids in DIR/*.pid, logs in
# DIR/*.log) and waits until the node is idle; slurm_down stops them and the jobs' processes;
# slurm_leftovers lists any of them still alive; slurm_logs prints the logs.
# Needs root (slurmd starts jobs as their user) or password-less sudo.

slurm_fail() {
  echo "slurm test setup: $*" >&2
  return 1
}

slurm_up() {
  SLURM_DIR=$1
  if [ "$(id -u)" -eq 0 ]; then
    AS_ROOT=
  elif sudo -n true 2>/dev/null; then
    AS_ROOT="sudo -n"
  else
    slurm_fail "needs root or password-less sudo to run slurmctld/slurmd (run as root in CI)"
    return 1
  fi
  for cmd in munged mungekey slurmctld slurmd sinfo sbatch squeue scontrol; do
    command -v "$cmd" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v "$cmd" >/dev/null 2>&1 ||
      { slurm_fail "'$cmd' not found: install slurm-wlm and munge (scripts/setup.sh does)"; return 1; }
  done
  export PATH=$PATH:/usr/sbin
  mkdir -p "$SLURM_DIR/munge" "$SLURM_DIR/state" "$SLURM_DIR/spool"
  chmod 700 "$SLURM_DIR/munge"
  mungekey --create --keyfile="$SLURM_DIR/munge/munge.key" --force || { slurm_fail "mungekey failed"; return 1; }
  chmod 400 "$SLURM_DIR/munge/munge.key"
  local socket="$SLURM_DIR/munge/munge.socket"
  $AS_ROOT munged --force --key-file="$SLURM_DIR/munge/munge.key" --socket="$socket" \
    --pid-file="$SLURM_DIR/munged.pid" --log-file="$SLURM_DIR/munged.log" \
    --seed-file="$SLURM_DIR/munge/munge.seed" || { slurm_fail "munged did not start"; return 1; }

  local node port user
  node=$(hostname -s)
  port=$((20000 + RANDOM % 20000))
  user=$(id -un)
  [ -n "$AS_ROOT" ] && user=root
  cat >"$SLURM_DIR/slurm.conf" <<CONF
ClusterName=orchtest
SlurmctldHost=$node(127.0.0.1)
SlurmUser=$user
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
MinJobAge=600
$(slurmd -C | head -1) NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$SLURM_DIR/slurm.conf"
  $AS_ROOT slurmctld -f "$SLURM_CONF" -D -i >>"$SLURM_DIR/slurmctld.out" 2>&1 &
  echo $! >"$SLURM_DIR/slurmctld.bg.pid"
  $AS_ROOT slurmd -f "$SLURM_CONF" -D -N "$node" >>"$SLURM_DIR/slurmd.out" 2>&1 &
  echo $! >"$SLURM_DIR/slurmd.bg.pid"
  local i state
  for i in $(seq 1 60); do
    state=$(sinfo -h -n "$node" -o %t 2>/dev/null | head -1)
    if [ "$state" = "idle" ]; then
      echo "slurm: node $node idle after ${i} s (SLURM_CONF=$SLURM_CONF)"
      return 0
    fi
    sleep 1
  done
  slurm_fail "node $node not idle after 60 s (state '${state}')"
  return 1
}

# slurm_leftovers prints "PID COMMAND" for every process of this cluster still alive: its
# daemons (slurmctld, slurmd, munged), the slurmstepd of each job step and the job's own
# processes. They are told apart from the machine's other Slurm processes (a real cluster, or
# another test's) by SLURM_CONF=$SLURM_DIR/slurm.conf in their environment (slurmd's, which its
# slurmstepd inherit, and the job's, which sbatch exports), munged by its socket argument.
slurm_leftovers() {
  [ -n "${SLURM_DIR:-}" ] || return 0
  local f pid comm
  for f in $(${AS_ROOT:-} grep -lsxzF "SLURM_CONF=$SLURM_DIR/slurm.conf" /proc/[0-9]*/environ); do
    pid=${f#/proc/}
    pid=${pid%/environ}
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
    case $comm in
      slurmstepd | slurmctld | slurmd) ;;
      # Anything else with this SLURM_CONF is a job's process, or this test and its children.
      *) ${AS_ROOT:-} grep -qsz '^SLURM_JOB_ID=' "/proc/$pid/environ" || continue ;;
    esac
    echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
  done
  for pid in $(pgrep -f -- "--socket=$SLURM_DIR/munge/munge.socket"); do
    echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
  done
}

# slurm_wait_gone SECONDS PID...: waits until none of the processes is alive (a zombie, one
# that ended and waits for its parent, counts as gone); 1 if one still is after SECONDS.
slurm_wait_gone() {
  local limit=$1 i pid alive state
  shift
  for i in $(seq 1 $((limit * 10))); do
    alive=0
    for pid in "$@"; do
      state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
      if [ -n "$state" ] && [ "$state" != Z ]; then
        alive=1
        break
      fi
    done
    [ "$alive" -eq 0 ] && return 0
    sleep 0.1
  done
  return 1
}

# slurm_down stops everything slurm_up started, in the order that lets each part end cleanly:
# the jobs first (cancelled, and their slurmstepd given time to report the end to slurmd and
# slurmctld: one whose daemons are gone keeps trying, forever, and outlives the test), then
# slurmd and slurmctld, then munged, each TERM then KILL after a wait. Whatever of the cluster is
# still alive then (what that order should have ended) is killed, named on stdout, and the return
# is 1. Safe to call twice, and before slurm_up finished.
slurm_down() {
  [ -n "${SLURM_DIR:-}" ] || return 0
  local f pid pids steps
  if [ -n "${SLURM_CONF:-}" ]; then
    for pid in $(squeue -h -o %A 2>/dev/null); do scancel "$pid" 2>/dev/null; done
    for _ in $(seq 1 300); do
      steps=$(slurm_leftovers | awk '$2 ~ /^slurmstepd/ {print $1}')
      [ -z "$steps" ] && break
      sleep 0.1
    done
  fi
  for f in slurmd slurmctld munged; do
    pids=()
    for pid in "$SLURM_DIR/$f.bg.pid" "$SLURM_DIR/$f.pid"; do
      [ -f "$pid" ] && pids+=("$(cat "$pid")")
    done
    [ ${#pids[@]} -gt 0 ] || continue
    ${AS_ROOT:-} kill -TERM "${pids[@]}" 2>/dev/null
    slurm_wait_gone 10 "${pids[@]}" || ${AS_ROOT:-} kill -KILL "${pids[@]}" 2>/dev/null
  done
  local left
  left=$(slurm_leftovers)
  [ -z "$left" ] && return 0
  echo "slurm_down: still alive after the daemons stopped, killed:"
  echo "$left"
  local stray
  mapfile -t stray < <(awk '{print $1}' <<<"$left")
  ${AS_ROOT:-} kill -KILL "${stray[@]}" 2>/dev/null
  slurm_wait_gone 5 "${stray[@]}"
  return 1
}

slurm_logs() {
  local f
  for f in "$SLURM_DIR"/*.log "$SLURM_DIR"/*.out; do
    [ -f "$f" ] || continue
    echo "===== $f (last 60 lines)"
    tail -n 60 "$f"
  done
}
