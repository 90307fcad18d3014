#!/usr/bin/env bash
# The results store's benchmark (framework/history BenchmarkStore): 10^6
# points inserted, then one GPU's trend read back, for SQLite and, when
# GPUACCEPT_TEST_POSTGRES is set (scripts/testenv.sh up postgres), for
# PostgreSQL; time and the process's peak RSS printed. One store a process,
# so that each peak RSS is its own (PostgreSQL's server is not counted).
set -euo pipefail
cd "$(dirname "$0")/.."
for store in sqlite postgres; do
	if [ "$store" = postgres ] && [ -z "${GPUACCEPT_TEST_POSTGRES:-}" ]; then
		echo "postgres: skipped (GPUACCEPT_TEST_POSTGRES unset: scripts/testenv.sh up postgres)"
		continue
	fi
	go test ./framework/history -run '^$' -bench "BenchmarkStore/$store\$" -benchtime 1x -timeout 30m | grep Benchmark
done
