#!/usr/bin/env python3
"""QLoRA's peak GPU memory and speed at 7B, 14B and 32B on one GPU, beside `zerotune estimate`.

For each shape (Qwen2.5-7B, -14B, -32B, random weights) it writes a model folder straight in
transformers' bitsandbytes 4-bit layout (NF4 codes, double-quantized absmax, as the shared
"-bnb-4bit" repositories hold them; a dense 32B folder would not fit the disk), then trains it
with `zerotune train`: LoRA rank 16 on every linear, B1 x S2048, gradient checkpointing, bf16
(issue 39's memory rows). Prints tokens/s, the caching allocator's peak (memory_peak_gib),
nvidia-smi's peak and what `zerotune estimate` says for the same run.

  python3 bench/qlora_memory.py --zerotune build-gpu/bin/zerotune --tokenizer DIR \\
      [--shapes 7b,14b,32b] [--steps 3] [--max_length 2048] [--out results.json]

The weights are random codes and scales (the loss is meaningless, the memory and the time are
not); the folder of each shape is deleted after its run.
"""
import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import train_throughput as tt  # noqa: E402

SHAPES = {
    "7b": tt.SHAPES["7b"],
    "14b": dict(name="Qwen2.5-14B", hidden_size=5120, num_hidden_layers=48, num_attention_heads=40,
                num_key_value_heads=8, intermediate_size=13824, vocab_size=152064, tie_word_embeddings=False),
    "32b": dict(name="Qwen2.5-32B", hidden_size=5120, num_hidden_layers=64, num_attention_heads=40,
                num_key_value_heads=8, intermediate_size=27648, vocab_size=152064, tie_word_embeddings=False),
}
# bitsandbytes' NF4 code book (its quant_map; zerotune checks a stored map against its own).
NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
       0.7229568362236023, 1.0]
BLOCK, NESTED_BLOCK, OFFSET = 64, 256, 0.02
SHARD_BYTES = 4 << 30


def config_of(shape):
    config = dict(tt.COMMON, **{k: v for k, v in SHAPES[shape].items() if k != "name"})
    config["quantization_config"] = {
        "_load_in_4bit": True, "_load_in_8bit": False, "bnb_4bit_compute_dtype": "bfloat16",
        "bnb_4bit_quant_storage": "uint8", "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
        "llm_int8_enable_fp32_cpu_offload": False, "llm_int8_has_fp16_weight": False,
        "llm_int8_skip_modules": None, "llm_int8_threshold": 6.0, "load_in_4bit": True, "load_in_8bit": False,
        "quant_method": "bitsandbytes"}
    return config


def linears_of(c):
    head = c["hidden_size"] // c["num_attention_heads"]
    q, kv, h, i = c["num_attention_heads"] * head, c["num_key_value_heads"] * head, c["hidden_size"], c[
        "intermediate_size"]
    return {"self_attn.q_proj": (q, h), "self_attn.k_proj": (kv, h), "self_attn.v_proj": (kv, h),
            "self_attn.o_proj": (h, q), "mlp.gate_proj": (i, h), "mlp.up_proj": (i, h), "mlp.down_proj": (h, i)}


def quantized(torch, name, rows, cols, dynamic_map):
    """One linear's tensors in bitsandbytes' packed layout, random codes and scales."""
    n = rows * cols
    blocks = -(-n // BLOCK)
    state = {"quant_type": "nf4", "blocksize": BLOCK, "dtype": "bfloat16", "shape": [rows, cols],
             "nested_blocksize": NESTED_BLOCK, "nested_dtype": "float32", "nested_offset": OFFSET}
    return {
        name: torch.randint(0, 256, ((n + 1) // 2, 1), dtype=torch.uint8, device="cuda").cpu(),
        # codes of the dynamic map's small positive entries: absmax near OFFSET + 0.01
        name + ".absmax": torch.randint(150, 200, (blocks,), dtype=torch.uint8, device="cuda").cpu(),
        name + ".quant_map": torch.tensor(NF4, dtype=torch.float32),
        name + ".nested_absmax": torch.full((-(-blocks // NESTED_BLOCK),), 0.05, dtype=torch.float32),
        name + ".nested_quant_map": dynamic_map.clone(),  # safetensors refuses shared storage
        name + ".quant_state.bitsandbytes__nf4": torch.tensor(list(json.dumps(state).encode()), dtype=torch.uint8),
    }


def write_model(folder, shape, tokenizer):
    """The random 4-bit folder: safetensors shards, index, config.json and the tokenizer files."""
    import torch
    from safetensors.torch import save_file
    from quant4_torch_reference import dynamic_map
    c = config_of(shape)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(c, indent=1))
    for f in Path(tokenizer).iterdir():
        if f.is_file() and f.name not in tt.MODEL_FILES and not f.name.endswith((".safetensors", ".bin")):
            shutil.copy(f, folder / f.name)
    nested_map = torch.tensor(dynamic_map(), dtype=torch.float32)
    h, vocab = c["hidden_size"], c["vocab_size"]

    def dense(*size):
        return (torch.randn(*size, device="cuda") * 0.02).to(torch.bfloat16).cpu()

    shard, shard_bytes, weight_map, total = {}, 0, {}, 0

    def flush():
        nonlocal shard, shard_bytes
        if shard:
            name = f"model-{len(set(weight_map.values())) + 1:05d}.safetensors"
            save_file(shard, str(folder / name), metadata={"format": "pt"})
            weight_map.update({k: name for k in shard})
            shard, shard_bytes = {}, 0

    def add(tensors):
        nonlocal shard_bytes, total
        for k, v in tensors.items():
            size = v.numel() * v.element_size()
            if shard_bytes + size > SHARD_BYTES:
                flush()
            shard[k], shard_bytes, total = v.contiguous(), shard_bytes + size, total + size

    add({"model.embed_tokens.weight": dense(vocab, h)})
    for layer in range(c["num_hidden_layers"]):
        prefix = f"model.layers.{layer}."
        for module, (rows, cols) in linears_of(c).items():
            add(quantized(torch, prefix + module + ".weight", rows, cols, nested_map))
            if module in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"):
                add({prefix + module + ".bias": dense(rows)})
        add({prefix + "input_layernorm.weight": torch.ones(h, dtype=torch.bfloat16),
             prefix + "post_attention_layernorm.weight": torch.ones(h, dtype=torch.bfloat16)})
    add({"model.norm.weight": torch.ones(h, dtype=torch.bfloat16), "lm_head.weight": dense(vocab, h)})
    flush()
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=1))
    return total


def train_flags(args):
    return ["--finetuning_type", "lora", "--lora_rank", "16", "--lora_target", "all", "--gradient_checkpointing",
            "--max_length", str(args.max_length), "--per_device_train_batch_size", "1"]


def estimate(args, folder):
    # estimate reads config.json alone: the 4-bit base is named, as for --quantization_bit 4 at load.
    code, lines = tt.run_logged([args.zerotune, "estimate", "--model_name_or_path", str(folder), "--num_gpus", "1",
                                 "--quantization_bit", "4", *train_flags(args)])
    if code != 0:
        tt.fail("zerotune estimate", lines)
    row = next((l.split() for l in lines if l.split()[:2] == ["0", "none"]), None)
    return {"per_gpu_gib": float(row[7]) if row else None, "lines": lines[:3]}


def train(args, work, folder, shape):
    output_dir = work / f"out-{shape}"
    cmd = [args.zerotune, "train", "--model_name_or_path", str(folder), "--train_file", str(work / "data.json"),
           "--output_dir", str(output_dir), "--overwrite_output_dir", "--template", "none", "--train_on_prompt",
           "--bf16", "--max_steps", str(args.warmup + args.steps), "--logging_steps", "1", "--save_strategy", "no",
           "--report_to", "none", "--learning_rate", "1e-4", "--device", "cuda", *train_flags(args)]
    arrivals = []
    with tt.MemoryPoll(args.gpu) as memory:
        code, lines = tt.run_logged(cmd, lambda line: arrivals.append(time.perf_counter()) if "'loss':" in line else None)
    if code != 0:
        tt.fail(f"zerotune train ({shape})", lines)
    entries = tt.log_entries(output_dir, lines)
    rate, source = tt.zerotune_throughput(entries, arrivals, args, args.max_length)
    peaks = [e["memory_peak_gib"] for e in entries if "memory_peak_gib" in e]
    return {"tokens_per_second": rate, "timed_by": source, "alloc_peak_gib": max(peaks) if peaks else None,
            "nvidia_smi_peak_gib": memory.peak_gib(), "losses": [e.get("loss") for e in entries if "loss" in e],
            "startup": [l for l in lines if "GiB" in l][:6]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--zerotune", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--shapes", default="7b,14b,32b")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--max_length", type=int, default=2048)
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--out")
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        if shape not in SHAPES:
            parser.error(f"--shapes: unknown shape '{shape}'; choose from {', '.join(SHAPES)}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="zt-qlora-") as tmp:
        work = Path(tmp)
        from transformers import AutoTokenizer
        tt.SEQ = args.max_length
        tt.write_dataset(AutoTokenizer.from_pretrained(args.tokenizer), work / "data.json", args.warmup + args.steps)
        for shape in args.shapes.split(","):
            folder = work / shape
            start = time.perf_counter()
            size = write_model(folder, shape, args.tokenizer)
            print(f"wrote {SHAPES[shape]['name']} in 4 bits: {size / 2**30:.2f} GiB in "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
            row = {"shape": SHAPES[shape]["name"], "folder_gib": size / 2**30, "estimate": estimate(args, folder),
                   **train(args, work, folder, shape)}
            shutil.rmtree(folder)
            rows.append(row)
            est = row["estimate"]["per_gpu_gib"]
            print(f"{row['shape']}: {row['tokens_per_second']:,.0f} tok/s, allocator peak {row['alloc_peak_gib']} GiB, "
                  f"nvidia-smi {row['nvidia_smi_peak_gib']} GiB, estimate {est} GiB, losses {row['losses']}",
                  flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"max_length": args.max_length, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
