#!/bin/bash
# Early GPU call: the machine's own outputs and a placement study of pinned host<->device copies.
set -u
PY=/opt/torch/.venv/bin/python3
D=$OUT/m; mkdir -p $D
exec > >(tee $D/gather.log) 2>&1
date -u; hostname; uname -a
nvidia-smi > $D/nvidia-smi.txt 2>&1
nvidia-smi -q > $D/nvidia-smi-q.txt 2>&1
nvidia-smi -q -x > $D/nvidia-smi-q.xml 2>&1
nvidia-smi topo -m > $D/topo-m.txt 2>&1; cat $D/topo-m.txt
nvidia-smi nvlink --status > $D/nvlink-status.txt 2>&1; echo "nvlink rc=$?"
nvidia-smi --query-gpu=index,name,serial,uuid,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active --format=csv > $D/query-gpu.csv 2>&1; cat $D/query-gpu.csv
dmesg > $D/dmesg.txt 2>&1 || journalctl -k > $D/dmesg.txt 2>&1
lscpu > $D/lscpu.txt 2>&1; grep -i 'numa\|model name\|socket' $D/lscpu.txt
which numactl && numactl -H
BDF=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1 | tr 'A-F' 'a-f' | sed 's/^0000\(....\):/\1:/; s/^\(....\):/0000:/')
BDF=$(echo $BDF | sed 's/^00000000/0000/')
echo "BDF=$BDF"
P=/sys/bus/pci/devices/$BDF
for f in numa_node local_cpulist current_link_speed current_link_width max_link_speed max_link_width; do echo "$f: $(cat $P/$f 2>&1)"; done | tee $D/sysfs-gpu.txt
cat /proc/cmdline | tee $D/cmdline.txt
ls /sys/class/iommu/ 2>&1 | tee $D/iommu.txt; ls $P/iommu_group 2>&1 | head -2; readlink $P/iommu_group
for n in /sys/devices/system/node/node*; do echo "$n cpus=$(cat $n/cpulist)"; grep -E 'MemTotal|MemFree' $n/meminfo; done | tee $D/nodes.txt
cat /proc/meminfo | head -5
lspci -vvv -s $BDF > $D/lspci.txt 2>&1; grep -E 'LnkSta|LnkCap|MaxPayload|MaxReadReq' $D/lspci.txt
cat > /tmp/pl.py <<'PY'
import torch, time, os, sys, json
dev=torch.device("cuda:0")
n=1<<30
def meas(kind, pinned=True, reps=20):
    h=torch.empty(n, dtype=torch.uint8, pin_memory=pinned); h.fill_(1)
    d=torch.empty(n, dtype=torch.uint8, device=dev)
    for _ in range(3):
        (d.copy_(h, non_blocking=True) if kind=="h2d" else h.copy_(d, non_blocking=True))
    torch.cuda.synchronize()
    best=0; vals=[]
    for _ in range(reps):
        s=torch.cuda.Event(enable_timing=True); e=torch.cuda.Event(enable_timing=True)
        s.record(); (d.copy_(h, non_blocking=True) if kind=="h2d" else h.copy_(d, non_blocking=True)); e.record(); torch.cuda.synchronize()
        g=n/(s.elapsed_time(e)/1e3)/1e9; vals.append(g)
    vals.sort()
    return {"kind":kind,"pinned":pinned,"best":round(vals[-1],2),"median":round(vals[len(vals)//2],2),"worst":round(vals[0],2)}
aff=sorted(os.sched_getaffinity(0))
print(json.dumps({"label":sys.argv[1],"affinity":"%d-%d (%d cpus)"%(aff[0],aff[-1],len(aff)),"cpu_now":os.sched_getcpu() if hasattr(os,"sched_getcpu") else None, "res":[meas("h2d"),meas("d2h"),meas("h2d",False,5)]}))
PY
echo "== placement study"
$PY /tmp/pl.py default
NODES=$(ls -d /sys/devices/system/node/node* | wc -l)
for n in $(seq 0 $((NODES-1))); do
  cpus=$(cat /sys/devices/system/node/node$n/cpulist)
  taskset -c $cpus $PY /tmp/pl.py "taskset node$n cpus $cpus"
  if which numactl >/dev/null; then for m in $(seq 0 $((NODES-1))); do numactl --cpunodebind=$n --membind=$m $PY /tmp/pl.py "numactl cpu node$n mem node$m"; done; fi
done
$PY -c "import torch;print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0))"
cd $OUT && tar czf m.tgz m && rm -rf m
