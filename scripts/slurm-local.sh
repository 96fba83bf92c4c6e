#!/usr/bin/env bash
# A one-node Slurm cluster on localhost, for trying `bursar-sweep
# slurm-script` on a laptop or a CI machine (Debian 12: apt-get install
# --no-install-recommends slurmctld slurmd slurm-client munge).
#
#   scripts/slurm-local.sh start [STATE_DIR]   # prints the SLURM_CONF to export
#   scripts/slurm-local.sh stop  [STATE_DIR]
#
# Everything (munge key and socket, slurm.conf, spool, logs, PID files)
# lives in STATE_DIR (default /tmp/bursar-slurm); nothing under /etc is
# touched. Run as root (slurmd must be). Ports: SLURMCTLD_PORT (6817) and
# SLURMD_PORT (6818). What the settings avoid is in docs/cluster.md: slurmd's
# cgroup auto-detection is fatal without systemd (cgroup.conf pins v1, which
# nothing then uses), munged wants its socket folder mode 755, the hostname
# may not resolve (everything is addressed as 127.0.0.1), and dead daemons
# may linger as zombies (counted as stopped).
#
# Bursar's gate (docs/slurm.md): with BURSAR_SLURM_GATE_BIN (bursar-slurm-check or the bursar
# binary) and BURSAR_SLURM_GATE_KEY (the key file serve --slurm-key-file
# reads) set, slurmctld loads scripts/slurm/job_submit.lua (needs
# slurm-wlm-basic-plugins) and records finished jobs with jobcomp/filetxt
# in STATE_DIR/jobcomp.txt; each lease's token admits one job (the records
# in STATE_DIR/bursar-once). BURSAR_SLURM_CPUS=N registers the node with N
# CPUs whatever the machine has (the stand-ins for GPUs; jobs that only
# sleep run fine). BURSAR_SLURM_NODES=N registers N nodes b1…bN instead,
# each with BURSAR_SLURM_CPUS CPUs (default 1) and its own slurmd on ports
# SLURMD_PORT…SLURMD_PORT+N−1: Slurm's backfill reserves whole nodes, so
# N one-CPU nodes are the pool of N interchangeable GPUs a simulated
# policy sees (docs/validate-slurm.md). SLURM_NICE (default -10) is the
# daemons' niceness.
# BURSAR_SLURM_SITE=1 runs the cluster as a site would (docs/cluster.md,
# "A site's setup"): MariaDB (its own datadir and socket in STATE_DIR, TCP on
# 127.0.0.1:SLURM_DB_PORT, default 6819) → slurmdbd (SLURMDBD_PORT, default
# 6820) → sacctmgr (cluster, accounts and users from BURSAR_SLURM_USERS,
# "user:account …", default "root:physics") → slurmctld with
# AccountingStorageEnforce=associations; and proctrack/cgroup (cgroup v2
# where the machine's /sys/fs/cgroup is unified, else v1's freezer), so
# that a task that double-forks cannot outlive its job. Needs
# mariadb-server and slurmdbd. BURSAR_SLURM_GPUS=N declares N GRES GPUs per
# node (Name=gpu, File= character devices made in STATE_DIR: Slurm 22.05
# drops a GPU without a device file), counted in accounting
# (AccountingStorageTRES=gres/gpu). BURSAR_SLURM_UNIT=gpu sets the gate's
# UNIT (its leases count GPUs, not CPUs).
# BURSAR_SLURM_EXTRA_CONF=FILE adds FILE's lines to slurm.conf, each key it
# sets replacing the script's own line of that key (SchedulerParameters,
# JobCompType, Priority*: `bursar-sweep validate-slurm` sets its scheduler
# this way, docs/validate-slurm.md).
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"   # the daemons are in sbin

cmd=${1:-}
dir=${2:-/tmp/bursar-slurm}
ctld_port=${SLURMCTLD_PORT:-6817}
slurmd_port=${SLURMD_PORT:-6818}
db_port=${SLURM_DB_PORT:-6819}
dbd_port=${SLURMDBD_PORT:-6820}

die() { echo "slurm-local: $*" >&2; exit 1; }

# alive PID PATTERN: the process runs (not a zombie) and its command line
# holds PATTERN (the state folder), so that a recycled PID is never hit.
alive() {
  local pid=$1 pattern=$2 state
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  state=$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f1)
  [ "$state" != Z ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$pattern"
}

stop_one() {
  local name=$1 pidfile=$2 pid i
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if alive "$pid" "$dir"; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 100); do alive "$pid" "$dir" || break; sleep 0.1; done
    if alive "$pid" "$dir"; then
      echo "slurm-local: $name ($pid) ignored SIGTERM for 10 s; SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
}

stop() {
  local f
  for f in "$dir"/slurmd.pid "$dir"/slurmd-*.pid; do
    [ -f "$f" ] && stop_one slurmd "$f"
  done
  stop_one slurmctld "$dir/slurmctld.pid"
  stop_one slurmdbd "$dir/slurmdbd.pid"
  stop_one mariadbd "$dir/mysql.pid"
  stop_one munged "$dir/munged.pid"
  echo "slurm-local: stopped (state kept in $dir)"
}

# start_accounting: MariaDB → slurmdbd → sacctmgr, the order a site
# brings accounting up in (slurmctld, started next, registers with
# slurmdbd and enforces the associations made here).
start_accounting() {
  local i
  if [ ! -d "$dir/mysql/mysql" ]; then
    mariadb-install-db --user=root --datadir="$dir/mysql" --auth-root-authentication-method=normal \
      > "$dir/mysql-install.log" 2>&1 || { tail -n 20 "$dir/mysql-install.log" >&2; die "mariadb-install-db failed"; }
  fi
  $prio mariadbd --user=root --datadir="$dir/mysql" --socket="$dir/mysql.sock" --port="$db_port" \
    --bind-address=127.0.0.1 --pid-file="$dir/mysql.pid" --log-error="$dir/mysql.log" </dev/null >/dev/null 2>&1 &
  for i in $(seq 150); do mariadb --socket="$dir/mysql.sock" -u root -e 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
  mariadb --socket="$dir/mysql.sock" -u root -e "select 1" >/dev/null 2>&1 || { tail -n 20 "$dir/mysql.log" >&2; die "MariaDB did not come up"; }
  # slurmdbd's own database user, on loopback only, with a password of
  # this cluster's (in slurmdbd.conf: root's, mode 600, as slurmdbd demands).
  local pass
  pass=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
  mariadb --socket="$dir/mysql.sock" -u root -e "create user if not exists 'slurm'@'127.0.0.1' identified by '$pass';
    alter user 'slurm'@'127.0.0.1' identified by '$pass'; grant all on slurm_acct_db.* to 'slurm'@'127.0.0.1'; flush privileges;"
  cat > "$dir/slurmdbd.conf" <<DBD
# Written by scripts/slurm-local.sh: accounting for the cluster in $dir.
AuthType=auth/munge
AuthInfo=socket=$dir/munge-run/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
PidFile=$dir/slurmdbd.pid
LogFile=$dir/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=$pass
StorageLoc=slurm_acct_db
DBD
  chmod 600 "$dir/slurmdbd.conf"
  # slurmdbd has no -f: it reads slurmdbd.conf beside SLURM_CONF. Its
  # argv[0] names the state folder, so that stop() knows it for ours.
  $prio bash -c 'exec -a "$0" slurmdbd' "$dir/slurmdbd"
  for i in $(seq 150); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.2; done
  sacctmgr -n list cluster >/dev/null 2>&1 || { tail -n 20 "$dir/slurmdbd.log" >&2; die "slurmdbd did not come up"; }
  sacctmgr -i add cluster bursar >/dev/null
  local pair user account
  for pair in ${BURSAR_SLURM_USERS:-root:physics}; do
    [[ $pair == *:* ]] || die "BURSAR_SLURM_USERS: '$pair' is not user:account"
    user=${pair%%:*} account=${pair#*:}
    sacctmgr -i add account "$account" Cluster=bursar >/dev/null 2>&1 || true   # once per account
    sacctmgr -i add user "$user" Account="$account" Cluster=bursar >/dev/null || die "sacctmgr: cannot add user $user to $account"
  done
}

start() {
  [ "$(id -u)" = 0 ] || die "run as root (slurmd needs it)"
  for b in munged mungekey slurmctld slurmd sinfo; do
    command -v "$b" >/dev/null || die "$b not found: apt-get install --no-install-recommends slurmctld slurmd slurm-client munge"
  done
  if [ -f "$dir/slurmctld.pid" ] && alive "$(cat "$dir/slurmctld.pid")" "$dir"; then
    die "already running in $dir (stop it first)"
  fi
  mkdir -p "$dir"/{munge-key,munge-run,munge-lib,ctld,spool}
  chmod 700 "$dir/munge-key" "$dir/munge-lib"
  chmod 755 "$dir" "$dir/munge-run"   # munged refuses a socket folder of another mode
  [ -f "$dir/munge-key/munge.key" ] || mungekey --create --keyfile="$dir/munge-key/munge.key"
  chmod 600 "$dir/munge-key/munge.key"
  # The daemons run ahead of the machine's other work (nice -10, as root):
  # a site's controller has a host of its own, but here it shares a few
  # cores with the tests and whatever else runs, and a slurmctld that
  # waits for a core makes every submission, squeue and scancel wait.
  local prio="nice -n ${SLURM_NICE:--10}"
  $prio munged --socket="$dir/munge-run/munge.socket" --key-file="$dir/munge-key/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge-lib/munged.seed" \
    --origin=127.0.0.1

  # The node as slurmd sees it (CPUs, sockets, memory), addressed by IP.
  local node
  node=$(slurmd -C | head -n1)
  [[ $node == NodeName=* ]] || die "slurmd -C printed no node line: $node"
  local extra="" jobcomp="JobCompType=jobcomp/none" ungated="" site=${BURSAR_SLURM_SITE:-}
  local accounting="AccountingStorageType=accounting_storage/none" proctrack="ProctrackType=proctrack/linuxproc"
  local gpus=${BURSAR_SLURM_GPUS:-} gres="" cgroup="CgroupPlugin=cgroup/v1"
  if [ -n "$gpus" ]; then
    [[ $gpus =~ ^[1-9][0-9]*$ ]] || die "BURSAR_SLURM_GPUS must be a whole number ≥ 1, got '$gpus'"
    # Character devices standing in for GPUs (the null device's numbers):
    # Slurm 22.05 drops a GPU that gres.conf gives no File for.
    mkdir -p "$dir/dev"
    local g
    for g in $(seq 0 $((gpus - 1))); do [ -e "$dir/dev/gpu$g" ] || mknod "$dir/dev/gpu$g" c 1 3; done
    echo "Name=gpu File=$dir/dev/gpu[0-$((gpus - 1))]" > "$dir/gres.conf"
    gres=" Gres=gpu:$gpus"
  else
    rm -f "$dir/gres.conf"
  fi
  if [ "$site" = 1 ]; then
    for b in mariadbd mariadb-install-db mariadb slurmdbd sacctmgr; do
      command -v "$b" >/dev/null || die "BURSAR_SLURM_SITE=1: $b not found: apt-get install --no-install-recommends mariadb-server slurmdbd"
    done
    accounting="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
AccountingStoragePass=$dir/munge-run/munge.socket
AccountingStorageEnforce=associations
AccountingStorageTRES=gres/gpu"
    # Where the machine mounts cgroup v2 alone, Slurm's v2 plugin; on a
    # hybrid machine (v1 controllers, as many container hosts are) v1's
    # freezer, which holds a job's tasks as well.
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
      cgroup="CgroupPlugin=cgroup/v2"
    elif [ -d /sys/fs/cgroup/freezer ]; then
      cgroup=$'CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup'
    else
      die "BURSAR_SLURM_SITE=1: no cgroup v2 and no v1 freezer under /sys/fs/cgroup for proctrack/cgroup"
    fi
    proctrack="ProctrackType=proctrack/cgroup"
  fi
  local nodes=${BURSAR_SLURM_NODES:-} slurmd_files
  slurmd_files="SlurmdSpoolDir=$dir/spool
SlurmdPidFile=$dir/slurmd.pid
SlurmdLogFile=$dir/slurmd.log"
  if [ -n "$nodes" ]; then
    [[ $nodes =~ ^[1-9][0-9]*$ ]] || die "BURSAR_SLURM_NODES must be a whole number ≥ 1, got '$nodes'"
    local i cpus=${BURSAR_SLURM_CPUS:-1}
    node=""
    for i in $(seq "$nodes"); do
      node+="NodeName=b$i NodeHostname=localhost Port=$((slurmd_port + i - 1)) CPUs=$cpus RealMemory=1000$gres NodeAddr=127.0.0.1 State=UNKNOWN"$'\n'
    done
    node=${node%$'\n'}
    node=${node% NodeAddr=127.0.0.1 State=UNKNOWN}   # the last line's ending is written below
    gres=""   # already on every line
    extra+=$'SlurmdParameters=config_overrides\n'
    slurmd_files="SlurmdSpoolDir=$dir/spool-%n
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmdLogFile=$dir/slurmd-%n.log"
  elif [ -n "${BURSAR_SLURM_CPUS:-}" ]; then
    local name mem
    name=$(sed 's/^NodeName=\([^ ]*\).*/\1/' <<<"$node")
    mem=$(grep -o 'RealMemory=[0-9]*' <<<"$node" || true)
    node="NodeName=$name CPUs=$BURSAR_SLURM_CPUS $mem"
    extra+=$'SlurmdParameters=config_overrides\n'
  fi
  if [ -n "${BURSAR_SLURM_GATE_BIN:-}" ]; then
    [ -n "${BURSAR_SLURM_GATE_KEY:-}" ] || die "BURSAR_SLURM_GATE_BIN needs BURSAR_SLURM_GATE_KEY (the key file)"
    [ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_lua.so ] || ls /usr/lib/*/slurm-wlm/job_submit_lua.so >/dev/null 2>&1 ||
      die "job_submit_lua.so not found: apt-get install --no-install-recommends slurm-wlm-basic-plugins"
    mkdir -p "$dir/bursar-once" && chmod 700 "$dir/bursar-once"   # one token, one job
    # Partition "free" is left ungated, as a site's debug partition
    # would be (the gate's UNGATED), so that moving a job from it into a
    # gated one can be tried.
    sed -e "s|@BURSAR@|$BURSAR_SLURM_GATE_BIN|" -e "s|@KEY_FILE@|$BURSAR_SLURM_GATE_KEY|" -e "s|@ONCE_DIR@|$dir/bursar-once|" \
      -e "s|^local UNGATED = { }|local UNGATED = { free = true }|" \
      -e "s|^local UNIT = \"cpu\"|local UNIT = \"${BURSAR_SLURM_UNIT:-cpu}\"|" \
      "$(dirname "$0")/slurm/job_submit.lua" > "$dir/job_submit.lua"
    grep -q '^local UNGATED = { free = true }' "$dir/job_submit.lua" || die "job_submit.lua: no 'local UNGATED = { }' line to set"
    # GresTypes=gpu: a job asking for GPUs (--gpus, --gres=gpu:N) reaches
    # the plugin, which checks the count against its lease, rather than
    # being refused by srun first; the node has none, so none is granted.
    extra+=$'JobSubmitPlugins=lua\nGresTypes=gpu\n'
    ungated="PartitionName=free Nodes=ALL MaxTime=INFINITE State=UP"
    jobcomp="JobCompType=jobcomp/filetxt"$'\n'"JobCompLoc=$dir/jobcomp.txt"
  else
    rm -f "$dir/job_submit.lua"
  fi
  if [ -n "$gpus" ] && [[ $extra != *GresTypes=gpu* ]]; then extra+=$'GresTypes=gpu\n'; fi
  cat > "$dir/slurm.conf" <<CONF
# Written by scripts/slurm-local.sh: a one-node cluster on localhost.
ClusterName=bursar
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge-run/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/slurmctld.log
$slurmd_files
$proctrack
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
ReturnToService=2
$accounting
JobAcctGatherType=jobacct_gather/none
$jobcomp
$extra$node$gres NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
$ungated
CONF
  if [ -n "${BURSAR_SLURM_EXTRA_CONF:-}" ]; then
    [ -r "$BURSAR_SLURM_EXTRA_CONF" ] || die "BURSAR_SLURM_EXTRA_CONF: cannot read $BURSAR_SLURM_EXTRA_CONF"
    # Keys are case-insensitive in slurm.conf; a key the file sets drops
    # the script's line of the same key, so that the file's value holds.
    awk -F= 'NR == FNR { if ($0 !~ /^[ \t]*(#|$)/) { k = tolower($1); gsub(/[ \t]/, "", k); set[k] = 1 }; next }
      { k = tolower($1); gsub(/[ \t]/, "", k); if (!(k in set)) print }' \
      "$BURSAR_SLURM_EXTRA_CONF" "$dir/slurm.conf" > "$dir/slurm.conf.new"
    { echo "# From BURSAR_SLURM_EXTRA_CONF ($BURSAR_SLURM_EXTRA_CONF):"; cat "$BURSAR_SLURM_EXTRA_CONF"; } >> "$dir/slurm.conf.new"
    mv "$dir/slurm.conf.new" "$dir/slurm.conf"
  fi
  # slurmd always loads a cgroup plugin and its auto-detection is fatal
  # without systemd; v1 is loaded but unused with the plugins above.
  echo "$cgroup" > "$dir/cgroup.conf"
  export SLURM_CONF="$dir/slurm.conf"
  [ "$site" != 1 ] || start_accounting
  $prio slurmctld -c -f "$SLURM_CONF"
  if [ -n "$nodes" ]; then
    for i in $(seq "$nodes"); do $prio slurmd -f "$SLURM_CONF" -N "b$i"; done
  else
    $prio slurmd -f "$SLURM_CONF"
  fi
  local i state=""
  for i in $(seq 150); do
    # Every node's state, one word each: up when none is other than
    # idle, mixed or allocated.
    state=$(sinfo -h -N -o %T 2>/dev/null | sort -u | tr '\n' ' ' || true)
    state=${state% }
    if [ -n "$state" ] && ! grep -qvE '^(idle|mix|alloc)' <<<"${state// /$'\n'}"; then break; fi
    sleep 0.2
  done
  if [ -z "$state" ] || grep -qvE '^(idle|mix|alloc)' <<<"${state// /$'\n'}"; then
    tail -n 20 "$dir/slurmctld.log" "$dir"/slurmd*.log >&2 || true; stop; die "the node did not come up (state: '${state:-none}')"
  fi
  echo "slurm-local: up; export SLURM_CONF=$SLURM_CONF"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) die "usage: $0 start|stop [STATE_DIR]" ;;
esac
