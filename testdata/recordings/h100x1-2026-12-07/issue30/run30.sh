#!/bin/bash
# Issue 30 on the GPU: --sku auto, the datasheet floors, the H100 1x1 node baseline from 3 runs, busy GPU.
set -u
R=$OUT/r; mkdir -p $R; cd $R
exec > >(tee $R/run30.log) 2>&1
gunzip -c $OLDPWD/.thirdparty/bin/gpuaccept.gz > /tmp/gpuaccept; chmod +x /tmp/gpuaccept
G=/tmp/gpuaccept
date -u; hostname; which python3; nvidia-smi --query-gpu=name,serial,pci.bus_id,clocks.sm,temperature.gpu,power.draw --format=csv
$G version 2>&1 | head -2
mkdir -p smi; nvidia-smi -q > smi/nvidia-smi-q.txt; nvidia-smi -q -x > smi/nvidia-smi-q.xml; nvidia-smi > smi/nvidia-smi.txt
X=""
for i in 1 2 3; do
  echo "== node-$i (--sku auto, built-in: floors)"; $G --sku auto $X --suite node --launcher local --out node-$i > node-$i.stdout 2>&1; rc=$?; echo "node-$i rc=$rc"; tail -14 node-$i.stdout
  if [ $rc = 2 ] && [ -z "$X" ]; then X="--gpus-per-node 1"; mv node-$i.stdout node-$i.auto-refused.stdout; rm -rf node-$i; echo "== node-$i again with $X"; $G --sku auto $X --suite node --launcher local --out node-$i > node-$i.stdout 2>&1; echo "node-$i rc=$?"; tail -14 node-$i.stdout; fi
done
echo "== record 1x1 from node-1..3 (golden: this machine's own)"
$G baseline record --sku h100 --metric tflops,bw --out h100.yaml node-1 node-2 node-3 > record.stdout 2>&1; echo "record rc=$?"; tail -5 record.stdout
mkdir -p floor-sku; $G baseline show h100 --yaml | python3 -c "
import sys
head,body=sys.stdin.read().split('\nbaselines:\n',1)
es=body.split('\n  - test: ')
kept=[es[0]]+[e for e in es[1:] if 'scope: {nodes: 1, gpus_per_node: 1}' not in e]
sys.stdout.write(head+'\nbaselines:\n'+'\n  - test: '.join(kept))
" > floor-sku/h100.yaml; $G baseline validate floor-sku/h100.yaml 2>&1 | tail -1
mkdir -p sku; cp h100.yaml sku/
echo "== node-4 against the recording"; $G --sku auto $X --baselines sku --suite node --launcher local --out node-4 > node-4.stdout 2>&1; echo "node-4 rc=$?"; tail -14 node-4.stdout
echo "== busy (competing matmul)"
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);b=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16)
t=time.time()
while time.time()-t<240:
    for _ in range(20): torch.matmul(a,b)
    torch.cuda.synchronize()
" & BP=$!
sleep 8; nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv > smi-busy-apps.csv
$G --sku auto $X --suite node --launcher local --out busy-reference > busy-reference.stdout 2>&1; echo "busy-reference rc=$?"; tail -14 busy-reference.stdout
$G --sku auto $X --baselines floor-sku --suite node --launcher local --out busy-floor > busy-floor.stdout 2>&1; echo "busy-floor rc=$?"; tail -14 busy-floor.stdout
$G --sku auto $X --baselines sku --suite node --launcher local --out busy-recorded > busy-recorded.stdout 2>&1; echo "busy-recorded rc=$?"; tail -14 busy-recorded.stdout
kill $BP 2>/dev/null; wait $BP 2>/dev/null
echo "== idle against the floors only"; $G --sku auto $X --baselines floor-sku --suite node --launcher local --out idle-floor > idle-floor.stdout 2>&1; echo "idle-floor rc=$?"; tail -14 idle-floor.stdout
for d in node-1 node-4 busy-reference busy-floor busy-recorded idle-floor; do $G verify $d > verify-$d.stdout 2>&1; echo "verify $d rc=$?"; tail -1 verify-$d.stdout; done
echo "== wrong SKU named (auto refuses nothing here: h200 given)"; $G --sku h200 --suite node --launcher local --test gemm.matmul --out wrong-sku > wrong-sku.stdout 2>&1; echo "wrong-sku rc=$?"; tail -6 wrong-sku.stdout
cd $OUT && tar czf r.tgz r && rm -rf r
