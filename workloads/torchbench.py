#!/usr/bin/env python3
"""Single-node compute and memory measurements with PyTorch (CUDA or ROCm).

gpuaccept's gemm and hostlink plugins run this on a GPU node. It prints one
JSON object per line on stdout, each a measurement of one GPU (or GPU pair):

  {"kind": "gemm", "gpu": 0, "name": "NVIDIA H200", "dtype": "bf16",
   "m": 8192, "n": 8192, "k": 8192, "iters": 50, "seconds": 0.0219,
   "tflops": 1004.1}
  {"kind": "hbm", "gpu": 0, "op": "copy"|"triad", "bytes": N, "gbps": ...}
  {"kind": "h2d"|"d2h", "gpu": 0, "bytes": N, "pinned": true, "gbps": ...}
  {"kind": "p2p", "src": 0, "dst": 1, "bytes": N, "gbps": ...}
  {"kind": "info", "torch": "2.11.0", "cuda": "13.0", "hip": null,
   "gpus": 8, "names": [...]}
  {"kind": "error", "message": "..."}

Every object also carries "host": the node's host name (socket.gethostname()).

TFLOPS is 2*m*n*k*iters / seconds / 1e12 (dense matmul). Bandwidth is in
GB/s (1e9 bytes/s): copy moves 2x bytes (read + write), triad 3x (a = b +
s*c reads two arrays and writes one), host transfers and p2p 1x. Times are
CUDA events around iters launches after warmup launches; the best of
repeats is reported, as SuperBench and nvbandwidth do.

Usage: torchbench.py [--tests gemm,hbm,h2d,d2h,p2p] [--gpus 0,1|all]
                     [--dtypes bf16,fp16,fp8,tf32,fp32] [--size 8192]
                     [--bytes 1073741824] [--iters 50] [--repeats 5]
                     [--concurrent]
--concurrent runs the GEMM on every listed GPU at once (one thread each),
so that power and thermal limits of a full node show; without it, each GPU
runs alone in turn.
"""
import argparse
import json
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


def host(torch, dev, kind, nbytes, iters, repeats):
    hostbuf = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    devbuf = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    if kind == "h2d":
        fn = lambda: devbuf.copy_(hostbuf, non_blocking=True)
    else:
        fn = lambda: hostbuf.copy_(devbuf, non_blocking=True)
    s = timed(torch, dev, fn, iters, 2, repeats)
    return {"kind": kind, "gpu": dev, "bytes": nbytes, "pinned": True, "iters": iters, "seconds": s,
            "gbps": float(nbytes) * iters / s / 1e9}


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
        for k in ("h2d", "d2h"):
            if k in tests:
                emit(host(torch, g, k, o.bytes, max(5, o.iters // 5), o.repeats))
    if "p2p" in tests:
        for s in gpus:
            for d in gpus:
                if s != d:
                    emit(p2p(torch, s, d, o.bytes, max(5, o.iters // 5), o.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
