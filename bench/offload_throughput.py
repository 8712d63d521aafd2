#!/usr/bin/env python3
"""ZeRO offload on one GPU, measured against the same stage without it, in one run.

    python3 bench/offload_throughput.py --zerotune build-gpu/bin/zerotune --tokenizer DIR \\
        [--rows 2:none:8,2:optimizer:8,...] [--big 3b] [--gpu_memory_limit 24GiB] [--steps 3] \\
        [--warmup 1] [--profile] [--out results.json]

Each row is `zerotune train` in its own process on random bf16 weights built by transformers
(bench/train_throughput.py's models and data):
- ratio rows (--rows, STAGE:OFFLOAD:ACCUMULATION with OFFLOAD none, optimizer, both,
  optimizer@RATIO for DeepSpeed's partial offload; optimizer+delayed and both+delayed add
  --offload_delayed_update): Qwen2.5-1.5B, micro-batch 4 x 2048 tokens,
  full fine-tune; tokens/s of each, and each offloaded row's ratio to the row of the same
  stage and accumulation without offload (the goals: stage 2 with optimizer offload >= 0.80 at
  accumulation 8 and >= 0.50 at 1; stage 3 with both >= 0.60);
- memory row: the largest Qwen2.5 shape whose host state (20 bytes a parameter: bf16 shard,
  fp32 master, moments and gradient, and the updated weights) fits the machine (--big,
  default 3b; 7b needs 142 GiB of host memory), full fine-tune, micro-batch 1 x 2048 tokens,
  gradient checkpointing, stage 3 with both offloads, the GPU capped at --gpu_memory_limit
  (ZT_CUDA_MEMORY_LIMIT): peak GPU memory (the allocator's and nvidia-smi's) and tokens/s.
Every row keeps the trainer's offload log lines; --profile adds --profile_steps to the
offloaded rows and keeps the profile's table.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_throughput as tt  # noqa: E402

SEQ = tt.SEQ


def ds_config(path, stage, offload):
    zero = {"stage": stage, "overlap_comm": True}
    if stage == 3:
        zero.update({"stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto",
                     "stage3_max_live_parameters": 1e9})
    kind, _, ratio = offload.removesuffix("+delayed").partition("@")
    if kind in ("optimizer", "both"):
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        if ratio:
            zero["offload_optimizer"]["ratio"] = float(ratio)
    if kind == "both":
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                                "bf16": {"enabled": "auto"}, "zero_optimization": zero}))
    return path


def train(args, work, shape, stage, offload, micro, accumulation, checkpointing, memory_limit=None):
    name = f"{shape}-z{stage}-{offload}-a{accumulation}"
    output_dir = work / f"out-{name}"
    config = ds_config(work / f"ds-{name}.json", stage, offload)
    cmd = [args.zerotune, "train", "--model_name_or_path", str(work / shape), "--train_file", str(work / "data.json"),
           "--output_dir", str(output_dir), "--overwrite_output_dir", "--template", "none", "--train_on_prompt",
           "--max_length", str(SEQ), "--per_device_train_batch_size", str(micro), "--gradient_accumulation_steps",
           str(accumulation), "--bf16", "--max_steps", str(args.warmup + args.steps), "--logging_steps", "1",
           "--save_strategy", "no", "--report_to", "none", "--learning_rate", str(tt.LR), "--device", "cuda",
           "--finetuning_type", "full", "--deepspeed", str(config)]
    if checkpointing:
        cmd.append("--gradient_checkpointing")
    if offload.endswith("+delayed"):
        cmd.append("--offload_delayed_update")
    if args.profile and offload != "none":
        cmd += ["--profile_steps", str(args.steps)]
    env = dict(os.environ, **({"ZT_CUDA_MEMORY_LIMIT": memory_limit} if memory_limit else {}))
    arrivals = []
    with tt.MemoryPoll(args.gpu) as memory:
        code, lines = tt.run_logged(cmd, lambda line: arrivals.append(time.perf_counter()) if "'loss':" in line else None,
                                    env=env)
    if code != 0:
        tt.fail(f"zerotune train ({name})", lines)
    entries = tt.log_entries(output_dir, lines)
    tokens_per_step = micro * accumulation * SEQ
    rate, source = tt.zerotune_throughput(entries, arrivals, args, tokens_per_step)
    peaks = [e["memory_peak_gib"] for e in entries if "memory_peak_gib" in e]
    profile_start = next((i for i, l in enumerate(lines) if "step profile: steps" in l), None)
    return {"shape": tt.SHAPES[shape]["name"], "stage": stage, "offload": offload, "micro_batch": micro,
            "accumulation": accumulation, "gpu_memory_limit": memory_limit, "tokens_per_second": rate,
            "timed_by": source, "alloc_peak_gib": max(peaks) if peaks else None,
            "nvidia_smi_peak_gib": memory.peak_gib(),
            "offload_log": [l for l in lines if "offload" in l.lower()][-10:],
            "profile": lines[profile_start:profile_start + 20] if profile_start is not None else []}


def parse_rows(text):
    rows = []
    for item in text.split(","):
        stage, offload, accumulation = item.split(":")
        if offload.partition("@")[0] not in ("none", "optimizer", "both", "optimizer+delayed", "both+delayed"):
            raise SystemExit(f"--rows {item}: the offload is none, optimizer, optimizer@RATIO or both, the last two "
                             "with +delayed for --offload_delayed_update")
        rows.append((int(stage), offload, int(accumulation)))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--zerotune", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--rows", default="2:none:8,2:optimizer:8,3:none:8,3:both:8,2:none:1,2:optimizer:1")
    parser.add_argument("--big", default="3b", help="the memory row's shape: 3b or 7b; none: no memory row")
    parser.add_argument("--gpu_memory_limit", default="24GiB", help="the memory row's GPU cap (ZT_CUDA_MEMORY_LIMIT)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="--profile_steps on the offloaded rows")
    parser.add_argument("--out")
    args = parser.parse_args()
    wanted = parse_rows(args.rows) if args.rows else []
    shapes = ["1.5b"] + ([args.big] if args.big != "none" else [])
    rows = []

    def keep(row):
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps({"rows": rows}, indent=1) + "\n")

    with tempfile.TemporaryDirectory(prefix="zt-offload-bench-") as tmp:
        work = Path(tmp)
        build = [sys.executable, tt.__file__, "--worker", "build", "--workdir", str(work), "--shapes",
                 ",".join(shapes), "--tokenizer", args.tokenizer, "--samples", str(32 * (args.warmup + args.steps))]
        code, lines = tt.run_logged(build)
        if code != 0:
            tt.fail("building the models", lines)
        for stage, offload, accumulation in wanted:
            keep(train(args, work, "1.5b", stage, offload, 4, accumulation, False))
        if args.big != "none":
            keep(train(args, work, args.big, 3, "both", 1, 1, True, args.gpu_memory_limit))
    print()
    print("| shape | stage | offload | accumulation | tokens/s | of no offload | peak GiB (allocator / nvidia-smi) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        plain = next((r for r in rows if r["shape"] == row["shape"] and r["stage"] == row["stage"] and
                      r["accumulation"] == row["accumulation"] and r["offload"] == "none"), None)
        ratio = f"{row['tokens_per_second'] / plain['tokens_per_second']:.2f}" if plain and plain is not row else ""
        cap = f" (GPU capped at {row['gpu_memory_limit']})" if row["gpu_memory_limit"] else ""
        print(f"| {row['shape']}{cap} | {row['stage']} | {row['offload']} | {row['accumulation']} | "
              f"{row['tokens_per_second']:,.0f} | {ratio} | {row['alloc_peak_gib']} / {row['nvidia_smi_peak_gib']} |")


if __name__ == "__main__":
    main()
