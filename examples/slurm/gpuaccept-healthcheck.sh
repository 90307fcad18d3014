#!/bin/sh
# HealthCheckProgram for slurm.conf: gpuaccept health --slurm-check on this
# node, and a drain when it fails. Slurm's HealthCheckProgram takes no
# action on its exit code (slurm.conf(5): "Any action to be taken must be
# explicitly performed by the program"), so this wrapper drains the node
# itself; it is no prolog, so it may call scontrol. A Prolog or Epilog runs
# gpuaccept health --slurm-check directly instead: its exit code drains.
#
#   HealthCheckProgram=/usr/local/sbin/gpuaccept-healthcheck.sh
#   HealthCheckInterval=600
#
# Slurm kills the program after 60 s: keep --timeout under it. The suite
# is the one whose preflight tests check one node (h200 has health.node in
# node and multinode: node's is this node's check). The line is
# "gpuaccept health: OK", "... FAIL NODE CODE: REASON" (exit 1) or
# "... ERROR NODE: MESSAGE" (exit 3: a check could not run); any but OK
# drains.
PATH=/usr/local/bin:/usr/bin:/bin
SKU=${GPUACCEPT_SKU:-h200}
SUITE=${GPUACCEPT_SUITE:-node}
node=${SLURMD_NODENAME:-$(hostname -s)}
line=$(gpuaccept health --sku "$SKU" --suite "$SUITE" --slurm-check --timeout 45s 2>&1 | tail -n 1)
case "$line" in
"gpuaccept health: OK"*) exit 0 ;;
esac
# The reason shows in sinfo -R; Slurm keeps it as given.
scontrol update NodeName="$node" State=DRAIN Reason="$line"
exit 1
