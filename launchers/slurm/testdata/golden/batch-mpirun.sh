#!/bin/bash
#SBATCH --job-name=gpuaccept-nccl.all_reduce
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
#SBATCH --time=35
#SBATCH --output=/shared/results/raw/nccl.all_reduce/.slurm/job.out
#SBATCH --partition=gpu
# gpuaccept: test nccl.all_reduce on 2 node(s) x 8 GPU(s), MPI start: mpirun.
# Outputs go to the folder below, which every node must see at the same path.
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
	exec mpirun --allow-run-as-root -np 16 --map-by ppr:8:node -x GPUACCEPT_HOSTS -x NCCL_DEBUG -x NCCL_IB_HCA -x NCCL_TOPO_FILE -mca coll_hcoll_enable 0 --mca btl self,tcp /bin/sh -c 'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}; echo "$r ${SLURMD_NODENAME:-$(hostname)}" >"$0/$r"; exec "$@"' "$job/all_reduce.ranks" /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1 -J all_reduce.json
) >"$job/all_reduce.log" 2>&1
echo $? >"$job/all_reduce.exit"
