#!/usr/bin/env python3
"""One markdown table of zerotune's kernels against their PyTorch peers.

Reads Google Benchmark JSON outputs (run each bench with --benchmark_format=json, or
--benchmark_out=FILE --benchmark_out_format=json) and the JSON that bench/torch_peers.py
writes, pairs them through PAIRS below, and prints: kernel, shape, zerotune, peer, ratio
(peer time / zerotune time: above 1, zerotune is faster), share of the copy ceiling.

  scripts/perf_table.py --bench norm.json rope.json swiglu.json adamw.json --peers peers.json
"""

import argparse
import json
import sys

# zerotune benchmark -> (kernel, shape, torch_peers.py name). Both sides count the same
# bytes, so the ratio of times is the ratio of bandwidths.
PAIRS = [
    ("BM_RmsNormForward", "RMSNorm fwd", "16384x4096 bf16", "rmsnorm_fwd"),
    ("BM_RmsNormBackward", "RMSNorm bwd", "16384x4096 bf16", None),
    ("BM_RmsNormForwardBackward", "RMSNorm fwd+bwd", "16384x4096 bf16", "rmsnorm_fwd_bwd"),
    ("BM_RmsNormResidualForward", "residual + RMSNorm fwd", "16384x4096 bf16", "rmsnorm_residual_fwd"),
    ("BM_RmsNormResidualForwardBackward", "residual + RMSNorm fwd+bwd", "16384x4096 bf16",
     "rmsnorm_residual_fwd_bwd"),
    ("BM_RopeInPlaceQKForwardBackward", "RoPE q+k in place fwd+bwd", "Qwen2.5-7B, 16384 tokens bf16",
     "rope_fwd_bwd"),
    ("BM_RopeOutOfPlaceForwardBackward", "RoPE out of place fwd+bwd", "Qwen2.5-7B, 16384 tokens bf16",
     "rope_fwd_bwd"),
    ("BM_SwigluForward", "SwiGLU fwd", "16384x18944 bf16", "swiglu_fwd"),
    ("BM_SwigluForwardBackward", "SwiGLU fwd+bwd", "16384x18944 bf16", "swiglu_fwd_bwd"),
    ("BM_SwigluFusedForwardBackward", "SwiGLU [gate|up] fwd+bwd", "16384x18944 bf16", "swiglu_fwd_bwd"),
    ("BM_AdamWMulti", "AdamW multi-tensor", "494M params, 290 tensors", "adamw_fused"),
    ("BM_AdamWPerTensor", "AdamW one launch pair per tensor", "494M params, 290 tensors", "adamw_fused"),
    ("BM_L2NormMulti", "L2 norm multi-tensor", "494M bf16 grads, 290 tensors", "l2_norm_foreach"),
]

UNIT_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def load_benchmarks(paths):
    """name (without the /manual_time suffix) -> the benchmark's JSON row."""
    rows = {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for b in data.get("benchmarks", []):
            if b.get("run_type") == "aggregate":
                continue
            rows[b["name"].split("/")[0]] = b
    return rows


def load_peers(path):
    if not path:
        return {}, None
    with open(path) as f:
        data = json.load(f)
    return {r["name"]: r for r in data.get("results", [])}, data.get("copy_ceiling_bytes_per_s")


def fmt_time(ms):
    return f"{ms * 1e3:.0f} µs" if ms < 1 else f"{ms:.2f} ms"


def fmt_rate(bytes_per_s):
    return f"{bytes_per_s / 1e12:.2f} TB/s" if bytes_per_s else ""


def table(benches, peers):
    lines = ["| kernel | shape | zerotune | peer (torch) | ratio | share of copy ceiling |",
             "| --- | --- | --- | --- | --- | --- |"]
    for bench, kernel, shape, peer_name in PAIRS:
        b = benches.get(bench)
        if b is None:
            continue
        ms = b["real_time"] * UNIT_TO_MS[b.get("time_unit", "ns")]
        ours = f"{fmt_time(ms)}, {fmt_rate(b.get('bytes_per_second'))}"
        share = f"{b['of_copy_ceiling']:.2f}" if "of_copy_ceiling" in b else "—"
        peer, ratio = "—", "—"
        p = peers.get(peer_name) if peer_name else None
        if p is not None and p.get("ms") == p.get("ms"):  # not NaN
            peer = f"{fmt_time(p['ms'])}, {fmt_rate(p.get('bytes_per_s'))}"
            ratio = f"{p['ms'] / ms:.2f}"
        lines.append(f"| {kernel} | {shape} | {ours} | {peer} | {ratio} | {share} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", nargs="+", required=True, help="Google Benchmark JSON files")
    parser.add_argument("--peers", help="torch_peers.py's JSON output")
    args = parser.parse_args()
    benches = load_benchmarks(args.bench)
    peers, peer_ceiling = load_peers(args.peers)
    if not benches:
        sys.exit("perf_table: no benchmarks found in " + ", ".join(args.bench))
    print(table(benches, peers))
    unpaired = [p for p in peers if p not in {pair[3] for pair in PAIRS} and p != "copy_ceiling"]
    if unpaired:
        print("\nPeers with no zerotune benchmark in this table:\n")
        print("| peer | shape | time | rate |\n| --- | --- | --- | --- |")
        for name in unpaired:
            r = peers[name]
            rate = f"{r['tflops']:.1f} TFLOP/s" if "tflops" in r else fmt_rate(r.get("bytes_per_s"))
            print(f"| {name} | {r['shape']} | {fmt_time(r['ms'])} | {rate} |")
    if peer_ceiling:
        print(f"\nCopy ceiling in the torch run: {peer_ceiling / 1e12:.2f} TB/s")


if __name__ == "__main__":
    main()
