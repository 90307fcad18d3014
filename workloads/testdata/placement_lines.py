"""Prints the h2d and d2h lines of a real torchbench.py output (argv[2])
as the script prints them now, with the "placement" its functions give for
the case argv[1] names:

  two-nodes  a fake two-socket tree (test_torchbench.TWO_NODES): GPU on node
             1, bound to CPUs 48-95, buffer pages on node 1 (numa_maps);
  numa-off   the same tree, --numa off;
  h100-vm    the sysfs and numa_maps of the 1-GPU H100 VM as read there
             (test_torchbench.H100_VM): no NUMA node, so unbound;
  here       this machine's own /sys and /proc, its first PCI device standing
             in for the GPU, a buffer of this process located for real.

The figures are the recorded ones; only the placement is new. Go tests of
the parsers read these lines until a GPU run records the real thing."""
import ctypes
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torchbench as tb  # noqa: E402
import test_torchbench as tt  # noqa: E402


def main():
    case, log = sys.argv[1], sys.argv[2]
    addr = 0x7f2a00001000
    if case == "here":
        root = "/"
        devs = sorted(os.listdir("/sys/bus/pci/devices"))
        bdf = devs[0] if devs else None
        buf = ctypes.create_string_buffer(1 << 22)
        ctypes.memset(buf, 1, 1 << 22)
        addr, nbytes, numa = ctypes.addressof(buf), 1 << 22, tb.libnuma()
        place = tb.bind(root, bdf, "on", numa=numa or False)
    elif case == "h100-vm":
        root, bdf, nbytes, numa = tt.tree(tt.H100_VM), tt.H100_BDF, 1 << 28, None
        addr = 0x7f6aaa000000
        place = tb.bind(root, bdf, "on", sched=lambda pid, c: None, numa=False)
    else:
        files = dict(tt.TWO_NODES)
        files["/proc/self/numa_maps"] = tt.BufferNodes.MAPS.replace("N1=262100 N0=44", "N1=262144")
        root, bdf, nbytes, numa = tt.tree(files), tt.BDF, 1 << 30, None
        cpus = set(range(48, 96)) | set(range(144, 192))
        place = tb.bind(root, bdf, "on" if case == "two-nodes" else "off", sched=lambda pid, c: None,
                        numa=False, getaff=lambda pid: cpus)
    with open(log) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("kind") in ("h2d", "d2h"):
                rec["placement"] = tb.complete(place, root, addr, nbytes, numa)
                sys.stdout.write(json.dumps(rec, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
