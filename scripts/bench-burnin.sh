#!/usr/bin/env bash
# The burn-in's benchmark (framework/burnin BenchmarkBurnIn10k): 10^4
# recorded cycles judged across cycles and recorded, with the time per
# cycle, the heap after 10^3 and 10^4 cycles (flat) and the peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
go test ./framework/burnin -run '^$' -bench BenchmarkBurnIn10k -benchtime 1x -timeout 30m | grep Benchmark
