#!/bin/bash
#SBATCH --job-name=gpuaccept-ibperf.write_bw
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --output=/shared/r/raw/ibperf.write_bw/.slurm/job.out
# gpuaccept: test ibperf.write_bw on 2 node(s) x 1 GPU(s), MPI start: pmi2.
# Outputs go to the folder below, which every node must see at the same path.
set -u
job=/shared/r/raw/ibperf.write_bw/.slurm
[ -d "$job" ] || { echo "gpuaccept: $job is not visible on $(hostname): the results folder must be on a filesystem every node sees" >&2; exit 3; }
scontrol show hostnames "$SLURM_JOB_NODELIST" >"$job/hosts"
linger=10 grace=10 ranks=.ranks

# The order of gpuaccept's step sequencer (framework/launch.Sequence).
# Step N runs as step_N in the background, its output in NAME.log; once it
# ended, its exit status is in NAME.exit, and what the sequence did to it
# instead of letting it run to its end (not started, stopped) in NAME.why.
failed=   # the first failure: "step X failed (exit status N)"
running=  # the steps started that have not ended: their numbers
stopped=  # set once the background steps were stopped after a failure
monitors= # the monitor steps (the telemetry sampler): never waited for
evidence= # the evidence steps: run only when the test's time runs out

# gpuaccept_fail WHY: the first failure keeps every later step from starting.
gpuaccept_fail() { [ -n "$failed" ] || failed=$1; }

# gpuaccept_seen N: whether step N's readiness line showed in its log.
gpuaccept_seen() {
	[ -z "${step_ready[$1]}" ] || return 0
	grep -qF -e "${step_marker[$1]}" "$job/${step_name[$1]}.log" 2>/dev/null || return 1
	step_ready[$1]=1
}

# gpuaccept_running N...: whether any of the steps is still running.
gpuaccept_running() {
	local n m
	for n in "$@"; do
		for m in $running; do [ "$m" != "$n" ] || return 0; done
	done
	return 1
}

# gpuaccept_start N: step N in the background, with a watchdog for its own
# timeout.
gpuaccept_start() {
	local n=$1 name=${step_name[$1]}
	step_ready[$n]= step_watch[$n]=
	mkdir -p "$job/$name.work" "$job/$name$ranks"
	( cd "$job/$name.work" || exit 1; "step_$n" ) >"$job/$name.log" 2>&1 &
	step_pid[$n]=$!
	running="$running $n"
	if [ "${step_timeout[$n]}" -gt 0 ]; then
		(
			sleep "${step_timeout[$n]}" & s=$!
			trap 'kill $s 2>/dev/null; exit 0' TERM
			wait $s
			gpuaccept_stop "timed out after ${step_timeout[$n]}s" "$n"
		) &
		step_watch[$n]=$!
	fi
}

# gpuaccept_end N STATUS: step N ended; the sequencer's failure rule.
gpuaccept_end() {
	local n=$1 code=$2 name=${step_name[$1]} m w=
	echo "$code" >"$job/$name.exit"
	[ -z "${step_watch[$n]}" ] || kill "${step_watch[$n]}" 2>/dev/null
	running=$(for m in $running; do [ "$m" = "$n" ] || printf ' %s' "$m"; done)
	[ ! -f "$job/$name.why" ] || read -r w <"$job/$name.why"
	case $w in
	"timed out"*) gpuaccept_fail "step $name failed ($w)" ;;
	esac
	if [ -n "${step_marker[$n]}" ] && ! gpuaccept_seen "$n"; then
		gpuaccept_fail "${step_unready[$n]}"
	elif [ "$code" -ne 0 ]; then
		gpuaccept_fail "step $name failed (exit status $code)"
	fi
}

# gpuaccept_reap: note every step that has ended.
gpuaccept_reap() {
	local n
	for n in $running; do
		kill -0 "${step_pid[$n]}" 2>/dev/null && continue
		wait "${step_pid[$n]}"
		gpuaccept_end "$n" $?
	done
	return 0
}

# gpuaccept_stop WHY N...: stop the steps still running, SIGTERM then
# SIGKILL after $grace seconds, each told why.
gpuaccept_stop() {
	local why=$1 n t=$((SECONDS + grace))
	shift
	for n in "$@"; do
		kill -0 "${step_pid[$n]}" 2>/dev/null || continue
		printf '%s\n' "$why" >"$job/${step_name[$n]}.why"
		kill -TERM "${step_pid[$n]}" 2>/dev/null
	done
	for n in "$@"; do
		while kill -0 "${step_pid[$n]}" 2>/dev/null && [ "$SECONDS" -lt "$t" ]; do sleep 1; done
		kill -KILL "${step_pid[$n]}" 2>/dev/null
	done
}

# gpuaccept_linger: after a failure the background steps still running
# (servers whose clients ended or will never start) get $linger seconds to
# end by themselves, then are stopped.
gpuaccept_linger() {
	[ -z "$stopped" ] || return 0
	stopped=1
	local t=$((SECONDS + linger))
	gpuaccept_reap
	while [ -n "$running" ] && [ "$SECONDS" -lt "$t" ]; do sleep 1; gpuaccept_reap; done
	gpuaccept_stop "stopped after $failed" $running
	gpuaccept_reap
}

# gpuaccept_blocked N...: after a failure the steps do not start.
gpuaccept_blocked() {
	[ -n "$failed" ] || return 1
	local n
	for n in "$@"; do printf 'not started: %s\n' "$failed" >"$job/${step_name[$n]}.why"; done
	gpuaccept_linger
	return 0
}

# gpuaccept_background N: a step with a readiness line; the next step
# starts once the line shows or the step ended.
gpuaccept_background() {
	gpuaccept_blocked "$1" && return
	gpuaccept_start "$1"
	while :; do
		gpuaccept_seen "$1" && return
		gpuaccept_reap
		gpuaccept_running "$1" || return
		sleep 1
	done
}

# gpuaccept_monitor N: a step beside the others (plan.Monitor): the next
# step starts once its readiness line showed, it ended, or 30 s passed;
# nothing waits for it, it fails nothing, and gpuaccept_finish stops it.
gpuaccept_monitor() {
	gpuaccept_blocked "$1" && return
	local n=$1 m t=$((SECONDS + 30))
	gpuaccept_start "$n"
	running=$(for m in $running; do [ "$m" = "$n" ] || printf ' %s' "$m"; done)
	monitors="$monitors $n"
	while [ "$SECONDS" -lt "$t" ] && kill -0 "${step_pid[$n]}" 2>/dev/null; do
		gpuaccept_seen "$n" && return
		sleep 1
	done
}

# gpuaccept_evidence N: an evidence step (plan.Evidence), run only by
# gpuaccept_timed_out; until then it did not run (launch.EvidenceNotRun).
gpuaccept_evidence() {
	evidence="$evidence $1"
	printf '%s\n' "not run: the test did not time out" >"$job/${step_name[$1]}.why"
}

# gpuaccept_timed_out: SIGUSR1 from gpuaccept (the scheduler's signal to
# the batch script, batch.Signaller) once the test's time ran out: the
# evidence steps run while the test's steps still do, each bounded by its
# own timeout, and only then are the steps stopped, as timed out
# (launch.Sequence's rule). The job is cancelled after it.
gpuaccept_timed_out() {
	trap '' USR1
	local n m
	for n in $evidence; do
		rm -f "$job/${step_name[$n]}.why"
		gpuaccept_start "$n"
	done
	for n in $evidence; do
		wait "${step_pid[$n]}"
		echo $? >"$job/${step_name[$n]}.exit"
		[ -z "${step_watch[$n]}" ] || kill "${step_watch[$n]}" 2>/dev/null
		running=$(for m in $running; do [ "$m" = "$n" ] || printf ' %s' "$m"; done)
	done
	gpuaccept_fail "the test timed out first"
	stopped=1
	gpuaccept_stop "timed out after ${SECONDS}s of the job" $running
}
trap gpuaccept_timed_out USR1

# gpuaccept_group N...: steps started together and waited for, then every
# step started before them, unless a failure stops the rest.
gpuaccept_group() {
	gpuaccept_blocked "$@" && return
	local n
	for n in "$@"; do gpuaccept_start "$n"; done
	for n in "$@"; do
		gpuaccept_running "$n" || continue
		wait "${step_pid[$n]}"
		gpuaccept_end "$n" $?
	done
	gpuaccept_reap
	while [ -n "$running" ] && [ -z "$failed" ]; do sleep 1; gpuaccept_reap; done
}

# gpuaccept_finish: the background steps left, after the last group.
gpuaccept_finish() {
	local n
	[ -z "$failed" ] || gpuaccept_linger
	for n in $running; do
		wait "${step_pid[$n]}"
		gpuaccept_end "$n" $?
	done
	[ -z "$monitors" ] || gpuaccept_stop "stopped: the test's steps ended" $monitors
	for n in $monitors; do
		wait "${step_pid[$n]}"
		echo $? >"$job/${step_name[$n]}.exit"
		[ -z "${step_watch[$n]}" ] || kill "${step_watch[$n]}" 2>/dev/null
	done
	return 0
}

# step server: 1 process(es), 1 per node
step_name[0]=server step_timeout[0]=0 step_marker[0]='Waiting for client'
step_unready[0]='step server ended before its readiness line "Waiting for client" showed'
step_0() {
	export GPUACCEPT_HOSTS="$(sed -n 1,2p "$job/hosts" | paste -sd, -)"
	exec srun --job-name=gpuaccept-ibperf.write_bw.server --nodes=1 --ntasks=1 --ntasks-per-node=1 --mpi=none --kill-on-bad-exit=1 --overlap --nodelist="$(sed -n 1p "$job/hosts")" /bin/sh -c 'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}; echo "$r ${SLURMD_NODENAME:-$(hostname)}" >"$0/$r"; exec "$@"' "$job/server.ranks" ib_write_bw -d mlx5_0
}

# step client: 1 process(es), 1 per node
step_name[1]=client step_timeout[1]=0 step_marker[1]=''
step_1() {
	export GPUACCEPT_HOSTS="$(sed -n 1,2p "$job/hosts" | paste -sd, -)"
	exec srun --job-name=gpuaccept-ibperf.write_bw.client --nodes=1 --ntasks=1 --ntasks-per-node=1 --mpi=none --kill-on-bad-exit=1 --overlap --nodelist="$(sed -n 2p "$job/hosts")" /bin/sh -c 'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}; echo "$r ${SLURMD_NODENAME:-$(hostname)}" >"$0/$r"; exec "$@"' "$job/client.ranks" ib_write_bw -d mlx5_0 '$SERVER'
}

# the steps, in the sequencer's order
gpuaccept_background 0
gpuaccept_group 1
gpuaccept_finish
