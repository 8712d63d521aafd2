#!/usr/bin/env python3
"""Writes tests/data/training/qwen2_adamw.json, the oracle of tests/train/hf_reference_test.cpp.

PyTorch trains the tiny Qwen2 fixture (tests/data/models/qwen2, from make_model_fixtures.py)
in float32 on the CPU for 10 optimizer steps of 2 micro-batches each, as zerotune's trainer
does: the loss of a step is the summed token loss of both micro-batches over their label
tokens, gradients are clipped by global norm, and torch.optim.AdamW updates with HF's
no-decay group (biases and norm weights) under HF's linear warmup/decay schedule. Needs
python3 with torch and transformers. Run from anywhere:

    python3 scripts/make_training_reference.py [--out tests/data/training/qwen2_adamw.json]

The file holds the hyper-parameters (named as HF TrainingArguments names them), every
packed micro-batch (input_ids, positions, cu_seqlens, labels aligned so labels[t] is the
target of token t; -100 ignored), and per step the learning rate, the loss and the gradient
norm before clipping. Packed sequences are run one at a time, which is what packed attention
with restarting positions computes.
"""
import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F
import transformers
from transformers import AutoModelForCausalLM, get_linear_schedule_with_warmup

from make_model_fixtures import packed_forward

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "tests" / "data" / "models" / "qwen2"
SEED = 2024
SEQUENCES_PER_MICRO_BATCH = 3
MAX_SEQUENCE = 12
HYPER_PARAMETERS = {
    "learning_rate": 1e-3,
    "weight_decay": 0.01,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-8,
    "max_grad_norm": 1.0,
    "lr_scheduler_type": "linear",
    "warmup_steps": 2,
    "max_steps": 10,
    "gradient_accumulation_steps": 2,
}


def make_micro_batch(g, vocab):
    """Sequences of 2..MAX_SEQUENCE tokens; labels are the next token, some masked as a prompt would be."""
    ids, positions, labels, cu = [], [], [], [0]
    for _ in range(SEQUENCES_PER_MICRO_BATCH):
        length = int(torch.randint(2, MAX_SEQUENCE + 1, (1,), generator=g))
        seq = torch.randint(0, vocab, (length,), generator=g).tolist()
        masked = (torch.rand(length, generator=g) < 0.2).tolist()
        targets = seq[1:] + [-100]
        ids += seq
        positions += list(range(length))
        labels += [-100 if m else t for t, m in zip(targets, masked)]
        cu.append(cu[-1] + length)
    return {"input_ids": ids, "positions": positions, "cu_seqlens": cu, "labels": labels}


def make_optimizer(model, hp):
    """HF Trainer's groups: no decay for biases and norm weights."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        exempt = "bias" in name or "norm" in name
        assert exempt == (p.ndim < 2), f"{name}: HF's grouping and zerotune's (1-D parameters) disagree"
        (no_decay if exempt else decay).append(p)
    groups = [{"params": decay, "weight_decay": hp["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=hp["learning_rate"], betas=(hp["adam_beta1"], hp["adam_beta2"]),
                             eps=hp["adam_epsilon"], foreach=False)


def train(model, steps, hp):
    optimizer = make_optimizer(model, hp)
    scheduler = get_linear_schedule_with_warmup(optimizer, hp["warmup_steps"], hp["max_steps"])
    losses, grad_norms, learning_rates = [], [], []
    for step in steps:
        label_tokens = sum(sum(t != -100 for t in mb["labels"]) for mb in step)
        loss_sum = 0.0
        for mb in step:
            token_losses = F.cross_entropy(packed_forward(model, mb), torch.tensor(mb["labels"]), ignore_index=-100,
                                           reduction="sum")
            (token_losses / label_tokens).backward()
            loss_sum += token_losses.item()
        grad_norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), hp["max_grad_norm"]).item())
        learning_rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(loss_sum / label_tokens)
    return losses, grad_norms, learning_rates


def compact_json(reference):
    """One key per line and one step per line: small, and readable in a diff."""
    def value(key, v):
        if key == "steps":
            return "[\n  " + ",\n  ".join(json.dumps(step) for step in v) + "\n ]"
        return json.dumps(v)
    return "{\n" + ",\n".join(f" {json.dumps(k)}: {value(k, v)}" for k, v in reference.items()) + "\n}\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_out = ROOT / "tests" / "data" / "training" / "qwen2_adamw.json"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    model = AutoModelForCausalLM.from_pretrained(str(MODEL), attn_implementation="eager").float().train()
    hp = HYPER_PARAMETERS
    g = torch.Generator().manual_seed(SEED)
    steps = [[make_micro_batch(g, model.config.vocab_size) for _ in range(hp["gradient_accumulation_steps"])]
             for _ in range(hp["max_steps"])]
    losses, grad_norms, learning_rates = train(model, steps, hp)
    reference = {
        "model": "tests/data/models/qwen2",
        "hyper_parameters": hp,
        "steps": [{"micro_batches": step} for step in steps],
        "learning_rates": learning_rates,
        "losses": losses,
        "grad_norms": grad_norms,
        "made_with": f"transformers {transformers.__version__}, torch {torch.__version__}",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(compact_json(reference))
    for i, (loss, norm) in enumerate(zip(losses, grad_norms)):
        print(f"step {i + 1}: loss {loss:.6f}, grad_norm {norm:.6f}, lr {learning_rates[i]:.3e}")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
