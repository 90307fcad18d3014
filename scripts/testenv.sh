#!/usr/bin/env bash
# Test environment for gpuaccept's integration tests.
#
#   scripts/testenv.sh up [mpi ...]   install what is missing and start the real
#                                     services the tests use; writes .testenv/env
#   scripts/testenv.sh down           stop every daemon it started, by pid
#
# Services today: mpi (Open MPI's mpirun from Debian, for the local launcher's
# two-rank test). The Slurm, ssh and Kubernetes launchers add theirs here.
set -euo pipefail
cd "$(dirname "$0")/.."
state=.testenv
mkdir -p "$state"

need_apt() {
	local missing=()
	for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
	if [ ${#missing[@]} -gt 0 ]; then
		if [ "$(id -u)" != 0 ]; then
			echo "testenv: need Debian packages ${missing[*]} (run as root, or install them)" >&2
			return 1
		fi
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	fi
}

up_mpi() {
	need_apt openmpi-bin
	echo "export GPUACCEPT_MPIRUN=$(command -v mpirun)" >>"$state/env"
}

case "${1:-}" in
up)
	shift
	services=("$@")
	[ ${#services[@]} -gt 0 ] || services=(mpi)
	: >"$state/env"
	for s in "${services[@]}"; do
		case "$s" in
		mpi) up_mpi ;;
		*) echo "testenv: unknown service $s (known: mpi)" >&2; exit 2 ;;
		esac
	done
	echo "testenv: up (${services[*]}); variables in $state/env"
	;;
down)
	if [ -d "$state/pids" ]; then
		for f in "$state"/pids/*; do
			[ -e "$f" ] || continue
			kill "$(cat "$f")" 2>/dev/null || true
			rm -f "$f"
		done
	fi
	echo "testenv: down"
	;;
*)
	echo "usage: scripts/testenv.sh up [mpi ...] | down" >&2
	exit 2
	;;
esac
