#!/usr/bin/env python3
"""Writes tests/data/models/generate_reference.json: transformers' greedy tokens for the
inference engine's tests (tests/infer/engine_test.cpp).

For each tiny fixture model (written by scripts/make_model_fixtures.py) -- qwen2, qwen3, glm,
glm4, and qwen2 with the PEFT LoRA adapter of tests/data/models/qwen2_lora and with the
P-Tuning v2 prefix of tests/data/models/qwen2_ptuning -- three prompts of different lengths
are continued greedily for 64 new tokens in float32 on the CPU, stopping at the fixture's eos
ids as generate does. The chatglm fixture holds the glm model's very weights in THUDM's
layout, so its expected tokens are glm's.

Prompts are drawn from a seeded generator and kept only when every greedy step wins by a
clear margin (1e-3 between the two largest logits), so float32 rounding cannot flip a choice.
The base and LoRA models run transformers' generate; the prefix model runs the same greedy
loop by hand, because generate would count positions after the prefix while ChatGLM's
P-Tuning (and zerotune) count them from 0. Needs torch, transformers (5.x), safetensors, peft:

    python3 scripts/make_generate_reference.py [--out tests/data/models/generate_reference.json]
"""
import argparse
import json
from pathlib import Path

import torch
import transformers
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, DynamicCache

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "data" / "models"
NEW_TOKENS = 64
PROMPT_LENGTHS = [5, 13, 29]
MARGIN = 1e-3
ATTEMPTS = 60


def load(folder):
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32)
    return model.eval()


def with_lora(model):
    from peft import PeftModel
    return PeftModel.from_pretrained(model, MODELS / "qwen2_lora").eval()


def prefix_cache(config):
    """A fresh cache holding the P-Tuning prefix of every layer (zerotune's [1, P, kv, d] files)."""
    expected = load_file(str(MODELS / "qwen2_ptuning" / "expected.safetensors"))
    try:
        cache = DynamicCache(config=config)
    except TypeError:
        cache = DynamicCache()
    for layer in range(config.num_hidden_layers):
        keys = expected[f"prefix/{layer}/keys"].transpose(1, 2).contiguous()
        values = expected[f"prefix/{layer}/values"].transpose(1, 2).contiguous()
        cache.update(keys, values, layer)
    return cache, keys.shape[2]


def logits_after_prefix(model, tokens):
    """Logits of every token of `tokens` after the prefix, positions from 0."""
    cache, prefix = prefix_cache(model.config)
    n = len(tokens)
    return model(input_ids=torch.tensor(tokens)[None], position_ids=torch.arange(n)[None],
                 cache_position=torch.arange(prefix, prefix + n),
                 attention_mask=torch.ones(1, prefix + n, dtype=torch.long),
                 past_key_values=cache, use_cache=True).logits[0]


def all_logits(model, tokens, prefixed):
    if prefixed:
        return logits_after_prefix(model, tokens)
    return model(input_ids=torch.tensor(tokens)[None]).logits[0]


def greedy(model, prompt, eos, prefixed):
    """New tokens and the margin of each choice. The loop recomputes the whole sequence each
    step (no cache to get wrong): slow, and obviously what greedy decoding means."""
    tokens, margins = list(prompt), []
    for _ in range(NEW_TOKENS):
        last = all_logits(model, tokens, prefixed)[-1]
        top2 = last.topk(2).values
        margins.append((top2[0] - top2[1]).item())
        tokens.append(int(last.argmax()))
        if tokens[-1] in eos:
            break
    return tokens[len(prompt):], min(margins)


def generate_agrees(model, prompt, new_tokens, eos):
    """transformers' own generate gives the hand loop's tokens (base and LoRA models)."""
    ids = torch.tensor(prompt)[None]
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS,
                         do_sample=False, eos_token_id=eos, pad_token_id=0)
    return out[0, len(prompt):].tolist() == new_tokens


def cases(model, name, eos, seed, prefixed):
    g = torch.Generator().manual_seed(seed)
    prompts, outputs = [], []
    for length in PROMPT_LENGTHS:
        for _ in range(ATTEMPTS):
            prompt = torch.randint(6, model.config.vocab_size, (length,), generator=g).tolist()
            new_tokens, margin = greedy(model, prompt, eos, prefixed)
            if margin > MARGIN and len(set(new_tokens)) >= 6:
                break
        else:
            raise SystemExit(f"{name}: no prompt of {length} tokens with clear greedy margins")
        if not prefixed and not generate_agrees(model, prompt, new_tokens, eos):
            raise SystemExit(f"{name}: transformers' generate disagrees with the greedy loop")
        prompts.append(prompt)
        outputs.append(new_tokens)
        print(f"{name}: prompt of {length} -> {len(new_tokens)} tokens, margin {margin:.2e}")
    return {"prompts": prompts, "new_tokens": outputs, "eos_token_id": eos}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=MODELS / "generate_reference.json")
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    reference = {"made_with": f"transformers {transformers.__version__}, torch {torch.__version__}",
                 "max_new_tokens": NEW_TOKENS}
    with torch.no_grad():
        for seed, arch in enumerate(["qwen2", "qwen3", "glm", "glm4"]):
            eos = json.loads((MODELS / arch / "config.json").read_text())["eos_token_id"]
            eos = eos if isinstance(eos, list) else [eos]
            reference[arch] = cases(load(MODELS / arch), arch, eos, 300 + seed, False)
        reference["chatglm"] = reference["glm"]
        eos = reference["qwen2"]["eos_token_id"]
        reference["qwen2_lora"] = cases(with_lora(load(MODELS / "qwen2")), "qwen2_lora", eos, 310, False)
        reference["qwen2_ptuning"] = cases(load(MODELS / "qwen2"), "qwen2_ptuning", eos, 320, True)
    args.out.write_text(json.dumps(reference, indent=1) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
