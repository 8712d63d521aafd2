#!/usr/bin/env python3
"""ZeRO-3 with parameter and optimizer offload on one GPU, measured against stage 3 without it.

    python3 bench/offload_throughput.py --zerotune build-gpu/bin/zerotune --tokenizer DIR \\
        [--steps 3] [--warmup 1] [--out results.json]

Two measurements, each `zerotune train` in its own process on random bf16 weights built by
transformers (bench/train_throughput.py's models and data):
- memory: the largest Qwen2.5 shape whose host state (20 bytes a parameter: bf16 shard, fp32
  master, moments and gradient, and the updated weights) fits the machine (--big, default 3b;
  7b needs 142 GiB of host memory), full fine-tune, micro-batch 1 x 2048 tokens, gradient
  checkpointing, stage 3 with offload_param and offload_optimizer: peak GPU memory (the
  allocator's and nvidia-smi's), tokens/s, and the trainer's offload log lines (shard copies,
  CPU Adam throughput, share of the copy time hidden);
- ratio: Qwen2.5-1.5B, micro-batch 4 x 2048, gradient accumulation 8, stage 3 without offload
  and with both offloads: tokens/s of each and their ratio (the issue's goal: at least 0.5).
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_throughput as tt  # noqa: E402

SEQ = tt.SEQ


def ds_config(path, offload):
    zero = {"stage": 3, "overlap_comm": True, "stage3_prefetch_bucket_size": "auto",
            "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 1e9}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                                "bf16": {"enabled": "auto"}, "zero_optimization": zero}))
    return path


def train(args, work, shape, offload, micro, accumulation, checkpointing):
    output_dir = work / f"out-{shape}-{'offload' if offload else 'plain'}"
    config = ds_config(work / f"ds-{shape}-{offload}.json", offload)
    cmd = [args.zerotune, "train", "--model_name_or_path", str(work / shape), "--train_file", str(work / "data.json"),
           "--output_dir", str(output_dir), "--overwrite_output_dir", "--template", "none", "--train_on_prompt",
           "--max_length", str(SEQ), "--per_device_train_batch_size", str(micro), "--gradient_accumulation_steps",
           str(accumulation), "--bf16", "--max_steps", str(args.warmup + args.steps), "--logging_steps", "1",
           "--save_strategy", "no", "--report_to", "none", "--learning_rate", str(tt.LR), "--device", "cuda",
           "--finetuning_type", "full", "--deepspeed", str(config)]
    if checkpointing:
        cmd.append("--gradient_checkpointing")
    arrivals = []
    with tt.MemoryPoll(args.gpu) as memory:
        code, lines = tt.run_logged(cmd, lambda line: arrivals.append(time.perf_counter()) if "'loss':" in line else None)
    if code != 0:
        tt.fail(f"zerotune train ({shape}, {'offload' if offload else 'plain'})", lines)
    entries = tt.log_entries(output_dir, lines)
    tokens_per_step = micro * accumulation * SEQ
    rate, source = tt.zerotune_throughput(entries, arrivals, args, tokens_per_step)
    peaks = [e["memory_peak_gib"] for e in entries if "memory_peak_gib" in e]
    return {"shape": tt.SHAPES[shape]["name"], "offload": offload, "micro_batch": micro, "accumulation": accumulation,
            "tokens_per_second": rate, "timed_by": source, "alloc_peak_gib": max(peaks) if peaks else None,
            "nvidia_smi_peak_gib": memory.peak_gib(),
            "offload_log": [l for l in lines if "offload" in l.lower()][-8:]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--zerotune", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--big", default="3b", help="the memory run's shape: 3b or 7b")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zt-offload-bench-") as tmp:
        work = Path(tmp)
        build = [sys.executable, tt.__file__, "--worker", "build", "--workdir", str(work), "--shapes",
                 f"1.5b,{args.big}", "--tokenizer", args.tokenizer, "--samples", str(32 * (args.warmup + args.steps))]
        code, lines = tt.run_logged(build)
        if code != 0:
            tt.fail("building the models", lines)
        rows = [train(args, work, args.big, True, 1, 1, True)]
        print(json.dumps(rows[-1]), flush=True)
        for offload in (False, True):
            rows.append(train(args, work, "1.5b", offload, 4, 8, False))
            print(json.dumps(rows[-1]), flush=True)
    ratio = rows[2]["tokens_per_second"] / rows[1]["tokens_per_second"]
    print(f"{rows[0]['shape']} full, both offloads, 1 x {SEQ}, checkpointing: {rows[0]['tokens_per_second']:,.0f} tok/s, "
          f"peak {rows[0]['alloc_peak_gib']} GiB (allocator), {rows[0]['nvidia_smi_peak_gib']} GiB (nvidia-smi)")
    print(f"Qwen2.5-1.5B stage 3, 4 x {SEQ} x 8: plain {rows[1]['tokens_per_second']:,.0f} tok/s, both offloads "
          f"{rows[2]['tokens_per_second']:,.0f} tok/s: {ratio:.2f} of plain")
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows, "ratio": ratio}, indent=1) + "\n")


if __name__ == "__main__":
    main()
