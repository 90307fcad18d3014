"""Tests of torchbench.py's placement functions on fake sysfs trees (no
torch, no GPU needed): python3 -m unittest discover -s workloads."""
import atexit
import ctypes
import os
import shutil
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchbench  # noqa: E402

BDF = "0000:19:00.0"


def tree(files):
    """A temporary root holding files (path -> text); a path ending in /
    is an empty folder."""
    root = tempfile.mkdtemp(prefix="tbroot")
    atexit.register(shutil.rmtree, root, True)
    for path, text in files.items():
        full = os.path.join(root, path.lstrip("/"))
        if path.endswith("/"):
            os.makedirs(full, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    return root


# A two-socket host: the GPU on node 1, CPUs 48-95 and 144-191 (SMT
# siblings) local to it.
TWO_NODES = {
    "/sys/bus/pci/devices/%s/numa_node" % BDF: "1\n",
    "/sys/bus/pci/devices/%s/local_cpulist" % BDF: "48-95,144-191\n",
    "/sys/bus/pci/devices/%s/current_link_speed" % BDF: "32.0 GT/s PCIe\n",
    "/sys/bus/pci/devices/%s/current_link_width" % BDF: "16\n",
    "/sys/bus/pci/devices/%s/max_link_speed" % BDF: "32.0 GT/s PCIe\n",
    "/sys/bus/pci/devices/%s/max_link_width" % BDF: "16\n",
    "/sys/bus/pci/devices/%s/iommu_group/type" % BDF: "DMA-FQ\n",
    "/sys/class/iommu/dmar0/uevent": "",
    "/proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on quiet\n",
    "/sys/devices/system/node/node0/meminfo": "Node 0 MemTotal:       1056355408 kB\nNode 0 MemFree:        1001234560 kB\nNode 0 MemUsed:          55120848 kB\n",
    "/sys/devices/system/node/node1/meminfo": "Node 1 MemTotal:       1056964608 kB\nNode 1 MemFree:          12345678 kB\n",
}

# A VM: one node, numa_node -1, no IOMMU units.
VM = {
    "/sys/bus/pci/devices/%s/numa_node" % BDF: "-1\n",
    "/sys/bus/pci/devices/%s/local_cpulist" % BDF: "0-1\n",
    "/sys/class/iommu/": "",
    "/proc/cmdline": "console=ttyS0 quiet\n",
    "/sys/devices/system/node/node0/meminfo": "Node 0 MemTotal:       2013272 kB\nNode 0 MemFree:         912345 kB\n",
}


# The 1-GPU H100 VM of the device machine (2026-12-07, KVM, 16 vCPUs, one
# node, no IOMMU): the GPU's sysfs files and node0's meminfo as cat printed
# them there, and the numa_maps line of a 256 MiB torch pinned buffer
# (torch.empty(1 << 28, pin_memory=True), data_ptr 0x7f6aaa000000), whose
# sampled pages move_pages also put on node 0.
H100_BDF = "0000:00:06.0"
H100_VM = {
    "/sys/bus/pci/devices/%s/numa_node" % H100_BDF: "-1\n",
    "/sys/bus/pci/devices/%s/local_cpulist" % H100_BDF: "0-15\n",
    "/sys/bus/pci/devices/%s/current_link_speed" % H100_BDF: "32.0 GT/s PCIe\n",
    "/sys/bus/pci/devices/%s/current_link_width" % H100_BDF: "16\n",
    "/sys/bus/pci/devices/%s/max_link_speed" % H100_BDF: "32.0 GT/s PCIe\n",
    "/sys/bus/pci/devices/%s/max_link_width" % H100_BDF: "16\n",
    "/sys/class/iommu/": "",
    "/sys/devices/system/node/node0/meminfo": "Node 0 MemTotal:       131961972 kB\nNode 0 MemFree:        129653104 kB\nNode 0 MemUsed:         2308868 kB\n",
    "/proc/self/numa_maps": "7f6aaa000000 default file=/dev/zero\\040(deleted) dirty=65536 active=0 N0=65536 kernelpagesize_kB=4\n",
}


class FakeNuma:
    """libnuma's calls bind makes, recorded."""

    def __init__(self):
        self.calls = []


    def numa_set_preferred(self, n):
        self.calls.append(("set_preferred", n))

    def numa_set_localalloc(self):
        self.calls.append(("localalloc",))


class CPUList(unittest.TestCase):
    def test_parse_and_format(self):
        for text, cpus, back in [
            ("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11], "0-3,8,10-11"),
            ("48-95,144-191\n", list(range(48, 96)) + list(range(144, 192)), "48-95,144-191"),
            ("5", [5], "5"),
            ("", [], ""),
            ("3-1", [], ""),
            ("a-b", [], ""),
            (None, [], ""),
            ("0-65535", list(range(65536)), "0-65535"),
            # No host has CPU 65536: refused, not a range of 4e9 built.
            ("0-4000000000", [], ""),
            ("0,65536", [], ""),
        ]:
            with self.subTest(text=text):
                self.assertEqual(torchbench.parse_cpulist(text), cpus)
                self.assertEqual(torchbench.format_cpulist(cpus), back)


class FakeProps:
    def __init__(self, domain, bus, device, **more):
        self.pci_domain_id, self.pci_bus_id, self.pci_device_id = domain, bus, device
        self.__dict__.update(more)


class FakeTorch:
    """torch.cuda.get_device_properties as torch gives it: domain, bus,
    device; no function."""

    def __init__(self, props):
        self.cuda = self
        self.props = props

    def get_device_properties(self, dev):
        if self.props is None:
            raise RuntimeError("no CUDA GPUs are available")
        return self.props


class GPUBDF(unittest.TestCase):
    def test_function_of_the_display_controller(self):
        dev = "/sys/bus/pci/devices/0000:3b:00.%d/class"
        for name, props, files, want in [
            ("function 0", FakeProps(0, 0x3b, 0), {dev % 0: "0x030200\n"}, "0000:3b:00.0"),
            # A virtual function: the GPU at .4, nothing at .0.
            ("virtual function", FakeProps(0, 0x3b, 0), {dev % 4: "0x030200\n"}, "0000:3b:00.4"),
            # .0 an audio function, the GPU at .1.
            ("not at .0", FakeProps(0, 0x3b, 0), {dev % 0: "0x040300\n", dev % 1: "0x030000\n"}, "0000:3b:00.1"),
            ("no display function", FakeProps(0, 0x3b, 0), {dev % 0: "0x040300\n"}, None),
            ("no sysfs", FakeProps(0, 0x3b, 0), {}, "0000:3b:00.0"),
            ("torch gives the function", FakeProps(0, 0x3b, 0, pci_function_id=2), {dev % 0: "0x030200\n"}, "0000:3b:00.2"),
            ("no GPU", None, {}, None),
        ]:
            with self.subTest(name):
                self.assertEqual(torchbench.gpu_bdf(FakeTorch(props), 0, root=tree(files)), want)


class Bind(unittest.TestCase):
    def test_binds_to_the_gpus_node(self):
        root = tree(TWO_NODES)
        got, numa = [], FakeNuma()
        p = torchbench.bind(root, BDF, "on", sched=lambda pid, cpus: got.append((pid, list(cpus))), numa=numa,
                            getaff=lambda pid: got[-1][1])
        self.assertEqual(p["numa_node"], 1)
        self.assertEqual(p["cpus"], "48-95,144-191")
        self.assertNotIn("unbound", p)
        self.assertEqual(p["mempolicy"], "preferred 1 (libnuma)")
        self.assertEqual(got, [(0, list(range(48, 96)) + list(range(144, 192)))])
        self.assertEqual(numa.calls, [("set_preferred", 1)])
        torchbench.unbind([0, 1, 2], sched=lambda pid, cpus: got.append((pid, list(cpus))), numa=numa)
        self.assertEqual(got[-1], (0, [0, 1, 2]))
        self.assertEqual(numa.calls[-1], ("localalloc",))

    def test_first_touch_without_libnuma(self):
        p = torchbench.bind(tree(TWO_NODES), BDF, "on", sched=lambda pid, cpus: None, numa=False,
                            getaff=lambda pid: set(range(48, 96)) | set(range(144, 192)))
        self.assertEqual((p["cpus"], p["mempolicy"]), ("48-95,144-191", "first touch"))

    def test_records_the_cpus_granted(self):
        # A container's cpuset holds only part of the node: the kernel
        # grants the intersection, and that is what was bound.
        p = torchbench.bind(tree(TWO_NODES), BDF, "on", sched=lambda pid, cpus: None, numa=False,
                            getaff=lambda pid: {48, 49, 50, 51})
        self.assertEqual(p["cpus"], "48-51")

    def test_unbound(self):
        calls = []
        sched = lambda pid, cpus: calls.append(cpus)  # noqa: E731

        def refuse(pid, cpus):
            raise OSError(22, "Invalid argument")

        for name, files, bdf, mode, s, why in [
            ("numa off", TWO_NODES, BDF, "off", sched, "--numa off"),
            ("VM", VM, BDF, "on", sched, "the host gives 0000:19:00.0 no NUMA node (numa_node -1)"),
            ("no device", VM, "0000:3b:00.0", "on", sched, "no /sys/bus/pci/devices/0000:3b:00.0/numa_node"),
            ("address unknown", TWO_NODES, None, "on", sched, "the GPU's PCI address is unknown"),
            ("affinity refused", TWO_NODES, BDF, "on", refuse, "sched_setaffinity to CPUs 48-95,144-191: [Errno 22] Invalid argument"),
        ]:
            with self.subTest(name):
                p = torchbench.bind(tree(files), bdf, mode, sched=s, numa=FakeNuma())
                self.assertEqual(p["unbound"], why)
                self.assertEqual(p["cpus"], "")
                self.assertEqual(p["mempolicy"], "default")
        self.assertEqual(calls, [], "no binding when unbound")

    def test_cpus_from_the_node_when_local_cpulist_is_empty(self):
        files = dict(TWO_NODES)
        files["/sys/bus/pci/devices/%s/local_cpulist" % BDF] = "\n"
        files["/sys/devices/system/node/node1/cpulist"] = "48-95\n"
        got = []
        p = torchbench.bind(tree(files), BDF, "on", sched=lambda pid, cpus: got.append(cpus), numa=False,
                            getaff=lambda pid: got[-1])
        self.assertEqual(p["cpus"], "48-95")


class H100VM(unittest.TestCase):
    def test_unbound_one_node(self):
        root = tree(H100_VM)
        calls = []
        p = torchbench.bind(root, H100_BDF, "on", sched=lambda pid, cpus: calls.append(cpus), numa=FakeNuma())
        self.assertEqual(p, {"bdf": H100_BDF, "numa_node": -1, "cpus": "", "mempolicy": "default",
                             "unbound": "the host gives 0000:00:06.0 no NUMA node (numa_node -1)"})
        self.assertEqual(calls, [])
        p = torchbench.complete(p, root, 0x7f6aaa000000, 1 << 28, None)
        self.assertEqual(p["buffer_nodes"], {"0": 65536})
        self.assertEqual(p["link"], {"current_speed": "32.0 GT/s PCIe", "current_width": "16",
                                     "max_speed": "32.0 GT/s PCIe", "max_width": "16"})
        self.assertEqual((p["iommu"], p["iommu_cmdline"]), ("off", ""))
        self.assertNotIn("iommu_domain", p)
        self.assertEqual(p["nodes"], [{"node": 0, "total_kb": 131961972, "free_kb": 129653104}])


class HostFacts(unittest.TestCase):
    def test_two_nodes(self):
        root = tree(TWO_NODES)
        f = torchbench.host_facts(root, BDF)
        self.assertEqual(f["iommu"], "on")
        self.assertEqual(f["iommu_cmdline"], "intel_iommu=on")
        self.assertEqual(f["iommu_domain"], "DMA-FQ")
        self.assertEqual(f["nodes"], [{"node": 0, "total_kb": 1056355408, "free_kb": 1001234560},
                                      {"node": 1, "total_kb": 1056964608, "free_kb": 12345678}])
        self.assertEqual(torchbench.pci_link(root, BDF), {"current_speed": "32.0 GT/s PCIe", "current_width": "16",
                                                          "max_speed": "32.0 GT/s PCIe", "max_width": "16"})

    def test_vm(self):
        root = tree(VM)
        f = torchbench.host_facts(root, BDF)
        self.assertEqual((f["iommu"], f["iommu_cmdline"]), ("off", ""))
        self.assertNotIn("iommu_domain", f)
        self.assertEqual(len(f["nodes"]), 1)
        self.assertEqual(torchbench.pci_link(root, BDF), {})
        self.assertEqual(torchbench.iommu_state(tree({}), None)["iommu"], "unknown")

    def test_passthrough_flags(self):
        root = tree({"/proc/cmdline": "ro amd_iommu=on iommu=pt iommu.passthrough=1 quiet", "/sys/class/iommu/ivhd0/x": ""})
        self.assertEqual(torchbench.iommu_state(root, None)["iommu_cmdline"], "amd_iommu=on iommu=pt iommu.passthrough=1")


class BufferNodes(unittest.TestCase):
    MAPS = ("55d0c0a00000 default file=/usr/bin/python3.12 mapped=10 N0=10 kernelpagesize_kB=4\n"
            "7f2a00000000 default anon=262144 dirty=262144 N1=262100 N0=44 kernelpagesize_kB=4\n"
            "7f2a40000000 default file=/dev/nvidiactl\n")

    def test_numa_maps(self):
        root = tree({"/proc/self/numa_maps": self.MAPS})
        for name, addr, nodes, why in [
            ("inside the anon mapping", 0x7f2a00001000, {"1": 262100, "0": 44}, ""),
            ("driver mapping", 0x7f2a40000010, None, "numa_maps lists no node for the mapping at 0x7f2a40000000"),
            ("below every mapping", 0x1000, None, "no mapping of address 0x1000 in numa_maps"),
        ]:
            with self.subTest(name):
                self.assertEqual(torchbench.buffer_nodes(root, addr), (nodes, why))
        self.assertEqual(torchbench.buffer_nodes(tree({}), 1), (None, "no /proc/self/numa_maps"))

    def test_this_process(self):
        # This machine's own memory: a touched buffer is on some node, by
        # both numa_maps and (where libnuma is) move_pages.
        n = 1 << 22
        buf = ctypes.create_string_buffer(n)
        ctypes.memset(buf, 1, n)
        addr = ctypes.addressof(buf)
        if not os.path.exists("/proc/self/numa_maps"):
            self.skipTest("no /proc/self/numa_maps here")
        nodes, why = torchbench.buffer_nodes("/", addr)
        self.assertTrue(nodes, why)
        lib = torchbench.libnuma()
        if lib is None:
            return
        got = torchbench.locate("/", addr, n, lib)
        self.assertEqual(got.get("buffer_source"), "move_pages, sampled pages", got)
        self.assertEqual(sum(got["buffer_nodes"].values()), 64)


if __name__ == "__main__":
    unittest.main()
