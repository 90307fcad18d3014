#!/bin/bash
# Issue 28 on the GPU: a site SKU with no baseline, no PyTorch, health on the machine's own outputs, placement.
set -u
R=$OUT/r; mkdir -p $R; cd $R
exec > >(tee $R/run28.log) 2>&1
gunzip -c $OLDPWD/.thirdparty/bin/gpuaccept.gz > /tmp/gpuaccept; chmod +x /tmp/gpuaccept
G=/tmp/gpuaccept; SK=$OLDPWD/.thirdparty/skus
date -u; hostname; which python3; nvidia-smi --query-gpu=name,serial,pci.bus_id,clocks.sm,temperature.gpu,power.draw --format=csv
$G version 2>&1 | head -2
echo "== dry run"; $G --sku h100-sxm --baselines $SK --suite node --launcher local --gpus-per-node 1 --dry-run > dry.stdout 2>&1; echo "dry rc=$?"; tail -5 dry.stdout
for i in 1 2 3; do
  echo "== node-$i (no baseline)"; $G --sku h100-sxm --baselines $SK --suite node --launcher local --gpus-per-node 1 --out node-$i > node-$i.stdout 2>&1; echo "node-$i rc=$?"; tail -12 node-$i.stdout
done
echo "== numa=off"; $G --sku h100-sxm --baselines $SK --suite node --launcher local --gpus-per-node 1 --test hostlink.pcie --param hostlink:numa=off --out numa-off > numa-off.stdout 2>&1; echo "numa-off rc=$?"; tail -6 numa-off.stdout
echo "== report / verify node-1"; $G report node-1 > report-1.stdout 2>&1; echo "report rc=$?"; tail -3 report-1.stdout; $G verify node-1 > verify-1.stdout 2>&1; echo "verify rc=$?"; tail -4 verify-1.stdout
echo "== no torch"; env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin sh -c 'which python3; python3 -c "import torch" 2>&1 | tail -1'
env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin $G --sku h100-sxm --baselines $SK --suite node --launcher local --gpus-per-node 1 --out notorch > notorch.stdout 2>&1; echo "notorch rc=$?"; tail -12 notorch.stdout
echo "== busy (competing matmul)"
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);b=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16)
t=time.time()
while time.time()-t<75:
    for _ in range(20): torch.matmul(a,b)
    torch.cuda.synchronize()
" & BP=$!
sleep 8; nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv > smi-busy-apps.csv
$G --sku h100-sxm --baselines $SK --suite node --launcher local --gpus-per-node 1 --out busy > busy.stdout 2>&1; echo "busy rc=$?"; tail -8 busy.stdout
kill $BP 2>/dev/null; wait $BP 2>/dev/null
echo "== health on this machine's own outputs"
mkdir -p smi; nvidia-smi -q > smi/nvidia-smi-q.txt; nvidia-smi -q -x > smi/nvidia-smi-q.xml; nvidia-smi nvlink --status > smi/nvlink-status.txt; dmesg > smi/dmesg.txt
for f in nvidia-smi-q.txt nvidia-smi-q.xml nvlink-status.txt dmesg.txt; do $G check --sku h100-sxm --baselines $SK --test health.node smi/$f > check-$f.stdout 2>&1; echo "check $f rc=$?"; grep -E "health.node|PASS|FAIL|ERROR|SKIP" check-$f.stdout | head -3; done
$G health --sku h100-sxm --baselines $SK --launcher local > health.stdout 2>&1; echo "health rc=$?"; tail -5 health.stdout
cd $OUT && tar czf r.tgz r && rm -rf r
