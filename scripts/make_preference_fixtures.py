#!/usr/bin/env python3
"""Fixtures of --stage dpo's losses, from TRL's dpo_loss and LLaMA-Factory's
CustomDPOTrainer (pref_loss sigmoid, hinge, ipo, kto_pair, orpo, simpo; pref_ftx; TRL's
rpo_alpha and reference_free), written out with Python floats (float64) on given
log-probabilities. Gradients by central differences of the same functions, so they do not
depend on the derivatives the C++ code works out.

Writes tests/data/preference/loss_fixtures.json, which
tests/train/preference/preference_loss_test.cpp reads:
  python3 scripts/make_preference_fixtures.py [--out tests/data/preference/loss_fixtures.json]
"""
import argparse
import json
import math
from pathlib import Path

from preference_cases import CASES

ROOT = Path(__file__).resolve().parent.parent

# Two micro-batches of three pairs: summed log-probabilities and label-token counts.
CHOSEN = [-12.5, -30.25, -7.0]
REJECTED = [-14.0, -28.5, -9.75]
CHOSEN_TOKENS = [10, 25, 4]
REJECTED_TOKENS = [12, 20, 5]
REF_CHOSEN = [-13.0, -29.0, -8.5]
REF_REJECTED = [-13.5, -29.5, -9.0]


def logsigmoid(x):
    return -(max(-x, 0.0) + math.log1p(math.exp(-abs(x))))


def sigmoid(x):
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def scores(kind, sums, tokens):
    # LLaMA-Factory divides by valid_length for ipo/orpo/simpo (TRL does for ipo).
    return [s / t for s, t in zip(sums, tokens)] if kind in ("ipo", "orpo", "simpo") else list(sums)


def loss(opt, c_sum, r_sum):
    kind, beta = opt["loss"], opt["beta"]
    c, r = scores(kind, c_sum, CHOSEN_TOKENS), scores(kind, r_sum, REJECTED_TOKENS)
    ref = not opt.get("reference_free") and kind not in ("orpo", "simpo")
    rc = scores(kind, REF_CHOSEN, CHOSEN_TOKENS) if ref else [0.0] * 3
    rr = scores(kind, REF_REJECTED, REJECTED_TOKENS) if ref else [0.0] * 3
    n = len(c)
    if kind == "orpo":  # LLaMA-Factory odds_ratio_loss
        losses = []
        for ci, ri in zip(c, r):
            log_odds = (ci - ri) - (math.log1p(-math.exp(ci)) - math.log1p(-math.exp(ri)))
            losses.append(-ci + beta * -logsigmoid(log_odds))
    elif kind == "simpo":  # LLaMA-Factory simpo_loss
        losses = [-logsigmoid(beta * ((ci - ri) - opt["simpo_gamma"] / beta)) for ci, ri in zip(c, r)]
    elif kind == "kto_pair":  # TRL dpo_loss, kto_pair
        chosen_kl = max(sum(ci - x for ci, x in zip(c, rc)) / n, 0.0)
        rejected_kl = max(sum(ri - x for ri, x in zip(r, rr)) / n, 0.0)
        losses = [1 - sigmoid(beta * ((ci - x) - rejected_kl)) for ci, x in zip(c, rc)]
        losses += [1 - sigmoid(beta * (chosen_kl - (ri - x))) for ri, x in zip(r, rr)]
    else:  # TRL dpo_loss: sigmoid (label smoothing), hinge, ipo
        eps = opt.get("label_smoothing", 0.0)
        losses = []
        for i in range(n):
            z = (c[i] - r[i]) - (rc[i] - rr[i])
            if kind == "sigmoid":
                losses.append(-logsigmoid(beta * z) * (1 - eps) - logsigmoid(-beta * z) * eps)
            elif kind == "hinge":
                losses.append(max(0.0, 1 - beta * z))
            else:
                losses.append((z - 1 / (2 * beta)) ** 2)
    if opt.get("ftx", 0.0) > 1e-6:  # LLaMA-Factory pref_ftx: -chosen_logps_avg per pair
        losses = [l + opt["ftx"] * -(s / t) for l, s, t in zip(losses, c_sum, CHOSEN_TOKENS)]
    if opt.get("rpo_alpha") is not None:  # TRL: NLL mean over the chosen tokens of the batch
        nll = -sum(c_sum) / sum(CHOSEN_TOKENS)
        losses = [l + opt["rpo_alpha"] * nll for l in losses]
    return sum(losses) / len(losses), [beta * (a - b) for a, b in zip(c, rc)], [beta * (a - b) for a, b in zip(r, rr)]


def grads(opt):
    h = 1e-6
    out = []
    for which in ("c", "r"):
        g = []
        for i in range(3):
            up_c, up_r, dn_c, dn_r = list(CHOSEN), list(REJECTED), list(CHOSEN), list(REJECTED)
            (up_c if which == "c" else up_r)[i] += h
            (dn_c if which == "c" else dn_r)[i] -= h
            g.append((loss(opt, up_c, up_r)[0] - loss(opt, dn_c, dn_r)[0]) / (2 * h))
        out.append(g)
    return out


def fixture(name, opt):
    value, chosen_rewards, rejected_rewards = loss(opt, CHOSEN, REJECTED)
    dc, dr = grads(opt)
    floats = lambda values: [float(v) for v in values]
    return {
        "name": name,
        "loss": float(value),
        "d_chosen": floats(dc),
        "d_rejected": floats(dr),
        "chosen_rewards": floats(chosen_rewards),
        "rejected_rewards": floats(rejected_rewards),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "tests" / "data" / "preference" / "loss_fixtures.json"))
    args = parser.parse_args()
    cases = [fixture(name, opt) for name, opt in CASES]
    Path(args.out).write_text(json.dumps({"cases": cases}, indent=1) + "\n")


if __name__ == "__main__":
    main()
