#!/usr/bin/env python3
"""Single-node compute and memory measurements with PyTorch (CUDA or ROCm).

gpuaccept's gemm and hostlink plugins run this on a GPU node. It prints one
JSON object per line on stdout, each a measurement of one GPU (or GPU pair):

  {"kind": "gemm", "gpu": 0, "name": "NVIDIA H200", "dtype": "bf16",
   "m": 8192, "n": 8192, "k": 8192, "iters": 50, "seconds": 0.0219,
   "tflops": 1004.1}
  {"kind": "hbm", "gpu": 0, "op": "copy"|"triad", "bytes": N, "gbps": ...}
  {"kind": "h2d"|"d2h", "gpu": 0, "bytes": N, "pinned": true, "gbps": ...,
   "placement": {...}}
  {"kind": "p2p", "src": 0, "dst": 1, "bytes": N, "gbps": ...}
  {"kind": "info", "torch": "2.11.0", "cuda": "13.0", "hip": null,
   "gpus": 8, "names": [...]}
  {"kind": "error", "message": "..."}

Every object also carries "host": the node's host name (socket.gethostname()).

"placement" says where the copy ran, so that a low figure can be told from a
badly placed process: the GPU's PCI address ("bdf"), its NUMA node
("numa_node", -1 where the host exposes none), the CPUs the copying thread
was bound to, as the kernel granted them ("cpus", a cpulist; "" when
unbound, "unbound" then says why), how its memory was steered ("mempolicy": "preferred N (libnuma)" or "first touch"),
the NUMA nodes holding the pinned buffer's pages ("buffer_nodes", node ->
pages, from libnuma's move_pages on sampled pages, else /proc/self/numa_maps:
"buffer_source" says which; absent when unknown, "buffer_unknown" then says
why), the IOMMU ("iommu": on|off|unknown, "iommu_cmdline": the kernel's
iommu flags, "iommu_domain": the GPU's IOMMU group type, e.g. identity for
passthrough), the host's NUMA nodes ("nodes": [{"node", "total_kb",
"free_kb"}]) and the GPU's PCIe link right after the copies ("link":
current_speed, current_width, max_speed, max_width as sysfs prints them).
Each GPU's copies bind to that GPU's node (--numa on, the default);
--numa off measures wherever the process landed.

TFLOPS is 2*m*n*k*iters / seconds / 1e12 (dense matmul). Bandwidth is in
GB/s (1e9 bytes/s): copy moves 2x bytes (read + write), triad 3x (a = b +
s*c reads two arrays and writes one), host transfers and p2p 1x. Times are
CUDA events around iters launches after warmup launches; the best of
repeats is reported, as SuperBench and nvbandwidth do.

Usage: torchbench.py [--tests gemm,hbm,h2d,d2h,p2p] [--gpus 0,1|all]
                     [--dtypes bf16,fp16,fp8,tf32,fp32] [--size 8192]
                     [--bytes 1073741824] [--iters 50] [--repeats 5]
                     [--concurrent] [--numa on|off]
--concurrent runs the GEMM on every listed GPU at once (one thread each),
so that power and thermal limits of a full node show; without it, each GPU
runs alone in turn.
"""
import argparse
import ctypes
import ctypes.util
import glob
import json
import os
import socket
import sys
import threading

HOST = socket.gethostname()


def emit(obj):
    # Every line names its node: the plugins run one copy per node and
    # read all nodes' lines from one log, so a missing GPU is named by host.
    obj = dict(obj, host=HOST)
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


def timed(torch, dev, fn, iters, warmup, repeats):
    """Best seconds for iters calls of fn on dev, after warmup calls."""
    with torch.cuda.device(dev):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize(dev)
        best = None
        for _ in range(repeats):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            end.synchronize()
            s = start.elapsed_time(end) / 1e3
            best = s if best is None or s < best else best
        return best


DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "float32"}


def fp8_supported(torch, dev):
    major, minor = torch.cuda.get_device_capability(dev)
    hip = getattr(torch.version, "hip", None)
    return hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm") and (hip or (major, minor) >= (8, 9))


def gemm(torch, dev, dtype, size, iters, repeats):
    n = size
    if dtype == "fp8":
        if not fp8_supported(torch, dev):
            return {"kind": "gemm", "gpu": dev, "dtype": dtype, "skipped": "no fp8 matmul on this GPU or torch"}
        f8 = torch.float8_e4m3fnuz if getattr(torch.version, "hip", None) and hasattr(torch, "float8_e4m3fnuz") else torch.float8_e4m3fn
        a = torch.randn(n, n, device=dev).to(f8)
        b = torch.randn(n, n, device=dev).to(f8).t()  # _scaled_mm wants b column-major
        one = torch.tensor(1.0, device=dev)

        def fn():
            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        t = getattr(torch, DTYPES[dtype])
        a = torch.randn(n, n, device=dev, dtype=t)
        b = torch.randn(n, n, device=dev, dtype=t)
        c = torch.empty(n, n, device=dev, dtype=t)

        def fn():
            torch.matmul(a, b, out=c)
    s = timed(torch, dev, fn, iters, max(3, iters // 10), repeats)
    return {"kind": "gemm", "gpu": dev, "name": torch.cuda.get_device_name(dev), "dtype": dtype,
            "m": n, "n": n, "k": n, "iters": iters, "seconds": s, "tflops": 2.0 * n ** 3 * iters / s / 1e12}


def hbm(torch, dev, nbytes, iters, repeats):
    out = []
    n = nbytes // 4
    a = torch.empty(n, device=dev, dtype=torch.float32)
    b = torch.ones(n, device=dev, dtype=torch.float32)
    c = torch.ones(n, device=dev, dtype=torch.float32)
    s = timed(torch, dev, lambda: a.copy_(b), iters, 3, repeats)
    out.append({"kind": "hbm", "gpu": dev, "op": "copy", "bytes": n * 4, "iters": iters, "seconds": s,
                "gbps": 2.0 * n * 4 * iters / s / 1e9})
    s = timed(torch, dev, lambda: torch.add(b, c, alpha=2.0, out=a), iters, 3, repeats)
    out.append({"kind": "hbm", "gpu": dev, "op": "triad", "bytes": n * 4, "iters": iters, "seconds": s,
                "gbps": 3.0 * n * 4 * iters / s / 1e9})
    return out


# Placement of the host copies. The functions read sysfs and procfs under
# root ("/" on a node) so that tests can hand them a fake tree.


def read_text(root, path):
    """The stripped text of root/path, None when it cannot be read."""
    try:
        with open(os.path.join(root, path.lstrip("/"))) as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


# MAX_CPUS bounds the CPU numbers a cpulist may name: the kernel's
# NR_CPUS is at most 8192 on x86_64 and arm64 (CONFIG_NR_CPUS), so a list
# naming CPU 65536 or past is no host's, and building its full range
# ("0-4000000000") must not exhaust the memory.
MAX_CPUS = 65536


def parse_cpulist(text):
    """The CPU numbers of a sysfs cpulist ("0-3,8,10-11"), sorted; [] for
    an empty or malformed list, or one naming a CPU of MAX_CPUS or past."""
    cpus = set()
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            lo, hi = int(lo), int(hi or lo)
        except ValueError:
            return []
        if lo < 0 or hi < lo or hi >= MAX_CPUS:
            return []
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def format_cpulist(cpus):
    """The cpulist of a set of CPU numbers, runs joined: [0,1,2,5] -> "0-2,5"."""
    out = []
    for c in sorted(cpus):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return ",".join("%d" % a if a == b else "%d-%d" % (a, b) for a, b in out)


def gpu_bdf(torch, dev, root="/"):
    """The GPU's PCI address, sysfs form ("0000:19:00.0"); None when torch
    does not give it. torch gives domain, bus and device but no function
    (a virtual function or a GPU of a multi-function device is not at
    .0): its function where this torch gives one, else the function under
    root's /sys/bus/pci/devices of that domain:bus:device whose class is a
    display or 3D controller (0x03xxxx), else .0 where sysfs lists none of
    that address (a container without sysfs: nothing is read there)."""
    try:
        p = torch.cuda.get_device_properties(dev)
        prefix = "%04x:%02x:%02x" % (p.pci_domain_id, p.pci_bus_id, p.pci_device_id)
    except (AttributeError, TypeError, RuntimeError):
        return None
    fn = getattr(p, "pci_function_id", None)
    if isinstance(fn, int) and 0 <= fn <= 7:
        return "%s.%d" % (prefix, fn)
    found = sorted(glob.glob(os.path.join(root, "sys/bus/pci/devices", prefix + ".[0-7]")))
    if not found:
        return prefix + ".0"
    for d in found:
        cls = read_text(root, "/sys/bus/pci/devices/%s/class" % os.path.basename(d)) or ""
        if cls.lower().startswith("0x03"):
            return os.path.basename(d)
    return None


def iommu_state(root, bdf):
    """The IOMMU as the host shows it: on when /sys/class/iommu has a unit,
    the kernel command line's iommu flags, and the type of the GPU's IOMMU
    group (identity: passthrough; DMA, DMA-FQ: translated)."""
    units = glob.glob(os.path.join(root, "sys/class/iommu/*"))
    have_class = os.path.isdir(os.path.join(root, "sys/class/iommu"))
    cmdline = read_text(root, "/proc/cmdline") or ""
    flags = [w for w in cmdline.split() if w.split("=")[0] in ("iommu", "intel_iommu", "amd_iommu", "iommu.passthrough", "iommu.strict")]
    out = {"iommu": "on" if units else ("off" if have_class else "unknown"), "iommu_cmdline": " ".join(flags)}
    if bdf:
        t = read_text(root, "/sys/bus/pci/devices/%s/iommu_group/type" % bdf)
        if t:
            out["iommu_domain"] = t
    return out


def numa_nodes(root):
    """The host's NUMA nodes: [{"node": N, "total_kb": KB, "free_kb": KB}]
    from /sys/devices/system/node/nodeN/meminfo, by node number."""
    out = []
    for d in glob.glob(os.path.join(root, "sys/devices/system/node/node[0-9]*")):
        try:
            n = int(os.path.basename(d)[4:])
        except ValueError:
            continue
        rec = {"node": n}
        try:
            with open(os.path.join(d, "meminfo")) as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            text = ""
        for line in text.splitlines():
            # "Node 0 MemTotal:       527939776 kB"
            f = line.split()
            if len(f) >= 4 and f[2] in ("MemTotal:", "MemFree:"):
                try:
                    rec["total_kb" if f[2] == "MemTotal:" else "free_kb"] = int(f[3])
                except ValueError:
                    pass
        out.append(rec)
    return sorted(out, key=lambda r: r["node"])


def pci_link(root, bdf):
    """The GPU's PCIe link as sysfs prints it ("32.0 GT/s PCIe", width
    "16"); {} when unreadable. Read right after the copies: an idle GPU
    trains its link down."""
    out = {}
    if not bdf:
        return out
    for k in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width"):
        v = read_text(root, "/sys/bus/pci/devices/%s/%s" % (bdf, k))
        if v:
            out[k.replace("_link", "")] = v
    return out


def gpu_numa(root, bdf):
    """The GPU's NUMA node and its local CPUs: (node, cpus, why). node is
    -1 with why set where the host exposes none (one-node hosts, VMs) or
    the GPU's address is unknown."""
    if not bdf:
        return -1, [], "the GPU's PCI address is unknown"
    text = read_text(root, "/sys/bus/pci/devices/%s/numa_node" % bdf)
    if text is None:
        return -1, [], "no /sys/bus/pci/devices/%s/numa_node" % bdf
    try:
        node = int(text)
    except ValueError:
        return -1, [], "numa_node of %s reads %r" % (bdf, text)
    if node < 0:
        return -1, [], "the host gives %s no NUMA node (numa_node -1)" % bdf
    cpus = parse_cpulist(read_text(root, "/sys/bus/pci/devices/%s/local_cpulist" % bdf))
    if not cpus:
        cpus = parse_cpulist(read_text(root, "/sys/devices/system/node/node%d/cpulist" % node))
    if not cpus:
        return node, [], "no CPU list for NUMA node %d" % node
    return node, cpus, ""


def buffer_nodes(root, addr, pid="self"):
    """The NUMA nodes holding the pages of the mapping that contains addr,
    node -> pages, from /proc/PID/numa_maps ("7f2a... default anon=262144
    N1=262144 kernelpagesize_kB=4"); (None, why) when unknown."""
    text = read_text(root, "/proc/%s/numa_maps" % pid)
    if text is None:
        return None, "no /proc/%s/numa_maps" % pid
    best = None
    for line in text.splitlines():
        f = line.split()
        try:
            start = int(f[0], 16)
        except (ValueError, IndexError):
            continue
        if start <= addr and (best is None or start > best[0]):
            best = (start, f)
    if best is None:
        return None, "no mapping of address 0x%x in numa_maps" % addr
    nodes = {}
    for w in best[1][1:]:
        k, _, v = w.partition("=")
        if len(k) > 1 and k[0] == "N" and k[1:].isdigit():
            try:
                nodes[k[1:]] = int(v)
            except ValueError:
                pass
    if not nodes:
        return None, "numa_maps lists no node for the mapping at 0x%x" % best[0]
    return nodes, ""


def pages_nodes(lib, addr, nbytes, samples=64, page=4096):
    """The NUMA nodes of samples pages spread over [addr, addr+nbytes),
    node -> pages, by libnuma's numa_move_pages with no target (it only
    reports); (None, why) when the kernel places none of them (pinned
    memory the driver maps itself)."""
    n = max(1, min(samples, nbytes // page))
    step = max(page, (nbytes // n) // page * page)
    first = (addr + page - 1) // page * page
    ptrs = (ctypes.c_void_p * n)(*[first + i * step for i in range(n)])
    status = (ctypes.c_int * n)()
    try:
        lib.numa_move_pages.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        rc = lib.numa_move_pages(0, n, ptrs, None, status, 0)
    except (OSError, AttributeError, ctypes.ArgumentError) as e:
        return None, "numa_move_pages: %s" % e
    if rc < 0:
        return None, "numa_move_pages failed (%d)" % rc
    nodes = {}
    for st in status:
        if st >= 0:
            nodes[str(st)] = nodes.get(str(st), 0) + 1
    if not nodes:
        return None, "numa_move_pages placed none of %d pages (status %d)" % (n, status[0])
    return nodes, ""


def libnuma():
    """libnuma through ctypes, None where it is absent or says NUMA is not
    available."""
    name = ctypes.util.find_library("numa")
    for n in ([name] if name else []) + ["libnuma.so.1"]:
        try:
            lib = ctypes.CDLL(n)
            if lib.numa_available() < 0:
                return None
            return lib
        except (OSError, AttributeError):
            continue
    return None


def bind(root, bdf, mode, sched=None, numa=None, getaff=None):
    """Binds the calling thread (the one that allocates the pinned buffer
    and issues the copies) to the GPU's NUMA node, so that the buffer's
    pages are first-touched there; with libnuma it also prefers that node's
    memory. Returns the placement so far: "numa_node", "cpus" (bound
    cpulist, "" when unbound), "unbound" (why not), "mempolicy". mode
    "off" binds nothing. The cpus recorded are those the kernel granted
    (a container's cpuset may hold fewer). sched, getaff and numa stand in
    for os.sched_setaffinity, os.sched_getaffinity and libnuma in tests."""
    node, cpus, why = gpu_numa(root, bdf)
    out = {"bdf": bdf or "", "numa_node": node, "cpus": "", "mempolicy": "default"}
    if mode == "off":
        out["unbound"] = "--numa off"
        return out
    if why:
        out["unbound"] = why
        return out
    sched = sched or getattr(os, "sched_setaffinity", None)
    if sched is None:
        out["unbound"] = "no sched_setaffinity on this platform"
        return out
    try:
        sched(0, cpus)
    except OSError as e:
        out["unbound"] = "sched_setaffinity to CPUs %s: %s" % (format_cpulist(cpus), e)
        return out
    out["mempolicy"] = "first touch"
    lib = numa if numa is not None else libnuma()
    if lib:
        try:
            lib.numa_set_preferred(node)
            out["mempolicy"] = "preferred %d (libnuma)" % node
        except (OSError, AttributeError):
            pass
    getaff = getaff or getattr(os, "sched_getaffinity", None)
    try:
        granted = sorted(getaff(0)) if getaff else cpus
    except OSError:
        granted = cpus
    out["cpus"] = format_cpulist(granted)
    return out


def unbind(cpus, sched=None, numa=None):
    """Undoes bind for the next GPU: the affinity the process started with,
    and local allocation."""
    sched = sched or getattr(os, "sched_setaffinity", None)
    if sched and cpus:
        try:
            sched(0, cpus)
        except OSError:
            pass
    lib = numa if numa is not None else libnuma()
    if lib:
        try:
            lib.numa_set_localalloc()
        except (OSError, AttributeError):
            pass


def host_facts(root, bdf):
    """What the host shows beside a placement: IOMMU and NUMA nodes."""
    out = iommu_state(root, bdf)
    out["nodes"] = numa_nodes(root)
    return out


def empty_host_cache(torch):
    """Frees torch's cached pinned blocks, so that the next pinned buffer
    is allocated anew under the current binding instead of reusing one
    placed for another GPU."""
    f = getattr(torch._C, "_host_emptyCache", None)
    if f:
        try:
            f()
        except RuntimeError:
            pass


def locate(root, addr, nbytes, numa):
    """Where the buffer at addr is: {"buffer_nodes": {node: pages},
    "buffer_source": how} or {"buffer_unknown": why}."""
    whys = []
    if numa:
        nodes, why = pages_nodes(numa, addr, nbytes)
        if nodes:
            return {"buffer_nodes": nodes, "buffer_source": "move_pages, sampled pages"}
        whys.append(why)
    nodes, why = buffer_nodes(root, addr)
    if nodes:
        return {"buffer_nodes": nodes, "buffer_source": "numa_maps, pages of the mapping"}
    whys.append(why)
    return {"buffer_unknown": "; ".join(whys)}


def complete(place, root, addr, nbytes, numa):
    """bind's placement completed after the copies from the buffer at
    addr: its NUMA nodes, the link as it stands then (an idle GPU trains
    its link down), the IOMMU and the host's NUMA nodes."""
    p = dict(place)
    p["link"] = pci_link(root, p.get("bdf"))
    p.update(locate(root, addr, nbytes, numa))
    p.update(host_facts(root, p.get("bdf")))
    return p


def host(torch, dev, kind, nbytes, iters, repeats, place=None, root="/", numa=None):
    """One direction's copies of GPU dev; place is bind's placement,
    completed here with the buffer's node, the IOMMU, the NUMA nodes and
    the link as it stands right after the copies."""
    empty_host_cache(torch)
    hostbuf = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    devbuf = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    if kind == "h2d":
        fn = lambda: devbuf.copy_(hostbuf, non_blocking=True)
    else:
        fn = lambda: hostbuf.copy_(devbuf, non_blocking=True)
    s = timed(torch, dev, fn, iters, 2, repeats)
    torch.cuda.synchronize(dev)
    rec = {"kind": kind, "gpu": dev, "bytes": nbytes, "pinned": True, "iters": iters, "seconds": s,
           "gbps": float(nbytes) * iters / s / 1e9}
    if place is not None:
        rec["placement"] = complete(place, root, hostbuf.data_ptr(), nbytes, numa)
    del hostbuf
    empty_host_cache(torch)
    return rec


def p2p(torch, src, dst, nbytes, iters, repeats):
    a = torch.empty(nbytes, dtype=torch.uint8, device=src)
    b = torch.empty(nbytes, dtype=torch.uint8, device=dst)
    s = timed(torch, src, lambda: b.copy_(a, non_blocking=True), iters, 2, repeats)
    return {"kind": "p2p", "src": src, "dst": dst, "bytes": nbytes, "iters": iters, "seconds": s,
            "peer_access": bool(torch.cuda.can_device_access_peer(src, dst)), "gbps": float(nbytes) * iters / s / 1e9}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tests", default="gemm,hbm,h2d,d2h,p2p")
    ap.add_argument("--gpus", default="all")
    ap.add_argument("--dtypes", default="bf16,fp16,fp8,tf32,fp32")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--bytes", type=int, default=1 << 30)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--concurrent", action="store_true")
    ap.add_argument("--numa", choices=("on", "off"), default="on",
                    help="on: bind each GPU's host copies to the GPU's NUMA node; off: measure where the process landed")
    o = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        emit({"kind": "error", "message": "import torch: %s" % e})
        return 3
    if not torch.cuda.is_available():
        emit({"kind": "error", "message": "torch sees no GPU (torch.cuda.is_available() is False)"})
        return 3
    count = torch.cuda.device_count()
    gpus = list(range(count)) if o.gpus == "all" else [int(g) for g in o.gpus.split(",")]
    for g in gpus:
        if g < 0 or g >= count:
            emit({"kind": "error", "message": "GPU %d asked for, torch sees %d" % (g, count)})
            return 2
    emit({"kind": "info", "torch": torch.__version__, "cuda": torch.version.cuda, "hip": getattr(torch.version, "hip", None),
          "gpus": count, "names": [torch.cuda.get_device_name(i) for i in range(count)]})
    tests = o.tests.split(",")
    start = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    numa = libnuma() if "h2d" in tests or "d2h" in tests else None
    if "gemm" in tests:
        for dt in o.dtypes.split(","):
            if o.concurrent and len(gpus) > 1:
                results = {}
                threads = [threading.Thread(target=lambda g=g: results.__setitem__(g, gemm(torch, g, dt, o.size, o.iters, o.repeats))) for g in gpus]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                for g in gpus:
                    r = results.get(g) or {"kind": "error", "message": "GPU %d: gemm %s did not finish" % (g, dt)}
                    r["concurrent"] = True
                    emit(r)
            else:
                for g in gpus:
                    emit(gemm(torch, g, dt, o.size, o.iters, o.repeats))
    for g in gpus:
        if "hbm" in tests:
            for r in hbm(torch, g, o.bytes, max(5, o.iters // 5), o.repeats):
                emit(r)
        dirs = [k for k in ("h2d", "d2h") if k in tests]
        if dirs:
            # Per GPU: each GPU's copies run from its own NUMA node.
            place = bind("/", gpu_bdf(torch, g), o.numa, numa=numa or False)
            try:
                for k in dirs:
                    emit(host(torch, g, k, o.bytes, max(5, o.iters // 5), o.repeats, place, "/", numa))
            finally:
                if place.get("cpus"):
                    unbind(start, numa=numa or False)
    if "p2p" in tests:
        for s in gpus:
            for d in gpus:
                if s != d:
                    emit(p2p(torch, s, d, o.bytes, max(5, o.iters // 5), o.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
