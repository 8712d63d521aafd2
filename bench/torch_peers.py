#!/usr/bin/env python3
"""PyTorch peers of zerotune's kernel benchmarks, on the same shapes, for side-by-side tables.

Runs on a CUDA machine with torch installed; prints one line per measurement and writes all
of them as JSON (--out). Every timing is the median of several CUDA-event-timed runs after
warm-up. Bytes are counted as the matching zerotune benchmark counts them (everything read
and written once), so bytes/s compare directly; attention reports TFLOP/s with causal FLOPs
4*B*H*S^2*D/2 forward and 3.5 times that forward + backward.

  python3 bench/torch_peers.py --out peers.json
  python3 scripts/perf_table.py --bench norm.json rope.json ... --peers peers.json
"""

import argparse
import json
import statistics

import torch
import torch.nn.functional as F

BF16 = torch.bfloat16
DEV = "cuda"


def time_ms(fn, warmup=3, runs=10):
    """Median wall time of fn() on the GPU in milliseconds."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


class Results:
    def __init__(self):
        self.rows = []
        self.ceiling = None

    def add(self, name, shape, ms, nbytes=None, flops=None, **extra):
        row = {"name": name, "shape": shape, "ms": ms}
        if nbytes is not None:
            row["bytes"] = nbytes
            row["bytes_per_s"] = nbytes / (ms / 1e3)
            if self.ceiling:
                row["of_copy_ceiling"] = row["bytes_per_s"] / self.ceiling
        if flops is not None:
            row["tflops"] = flops / (ms / 1e3) / 1e12
        row.update(extra)
        self.rows.append(row)
        shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())
        print(shown, flush=True)


def copy_ceiling(res):
    n = (1 << 30) // 4
    src, dst = torch.zeros(n, device=DEV), torch.empty(n, device=DEV)
    ms = time_ms(lambda: dst.copy_(src), runs=20)
    res.ceiling = 2 * (1 << 30) / (ms / 1e3)
    res.add("copy_ceiling", "1 GiB f32", ms, nbytes=2 * (1 << 30))


def rmsnorm(res):
    rows, hidden = 16384, 4096
    row, small = rows * hidden * 2, hidden * 2 + rows * 4
    x = torch.randn(rows, hidden, device=DEV, dtype=BF16)
    r = torch.randn_like(x)
    w = torch.ones(hidden, device=DEV, dtype=BF16)
    gy, gs = torch.randn_like(x), torch.randn_like(x)
    shape = f"{rows}x{hidden} bf16"
    res.add("rmsnorm_fwd", shape, time_ms(lambda: F.rms_norm(x, (hidden,), w, 1e-6)), nbytes=2 * row + small)

    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()

    def fwd_bwd():
        y = F.rms_norm(xg, (hidden,), wg, 1e-6)
        torch.autograd.backward(y, gy)

    res.add("rmsnorm_fwd_bwd", shape, time_ms(fwd_bwd), nbytes=5 * row + 2 * small + hidden * 2)

    rg = r.clone().requires_grad_()

    def residual_fwd_bwd():
        s = xg + rg
        y = F.rms_norm(s, (hidden,), wg, 1e-6)
        torch.autograd.backward([y, s], [gy, gs])

    res.add("rmsnorm_residual_fwd", shape, time_ms(lambda: F.rms_norm(x + r, (hidden,), w, 1e-6)),
            nbytes=4 * row + small)
    res.add("rmsnorm_residual_fwd_bwd", shape, time_ms(residual_fwd_bwd), nbytes=8 * row + 2 * small + hidden * 2)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    """transformers' eager Qwen2 apply_rotary_pos_emb (unsqueeze_dim=1)."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def rope(res):
    batch, seq, q_heads, k_heads, dim = 4, 4096, 28, 4, 128
    q = torch.randn(batch, q_heads, seq, dim, device=DEV, dtype=BF16, requires_grad=True)
    k = torch.randn(batch, k_heads, seq, dim, device=DEV, dtype=BF16, requires_grad=True)
    inv_freq = 1.0 / (1e6 ** (torch.arange(0, dim, 2, device=DEV, dtype=torch.float32) / dim))
    positions = torch.arange(seq, device=DEV, dtype=torch.float32).expand(batch, seq)
    freqs = positions[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(BF16), emb.sin().to(BF16)
    gq, gk = torch.randn_like(q), torch.randn_like(k)

    def fwd_bwd():
        qo, ko = apply_rotary_pos_emb(q, k, cos, sin)
        torch.autograd.backward([qo, ko], [gq, gk])

    nbytes = 2 * 2 * (q_heads + k_heads) * dim * batch * seq * 2
    res.add("rope_fwd_bwd", f"q {batch * seq}x{q_heads}x{dim}, k {k_heads} heads bf16", time_ms(fwd_bwd),
            nbytes=nbytes)


def swiglu(res):
    tokens, ffn = 16384, 18944
    t = tokens * ffn * 2
    g = torch.randn(tokens, ffn, device=DEV, dtype=BF16)
    u = torch.randn_like(g)
    dy = torch.randn_like(g)
    shape = f"{tokens}x{ffn} bf16"
    res.add("swiglu_fwd", shape, time_ms(lambda: F.silu(g) * u), nbytes=3 * t)
    gg, ug = g.clone().requires_grad_(), u.clone().requires_grad_()

    def fwd_bwd():
        torch.autograd.backward(F.silu(gg) * ug, dy)

    res.add("swiglu_fwd_bwd", shape, time_ms(fwd_bwd), nbytes=8 * t)


def qwen_0_5b_shapes():
    hidden, ffn, kv, vocab = 896, 4864, 128, 151936
    shapes = [(vocab, hidden)]
    for _ in range(24):
        shapes += [(hidden, hidden), (hidden,), (kv, hidden), (kv,), (kv, hidden), (kv,), (hidden, hidden),
                   (ffn, hidden), (ffn, hidden), (hidden, ffn), (hidden,), (hidden,)]
    return shapes + [(hidden,)]


def adamw(res):
    shapes = qwen_0_5b_shapes()
    params = [torch.zeros(s, device=DEV, dtype=torch.float32, requires_grad=True) for s in shapes]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    count = sum(p.numel() for p in params)
    decay = [p for p in params if p.dim() == 2]
    no_decay = [p for p in params if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-5, fused=True)
    # torch's fused AdamW needs grads of the parameter's dtype: fp32 p, m, v read + written and
    # an fp32 grad read, also 28 bytes a parameter (no bf16 working copy written).
    res.add("adamw_fused", f"{count / 1e6:.0f}M params in {len(params)} tensors", time_ms(opt.step, runs=5),
            nbytes=28 * count)
    grads = [torch.randn(s, device=DEV, dtype=BF16) for s in shapes]

    def norm():
        return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))

    res.add("l2_norm_foreach", f"{count / 1e6:.0f}M bf16 grads in {len(grads)} tensors", time_ms(norm),
            nbytes=2 * count)


def attention(res):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    cases = [("B4 H16 S2048 D128", 4, 16, 16, 2048, 128), ("B4 H32 S4096 D128", 4, 32, 32, 4096, 128),
             ("B8 H16 S2048 D64", 8, 16, 16, 2048, 64), ("B4 H16/2 S2048 D128 GQA", 4, 16, 2, 2048, 128),
             # The grouped heads Qwen2.5 trains with (attention_bench's Qwen15B_/Qwen05B_ rows).
             ("B4 H12/2 S2048 D128 GQA", 4, 12, 2, 2048, 128), ("B4 H14/2 S2048 D64 GQA", 4, 14, 2, 2048, 64)]
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    for label, b, hq, hkv, s, d in cases:
        q = torch.randn(b, hq, s, d, device=DEV, dtype=BF16, requires_grad=True)
        k = torch.randn(b, hkv, s, d, device=DEV, dtype=BF16, requires_grad=True)
        v = torch.randn(b, hkv, s, d, device=DEV, dtype=BF16, requires_grad=True)
        go = torch.randn(b, hq, s, d, device=DEV, dtype=BF16)
        flops = 4 * b * hq * s * s * d / 2
        gqa = hq != hkv
        for name, backend in backends:
            def fwd():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)

            def fwd_bwd():
                torch.autograd.backward(fwd(), go)

            try:
                res.add(f"sdpa_{name}_fwd", label, time_ms(fwd), flops=flops)
                res.add(f"sdpa_{name}_fwd_bwd", label, time_ms(fwd_bwd), flops=3.5 * flops)
            except RuntimeError as e:  # a backend that refuses the shape says so in the output
                res.add(f"sdpa_{name}_fwd", label, float("nan"), error=str(e).splitlines()[0])


def linear_cross_entropy(res):
    tokens, vocab, hidden = 16384, 151936, 1536
    h = torch.randn(tokens, hidden, device=DEV, dtype=BF16, requires_grad=True)
    w = (torch.randn(vocab, hidden, device=DEV, dtype=BF16) * 0.02).requires_grad_()
    labels = torch.randint(0, vocab, (tokens,), device=DEV)
    shape = f"T{tokens} V{vocab} H{hidden} bf16"
    gemm_flops = 2 * tokens * vocab * hidden

    def loss_fwd():
        return F.cross_entropy((h @ w.t()).float(), labels)

    def loss_fwd_bwd():
        loss_fwd().backward()

    for name, fn in [("linear_ce_fwd", loss_fwd), ("linear_ce_fwd_bwd", loss_fwd_bwd)]:
        fn()
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        ms = time_ms(fn, runs=5)
        peak = torch.cuda.max_memory_allocated() - base
        res.add(name, shape, ms, flops=gemm_flops * (3 if name.endswith("bwd") else 1), peak_extra_bytes=peak)
    with torch.no_grad():
        logits = h @ w.t()
        res.add("linear_ce_gemm_logits", shape, time_ms(lambda: h @ w.t()), flops=gemm_flops)
        res.add("linear_ce_gemm_grad_h", shape, time_ms(lambda: logits @ w), flops=gemm_flops)
        res.add("linear_ce_gemm_grad_w", shape, time_ms(lambda: logits.t() @ h), flops=gemm_flops)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="torch_peers.json", help="where to write the JSON results")
    parser.add_argument("--only", nargs="*", help="run only these groups (copy rmsnorm rope swiglu adamw "
                        "attention linear_ce)")
    args = parser.parse_args()
    groups = {"copy": copy_ceiling, "rmsnorm": rmsnorm, "rope": rope, "swiglu": swiglu, "adamw": adamw,
              "attention": attention, "linear_ce": linear_cross_entropy}
    res = Results()
    copy_ceiling(res)
    for name, run in groups.items():
        if name == "copy" or (args.only and name not in args.only):
            continue
        run(res)
        torch.cuda.empty_cache()
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "copy_ceiling_bytes_per_s": res.ceiling, "results": res.rows}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
