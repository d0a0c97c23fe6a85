# A throw-away single-node Slurm on localhost, for the tests: sourced by slurm_sweep_test.sh.
# slurm_up DIR writes DIR/slurm.conf (this machine's CPUs and memory from `slurmd -C`), a munge
# key, starts munged, slurmctld and slurmd in the background (pids in DIR/*.pid, logs in
# DIR/*.log) and waits until the node is idle; slurm_down stops them; slurm_logs prints the logs.
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

slurm_down() {
  local f pid
  for f in slurmd.bg slurmctld.bg slurmd slurmctld munged; do
    [ -f "$SLURM_DIR/$f.pid" ] || continue
    pid=$(cat "$SLURM_DIR/$f.pid")
    [ -n "$pid" ] && $AS_ROOT kill -TERM "$pid" 2>/dev/null
  done
  sleep 1
  for f in slurmd.bg slurmctld.bg slurmd slurmctld munged; do
    [ -f "$SLURM_DIR/$f.pid" ] || continue
    pid=$(cat "$SLURM_DIR/$f.pid")
    [ -n "$pid" ] && $AS_ROOT kill -KILL "$pid" 2>/dev/null
  done
  return 0
}

slurm_logs() {
  local f
  for f in "$SLURM_DIR"/*.log "$SLURM_DIR"/*.out; do
    [ -f "$f" ] || continue
    echo "===== $f (last 60 lines)"
    tail -n 60 "$f"
  done
}
