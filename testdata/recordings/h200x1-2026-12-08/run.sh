#!/bin/bash
# Session 2026-12-08, one call on the 1-GPU machine (H200 asked for):
# issue 32's train suite 3 times + a golden recording, and real
# nvidia-smi telemetry for issue 33's parsers (idle, under the train
# load, dmon, the query fields this driver knows).
set -u
SKU=${SKU:-h200}
R=$OUT/r; mkdir -p $R; cd $R
exec > >(tee $R/run.log) 2>&1
gunzip -c $OLDPWD/.thirdparty/bin/gpuaccept.gz > /tmp/gpuaccept; chmod +x /tmp/gpuaccept
G=/tmp/gpuaccept
date -u; hostname; python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())"
nvidia-smi --query-gpu=name,serial,pci.bus_id,memory.total,clocks.sm,temperature.gpu,power.draw,driver_version --format=csv
nvidia-smi --help-query-gpu > help-query-gpu.txt 2>&1
# the telemetry fields this driver accepts, each tried alone
F=""
for f in timestamp index uuid serial pci.bus_id utilization.gpu utilization.memory clocks.sm clocks.mem clocks.max.sm \
  power.draw power.draw.instant enforced.power.limit power.limit temperature.gpu temperature.memory \
  clocks_event_reasons.active clocks_event_reasons.gpu_idle clocks_event_reasons.applications_clocks_setting \
  clocks_event_reasons.sw_power_cap clocks_event_reasons.hw_slowdown clocks_event_reasons.hw_thermal_slowdown \
  clocks_event_reasons.hw_power_brake_slowdown clocks_event_reasons.sw_thermal_slowdown clocks_event_reasons.sync_boost \
  clocks_throttle_reasons.active ecc.errors.corrected.volatile.total ecc.errors.uncorrected.volatile.total \
  pcie.link.gen.current pcie.link.width.current pcie.link.gen.max pcie.link.width.max memory.used pstate fan.speed; do
  nvidia-smi --query-gpu=$f --format=csv,noheader >/dev/null 2>&1 && F="$F,$f" || echo "field refused: $f"
done
F=${F#,}; echo "fields: $F"; echo "$F" > fields.txt
timeout 8 nvidia-smi --query-gpu=$F --format=csv -lms 1000 > smi-lms-idle.csv 2>&1
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE,ECC,PCIE > smi-q-perf-idle.txt 2>&1
nvidia-smi --query-gpu=$F --format=csv -lms 1000 > smi-lms-train.csv 2>&1 & SMI=$!
nvidia-smi dmon -s pucvmet -o T -d 1 > smi-dmon-train.txt 2>&1 & DMON=$!
for i in 1 2 3; do
  echo "== train-$i"; $G --sku $SKU --suite train --launcher local --gpus-per-node 1 --out train-$i > train-$i.stdout 2>&1; echo "train-$i rc=$?"; grep -v "^[│┌├└]" train-$i.stdout | tail -4
  [ $i = 1 ] && nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE > smi-q-perf-after-train.txt 2>&1
done
kill $SMI $DMON; wait $SMI $DMON 2>/dev/null
echo "== record"; $G baseline record --sku $SKU --out $SKU.yaml train-1 train-2 train-3 > record.stdout 2>&1; echo "record rc=$?"; tail -4 record.stdout
$G verify train-1 > verify-train-1.stdout 2>&1; echo "verify rc=$?"
dmesg 2>/dev/null | tail -50 > dmesg-tail.txt
date -u
cd $OUT && tar czf r.tgz r && rm -rf r
