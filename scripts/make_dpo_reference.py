#!/usr/bin/env python3
"""Writes tests/data/preference/tiny_qwen_dpo.json, the oracle of
tests/train/preference/preference_pytorch_test.cpp: --stage dpo's losses, every logged metric
and the gradients, computed with PyTorch on the shipped tiny Qwen2 (examples/tiny-qwen) in
float32 from the formulas of TRL's DPOTrainer (dpo_loss, concatenated_forward,
get_batch_loss_metrics: sigmoid with label smoothing, hinge, ipo, the older kto_pair, rpo_alpha,
reference_free) and LLaMA-Factory's CustomDPOTrainer (orpo, simpo, pref_ftx; ipo, orpo and
simpo on mean token log-probabilities).

The policy is the model as stored; the reference is the same model with every weight times 0.9
(so that the log-ratios are not zero); its embedding is tied to the head. Two pairs of token ids, answers labelled, prompts not.
Needs python3 with torch and transformers; any device:

    python3 scripts/make_dpo_reference.py [--device cuda] [--out tests/data/preference/tiny_qwen_dpo.json]
"""
import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM

from preference_cases import CASES

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "tiny-qwen"
# (prompt, chosen answer, rejected answer) as token ids.
PAIRS = [
    ([3, 7, 13, 11], [30, 4, 8], [5, 2]),
    ([9, 1, 4], [4, 8, 6, 21, 2], [20, 21, 3]),
]
GRADIENT_PARAMETERS = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "model.layers.1.mlp.down_proj.weight"]


def sequences():
    ids, labels = [], []
    for side in (1, 2):  # TRL's concatenation: the chosen rows, then the rejected rows
        for pair in PAIRS:
            ids.append(pair[0] + pair[side])
            labels.append([-100] * len(pair[0]) + pair[side])
    return ids, labels


def batch_logps(model, ids, labels):
    """Per sequence: summed label log-probabilities, label count, and the logits over label rows."""
    sums, counts, logit_rows = [], [], []
    for seq, lab in zip(ids, labels):
        logits = model(torch.tensor([seq], device=model.device)).logits[0].float()
        target = torch.tensor(lab[1:], device=model.device)
        mask = target != -100
        logp = torch.log_softmax(logits[:-1], dim=-1)
        token_logps = torch.gather(logp, 1, target.clamp(min=0).unsqueeze(1)).squeeze(1)
        sums.append((token_logps * mask).sum())
        counts.append(mask.sum())
        logit_rows.append(logits[:-1][mask])
    return torch.stack(sums), torch.stack(counts).float(), logit_rows


def preference_loss(opt, policy, ref, counts, logit_rows, n):
    kind, beta = opt["loss"], opt["beta"]
    average = kind in ("ipo", "orpo", "simpo")
    scores = policy / counts if average else policy
    c, r = scores[:n], scores[n:]
    uses_ref = kind not in ("orpo", "simpo") and not opt.get("reference_free")
    ref_scores = (ref / counts if average else ref) if uses_ref else torch.zeros_like(scores)
    rc, rr = ref_scores[:n], ref_scores[n:]
    metrics = {}
    if kind == "orpo":
        log_odds = (c - r) - (torch.log1p(-torch.exp(c)) - torch.log1p(-torch.exp(r)))
        losses = -c + beta * -F.logsigmoid(log_odds)
        metrics["sft_loss"] = (-c).mean().item()
        metrics["odds_ratio_loss"] = (-F.logsigmoid(log_odds)).mean().item()
    elif kind == "simpo":
        losses = -F.logsigmoid(beta * ((c - r) - opt["simpo_gamma"] / beta))
    elif kind == "kto_pair":
        chosen_kl = (c - rc).mean().clamp(min=0)
        rejected_kl = (r - rr).mean().clamp(min=0)
        losses = torch.cat((1 - torch.sigmoid(beta * ((c - rc) - rejected_kl)),
                            1 - torch.sigmoid(beta * (chosen_kl - (r - rr)))), 0)
    else:
        z = (c - r) - (rc - rr)
        if kind == "sigmoid":
            eps = opt.get("label_smoothing", 0.0)
            losses = -F.logsigmoid(beta * z) * (1 - eps) - F.logsigmoid(-beta * z) * eps
        elif kind == "hinge":
            losses = torch.relu(1 - beta * z)
        else:
            losses = (z - 1 / (2 * beta)) ** 2
    if opt.get("ftx", 0.0) > 1e-6:
        losses = losses + opt["ftx"] * -(policy[:n] / counts[:n])
    if opt.get("rpo_alpha") is not None:
        losses = losses + opt["rpo_alpha"] * (-policy[:n].sum() / counts[:n].sum())
    chosen_rewards = (beta * (c - rc)).detach()
    rejected_rewards = (beta * (r - rr)).detach()
    metrics.update({
        "rewards/chosen": chosen_rewards.mean().item(),
        "rewards/rejected": rejected_rewards.mean().item(),
        "rewards/accuracies": (chosen_rewards > rejected_rewards).float().mean().item(),
        "rewards/margins": (chosen_rewards - rejected_rewards).mean().item(),
        "logps/chosen": c.detach().mean().item(),
        "logps/rejected": r.detach().mean().item(),
        "logits/chosen": torch.cat(logit_rows[:n]).mean().item(),
        "logits/rejected": torch.cat(logit_rows[n:]).mean().item(),
    })
    return losses.mean(), metrics


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default=str(ROOT / "tests" / "data" / "preference" / "tiny_qwen_dpo.json"))
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    policy_model = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=torch.float32, attn_implementation="eager")
    policy_model.to(args.device).train()
    reference_model = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=torch.float32, attn_implementation="eager")
    reference_model.to(args.device).eval()
    with torch.no_grad():
        for p in reference_model.parameters():
            p.mul_(0.9)
    ids, labels = sequences()
    n = len(PAIRS)
    with torch.no_grad():
        ref, _, _ = batch_logps(reference_model, ids, labels)
    params = dict(policy_model.named_parameters())
    cases = []
    for name, opt in CASES:
        policy_model.zero_grad()
        policy, counts, logit_rows = batch_logps(policy_model, ids, labels)
        loss, metrics = preference_loss(opt, policy, ref, counts, logit_rows, n)
        loss.backward()
        grads = {p: params[p].grad.detach().cpu().flatten()[:64].tolist() for p in GRADIENT_PARAMETERS}
        cases.append({"name": name, "options": opt, "loss": loss.item(), "metrics": metrics, "gradients": grads})
    out = {"pairs": [{"prompt": p, "chosen": c, "rejected": r} for p, c, r in PAIRS], "reference_scale": 0.9,
           "gradient_elements": 64, "device": args.device, "cases": cases}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}: {len(cases)} cases on {args.device}")


if __name__ == "__main__":
    main()
