#!/usr/bin/env python3
"""The PyTorch peers of zerotune's kernel benchmarks, measured on the same GPU in the same run.

Prints one JSON object per line ({"name", "shape", "value", "unit"}) and writes them all to
--out. Needs torch with CUDA. Shapes follow bench/memory_bound_bench.cu and the attention
benchmarks; bytes and FLOPs are counted the same way as there.
"""
import argparse
import json

import torch
import torch.nn.functional as F


def time_ms(fn, warmup=3, repeats=20):
    """Median of CUDA-event timings of fn()."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def emit(results, name, shape, value, unit):
    row = {"name": name, "shape": shape, "value": round(value, 4), "unit": unit}
    print(json.dumps(row), flush=True)
    results.append(row)


def copy_ceiling(results):
    src = torch.zeros(2**28, device="cuda")
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src))
    emit(results, "copy", "1 GiB f32", 2 * src.numel() * 4 / ms / 1e9, "TB/s")


def rms_norm(results):
    x = torch.randn(16384, 4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.ones(4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    nbytes = x.numel() * 2
    ms = time_ms(lambda: F.rms_norm(x, (4096,), w, 1e-6))
    emit(results, "rmsnorm_fwd", "16384x4096 bf16", 2 * nbytes / ms / 1e9, "TB/s")
    g = torch.randn_like(x)

    def fwd_bwd():
        y = F.rms_norm(x, (4096,), w, 1e-6)
        torch.autograd.grad(y, (x, w), g)

    ms = time_ms(fwd_bwd)
    emit(results, "rmsnorm_fwd_bwd", "16384x4096 bf16", 5 * nbytes / ms / 1e9, "TB/s")


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(results):
    tokens, dim = 4 * 4096, 128
    q = torch.randn(tokens, 28, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(tokens, 4, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    inv = 1.0 / (1e6 ** (torch.arange(0, dim, 2, device="cuda").float() / dim))
    angles = torch.outer(torch.arange(tokens, device="cuda").float() % 4096, inv)
    emb = torch.cat((angles, angles), dim=-1)
    cos, sin = emb.cos().to(torch.bfloat16)[:, None, :], emb.sin().to(torch.bfloat16)[:, None, :]
    gq, gk = torch.randn_like(q), torch.randn_like(k)

    def fwd_bwd():
        oq = q * cos + rotate_half(q) * sin
        ok = k * cos + rotate_half(k) * sin
        torch.autograd.grad((oq, ok), (q, k), (gq, gk))

    ms = time_ms(fwd_bwd)
    nbytes = (q.numel() + k.numel()) * 2
    emit(results, "rope_fwd_bwd", "Qwen2.5-7B q28/k4 x128, 16384 tokens, bf16 (HF eager)", 4 * nbytes / ms / 1e9, "TB/s")


def swiglu(results):
    gate = torch.randn(16384, 18944, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    up = torch.randn_like(gate, requires_grad=True)
    g = torch.randn_like(gate)

    def fwd_bwd():
        out = F.silu(gate) * up
        torch.autograd.grad(out, (gate, up), g)

    ms = time_ms(fwd_bwd)
    emit(results, "swiglu_fwd_bwd", "16384x18944 bf16", 8 * gate.numel() * 2 / ms / 1e9, "TB/s")


def adamw(results):
    sizes, total, i = [], 0, 0
    while total < 500_000_000:
        n = 1536 if i % 7 == 0 else (1536 * 8960 // 4 if i % 3 == 0 else 1536 * 1536)
        sizes.append(n)
        total += n
        i += 1
    params = [torch.zeros(n, device="cuda", requires_grad=True) for n in sizes]
    for p in params:
        p.grad = torch.zeros_like(p)
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
    ms = time_ms(opt.step, warmup=2, repeats=10)
    emit(results, "adamw", f"500M params, {len(sizes)} tensors, fused", 28 * total / ms / 1e9, "TB/s")
    emit(results, "adamw_ms", f"500M params, {len(sizes)} tensors, fused", ms, "ms")
    del params, opt


ATTENTION_SHAPES = [(4, 16, 16, 2048, 128), (4, 32, 32, 4096, 128), (8, 16, 16, 2048, 64), (4, 16, 2, 2048, 128)]


def attention(results):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for b, h, hkv, s, d in ATTENTION_SHAPES:
        q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn_like(k, requires_grad=True)
        flops = 4 * b * h * s * s * d / 2
        shape = f"B{b} H{h} Hkv{hkv} S{s} D{d} causal bf16"
        for backend, label in ((SDPBackend.FLASH_ATTENTION, "flash"), (SDPBackend.CUDNN_ATTENTION, "cudnn")):
            try:
                with sdpa_kernel(backend):
                    fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=hkv != h)
                    ms = time_ms(fwd)
                    emit(results, f"attention_fwd_{label}", shape, flops / ms / 1e9, "TFLOP/s")
                    out = fwd()
                    g = torch.randn_like(out)

                    def fwd_bwd():
                        o = fwd()
                        torch.autograd.grad(o, (q, k, v), g)

                    ms = time_ms(fwd_bwd)
                    emit(results, f"attention_fwd_bwd_{label}", shape, 3.5 * flops / ms / 1e9, "TFLOP/s")
            except RuntimeError as error:  # a backend that does not take this shape
                emit(results, f"attention_{label}_unavailable", shape + ": " + str(error)[:80], 0, "")


def linear_cross_entropy(results):
    t, v, hdim = 16384, 151936, 1536
    h = torch.randn(t, hdim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(v, hdim, device="cuda", dtype=torch.bfloat16, requires_grad=True) * 0.02
    w = w.detach().requires_grad_()
    labels = torch.randint(0, v, (t,), device="cuda")

    def unfused():
        logits = (h @ w.t()).float()
        loss = F.cross_entropy(logits, labels)
        torch.autograd.grad(loss, (h, w))

    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    ms = time_ms(unfused, warmup=1, repeats=5)
    emit(results, "linear_ce_unfused_ms", f"T{t} V{v} H{hdim} bf16", ms, "ms")
    emit(results, "linear_ce_unfused_extra_gib", f"T{t} V{v} H{hdim} bf16",
         (torch.cuda.max_memory_allocated() - base) / 2**30, "GiB")
    g = torch.randn(t, v, device="cuda", dtype=torch.bfloat16)

    def gemms():
        _ = h @ w.t()
        _ = g @ w
        _ = g.t() @ h

    ms = time_ms(gemms, warmup=1, repeats=5)
    emit(results, "linear_ce_gemms_ms", f"T{t} V{v} H{hdim} bf16 (3 GEMMs)", ms, "ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="torch_peers.json")
    parser.add_argument("--only", nargs="*", help="run only these groups")
    args = parser.parse_args()
    groups = {"copy": copy_ceiling, "rmsnorm": rms_norm, "rope": rope, "swiglu": swiglu, "adamw": adamw,
              "attention": attention, "linear_ce": linear_cross_entropy}
    results = [{"device": torch.cuda.get_device_name(), "torch": torch.__version__}]
    for name, fn in groups.items():
        if args.only and name not in args.only:
            continue
        fn(results)
        torch.cuda.empty_cache()
    with open(args.out, "w") as out:
        json.dump(results, out, indent=1)


if __name__ == "__main__":
    main()
