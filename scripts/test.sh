#!/usr/bin/env bash
# Runs every test: vet, then go test over the whole module. Integration tests
# that need a service (mpirun, ...) skip when it is missing, unless
# GPUACCEPT_INTEGRATION=required (as .ci/run sets), where they fail instead.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f .testenv/env ]; then
	# shellcheck disable=SC1091
	. .testenv/env
fi
go vet ./...
# The integration tests of a package share the test cluster with other
# packages' (Slurm jobs queue behind each other): more than go test's
# default 10 minutes per package.
# -json, read back into plain go test's output by gotest-summary.awk, which
# also counts the tests that skipped and says what each group needs to run
# (the integration tests name their scripts/testenv.sh service); the exit
# status stays go test's (pipefail).
go test -json -count=1 -timeout 25m "$@" ./... | awk -f scripts/gotest-summary.awk
