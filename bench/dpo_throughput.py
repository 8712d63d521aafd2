#!/usr/bin/env python3
"""LoRA DPO throughput of `zerotune train --stage dpo` beside PyTorch + PEFT on the same GPU.

A Qwen2.5-1.5B shape (random weights, bf16), LoRA rank 8 on every linear layer, B=4 pairs per
step, each chosen and rejected sequence 1,024 tokens (a 512-token prompt and a 512-token
answer), the sigmoid loss with beta 0.1. The peer runs a step as TRL's DPOTrainer does: the
policy's forward over the 2B concatenated sequences, the reference's forward over them with
the adapter disabled under no_grad, the label log-probabilities from the full logits, the loss,
backward and AdamW (fused) on the adapter. zerotune packs the pairs into one forward with each
prompt run once (attention still sees both sequences whole), runs the reference with the adapter
off and never holds the logits. Prints tokens/s (policy tokens:
2 x B x 1,024 a step) and peak memory of each, and the ratios.

  python3 bench/dpo_throughput.py --zerotune build-gpu/bin/zerotune --tokenizer DIR [--steps 8] [--warmup 3]

--tokenizer is a folder holding a Qwen tokenizer. Measured as bench/train_throughput.py
measures (own process per run, nvidia-smi peak above the starting level, the trainer's own
tokens/s for zerotune).
"""
import argparse
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_throughput import SHAPES, MemoryPoll, log_entries, run_logged, run_peer_steps  # noqa: E402

PAIRS = 4
PROMPT = 512
ANSWER = 512
SEQ = PROMPT + ANSWER
BETA = 0.1
LR = 1e-5


def worker_peer(args):
    """PEFT DPO steps on random ids as TRL runs them; prints one RESULT line of JSON."""
    import torch
    import torch.nn.functional as F
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.bfloat16,
                                                 attn_implementation="sdpa").cuda().train()
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear",
                                             task_type="CAUSAL_LM"))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=LR, fused=True)
    vocab = model.config.vocab_size
    total = args.warmup + args.steps
    ids = torch.randint(0, vocab, (total, 2 * PAIRS, SEQ), device="cuda")
    labels = ids.clone()
    labels[:, :, :PROMPT] = -100

    def logps(logits, labels):  # TRL's get_batch_logps: summed log-probabilities of the labels
        labels = labels[:, 1:].clone()
        logits = logits[:, :-1, :]
        mask = labels != -100
        labels[~mask] = 0
        per_token = torch.gather(logits.log_softmax(-1), 2, labels.unsqueeze(2)).squeeze(2)
        return (per_token * mask).sum(-1)

    def loss_of(i):  # TRL's sigmoid loss: the policy's forward, then the reference's with the adapter off
        policy = logps(model(input_ids=ids[i], use_cache=False).logits.float(), labels[i])
        with torch.no_grad(), model.disable_adapter():
            reference = logps(model(input_ids=ids[i], use_cache=False).logits.float(), labels[i])
        chosen, rejected = policy[:PAIRS], policy[PAIRS:]
        ref_chosen, ref_rejected = reference[:PAIRS], reference[PAIRS:]
        return -F.logsigmoid(BETA * ((chosen - rejected) - (ref_chosen - ref_rejected))).mean()

    run_peer_steps(torch, loss_of, params, optimizer, args, 2 * PAIRS * SEQ)


def write_pairs(tokenizer, path, count):
    """Alpaca ranking records of random words, prompt and answers each longer than their share."""
    rng = random.Random(0)
    words = [w for w in (tokenizer.decode([i]) for i in rng.sample(range(1000, 100000), 5000))
             if w.startswith(" ") and w[1:].isascii() and w[1:].isalpha()]
    text = lambda n: "".join(rng.choice(words) for _ in range(n))  # noqa: E731
    records = [{"instruction": text(PROMPT + 64), "input": "", "chosen": text(ANSWER + 64),
                "rejected": text(ANSWER + 64)} for _ in range(count)]
    path.write_text(json.dumps(records))


def build(args, work):
    """The random model, through train_throughput.py's builder, and the pairs."""
    from transformers import AutoTokenizer
    code, lines = run_logged([sys.executable, str(Path(__file__).parent / "train_throughput.py"), "--worker", "build",
                              "--workdir", str(work), "--shapes", "1.5b", "--tokenizer", args.tokenizer,
                              "--samples", "1"])
    if code != 0:
        raise SystemExit("building the model failed:\n" + "\n".join(lines[-30:]))
    write_pairs(AutoTokenizer.from_pretrained(args.tokenizer), work / "pairs.json", PAIRS * (args.warmup + args.steps))
    return work / "1.5b"


def run_zerotune(args, work, model_dir):
    output_dir = work / "out-dpo"
    cmd = [args.zerotune, "train", "--stage", "dpo", "--model_name_or_path", str(model_dir), "--train_file",
           str(work / "pairs.json"), "--output_dir", str(output_dir), "--overwrite_output_dir", "--template", "none",
           "--max_length", str(SEQ), "--per_device_train_batch_size", str(PAIRS), "--bf16", "--max_steps",
           str(args.warmup + args.steps), "--logging_steps", "1", "--save_strategy", "no", "--report_to", "none",
           "--learning_rate", str(LR), "--pref_beta", str(BETA), "--finetuning_type", "lora", "--lora_rank", "8",
           "--lora_target", "all", "--device", "cuda",
           # --stage makes the arguments LLaMA-Factory's, whose default recomputes activations in
           # backward; the peer keeps them, as TRL does by default.
           "--gradient_checkpointing", "false"]
    # The warm-up steps after the first are profiled: the measured steps run unprofiled.
    profiled = args.profile and args.warmup >= 2
    if profiled:
        cmd += ["--profile_steps", str(args.warmup - 1)]
    with MemoryPoll(args.gpu) as memory:
        code, lines = run_logged(cmd)
    if code != 0:
        raise SystemExit("zerotune failed:\n" + "\n".join(lines[-30:]))
    entries = [e for e in log_entries(output_dir, lines) if "loss" in e]
    rates = [e["tokens_per_second"] for e in entries[args.warmup:]]
    peaks = [e["memory_peak_gib"] for e in entries if "memory_peak_gib" in e]
    profile = json.loads((output_dir / "step_profile.json").read_text()) if profiled else None
    shutil.rmtree(output_dir, ignore_errors=True)
    return {"tokens_per_second": len(rates) / sum(1.0 / r for r in rates), "peak_gib": memory.peak_gib(),
            "alloc_peak_gib": max(peaks) if peaks else None, "rewards/accuracies": entries[-1].get("rewards/accuracies"),
            "profile": profile}


def run_peer(args, model_dir):
    cmd = [sys.executable, __file__, "--worker", "peft", "--model-dir", str(model_dir), "--steps", str(args.steps),
           "--warmup", str(args.warmup)]
    with MemoryPoll(args.gpu) as memory:
        code, lines = run_logged(cmd)
    if code != 0:
        raise SystemExit("the PEFT peer failed:\n" + "\n".join(lines[-30:]))
    result = json.loads(next(l for l in lines if l.startswith("RESULT "))[len("RESULT "):])
    result["peak_gib"] = memory.peak_gib()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--zerotune", default="build-gpu/bin/zerotune")
    parser.add_argument("--tokenizer")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--profile", action="store_true",
                        help="zerotune's step profile over the warm-up steps after the first; its top costs printed")
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--worker", choices=["peft"], help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker_peer(args)
    if not args.tokenizer:
        parser.error("--tokenizer is required")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_dir = build(args, work)
        zerotune = run_zerotune(args, work, model_dir)
        peer = run_peer(args, model_dir)
    print(f"{SHAPES['1.5b']['name']} LoRA DPO, {PAIRS} pairs x {SEQ} tokens (policy tokens/s; peak GiB: nvidia-smi, allocator)")
    for name, r in (("zerotune", zerotune), ("PyTorch + PEFT", peer)):
        print(f"  {name:15s} {r['tokens_per_second']:10.0f} tok/s   {r['peak_gib']:6.2f} GiB   "
              f"{(r.get('alloc_peak_gib') or 0):6.2f} GiB")
    print(f"  zerotune / peer: {zerotune['tokens_per_second'] / peer['tokens_per_second']:.2f}x throughput, "
          f"{zerotune['peak_gib'] / peer['peak_gib']:.2f}x memory")
    if zerotune["profile"]:
        print("  zerotune's profile: " + " · ".join(
            f"{f['name']} {f['share']:.0%}" for f in zerotune["profile"]["families"][:8]))
    if args.out:
        Path(args.out).write_text(json.dumps({"zerotune": zerotune, "peer": peer}, indent=1) + "\n")


if __name__ == "__main__":
    main()
