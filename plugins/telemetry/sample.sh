# gpuaccept telemetry sampler: runs on one node beside a test's steps, in
# POSIX sh, until it is sent TERM (or INT). Every line it prints is
# "HOST|SECTION|TEXT", like plugins/health/collect.sh's, so that Parse
# knows the node and the source of each line.
# $1: the sampling interval in ms; $2: the node's index in the topology.
iv=${1:-1000}
node=${2:-}
# cap cuts every line a tool prints into pieces of at most 4096 bytes
# ($1: another width) before tag's read holds it: a stream that never
# prints a line end (a broken sampler, a hostile tool) would else fill
# the shell's memory and lose every later sample. Parse knows a piece of exactly 4096 bytes
# as a cut line. Without fold (coreutils, busybox) lines are read whole.
if command -v fold >/dev/null 2>&1; then
	cap() { fold -b -w "${1:-4096}"; }
else
	cap() { cat; }
fi
# The node's name: under Kubernetes the Node's (GPUACCEPT_NODE_NAME, or
# the file a rank pod left it in), else the node's entry of
# GPUACCEPT_HOSTS, else the host name.
h=${GPUACCEPT_NODE_NAME:-}
if [ -z "$h" ] && [ -r /etc/gpuaccept-node-name ]; then
	h=$(cap 255 </etc/gpuaccept-node-name | sed -n 1p)
fi
if [ -z "$h" ] && [ -n "$node" ] && [ -n "${GPUACCEPT_HOSTS:-}" ]; then
	h=$(printf '%s\n' "$GPUACCEPT_HOSTS" | tr ',' '\n' | sed -n "$((node + 1))p")
fi
[ -n "$h" ] || h=$(hostname 2>/dev/null || uname -n)
h=$(printf '%s' "$h" | tr -d '|\n' | cap 255 | sed -n 1p)
# tag prints each line of its input as HOST|SECTION|TEXT; a last line
# without its line end (the stream ended mid-line) as "@partial TEXT".
tag() {
	while IFS= read -r l; do printf '%s|%s|%s\n' "$h" "$1" "$l"; done
	[ -z "$l" ] || printf '%s|%s|@partial %s\n' "$h" "$1" "$l"
}
say() { printf '%s|%s|%s\n' "$h" "$1" "$2"; }
have() { command -v "$1" >/dev/null 2>&1; }
pid= tpid= spid= tool=none
say begin "gpuaccept-telemetry 1 start=$(date +%s) interval_ms=$iv"
# The kernel log's XID lines now, to print the new ones at the end. dmesg
# is refused without root where dmesg_restrict is set: say so, sample on.
kl=0
if ! have dmesg; then
	say kernel-log "@absent dmesg"
elif dmesg >/dev/null 2>&1; then
	kl=1
	x0=$(dmesg | cap | grep -c 'NVRM: Xid')
else
	say kernel-log "@refused dmesg: $(dmesg 2>&1 >/dev/null | cap | head -n 1)"
fi
# PCIe replays are no --query-gpu field: nvidia-smi -q -d PCIE shows them
# ("Replays Since Reset"), read at the start and at the end.
replays() { nvidia-smi -q -d PCIE 2>&1 | cap | grep -e '^GPU ' -e 'Replays Since Reset' | tag "$1"; }
# TERM (or INT) stops the sampler and its reader, prints what changed
# since the start and ends the step with status 0: being stopped is how
# a monitor ends.
finish() {
	trap '' TERM INT
	[ -z "$pid" ] || kill "$pid" 2>/dev/null
	[ -z "$spid" ] || kill "$spid" 2>/dev/null
	[ -z "$pid" ] || wait "$pid" 2>/dev/null
	[ -z "$tpid" ] || wait "$tpid" 2>/dev/null
	[ "$tool" != nvidia-smi ] || replays replay-end
	if [ "$kl" = 1 ]; then
		dmesg 2>/dev/null | cap | grep 'NVRM: Xid' | tail -n +"$((x0 + 1))" | tag xid
	fi
	say end "gpuaccept-telemetry: stopped"
	[ -z "$d" ] || rm -rf "$d"
	exit 0
}
trap finish TERM INT
d=$(mktemp -d "${TMPDIR:-/tmp}/gpuaccept-telemetry.XXXXXX" 2>/dev/null) && mkfifo "$d/p" 2>/dev/null || {
	[ -z "$d" ] || rm -rf "$d"
	say none "no FIFO for the sampler in ${TMPDIR:-/tmp} (mktemp -d or mkfifo failed): nothing sampled"
	d=
}
# The sampler writes into a FIFO and tag reads it, so that $pid is the
# sampler itself, which TERM must stop, not a pipeline's last command.
sec=
run() { sec=$1; shift; "$@" >"$d/p" 2>&1 & pid=$!; cap <"$d/p" | tag "$sec" & tpid=$!; }
if [ -z "$d" ]; then
	:
elif have nvidia-smi; then
	tool=nvidia-smi
	full=timestamp,index,uuid,serial,pci.bus_id,utilization.gpu,clocks.sm,clocks.mem,power.draw,enforced.power.limit,temperature.gpu,temperature.memory,clocks_event_reasons.active,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max
	core=timestamp,index,uuid,pci.bus_id,utilization.gpu,clocks.sm,clocks.mem,power.draw,temperature.gpu
	# A driver that does not know one field refuses the whole query: ask
	# once without a loop, then fall back (clocks_throttle_reasons is the
	# older name of clocks_event_reasons).
	q=
	for c in "$full" "$(printf '%s' "$full" | sed 's/clocks_event_reasons/clocks_throttle_reasons/')" "$core,clocks_event_reasons.active" "$core,clocks_throttle_reasons.active" "$core"; do
		if nvidia-smi --query-gpu="$c" --format=csv,noheader >/dev/null 2>&1; then
			q=$c
			break
		fi
	done
	[ -n "$q" ] || q=$core
	replays replay-start
	run nvsmi nvidia-smi --query-gpu="$q" --format=csv,nounits -lms "$iv"
elif have dcgmi; then
	tool=dcgmi
	say begin "@fields 100,101,150,140,155,160,203,112,202,310,311"
	run dcgmi dcgmi dmon -e 100,101,150,140,155,160,203,112,202,310,311 -d "$iv"
elif have amd-smi; then
	tool=amd-smi
	run amdsmi amd-smi monitor -w $(((iv + 999) / 1000))
else
	say none "no nvidia-smi, dcgmi or amd-smi on PATH: nothing sampled"
fi
say begin "gpuaccept-telemetry: sampling with $tool"
if [ -n "$pid" ]; then
	wait "$pid"
	say "$sec" "@exit $?"
	wait "$tpid"
	tpid=
	pid=
fi
# The sampler ended by itself, or there is none: wait for TERM all the
# same, so that the step ends when the test's steps did.
while :; do
	sleep 1 &
	spid=$!
	wait "$spid"
	spid=
done
