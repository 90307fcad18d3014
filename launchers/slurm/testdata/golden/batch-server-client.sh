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

# step server: 1 process(es), 1 per node
mkdir -p "$job/server.work" "$job/server.ranks"
cd "$job/server.work" || exit 1
(
	export GPUACCEPT_HOSTS="$(sed -n 1,2p "$job/hosts" | paste -sd, -)"
	exec srun --job-name=gpuaccept-ibperf.write_bw.server --nodes=1 --ntasks=1 --ntasks-per-node=1 --mpi=none --kill-on-bad-exit=1 --overlap --nodelist="$(sed -n 1p "$job/hosts")" /bin/sh -c 'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}; echo "$r ${SLURMD_NODENAME:-$(hostname)}" >"$0/$r"; exec "$@"' "$job/server.ranks" ib_write_bw -d mlx5_0
) >"$job/server.log" 2>&1 &
pid_server=$!
until grep -qF -e 'Waiting for client' "$job/server.log" 2>/dev/null || ! kill -0 "$pid_server" 2>/dev/null; do sleep 1; done

# step client: 1 process(es), 1 per node
mkdir -p "$job/client.work" "$job/client.ranks"
cd "$job/client.work" || exit 1
(
	export GPUACCEPT_HOSTS="$(sed -n 1,2p "$job/hosts" | paste -sd, -)"
	exec srun --job-name=gpuaccept-ibperf.write_bw.client --nodes=1 --ntasks=1 --ntasks-per-node=1 --mpi=none --kill-on-bad-exit=1 --overlap --nodelist="$(sed -n 2p "$job/hosts")" /bin/sh -c 'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}; echo "$r ${SLURMD_NODENAME:-$(hostname)}" >"$0/$r"; exec "$@"' "$job/client.ranks" ib_write_bw -d mlx5_0 '$SERVER'
) >"$job/client.log" 2>&1
echo $? >"$job/client.exit"

# steps started in the background
wait "$pid_server"; echo $? >"$job/server.exit"
