#!/usr/bin/python3
"""The PyTorch side of xtgrad's benchmark (bench/bench.cpp): the same models, shapes,
optimizer, thread count and statistics, so bench/run.sh can print both in one table.

Run with Debian's python3-torch (1.13); it is never a dependency of xtgrad or its tests.

    /usr/bin/python3 bench/torch_bench.py --config winter --threads 1
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/torch_bench.py --config seed-b --batch 8 --threads 2 --json

Configurations (as bench/workloads.cpp):
  winter  tutorial C (Winter Games) at its size, 44.2 M parameters, batch 1, 7 + 7 tokens,
          cross-entropy, Adam(lr 1e-3)
  seed-b  tutorial B at its size, 51.8 M parameters (vocab 5000), src (B, 100),
          tgt[:, :-1] (B, 99), dropout 0.1, CE(ignore_index 0), Adam(1e-4, (0.9, 0.98), 1e-9)
  seed-d  tutorial D: torch.nn.Transformer at the defaults (nhead 8, 6 + 6 layers) + the
          tutorial's positional encoding on src, src (10, 32, 512), tgt (20, 32, 512), forward
          and backward of a fixed random output gradient; Adam with --adam. The docstring's
          example (nhead 16, 12 encoder layers) is --d-heads 16 --d-encoder-layers 12.
Phases: zero (optimizer.zero_grad()), fwd (forward + loss), bwd (backward), opt
(optimizer.step()), step (the whole step, end to end) and infer (eval(), no_grad forward).

Threads: torch.set_num_threads(n) and OPENBLAS_NUM_THREADS=n (set here before torch loads
OpenBLAS). On this 2-core machine run 2-thread runs with OMP_WAIT_POLICY=PASSIVE: without
it every elementwise op waits out a scheduler quantum (~8 ms) next to OpenBLAS's threads
(docs/performance.md, "Design choices"). bench/run.sh sets it.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

CONFIGS = ["winter", "seed-b", "seed-d"]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", action="append", default=None, help="winter, seed-b, seed-d or all (repeatable)")
    p.add_argument("--steps", type=int, default=5, help="timed steps")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    p.add_argument("--threads", type=int, default=1, help="torch and OpenBLAS threads")
    p.add_argument("--batch", type=int, default=64, help="seed-b batch size")
    p.add_argument("--d-heads", type=int, default=8, help="seed-d nhead (torch's default 8; the tutorial's example: 16)")
    p.add_argument("--d-encoder-layers", type=int, default=6, help="seed-d encoder layers (torch's default 6; the example: 12)")
    p.add_argument("--adam", action="store_true", help="seed-d: also take an Adam step")
    p.add_argument("--no-infer", action="store_true", help="skip the inference (no_grad) forward")
    p.add_argument("--json", action="store_true", help="one JSON object per config and line")
    p.add_argument("--autocast", choices=["bf16"], default=None,
                   help='forward and loss under torch.autocast("cpu", dtype=torch.bfloat16)')
    a = p.parse_args(argv)
    cfgs = a.config or ["all"]
    a.configs = CONFIGS if "all" in cfgs else cfgs
    for c in a.configs:
        if c not in CONFIGS:
            p.error(f"unknown config {c!r} (expected one of {CONFIGS} or all)")
    return a


ARGS = parse_args(sys.argv[1:])
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)  # read once, when torch loads OpenBLAS

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch_models import C, BTransformer, CTransformer, DTransformer  # noqa: E402  (bench/, beside this file)

torch.set_num_threads(ARGS.threads)


def openblas_core():
    """The kernel OpenBLAS chose in this process ("Haswell", "Cooperlake", ...): its own CPU
    detection, or OPENBLAS_CORETYPE when that is set. torch loads OpenBLAS as its BLAS
    (libblas.so.3 or libopenblas.so.0); the library is found in /proc/self/maps and asked
    through ctypes. None when no OpenBLAS is loaded."""
    import ctypes
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path)
            if name.startswith(("libopenblas", "libblas.so")):
                paths.add(path)
    for path in sorted(paths):
        try:
            get = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        get.restype = ctypes.c_char_p
        return get().decode()
    return None


# ---------------------------------------------------------------- the benchmark
def matmul_flops(config, batch):
    """Forward matmul FLOPs (2·M·N·K per product), the same count as bench/workloads.cpp."""
    def mha(B, Lq, Lk, d, h, dk, dv):
        proj = 2 * B * (Lq * d * h * dk + Lk * d * h * dk + Lk * d * h * dv + Lq * h * dv * d)
        return proj + 2 * B * h * Lq * Lk * (dk + dv)

    def ffn(tokens, d, dff):
        return 2 * 2 * tokens * d * dff

    if config == "winter":
        B, Ls, Lt, d = 1, 7, 7, 512
        enc = mha(B, Ls, Ls, d, 8, 64, 64) + ffn(B * Ls, d, 2048)
        dec = mha(B, Lt, Lt, d, 8, 64, 64) + mha(B, Lt, Ls, d, 8, 64, 64) + ffn(B * Lt, d, 2048)
        return 6 * (enc + dec) + 2 * B * Lt * d * C.tgt_vocab
    if config == "seed-b":
        B, Ls, Lt, d = batch, 100, 99, 512
        enc = mha(B, Ls, Ls, d, 8, 64, 64) + ffn(B * Ls, d, 2048)
        dec = mha(B, Lt, Lt, d, 8, 64, 64) + mha(B, Lt, Ls, d, 8, 64, 64) + ffn(B * Lt, d, 2048)
        return 6 * (enc + dec) + 2 * B * Lt * d * 5000
    N, S, T, d, h = 32, 10, 20, 512, ARGS.d_heads
    enc = mha(N, S, S, d, h, d // h, d // h) + ffn(N * S, d, 2048)
    dec = mha(N, T, T, d, h, d // h, d // h) + mha(N, T, S, d, h, d // h, d // h) + ffn(N * T, d, 2048)
    return ARGS.d_encoder_layers * enc + 6 * dec


def build(config):
    """-> (model, forward() -> loss or output, backward(out), optimizer or None, description)"""
    torch.manual_seed(0)
    if config == "winter":
        model = CTransformer()
        enc = torch.tensor([[1, 2, 3, 4, 5, 6, 7]])
        dec = torch.tensor([[7, 1, 2, 3, 4, 5, 6]])
        target = torch.tensor([1, 2, 3, 4, 5, 6, 8])
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        return (model, lambda: nn.functional.cross_entropy(model(enc, dec)[0], target), lambda loss: loss.backward(),
                opt, "tutorial C, batch 1, 7+7 tokens, Adam")
    if config == "seed-b":
        model = BTransformer()
        src = torch.randint(1, 5000, (ARGS.batch, 100))
        tgt = torch.randint(1, 5000, (ARGS.batch, 100))
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

        def fwd():
            out = model(src, tgt[:, :-1])
            return nn.functional.cross_entropy(out.contiguous().view(-1, 5000), tgt[:, 1:].contiguous().view(-1),
                                               ignore_index=0)
        return model, fwd, lambda loss: loss.backward(), opt, f"tutorial B, batch {ARGS.batch} x 100, Adam"
    model = DTransformer(ARGS.d_heads, ARGS.d_encoder_layers)
    src, tgt = torch.rand(10, 32, 512), torch.rand(20, 32, 512)
    grad_out = torch.randn(20, 32, 512)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4) if ARGS.adam else None
    return (model, lambda: model(src, tgt), lambda out: out.backward(grad_out), opt,
            f"tutorial D, nhead {ARGS.d_heads}, {ARGS.d_encoder_layers}+6 layers, src (10, 32, 512), tgt (20, 32, 512)"
            + (", Adam" if opt else ", no optimizer"))


def stats(xs):
    s = sorted(xs)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return {"median_ms": med * 1e3, "min_ms": s[0] * 1e3, "max_ms": s[-1] * 1e3}


def run(config):
    model, forward_fp32, backward, opt, what = build(config)
    if ARGS.autocast:
        # torch's CPU mixed precision: matmul / linear / conv1d in bf16 (oneDNN), the rest in fp32
        def forward():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return forward_fp32()
        what += ", autocast bf16"
    else:
        forward = forward_fp32
    model.train()
    times = {k: [] for k in ["zero", "fwd", "bwd", "opt", "step"]}
    step_cpu = []
    for i in range(ARGS.warmup + ARGS.steps):
        c0 = time.process_time()
        t0 = time.perf_counter()
        if opt:
            opt.zero_grad()
        else:
            model.zero_grad()
        t1 = time.perf_counter()
        out = forward()
        t2 = time.perf_counter()
        backward(out)
        t3 = time.perf_counter()
        if opt:
            opt.step()
        t4 = time.perf_counter()
        del out
        t5 = time.perf_counter()
        c1 = time.process_time()
        if i >= ARGS.warmup:
            step_cpu.append(c1 - c0)
            for k, v in zip(times, [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t0]):
                times[k].append(v)
    if not ARGS.no_infer:
        model.eval()
        infer = []
        with torch.no_grad():
            for i in range(ARGS.warmup + ARGS.steps):
                t0 = time.perf_counter()
                out = forward()
                del out
                if i >= ARGS.warmup:
                    infer.append(time.perf_counter() - t0)
        times["infer"] = infer
    if not opt:
        del times["opt"]
    flops = matmul_flops(config, ARGS.batch)
    factor = {"zero": 0, "fwd": 1, "bwd": 2, "opt": 0, "step": 3, "infer": 1}
    phases = {}
    for k, v in times.items():
        s = stats(v)
        s["gflops"] = factor[k] * flops / (s["median_ms"] * 1e-3) / 1e9 if factor[k] else None
        phases[k] = s
    return {
        "framework": "torch", "version": torch.__version__, "config": config, "what": what,
        "threads": ARGS.threads, "autocast": ARGS.autocast, "batch": ARGS.batch if config == "seed-b" else None,
        "params": sum(p.numel() for p in model.parameters()),
        "steps": ARGS.steps, "warmup": ARGS.warmup, "fwd_matmul_gflop": flops / 1e9,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "step_cpu_ms": stats(step_cpu)["median_ms"],
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
        # OPENBLAS_CORETYPE pins OpenBLAS's kernel; unset, OpenBLAS detects the CPU (bench/run.sh runs both)
        "openblas_env": "pinned" if os.environ.get("OPENBLAS_CORETYPE") else "own detection",
        "openblas_core": openblas_core(),
        # glibc's heap: its defaults map each freed block over ~32 MiB anew (a page fault per page, every
        # step), or "kept" where MALLOC_MMAP_THRESHOLD_ holds them, as xtgrad keeps its own (bench/run.sh runs both)
        "glibc_heap": "kept" if os.environ.get("MALLOC_MMAP_THRESHOLD_") else "default",
        "phases": phases,
    }


def print_text(r):
    print(f"{r['config']}: {r['what']}; {r['params'] / 1e6:.1f} M parameters; torch {r['version']}, "
          f"{r['threads']} thread(s); forward matmuls {r['fwd_matmul_gflop']:.3f} GFLOP; peak RSS "
          f"{r['peak_rss_mib']:.0f} MiB")
    print(f"  OpenBLAS kernel {r['openblas_core']} ({r['openblas_env']}), glibc heap {r['glibc_heap']}")
    print(f"  step CPU time (all threads) {r['step_cpu_ms']:.1f} ms")
    print(f"  {'phase':6} {'median ms':>10} {'min ms':>10} {'max ms':>10} {'GFLOP/s':>8}")
    for k, s in r["phases"].items():
        g = f"{s['gflops']:.1f}" if s["gflops"] else "-"
        print(f"  {k:6} {s['median_ms']:10.2f} {s['min_ms']:10.2f} {s['max_ms']:10.2f} {g:>8}")


def main():
    if len(ARGS.configs) > 1:  # one process per config, so each peak RSS is its own
        for c in ARGS.configs:
            argv = [a for a in sys.argv[1:]]
            keep, skip = [], False
            for a in argv:
                if skip:
                    skip = False
                    continue
                if a == "--config":
                    skip = True
                    continue
                if a.startswith("--config="):
                    continue
                keep.append(a)
            r = subprocess.run([sys.executable, __file__, "--config", c] + keep)
            if r.returncode:
                sys.exit(r.returncode)
        return
    r = run(ARGS.configs[0])
    if ARGS.json:
        print(json.dumps(r))
    else:
        print_text(r)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
