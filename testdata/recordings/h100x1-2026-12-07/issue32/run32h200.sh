#!/bin/bash
# Issue 32 on one H200: the train suite 3 times and a golden recording.
set -u
SKU=h200
R=$OUT/r; mkdir -p $R; cd $R
exec > >(tee $R/run32.log) 2>&1
gunzip -c $OLDPWD/.thirdparty/bin/gpuaccept.gz > /tmp/gpuaccept; chmod +x /tmp/gpuaccept
G=/tmp/gpuaccept
date -u; hostname; python3 -c "import torch; print(torch.__version__, torch.version.cuda)"
nvidia-smi --query-gpu=name,serial,pci.bus_id,memory.total,clocks.sm,temperature.gpu,power.draw --format=csv
for i in 1 2 3; do
  echo "== train-$i"; $G --sku $SKU --suite train --launcher local --gpus-per-node 1 --out train-$i > train-$i.stdout 2>&1; echo "train-$i rc=$?"; grep -v "^[│┌├└]" train-$i.stdout | tail -4
done
echo "== record"; $G baseline record --sku $SKU --out $SKU.yaml train-1 train-2 train-3 > record.stdout 2>&1; echo "record rc=$?"; tail -4 record.stdout
$G verify train-1 > verify-train-1.stdout 2>&1; echo "verify rc=$?"
cd $OUT && tar czf r.tgz r && rm -rf r
