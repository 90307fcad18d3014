# gpuaccept's evidence step (plan.Evidence): what one node shows when a
# test's time ran out, collected before anything is stopped. $1 is the
# node's index. Every line is "gpuaccept-evidence|HOST|SECTION|TEXT":
#   gpus     nvidia-smi's GPU state (utilisation, memory, temperature, power)
#   xid      the driver's Xid lines in the kernel log
#   ras      node 0 only: ncclras's report of the job, where NCCL has it
#   procs    "PID STATE WCHAN RANK ARGS" of each process of the test on this
#            node: those of this step's own uid whose environment holds
#            this test's GPUACCEPT_TEST_ID (a random value per test, so
#            another user's or another test's process is never listed nor
#            traced); RANK from the MPI or Slurm environment, "-" when
#            none; ARGS with control characters made spaces, at most 4096
#            bytes
#   stack    a process's stacks: py-spy dump for Python, else eu-stack or
#            gdb where present; "stack|== PID" heads each
#   note     what could not be collected, and why
# Each tool is bounded (timeout 15 s where timeout exists); the launcher
# bounds the whole step (launch.DefaultEvidenceTimeout).
node=${1:-0}
host=$(hostname 2>/dev/null || uname -n 2>/dev/null || echo "node$node")
# Every tool's line is kept to printable text but its line ends.
say() { LC_ALL=C tr '\000-\011\013-\037\177' ' ' | sed "s/^/gpuaccept-evidence|$host|$1|/"; }
note() { printf '%s\n' "$*" | say note; }
have() { command -v "$1" >/dev/null 2>&1; }
bound() { if have timeout; then timeout 15 "$@"; else "$@"; fi; }

if have nvidia-smi; then
	bound nvidia-smi --query-gpu=index,pci.bus_id,utilization.gpu,memory.used,temperature.gpu,power.draw --format=csv,noheader 2>&1 | say gpus
else
	note "nvidia-smi not found: no GPU state"
fi

if log=$(bound dmesg 2>/dev/null) || log=$(bound journalctl -k --no-pager 2>/dev/null); then
	printf '%s\n' "$log" | grep -E 'NVRM: Xid' | tail -n 50 | say xid
else
	note "kernel log not readable (dmesg, journalctl -k): no XIDs"
fi

# NCCL's RAS (NCCL 2.24 and later) answers for the whole job which ranks
# are missing or behind, from any node where a rank runs: asked once.
if [ "$node" = 0 ] && have ncclras; then
	bound ncclras 2>&1 | say ras
fi

# The test's processes: every step of a test has GPUACCEPT_TEST_ID set to
# the same random value (hang.Mark), which only the launcher and the
# test's own processes know; this step's own processes carry its own step
# mark (GPUACCEPT_STEP_MARK) or descend from this shell. A process of
# another uid is never listed: its environment is its owner's to write,
# and a debugger of ours must never attach to it.
me=$$
uid=$(id -u 2>/dev/null)
mark=${GPUACCEPT_STEP_MARK:-}
pids=
# owned: pid $1's uids (real, effective, saved, fs) are all ours.
owned() {
	set -- $(grep '^Uid:' "/proc/$1/status" 2>/dev/null)
	[ "$#" -ge 5 ] && [ "$2" = "$uid" ] && [ "$3" = "$uid" ] && [ "$4" = "$uid" ] && [ "$5" = "$uid" ]
}
# clean makes a process's words one printable line: NULs, newlines and
# other control characters become spaces (no forged line, no terminal
# escape), at most 4096 bytes.
clean() { LC_ALL=C tr '\000-\037\177' ' ' 2>/dev/null | head -c 4096; }
if [ -z "${GPUACCEPT_TEST_ID:-}" ] || [ -z "$uid" ]; then
	note "GPUACCEPT_TEST_ID or the uid unknown: the test's processes cannot be told apart"
else
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" != "$me" ] || continue
		owned "$p" || continue
		env=$(tr '\0' '\n' 2>/dev/null <"$d/environ") || continue
		printf '%s\n' "$env" | grep -qxF "GPUACCEPT_TEST_ID=$GPUACCEPT_TEST_ID" || continue
		[ -z "$mark" ] || ! printf '%s\n' "$env" | grep -qxF "GPUACCEPT_STEP_MARK=$mark" || continue
		stat=$(cat "$d/stat" 2>/dev/null) || continue
		rest=${stat##*) }
		state=${rest%% *}
		rest=${rest#* }
		ppid=${rest%% *}
		[ "$ppid" != "$me" ] || continue
		args=$(clean <"$d/cmdline")
		case $args in *gpuaccept-evidence*) continue ;; esac
		wchan=$(clean <"$d/wchan")
		rank=$(printf '%s\n' "$env" | grep -E '^(OMPI_COMM_WORLD_RANK|PMIX_RANK|PMI_RANK|SLURM_PROCID)=[0-9]+$' | head -n 1)
		rank=${rank#*=}
		printf '%s %s %s %s %s\n' "$p" "$state" "${wchan:--}" "${rank:--}" "$args" | say procs
		pids="$pids $p"
	done
	[ -n "$pids" ] || note "no process of the test found on this node"
fi

n=0
for p in $pids; do
	n=$((n + 1))
	[ "$n" -le 8 ] || { note "stacks of the first 8 processes only"; break; }
	# Checked again: the pid may have ended and been reused since.
	owned "$p" || { note "pid $p ended or changed owner: no stacks"; continue; }
	args=$(clean <"/proc/$p/cmdline")
	echo "== $p" | say stack
	case $args in
	*python*)
		if have py-spy; then
			bound py-spy dump --pid "$p" 2>&1 | say stack
			continue
		fi
		;;
	esac
	if have eu-stack; then
		bound eu-stack -p "$p" 2>&1 | say stack
	elif have gdb; then
		bound gdb -batch -nx -p "$p" -ex 'thread apply all bt' 2>&1 | say stack
	else
		note "no py-spy, eu-stack or gdb: no stacks of pid $p"
	fi
done
exit 0
