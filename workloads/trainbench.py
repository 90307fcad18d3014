#!/usr/bin/env python3
"""Training throughput of a Qwen2.5-shaped decoder with PyTorch (CUDA or ROCm).

gpuaccept's train plugin runs this on a GPU node. It trains a decoder-only
transformer in the Qwen2.5 architecture (RMSNorm, rotary positions,
grouped-query attention with q/k/v biases, SwiGLU MLP) with the layer shapes
of a published Qwen2.5 configuration (SHAPES below, from each model's
config.json on huggingface.co/Qwen), random weights, bf16 autocast over fp32
master weights, AdamW, a fixed sequence length. The data is synthetic: a
pool of sequences of a random bigram language over 1024 of the vocabulary's
tokens, each token followed by one of 4 successors fixed by a seed. It
needs no download, and a healthy run learns it step by step, so the loss
falls steadily from ln(vocab) towards ln(4) (a gate of the plugin); one
repeated batch would be memorised in a step or two and then stay flat.

When the model does not fit, it runs fewer layers of the same shape
(--layers auto: an estimate from the GPU's memory, then one layer less at
each out-of-memory error) and says how many in its config line.

Modes:
  single  every listed GPU trains its own copy at once, one process each, no
          communication: one figure per GPU, so a slow GPU is named.
  ddp     one data-parallel job over every listed GPU of the node
          (torch DistributedDataParallel, NCCL or RCCL).

It prints one JSON object per line on stdout, each with the node's "host":
  {"kind": "train_config", "gpu": 0, "model": "qwen2.5-32b", "layers": 12,
   "layers_full": 64, "layers_why": "...", "hidden": 5120, ..., "params": N,
   "params_matmul": N, "model_flop_per_tok": F, "formula": "...", "mode": "single",
   "world_size": 1, "seq": 2048, "micro_batch": 2, "name": "NVIDIA H100 ...",
   "torch": "2.11.0", "cuda": "13.0", "hip": null}
  {"kind": "train_step", "gpu": 0, "rank": 0, "step": 7, "warmup": false,
   "ms": 812.4, "tokens_per_s": 5042.1, "tflops": 402.3, "mfu": 0.407,
   "peak_mem_gib": 71.2, "loss": 9.81}
  {"kind": "error", "gpu": 0, "error": "oom"|"crash"|"setup", "message": "..."}
A loss that is not finite is printed as the string "nan", "inf" or "-inf".

Model FLOP per token (PaLM, Chowdhery et al. 2022, appendix B; torchtitan's
get_num_flop_per_token): 6*N + 12*L*H*S, N the parameters of every matmul
(the layers' projections and the output head; not the embedding lookup nor
the norms), L layers, H the attention width (heads x head size), S the
sequence length. TFLOP/s = that x tokens per second / 1e12. MFU is that
over --peak-tflops, the GPU's dense bf16 datasheet figure, when given.

Usage: trainbench.py [--model qwen2.5-32b] [--layers auto|N] [--seq 2048]
                     [--micro-batch 2] [--steps 30] [--warmup 5] [--lr 3e-4]
                     [--gpus all|0,1] [--mode single|ddp] [--peak-tflops F]
"""
import argparse
import json
import math
import os
import signal
import socket
import sys
import time
import traceback

HOST = socket.gethostname()

# Published Qwen2.5 configurations (config.json of Qwen/Qwen2.5-*):
# hidden, intermediate, layers, attention heads, key/value heads, vocab,
# tied embeddings.
SHAPES = {
    "qwen2.5-0.5b": (896, 4864, 24, 14, 2, 151936, True),
    "qwen2.5-1.5b": (1536, 8960, 28, 12, 2, 151936, True),
    "qwen2.5-3b": (2048, 11008, 36, 16, 2, 151936, True),
    "qwen2.5-7b": (3584, 18944, 28, 28, 4, 152064, False),
    "qwen2.5-14b": (5120, 13824, 48, 40, 8, 152064, False),
    "qwen2.5-32b": (5120, 27648, 64, 40, 8, 152064, False),
    "qwen2.5-72b": (8192, 29568, 80, 64, 8, 152064, False),
}
ROPE_THETA = 1000000.0
NORM_EPS = 1e-6


def emit(obj):
    """One line, one write: the GPUs' processes share stdout."""
    obj["host"] = HOST
    os.write(1, (json.dumps(obj) + "\n").encode())


def number(x):
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def build(torch, shape, layers, device):
    nn = torch.nn
    F = torch.nn.functional
    hidden, inter, _, heads, kv, vocab, tied = shape
    hd = hidden // heads

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden))

        def forward(self, x):
            v = x.float().pow(2).mean(-1, keepdim=True)
            return (x.float() * torch.rsqrt(v + NORM_EPS)).to(x.dtype) * self.weight.to(x.dtype)

    def rope(x, cos, sin):
        a, b = x[..., : hd // 2], x[..., hd // 2:]
        return x * cos + torch.cat((-b, a), dim=-1) * sin

    def attend(q, k, v):
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        if sdpa is not None:
            try:
                return sdpa(q, k, v, is_causal=True, enable_gqa=True)
            except TypeError:  # torch < 2.5: no enable_gqa
                pass
        rep = heads // kv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        if sdpa is not None:
            return sdpa(q, k, v, is_causal=True)
        s = q.shape[-2]
        w = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        return w.masked_fill(mask, float("-inf")).softmax(-1) @ v

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = RMSNorm(), RMSNorm()
            self.q = nn.Linear(hidden, heads * hd, bias=True)
            self.k = nn.Linear(hidden, kv * hd, bias=True)
            self.v = nn.Linear(hidden, kv * hd, bias=True)
            self.o = nn.Linear(heads * hd, hidden, bias=False)
            self.gate = nn.Linear(hidden, inter, bias=False)
            self.up = nn.Linear(hidden, inter, bias=False)
            self.down = nn.Linear(inter, hidden, bias=False)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            h = self.n1(x)
            q = self.q(h).view(b, s, heads, hd).transpose(1, 2)
            k = self.k(h).view(b, s, kv, hd).transpose(1, 2)
            v = self.v(h).view(b, s, kv, hd).transpose(1, 2)
            a = attend(rope(q, cos, sin), rope(k, cos, sin), v)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, heads * hd))
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.layers = nn.ModuleList([Layer() for _ in range(layers)])
            self.norm = RMSNorm()
            self.head = nn.Linear(hidden, vocab, bias=False)
            if tied:
                self.head.weight = self.embed.weight
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)

        def forward(self, tokens):
            s = tokens.shape[1]
            pos = torch.arange(s, device=tokens.device, dtype=torch.float32)
            inv = 1.0 / (ROPE_THETA ** (torch.arange(0, hd, 2, device=tokens.device, dtype=torch.float32) / hd))
            ang = torch.outer(pos, inv)
            ang = torch.cat((ang, ang), dim=-1)
            cos, sin = ang.cos().to(torch.bfloat16), ang.sin().to(torch.bfloat16)
            x = self.embed(tokens)
            for layer in self.layers:
                x = layer(x, cos, sin)
            return self.head(self.norm(x))

    return Model().to(device)


POOL = 64        # sequences in the synthetic corpus
ACTIVE = 1024    # tokens the bigram language uses
SUCCESSORS = 4   # successors of each token


def corpus(length, n, seed):
    """n sequences of length tokens of the seeded bigram language."""
    import random
    r = random.Random(seed)
    succ = [[r.randrange(ACTIVE) for _ in range(SUCCESSORS)] for _ in range(ACTIVE)]
    out = []
    for _ in range(n):
        t = r.randrange(ACTIVE)
        seq = [t]
        for _ in range(length - 1):
            t = succ[t][r.randrange(SUCCESSORS)]
            seq.append(t)
        out.append(seq)
    return out


def counts(shape, layers, seq):
    """Parameters in all, parameters of the matmuls, model FLOP per token."""
    hidden, inter, _, heads, kv, vocab, tied = shape
    hd = hidden // heads
    per = hidden * heads * hd + 2 * hidden * kv * hd + heads * hd * hidden + 3 * hidden * inter
    bias = heads * hd + 2 * kv * hd
    norms = 2 * hidden
    embed = vocab * hidden
    head = vocab * hidden
    params = layers * (per + bias + norms) + embed + hidden + (0 if tied else head)
    matmul = layers * per + head
    flops = 6 * matmul + 12 * layers * heads * hd * seq
    return params, matmul, flops


def estimate_layers(torch, shape, seq, mb, device, full, ddp):
    """The most layers whose weights, gradients, AdamW state and activations
    fit in 90% of the GPU's free memory, by a conservative estimate."""
    hidden, inter, _, heads, kv, vocab, tied = shape
    free, _ = torch.cuda.mem_get_info(device)
    budget = free * 0.90
    state = 16 + (4 if ddp else 0)  # fp32 weight, grad, Adam m and v (+ DDP's bucket copy)
    p1, _, _ = counts(shape, 1, seq)
    p0 = p1 - (counts(shape, 2, seq)[0] - p1)
    tokens = seq * mb
    act = tokens * (34 * hidden + 10 * inter) * 2  # bf16 activations kept for the backward pass
    logits = tokens * vocab * (2 + 4 + 4)  # bf16 logits, fp32 loss input and its gradient
    fixed = p0 * state + logits + (1 << 30)
    per = (p1 - p0) * state + act
    n = int((budget - fixed) // per)
    return max(0, min(full, n))


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Qwen2.5-shaped training throughput")
    ap.add_argument("--model", default="qwen2.5-32b", choices=sorted(SHAPES))
    ap.add_argument("--layers", default="auto")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--gpus", default="all")
    ap.add_argument("--mode", default="single", choices=["single", "ddp"])
    ap.add_argument("--peak-tflops", type=float, default=0.0)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="cpu: a smoke test of the script without a GPU (one process, its times mean nothing)")
    ap.add_argument("--child", type=int, default=-1, help=argparse.SUPPRESS)
    ap.add_argument("--child-gpus", default="", help=argparse.SUPPRESS)
    o = ap.parse_args(argv)
    if o.layers != "auto":
        try:
            o.layers = int(o.layers)
        except ValueError:
            ap.error("--layers: %r is not auto or a layer count" % o.layers)
        if o.layers < 1:
            ap.error("--layers: %d, want at least 1" % o.layers)
    if o.steps <= o.warmup:
        ap.error("--steps %d must be more than --warmup %d" % (o.steps, o.warmup))
    return o


class Clock:
    """Step times: CUDA events on a GPU, the wall clock on the CPU."""

    def __init__(self, torch, device):
        self.cuda = device.type == "cuda"
        if self.cuda:
            self.a = torch.cuda.Event(enable_timing=True)
            self.b = torch.cuda.Event(enable_timing=True)

    def start(self):
        if self.cuda:
            self.a.record()
        else:
            self.t = time.perf_counter()

    def millis(self):
        if self.cuda:
            self.b.record()
            self.b.synchronize()
            return self.a.elapsed_time(self.b)
        return (time.perf_counter() - self.t) * 1000.0


def train(gpu, rank, world, o, torch):
    shape = SHAPES[o.model]
    full = shape[2]
    ddp = o.mode == "ddp"
    if o.device == "cpu":
        device = torch.device("cpu")
    else:
        device = torch.device("cuda", gpu)
        torch.cuda.set_device(device)
    if o.layers == "auto" and device.type == "cpu":
        layers, why = 1, "one layer on the CPU (smoke test)"
    elif o.layers == "auto":
        layers = estimate_layers(torch, shape, o.seq, o.micro_batch, device, full, ddp)
        why = "all %d fit" % full if layers >= full else "%d of %d layers fit in the GPU's memory (estimate)" % (layers, full)
    else:
        layers, why = o.layers, "--layers %d" % o.layers
    if layers < 1:
        emit({"kind": "error", "gpu": gpu, "rank": rank, "error": "oom",
              "message": "not one layer of %s fits in the GPU's free memory" % o.model})
        return 1
    auto = o.layers == "auto"
    oom = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
    while True:
        try:
            return run(gpu, rank, world, o, torch, shape, layers, full, why, device, ddp)
        except oom as e:
            if "out of memory" not in str(e):
                raise
            if not auto or layers <= 1 or ddp:
                emit({"kind": "error", "gpu": gpu, "rank": rank, "error": "oom", "message": str(e).splitlines()[0][:300]})
                return 1
            layers -= 1
            why = "%d of %d layers fit in the GPU's memory (one less after an out-of-memory error)" % (layers, full)
            torch.cuda.empty_cache()


def run(gpu, rank, world, o, torch, shape, layers, full, why, device, ddp):
    torch.manual_seed(1234 + rank)
    model = build(torch, shape, layers, device)
    params, matmul, fpt = counts(shape, layers, o.seq)
    net = model
    if ddp:
        net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[gpu] if device.type == "cuda" else None)
    try:  # the fused kernel where torch has it (CUDA and ROCm builds since 2.0)
        opt = torch.optim.AdamW(model.parameters(), lr=o.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=device.type == "cuda")
    except (TypeError, RuntimeError):
        opt = torch.optim.AdamW(model.parameters(), lr=o.lr, betas=(0.9, 0.95), weight_decay=0.1)
    hidden, inter, _, heads, kv, vocab, tied = shape
    pool = torch.tensor(corpus(o.seq + 1, POOL, 42 + rank), dtype=torch.long, device=device)
    cuda = device.type == "cuda"
    name = torch.cuda.get_device_properties(device).name if cuda else "cpu"
    emit({"kind": "train_config", "gpu": gpu, "rank": rank, "model": o.model, "layers": layers,
          "layers_full": full, "layers_why": why, "hidden": hidden, "intermediate": inter,
          "heads": heads, "kv_heads": kv, "vocab": vocab, "params": params, "params_matmul": matmul,
          "model_flop_per_tok": fpt, "formula": "6*N + 12*L*H*S (PaLM appendix B): N=%d matmul parameters, L=%d, H=%d, S=%d" % (matmul, layers, heads * (hidden // heads), o.seq),
          "mode": o.mode, "world_size": world, "seq": o.seq, "micro_batch": o.micro_batch,
          "steps": o.steps, "warmup": o.warmup, "lr": o.lr, "dtype": "bf16",
          "name": name, "torch": torch.__version__, "cuda": torch.version.cuda,
          "hip": getattr(torch.version, "hip", None)})
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    clock = Clock(torch, device)
    ntok = o.micro_batch * o.seq
    for step in range(1, o.steps + 1):
        rows = [(step * o.micro_batch + i) % POOL for i in range(o.micro_batch)]
        x, y = pool[rows, :-1], pool[rows, 1:]
        clock.start()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits = net(x)
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, vocab), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        ms = clock.millis()
        tps = ntok / (ms / 1000.0)
        tflops = fpt * tps / 1e12
        rec = {"kind": "train_step", "gpu": gpu, "rank": rank, "step": step, "warmup": step <= o.warmup,
               "ms": round(ms, 3), "tokens_per_s": round(tps, 2), "tflops": round(tflops, 3),
               "loss": number(float(loss.item()))}
        if cuda:
            rec["peak_mem_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 3)
        if o.peak_tflops > 0:
            rec["mfu"] = round(tflops / o.peak_tflops, 4)
        emit(rec)
        del logits, loss
    return 0


def child(o):
    """One GPU's process: trains, and reports a crash as an error line."""
    gpus = [int(g) for g in o.child_gpus.split(",")]
    gpu = gpus[o.child]
    world = len(gpus) if o.mode == "ddp" else 1
    rank = o.child if o.mode == "ddp" else 0
    try:
        import torch
        if o.mode == "ddp":
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ["MASTER_PORT"] = str(o.port)
            backend = "nccl" if o.device == "cuda" else "gloo"
            if o.device == "cuda":
                torch.cuda.set_device(gpu)
            torch.distributed.init_process_group(backend, rank=rank, world_size=world)
        rc = train(gpu, rank, world, o, torch)
        if o.mode == "ddp":
            torch.distributed.destroy_process_group()
        return rc
    except Exception as e:
        emit({"kind": "error", "gpu": gpu, "rank": rank, "error": "crash",
              "message": ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:300],
              "traceback": traceback.format_exc()[-2000:]})
        return 1


def self_argv():
    """How to start this script again: its file, or the source python -c
    was given (sys.orig_argv, Python 3.10+)."""
    orig = getattr(sys, "orig_argv", None)
    if sys.argv[0] == "-c" and orig and "-c" in orig:
        return [sys.executable, "-c", orig[orig.index("-c") + 1]]
    return [sys.executable, os.path.abspath(sys.argv[0])]


def main(argv):
    o = parse_args(argv)
    if o.child >= 0:
        return child(o)
    try:
        import torch
    except ImportError as e:
        emit({"kind": "error", "error": "setup", "message": "import torch: %s" % e})
        return 2
    if o.device == "cpu":
        n = 1
    elif not torch.cuda.is_available():
        emit({"kind": "error", "error": "setup", "message": "torch %s sees no GPU (torch.cuda.is_available() is False)" % torch.__version__})
        return 2
    else:
        n = torch.cuda.device_count()
    if o.gpus == "all":
        gpus = list(range(n))
    else:
        try:
            gpus = [int(g) for g in o.gpus.split(",")]
        except ValueError:
            emit({"kind": "error", "error": "setup", "message": "--gpus %r: want all or indexes" % o.gpus})
            return 2
        if [g for g in gpus if g < 0 or g >= n]:
            emit({"kind": "error", "error": "setup", "message": "--gpus %s: torch sees %d GPU(s)" % (o.gpus, n)})
            return 2
    if o.port == 0:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        o.port = s.getsockname()[1]
        s.close()
    # Fresh processes, not forks: the parent's CUDA state must not leak
    # into them, and python -c has no module a spawn could import.
    base = self_argv() + [a for a in argv]
    procs = []

    def stop(*_):
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except Exception:
                p.kill()
        sys.exit(143)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    import subprocess
    for i in range(len(gpus)):
        procs.append(subprocess.Popen(base + ["--child", str(i), "--child-gpus", ",".join(map(str, gpus)), "--port", str(o.port)]))
    # One GPU's process failing ends the others: DDP ranks would wait on
    # it in a collective until their timeout, and a sign-off needs every
    # GPU anyway.
    rc = 0
    while any(p.poll() is None for p in procs):
        if any(p.poll() not in (None, 0) for p in procs):
            rc = 1
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            break
        time.sleep(0.5)
    if any(p.returncode != 0 for p in procs):
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
