#!/usr/bin/env bash
# Test environment for gpuaccept's integration tests.
#
#   scripts/testenv.sh up [SERVICE ...]   install what is missing and start the
#                                         real services the tests use (all when
#                                         none is named); writes .testenv/env
#   scripts/testenv.sh down               stop every daemon it started, by pid
#
# Each service lives in scripts/testenv.d/NAME.sh and defines up_NAME (and
# down_NAME when its daemons must stop in a given order). Helpers they use:
#   need_apt PKG...      install missing Debian packages
#   setenv NAME VALUE    export NAME=VALUE to the tests through .testenv/env
#   started NAME PID     record a daemon's pid so "down" stops it
# Tests source nothing: they read the variables from the environment, which
# scripts/test.sh loads from .testenv/env.
set -euo pipefail
cd "$(dirname "$0")/.."
# Resolved: teardown finds the mounts under it in /proc/mounts, which holds
# resolved paths.
root=$(pwd -P)
state=$root/.testenv
mkdir -p "$state/pids"

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

setenv() { printf 'export %s=%q\n' "$1" "$2" >>"$state/env"; }

started() { echo "$2" >"$state/pids/$1"; }

# stop_pid NAME: stop the daemon recorded as NAME (TERM, then KILL after 10 s).
stop_pid() {
	local f=$state/pids/$1 pid
	[ -e "$f" ] || return 0
	pid=$(cat "$f")
	if kill "$pid" 2>/dev/null; then
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

known=()
for f in scripts/testenv.d/*.sh; do
	# shellcheck source=/dev/null
	. "$f"
	known+=("$(basename "$f" .sh)")
done

case "${1:-}" in
up)
	shift
	services=("$@")
	[ ${#services[@]} -gt 0 ] || services=("${known[@]}")
	: >"$state/env"
	for s in "${services[@]}"; do
		if ! declare -F "up_$s" >/dev/null; then
			echo "testenv: unknown service $s (known: ${known[*]})" >&2
			exit 2
		fi
		"up_$s"
	done
	echo "testenv: up (${services[*]}); variables in $state/env"
	;;
down)
	for s in "${known[@]}"; do
		if declare -F "down_$s" >/dev/null; then "down_$s" || true; fi
	done
	for f in "$state"/pids/*; do
		[ -e "$f" ] || continue
		stop_pid "$(basename "$f")"
	done
	echo "testenv: down"
	;;
*)
	echo "usage: scripts/testenv.sh up [${known[*]}] | down" >&2
	exit 2
	;;
esac
