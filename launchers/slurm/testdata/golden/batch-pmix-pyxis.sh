#!/bin/bash
#SBATCH --job-name=gpuaccept-nccl.all_reduce
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gres=gpu:8
#SBATCH --exclusive
#SBATCH --time=1:00:00
#SBATCH --output=/shared/results/raw/nccl.all_reduce/.slurm/job.out
#SBATCH --partition=gpu
#SBATCH --account=acct-1
#SBATCH --qos=high
#SBATCH --reservation=accept_2026
#SBATCH --nodelist=gpu-a01,gpu-a02
#SBATCH --constraint=ib&nvlink
#SBATCH --signal=B:USR1@60
# gpuaccept: test nccl.all_reduce on 2 node(s) x 8 GPU(s), MPI start: pmix.
# Outputs go to the folder below, which every node must see at the same path.
set -u
job=/shared/results/raw/nccl.all_reduce/.slurm
[ -d "$job" ] || { echo "gpuaccept: $job is not visible on $(hostname): the results folder must be on a filesystem every node sees" >&2; exit 3; }
printf '%s\n' gpu-a01 gpu-a02 >"$job/hosts"

# step all_reduce: 16 process(es), 8 per node
mkdir -p "$job/all_reduce.work" "$job/all_reduce.ranks"
cd "$job/all_reduce.work" || exit 1
(
	export OMPI_MCA_coll_hcoll_enable=0
	export GPUACCEPT_HOSTS="$(sed -n 1,2p "$job/hosts" | paste -sd, -)"
	export NCCL_DEBUG=INFO
	export NCCL_TOPO_FILE='/etc/ndv4 topo.xml'
	exec srun --job-name=gpuaccept-nccl.all_reduce.all_reduce --nodes=2 --ntasks=16 --ntasks-per-node=8 --mpi=pmix --kill-on-bad-exit=1 '--container-image=nvcr.io#nvidia/pytorch:24.05-py3' --container-mounts=/shared:/shared,/opt/nccl-tests:/opt/nccl-tests,/shared/results/raw/nccl.all_reduce/.slurm:/shared/results/raw/nccl.all_reduce/.slurm --container-workdir=/shared/results/raw/nccl.all_reduce/.slurm/all_reduce.work /bin/sh -c 'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}; echo "$r ${SLURMD_NODENAME:-$(hostname)}" >"$0/$r"; exec "$@"' "$job/all_reduce.ranks" /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1 -J all_reduce.json
) >"$job/all_reduce.log" 2>&1
echo $? >"$job/all_reduce.exit"
