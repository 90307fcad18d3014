#!/bin/bash
# Issue 32 on one GPU: the train suite 3 times, a golden recording, then busy, NaN (lr 1e6) and a DDP smoke.
set -u
SKU=${SKU:-h100}
R=$OUT/r; mkdir -p $R; cd $R
exec > >(tee $R/run32.log) 2>&1
gunzip -c $OLDPWD/.thirdparty/bin/gpuaccept.gz > /tmp/gpuaccept; chmod +x /tmp/gpuaccept
G=/tmp/gpuaccept; TB=$OLDPWD/workloads/trainbench.py
date -u; hostname; which python3; python3 -c "import torch; print(torch.__version__, torch.version.cuda)"
nvidia-smi --query-gpu=name,serial,pci.bus_id,memory.total,clocks.sm,temperature.gpu,power.draw --format=csv
for i in 1 2 3; do
  echo "== train-$i"; $G --sku $SKU --suite train --launcher local --gpus-per-node 1 --out train-$i > train-$i.stdout 2>&1; echo "train-$i rc=$?"; tail -12 train-$i.stdout
done
L=$(python3 -c "
import json
for t in json.load(open('train-1/results.json'))['tests']:
    for p in t.get('points') or t.get('metrics') or []:
        l=p.get('labels',{}).get('layers')
        if l: print(l); raise SystemExit
")
echo "layers of train-1: $L"
echo "== record"; $G baseline record --sku $SKU --out $SKU.yaml train-1 train-2 train-3 > record.stdout 2>&1; echo "record rc=$?"; tail -4 record.stdout
mkdir -p sku; cp $SKU.yaml sku/
echo "== train-4 against the recording"; $G --sku $SKU --baselines sku --suite train --launcher local --gpus-per-node 1 --out train-4 > train-4.stdout 2>&1; echo "train-4 rc=$?"; tail -12 train-4.stdout
echo "== busy"
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);b=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16)
t=time.time()
while time.time()-t<120:
    for _ in range(20): torch.matmul(a,b)
    torch.cuda.synchronize()
" & BP=$!
sleep 8; nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv > smi-busy-apps.csv
$G --sku $SKU --baselines sku --suite train --launcher local --gpus-per-node 1 ${L:+--param train:layers=$L} --out busy > busy.stdout 2>&1; echo "busy rc=$?"; tail -12 busy.stdout
kill $BP 2>/dev/null; wait $BP 2>/dev/null
echo "== nan (lr 1e6)"; $G --sku $SKU --baselines sku --suite train --launcher local --gpus-per-node 1 --param train:lr=1e6 --out nan > nan.stdout 2>&1; echo "nan rc=$?"; tail -12 nan.stdout
echo "== ddp smoke (1 rank)"; python3 $TB --mode ddp --steps 12 --warmup 3 > ddp.log 2> ddp.stderr; echo "ddp rc=$?"; cut -c1-300 ddp.log | head -3; tail -2 ddp.log
$G check --sku $SKU --test train.node --nodes 1 --gpus-per-node 1 --out ddp-check ddp.log > ddp-check.stdout 2>&1; echo "ddp-check rc=$?"; tail -6 ddp-check.stdout
for d in train-1 train-4 busy nan; do $G verify $d > verify-$d.stdout 2>&1; echo "verify $d rc=$?"; tail -1 verify-$d.stdout; done
cd $OUT && tar czf r.tgz r && rm -rf r
