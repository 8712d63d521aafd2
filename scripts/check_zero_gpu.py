#!/usr/bin/env python3
"""ZeRO on one GPU: every stage with 1, 2 and 4 in-process ranks sharing the GPU, optimizer
offload, and NCCL at world size 1 through `zerotune launch`, each against one plain rank.

    python3 scripts/check_zero_gpu.py [--zerotune build-gpu/bin/zerotune] [--steps 12]

Each run fine-tunes the tiny Qwen2 of examples/ on the shipped alpaca data in float32 on the
GPU with the same global batch of 4 (per-device batch 4 / world size), logging every step.
A run passes when its loss at every step is within 1e-4 relative of the single-rank stage-0
run (float32 sums over ranks in another order differ in their last bits, nothing more). The
offload runs also print the CPU Adam throughput and overlap the trainer reports. Prints a
table; exits 1 if any run fails.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOLERANCE = 1e-4


def ds_config(folder, stage, offload):
    zero = {"stage": stage}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    path = folder / f"ds_stage{stage}{'_offload' if offload else ''}.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                                "gradient_clipping": "auto", "zero_optimization": zero}))
    return path


def train(zerotune, folder, name, stage, ranks, steps, offload=False, launch=False):
    out = folder / name
    command = [str(zerotune), "train", "--model_name_or_path", str(ROOT / "examples" / "tiny-qwen"),
               "--train_file", str(ROOT / "examples" / "data" / "alpaca_demo.json"), "--template", "qwen",
               "--output_dir", str(out), "--overwrite_output_dir", "--device", "cuda",
               "--deepspeed", str(ds_config(folder, stage, offload)), "--max_steps", str(steps),
               "--per_device_train_batch_size", str(4 // ranks), "--learning_rate", "5e-3",
               "--lr_scheduler_type", "constant", "--logging_steps", "1", "--save_strategy", "no",
               "--seed", "7"]
    if launch:
        command = [str(zerotune), "launch", "--nproc_per_node", "1"] + command
    elif ranks > 1:
        command += ["--inprocess_ranks", str(ranks)]
    env = dict(os.environ, NCCL_NVLS_ENABLE="0")
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    log = result.stdout + result.stderr
    (folder / f"{name}.log").write_text(log)
    if result.returncode != 0:
        return None, log
    entries = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    return [e["loss"] for e in entries if "loss" in e], log


def worst_relative(losses, reference):
    if losses is None or len(losses) != len(reference):
        return float("inf")
    return max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, reference))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zerotune", type=Path, default=ROOT / "build-gpu" / "bin" / "zerotune")
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    runs = [(f"stage{s}-ranks{r}", s, r, False, False) for s in (0, 1, 2, 3) for r in (1, 2, 4)]
    runs += [("stage2-ranks2-offload", 2, 2, True, False), ("stage1-ranks1-offload", 1, 1, True, False),
             ("stage2-nccl-world1", 2, 1, False, True), ("stage3-nccl-world1", 3, 1, False, True)]
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        reference, log = train(args.zerotune, folder, "reference", 0, 1, args.steps)
        if reference is None:
            sys.exit(f"the single-rank run failed:\n{log[-3000:]}")
        print(f"reference: {len(reference)} steps, loss {reference[0]:.5f} -> {reference[-1]:.5f}")
        print("| run | worst relative loss difference | result |\n| --- | --- | --- |")
        for name, stage, ranks, offload, launch in runs:
            losses, log = train(args.zerotune, folder, name, stage, ranks, args.steps, offload, launch)
            worst = worst_relative(losses, reference)
            ok = worst <= TOLERANCE
            failed |= not ok
            print(f"| {name} | {worst:.2e} | {'pass' if ok else 'FAIL'} |")
            if losses is None:
                print(log[-2000:])
            for line in log.splitlines():
                if "parameters/s" in line or "NCCL" in line and "world" in line:
                    print(f"    {line.strip()}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
