# Service "slurm": a real Slurm cluster on loopback for the slurm launcher's
# tests. Sourced by scripts/testenv.sh.
#
# One slurmctld and six slurmd (nodes n1 and n2 in partition debug, n3 to n6
# in partition loc, 8 CPUs each, declared with config_overrides) on this
# machine, munged as the munge
# user on its own socket, and slurmdbd on a MariaDB started by hand, so sacct
# works. Every daemon runs in the foreground of a background job, so the pid
# recorded with "started" is the daemon's own and "down" stops it; setsid
# keeps them out of the caller's process group, so they outlive it. State,
# logs and configuration live in .testenv/slurm; ports 17800-17819 only.
#
# Ports: slurmctld 17800, slurmd n1 17801 and n2 17802, slurmdbd 17803,
# MariaDB 17804, slurmd n3 to n6 17805 to 17808.
#
# Variables for the tests: SLURM_CONF (the cluster's slurm.conf),
# GPUACCEPT_SLURM_PARTITION (debug: n1 and n2, the nodes tests that name
# ranks' nodes expect), GPUACCEPT_SLURM_LOC_PARTITION and
# GPUACCEPT_SLURM_LOC_NODES (loc: n3,n4,n5,n6, four nodes for tests that
# need more than two, e.g. finding a bad node, kept apart so they never
# queue behind the debug tests), GPUACCEPT_SLURM_NOACCT_CONF (the same
# cluster's configuration without accounting, for sacct's "accounting
# storage is disabled" answer).

slurm_dir() { echo "$state/slurm"; }

up_slurm() {
	need_apt slurmctld slurmd slurm-client munge slurmdbd slurm-wlm-mysql-plugin mariadb-server openmpi-bin
	local d
	d=$(slurm_dir)
	mkdir -p "$d"/{state,spool,log,run,munge,db}
	# The cluster is reused when all its daemons run and were started by
	# this very script; an edited script restarts it with the new settings.
	local version
	version=$(cksum <"$root/scripts/testenv.d/slurm.sh")
	if slurm_alive && [ "$(cat "$d/version" 2>/dev/null)" = "$version" ]; then
		slurm_env "$d"
		echo "testenv: slurm already up"
		return 0
	fi
	# A half-started or outdated cluster from an earlier run goes first.
	down_slurm
	slurm_write_conf "$d"
	echo "$version" >"$d/version"
	slurm_start_munge "$d"
	slurm_start_mariadb "$d"
	slurm_start_slurmdbd "$d"
	slurm_start_slurmctld "$d"
	local n
	for n in n1 n2 n3 n4 n5 n6; do slurm_start_slurmd "$d" "$n"; done
	slurm_wait "nodes idle" bash -c 'test "$(SLURM_CONF='"$d"'/slurm.conf sinfo -h -N -o %T | sort -u)" = idle'
	slurm_env "$d"
}

slurm_env() {
	setenv SLURM_CONF "$1/slurm.conf"
	setenv GPUACCEPT_SLURM_PARTITION debug
	setenv GPUACCEPT_SLURM_LOC_PARTITION loc
	setenv GPUACCEPT_SLURM_LOC_NODES n3,n4,n5,n6
	setenv GPUACCEPT_SLURM_NOACCT_CONF "$1/noacct/slurm.conf"
}

slurm_daemons=(slurmd-n1 slurmd-n2 slurmd-n3 slurmd-n4 slurmd-n5 slurmd-n6 slurmctld slurmdbd slurm-mariadb slurm-munged)

slurm_alive() {
	local n
	for n in "${slurm_daemons[@]}"; do
		[ -e "$state/pids/$n" ] && kill -0 "$(cat "$state/pids/$n")" 2>/dev/null || return 1
	done
}

down_slurm() {
	local n
	# Nodes before the controller, the controller before its database.
	for n in "${slurm_daemons[@]}"; do stop_pid "$n"; done
}

# slurm_wait WHAT CMD...: run CMD until it succeeds, for at most 30 s.
slurm_wait() {
	local what=$1 i
	shift
	for i in $(seq 300); do
		if timeout 5 "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	echo "testenv: slurm: gave up waiting for $what; logs in $(slurm_dir)/log" >&2
	return 1
}

slurm_write_conf() {
	local d=$1
	cat >"$d/slurm.conf" <<EOF
# Written by scripts/testenv.d/slurm.sh: a six-node cluster on loopback.
ClusterName=gpuaccept
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=17800
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=2
# Ended jobs leave the controller after 10 s (purged at most a minute
# later), so the tests also see jobs only sacct still knows.
MinJobAge=10
InactiveLimit=0
SchedulerParameters=sched_interval=1
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=17803
# The munge socket for the connection to slurmdbd (not a password).
AccountingStoragePass=$d/munge/munge.socket
JobAcctGatherType=jobacct_gather/none
NodeName=n1 NodeAddr=127.0.0.1 NodeHostname=localhost Port=17801 CPUs=8 RealMemory=1000 State=UNKNOWN
NodeName=n2 NodeAddr=127.0.0.1 NodeHostname=localhost Port=17802 CPUs=8 RealMemory=1000 State=UNKNOWN
NodeName=n3 NodeAddr=127.0.0.1 NodeHostname=localhost Port=17805 CPUs=8 RealMemory=1000 State=UNKNOWN
NodeName=n4 NodeAddr=127.0.0.1 NodeHostname=localhost Port=17806 CPUs=8 RealMemory=1000 State=UNKNOWN
NodeName=n5 NodeAddr=127.0.0.1 NodeHostname=localhost Port=17807 CPUs=8 RealMemory=1000 State=UNKNOWN
NodeName=n6 NodeAddr=127.0.0.1 NodeHostname=localhost Port=17808 CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
PartitionName=loc Nodes=n3,n4,n5,n6 MaxTime=INFINITE State=UP
EOF
	cat >"$d/slurmdbd.conf" <<EOF
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=17803
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=17804
StorageUser=root
StorageLoc=slurm_acct_db
PidFile=$d/run/slurmdbd.pid
LogFile=$d/log/slurmdbd.log
EOF
	chmod 600 "$d/slurmdbd.conf"
	mkdir -p "$d/noacct"
	sed -e 's/^AccountingStorageType=.*/AccountingStorageType=accounting_storage\/none/' \
		-e '/^AccountingStorage\(Host\|Port\|Pass\)=/d' "$d/slurm.conf" >"$d/noacct/slurm.conf"
}

slurm_start_munge() {
	local d=$1
	# munged refuses root, and wants its files owned by its user.
	chown munge:munge "$d/munge"
	chmod 700 "$d/munge"
	if [ ! -s "$d/munge/munge.key" ]; then
		dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 2>/dev/null
	fi
	chown munge:munge "$d/munge/munge.key"
	chmod 400 "$d/munge/munge.key"
	setsid setpriv --reuid=munge --regid=munge --init-groups \
		munged --foreground --force --socket="$d/munge/munge.socket" --key-file="$d/munge/munge.key" \
		--pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" --seed-file="$d/munge/munged.seed" \
		>>"$d/log/munged.out" 2>&1 &
	started slurm-munged $!
	slurm_wait munged bash -c "munge -n -S '$d/munge/munge.socket' | unmunge -S '$d/munge/munge.socket'"
}

slurm_start_mariadb() {
	local d=$1
	if [ ! -d "$d/db/data/mysql" ]; then
		mariadb-install-db --no-defaults --user=root --datadir="$d/db/data" --auth-root-authentication-method=normal \
			>"$d/log/mariadb-install.log" 2>&1
	fi
	# Loopback only, and no grant tables: slurmdbd logs in as root without a
	# password; nothing but this test cluster reaches the port.
	setsid mariadbd --no-defaults --user=root --datadir="$d/db/data" --socket="$d/db/mysqld.sock" \
		--pid-file="$d/db/mysqld.pid" --port=17804 --bind-address=127.0.0.1 --skip-grant-tables \
		--log-error="$d/log/mariadb.log" --innodb-buffer-pool-size=32M >/dev/null 2>&1 &
	started slurm-mariadb $!
	slurm_wait mariadb mariadb-admin --no-defaults --socket="$d/db/mysqld.sock" ping
}

slurm_start_slurmdbd() {
	local d=$1
	SLURM_CONF=$d/slurm.conf setsid slurmdbd -D >>"$d/log/slurmdbd.out" 2>&1 &
	started slurmdbd $!
	slurm_wait slurmdbd env SLURM_CONF="$d/slurm.conf" sacctmgr -n show cluster
}

slurm_start_slurmctld() {
	local d=$1
	SLURM_CONF=$d/slurm.conf setsid slurmctld -D -c -i >>"$d/log/slurmctld.out" 2>&1 &
	started slurmctld $!
	slurm_wait slurmctld env SLURM_CONF="$d/slurm.conf" scontrol ping
}

slurm_start_slurmd() {
	local d=$1 n=$2
	mkdir -p "$d/spool/$n"
	SLURM_CONF=$d/slurm.conf setsid slurmd -D -N "$n" >>"$d/log/slurmd-$n.out" 2>&1 &
	started "slurmd-$n" $!
}
