#!/bin/bash
# Issue 33 on the 1-GPU machine: a burn-in that passes, and the same with
# a competing matmul started half-way (at cycle 4 of 6) that must fail on
# drift; telemetry beside every test; verify and report of both; plus
# nvidia-smi -lms samples idle and under the competing load for the
# telemetry field corpus.
set -u
# The SKU of whichever board came: h100 or h200.
SKU=h100; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && SKU=h200
R=/tmp/r33; mkdir -p $R; cd $R
exec > >(tee $OUT/run33.log) 2>&1
gunzip -c $OLDPWD/.thirdparty/bin/gpuaccept.gz > /tmp/gpuaccept; chmod +x /tmp/gpuaccept
G=/tmp/gpuaccept
date -u; hostname; python3 -c "import torch; print(torch.__version__, torch.version.cuda)"
nvidia-smi --query-gpu=name,serial,pci.bus_id,driver_version,clocks.sm,temperature.gpu,power.draw,enforced.power.limit --format=csv
F=timestamp,index,uuid,serial,pci.bus_id,utilization.gpu,clocks.sm,clocks.mem,power.draw,enforced.power.limit,temperature.gpu,temperature.memory,clocks_event_reasons.active,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max
timeout 6 nvidia-smi --query-gpu=$F --format=csv -lms 1000 > smi-lms-idle.csv 2>&1
cat > /tmp/compete.py <<'PY'
import torch, time, sys
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(50): c = a @ b
    torch.cuda.synchronize()
PY
echo "== burn-in pass: 4 cycles"; T0=$(date +%s)
timeout -s INT 200 $G run --sku $SKU --launcher local --gpus-per-node 1 --cycles 4 --out bi-pass > bi-pass.stdout 2>&1; echo "bi-pass rc=$? took $(( $(date +%s) - T0 ))s"
grep -a "^burn-in cycle\|^BURN-IN\|FAIL\|ERROR" bi-pass.stdout | head -20
tar czf $OUT/r1-pass.tgz bi-pass bi-pass.stdout smi-lms-idle.csv 2>/dev/null
echo "== burn-in with a competing matmul from cycle 3 of 5"; T0=$(date +%s)
( while [ ! -d bi-drift/cycle-0003 ]; do sleep 1; done; echo "competing matmul starts $(date -u +%T)";
  nvidia-smi --query-gpu=$F --format=csv -lms 1000 > smi-lms-compete.csv 2>&1 & S=$!
  python3 /tmp/compete.py 400 > compete.log 2>&1 & P=$!
  while [ ! -f bi-drift/burnin.txt ]; do sleep 1; done; kill $P $S 2>/dev/null; wait $P $S 2>/dev/null; echo "competing matmul stopped $(date -u +%T)" ) &
W=$!
timeout -s INT 230 $G run --sku $SKU --launcher local --gpus-per-node 1 --cycles 5 --out bi-drift > bi-drift.stdout 2>&1; echo "bi-drift rc=$? took $(( $(date +%s) - T0 ))s"
wait $W
grep -a "^burn-in cycle\|^BURN-IN\|^FAIL\|^WARN\|^ERROR" bi-drift.stdout | head -20
for d in bi-pass bi-drift; do $G verify $d > verify-$d.stdout 2>&1; echo "verify $d rc=$?"; tail -1 verify-$d.stdout | cut -c1-300; done
grep -o "while GPU[^;\"]*" bi-drift/cycle-000[3-5]/results.json | head -5
tar czf $OUT/r2-drift.tgz bi-drift bi-drift.stdout smi-lms-compete.csv compete.log verify-bi-*.stdout 2>/dev/null

echo "== issue 34: nccl-tests all_reduce hung by SIGSTOP, evidence at the timeout"; T0=$(date +%s)
NP=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')
ln -sf libnccl.so.2 $NP/lib/libnccl.so
( make -C $OLDPWD/.thirdparty/nccl-tests -j16 MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi NCCL_HOME=$NP CUDA_HOME=/usr/local/cuda NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 > nccl-build.log 2>&1 ) ; echo "nccl-tests build rc=$? took $(( $(date +%s) - T0 ))s"
export LD_LIBRARY_PATH=$NP/lib:${LD_LIBRARY_PATH:-}
mkdir -p skus; cp $OLDPWD/baselines/$SKU.yaml skus/$SKU.yaml
sed -i 's/^suites:$/suites:\n  hang:\n    description: issue 34 on one GPU, all_reduce with evidence at a 45 s timeout\n    nodes: 1\n    tests:\n      - test: nccl.all_reduce\n        timeout: 45s\n        params: {evidence: "true", minbytes: "8", maxbytes: 8G, stepfactor: "2"}/' skus/$SKU.yaml
( for i in $(seq 120); do P=$(pgrep -f "build/all_reduce_perf" | head -1); [ -n "$P" ] && { sleep 4; kill -STOP $P; echo "SIGSTOP pid $P at $(date -u +%T)"; break; }; sleep 0.5; done ) &
timeout -s INT 110 $G run --sku $SKU --baselines skus --suite hang --launcher local --gpus-per-node 1 --param nccl:bindir=$OLDPWD/.thirdparty/nccl-tests/build --out hang > hang.stdout 2>&1; echo "hang rc=$? took $(( $(date +%s) - T0 ))s"
grep -a "nccl.all_reduce\|hang.suspect" hang.stdout | cut -c1-400 | head -8
ls hang/raw/nccl.all_reduce/ 2>/dev/null
pkill -CONT -f build/all_reduce_perf; pkill -KILL -f build/all_reduce_perf
$G verify hang > verify-hang.stdout 2>&1; echo "verify hang rc=$?"; tail -1 verify-hang.stdout | cut -c1-300
tar czf $OUT/r3-hang.tgz hang hang.stdout verify-hang.stdout nccl-build.log skus 2>/dev/null
date -u
true
