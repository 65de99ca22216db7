#!/usr/bin/env bash
# A private single-node Slurm cluster for the sweep's round-trip test, entirely inside one folder:
# its own munge key and socket, slurm.conf, state, spool, pid and log files, on free loopback
# ports. Nothing under /etc is touched; clients find the cluster through SLURM_CONF.
#
#   cluster.sh start DIR   start munged, slurmctld and slurmd; wait until the node is idle
#   cluster.sh stop DIR    stop the daemons this folder's pid files name
#
# Needs root (slurmd runs jobs as the submitting user and must be able to switch to it) and
# Debian's slurmctld, slurmd, slurm-client and munge packages.
set -euo pipefail
cmd=${1:?start|stop}
dir=$(realpath -m "${2:?folder}")

stop() {
  for p in slurmd slurmctld munged; do
    if [ -s "$dir/$p.pid" ]; then
      pid=$(cat "$dir/$p.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/$p.pid"
    fi
  done
}

# freeport prints a loopback port nothing listens on.
freeport() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  echo "cluster.sh: no free port found" >&2
  exit 1
}

case "$cmd" in
stop)
  stop
  exit 0
  ;;
start) ;;
*)
  echo "usage: cluster.sh start|stop DIR" >&2
  exit 2
  ;;
esac

for b in munged mungekey slurmctld slurmd sinfo; do
  command -v "$b" >/dev/null || { echo "cluster.sh: $b not found (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 3; }
done
[ "$(id -u)" = 0 ] || { echo "cluster.sh: needs root" >&2; exit 3; }

mkdir -p "$dir"/{state,spool,munge}
chmod 700 "$dir/munge"
[ -s "$dir/munge/munge.key" ] || mungekey -c -k "$dir/munge/munge.key" 2>/dev/null ||
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
sock="$dir/munge/munge.sock"
munged --force --key-file="$dir/munge/munge.key" --socket="$sock" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munge/munge.seed"

host=$(hostname -s)
cpus=$(nproc)
mem=1024
ctlport=$(freeport)
dport=$(freeport)
while [ "$dport" = "$ctlport" ]; do dport=$(freeport); done
cat >"$dir/slurm.conf" <<CONF
ClusterName=sweeptest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctlport
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=sweeptest Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF" -N "$host"
for _ in $(seq 300); do
  state=$(sinfo -h -o %t 2>/dev/null || true)
  case "$state" in
  idle*) echo "cluster.sh: node $host idle (SLURM_CONF=$SLURM_CONF)"; exit 0 ;;
  esac
  sleep 0.2
done
echo "cluster.sh: node not idle after 60 s (state '${state:-}'); logs in $dir" >&2
tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
stop
exit 1
