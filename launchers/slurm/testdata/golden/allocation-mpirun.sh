#!/bin/bash
# gpuaccept: test nccl.all_reduce on 2 node(s) x 8 GPU(s), MPI start: mpirun.
# Runs inside the allocation $SLURM_JOB_ID; outputs go to the folder below,
# which every node must see at the same path.
set -u
job=/shared/results/raw/nccl.all_reduce/.slurm
[ -d "$job" ] || { echo "gpuaccept: $job is not visible on $(hostname): the results folder must be on a filesystem every node sees" >&2; exit 3; }
scontrol show hostnames "$SLURM_JOB_NODELIST" >"$job/hosts"

# step all_reduce: 16 process(es), 8 per node
mkdir -p "$job/all_reduce.work" "$job/all_reduce.ranks"
cd "$job/all_reduce.work" || exit 1
(
	export GPUACCEPT_HOSTS="$(sed -n 1,2p "$job/hosts" | paste -sd, -)"
	export NCCL_DEBUG=INFO
	export NCCL_TOPO_FILE='/etc/ndv4 topo.xml'
	exec mpirun -np 16 --map-by ppr:8:node --host n1:8,n2:8 -x GPUACCEPT_HOSTS -x NCCL_DEBUG -x NCCL_TOPO_FILE -mca coll_hcoll_enable 0 /bin/sh -c 'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}; echo "$r ${SLURMD_NODENAME:-$(hostname)}" >"$0/$r"; exec "$@"' "$job/all_reduce.ranks" /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1 -J all_reduce.json
) >"$job/all_reduce.log" 2>&1
echo $? >"$job/all_reduce.exit"
