#!/usr/bin/env python3
"""Inference speed side by side: zerotune's engine (tools/generate_bench) against transformers'
generate with its static cache, same GPU, same run.

    python3 bench/generate_throughput.py [--bench build-gpu/bin/generate_bench] [--shapes 1.5b,7b,glm4-9b]
                                         [--batches 1,32] [--out results.json]

For each shape a model with the released config (random weights, bf16) is built by
transformers on the GPU and saved for zerotune. Both generate exactly 128 new tokens after
128-token random prompts, greedy, at batch 1 and 32. transformers: prefill is timed as
generate with max_new_tokens=1, decode as (full run - prefill) over the 127 later tokens,
after a warm-up of both. zerotune: generate_bench's steady decode rate as the engine runs by
default (at up to 8 sequences the faster of the CUDA graph and the persistent decode kernel,
timed on the first steps; CUDA graphs above), at up to 8 sequences also each of the two alone,
CUDA graphs off once at batch 1, and prefill; and for each shape the time to the first token of
one 2,048-token prompt on both sides. The copy bandwidth of the GPU is measured in the same run;
batch-1 decode is also stated as the weight bytes it moves per second against it: every weight's
bytes per token, and the bytes a step reads (an untied input embedding is read one row a token).
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from check_hf_shapes import QWEN2, SHAPES, build, config_for  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROMPT, NEW = 128, 128
SHAPE_NAMES = {"1.5b": "Qwen2.5-1.5B",
               "7b": "Qwen2.5-7B",
               "glm4-9b": "GLM-4-9B"}
SEVEN_B = dict(QWEN2, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
               num_key_value_heads=4, max_window_layers=28, tie_word_embeddings=False, vocab_size=152064)
# GLM-4-9B's transformer as transformers' "glm" builds it (zerotune reads it as it reads THUDM's
# fused query_key_value checkpoints: one [q; k; v] projection with bias, one [gate; up]).
GLM4_9B = dict(architectures=["GlmForCausalLM"], model_type="glm", hidden_act="silu", hidden_size=4096,
               intermediate_size=13696, num_hidden_layers=40, num_attention_heads=32, num_key_value_heads=2,
               head_dim=128, vocab_size=151552, tie_word_embeddings=False, attention_bias=True,
               partial_rotary_factor=0.5, rope_theta=10000.0, rms_norm_eps=1.5625e-07,
               max_position_embeddings=131072, pad_token_id=151329, eos_token_id=[151329, 151336, 151338],
               torch_dtype="bfloat16")
VALUES = {"7b": SEVEN_B, "glm4-9b": GLM4_9B}
LONG_PROMPT = 2048  # time to first token is also measured for one prompt of this many tokens


def copy_bandwidth():
    x = torch.empty(2 * 1024**3 // 2, dtype=torch.bfloat16, device="cuda")
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10):
        y.copy_(x)
    torch.cuda.synchronize()
    return 2 * x.numel() * 2 * 10 / (time.perf_counter() - start)


def hf_generate(model, batch, new_tokens, prompt=PROMPT):
    ids = torch.randint(100, model.config.vocab_size, (batch, prompt), device="cuda")
    torch.cuda.synchronize()
    start = time.perf_counter()
    model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                   min_new_tokens=new_tokens, do_sample=False, cache_implementation="static", pad_token_id=0)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def hf_first_token(model, prompt):
    """transformers' time to the first token of one `prompt`-token prompt (generate, 1 new token)."""
    hf_generate(model, 1, 1, prompt)  # warm-up at this length
    return min(hf_generate(model, 1, 1, prompt) for _ in range(2))


def hf_numbers(model, batch):
    hf_generate(model, batch, NEW)  # warm-up (static cache allocation, kernels)
    prefill = min(hf_generate(model, batch, 1) for _ in range(2))
    full = hf_generate(model, batch, NEW)
    return {"prefill_s": prefill, "decode_tokens_per_s": batch * (NEW - 1) / (full - prefill)}


def ours(bench, folder, batch, graphs=True, prompt=PROMPT, new=NEW, kernel="fastest"):
    try:
        out = subprocess.run([str(bench), str(folder), "--batch", str(batch), "--prompt_tokens", str(prompt),
                              "--new_tokens", str(new), "--cuda_graphs", "true" if graphs else "false",
                              "--decode_kernel", kernel],
                             capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:  # a hung kernel is a row's error, not the whole run's
        return {"error": f"no result within 180 s ({kernel} decode path, batch {batch})"}
    if out.returncode != 0:
        return {"error": out.stderr[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_shape(key, args, bandwidth):
    name = SHAPE_NAMES[key]
    values = VALUES.get(key) or SHAPES[name]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        model = build(config_for(name, 0, Path(tmp), values), seed=1).eval()
        model.save_pretrained(folder)
        weight_bytes = sum(p.numel() for p in model.parameters()) * 2
        # What a decode step reads: every weight but an untied input embedding, of which it reads
        # one row a token (a tied one is the output head too, read whole).
        embedding = model.get_input_embeddings().weight
        step_bytes = weight_bytes - (0 if model.config.tie_word_embeddings else embedding.numel() * 2)
        for batch in args.batches:
            theirs = hf_numbers(model, batch)
            row = {"shape": name, "batch": batch, "transformers": theirs, "zerotune": ours(args.bench, folder, batch),
                   "weight_bytes": weight_bytes, "step_bytes": step_bytes, "copy_bytes_per_s": bandwidth}
            if batch <= 8:
                row["persistent"] = ours(args.bench, folder, batch, kernel="persistent")
                row["graph"] = ours(args.bench, folder, batch, kernel="graph")
            rows.append(row)
        first_token = {"transformers_s": hf_first_token(model, LONG_PROMPT),
                       "zerotune_s": ours(args.bench, folder, 1, prompt=LONG_PROMPT, new=4).get("prefill_s")}
        del model
        torch.cuda.empty_cache()
        rows.append({"shape": name, "batch": 1, "zerotune_no_graphs": ours(args.bench, folder, 1, graphs=False),
                     "first_token": first_token})
    return rows


def print_table(rows):
    print("| shape | batch | zerotune decode tok/s | transformers tok/s | ratio "
          "| batch-1 weight bandwidth | zerotune prefill TFLOP/s | persistent kernel alone | CUDA graph alone |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "transformers" not in r:
            ft = r["first_token"]
            print(f"| {r['shape']} | 1 | without CUDA graphs: {r['zerotune_no_graphs']} | | | | |")
            print(f"| {r['shape']} | 1 | time to first token, {LONG_PROMPT}-token prompt: zerotune {ft['zerotune_s']} s, "
                  f"transformers {ft['transformers_s']:.4f} s | | | | |")
            continue
        z, t = r["zerotune"], r["transformers"]
        if "error" in z:
            print(f"| {r['shape']} | {r['batch']} | error: {z['error'][-300:]} | | | | |")
            continue
        share = ""
        if r["batch"] == 1:
            rate = z['decode_tokens_per_s'] / r['copy_bytes_per_s']
            share = f"{r['weight_bytes'] * rate:.0%} of copy ({r['step_bytes'] * rate:.0%} of the bytes a step reads)"
        alone = [f"{r[k]['decode_tokens_per_s']:.0f}" if "decode_tokens_per_s" in r.get(k, {})
                 else str(r.get(k, {}).get("error", ""))[-200:] for k in ("persistent", "graph")]
        print(f"| {r['shape']} | {r['batch']} | {z['decode_tokens_per_s']:.0f} | "
              f"{t['decode_tokens_per_s']:.0f} | {z['decode_tokens_per_s'] / t['decode_tokens_per_s']:.2f}x | "
              f"{share} | {z['prefill_tflops']:.0f} | {alone[0]} | {alone[1]} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, default=ROOT / "build-gpu" / "bin" / "generate_bench")
    parser.add_argument("--shapes", default="1.5b,7b")
    parser.add_argument("--batches", default="1,32", type=lambda s: [int(b) for b in s.split(",")])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    bandwidth = copy_bandwidth()
    print(f"device-to-device copy: {bandwidth / 1e12:.2f} TB/s")
    rows = []
    for key in args.shapes.split(","):
        rows += run_shape(key, args, bandwidth)
        print_table(rows)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
