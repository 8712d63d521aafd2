#!/usr/bin/env python3
"""Writes the P-Tuning v2 fixture of tests/models/peft/prefix_encoder_reference_test.cpp.

An independent PyTorch statement of P-Tuning v2 as THUDM's ChatGLM2/3 define it, run on the
tiny Qwen2 fixture (tests/data/models/qwen2, written by scripts/make_model_fixtures.py) with
Hugging Face transformers as the model: the prefix encoder (Embedding(pre_seq_len, width), then
Linear(width -> hidden) -> tanh -> Linear(hidden -> width), width = layers * 2 * kv_heads *
head_dim) is built from fixed random weights; each row is read as [layer][key, value][kv_head]
[head_dim]; every layer's prefix keys and values go into a DynamicCache ahead of the tokens, as
past keys (no RoPE applied to them); the tokens' position_ids count from 0 (not shifted by the
prefix) and every token attends to the whole prefix and causally to its own sequence. Needs
python3 with torch, safetensors and transformers (5.x). Run from anywhere:

    python3 scripts/check_ptuning.py [--model tests/data/models/qwen2]
                                     [--out tests/data/models/qwen2_ptuning]

It writes <out>/:
  config.json         the model's config.json with pre_seq_len and prefix_projection added,
                      as ChatGLM's recipe saves a P-Tuning checkpoint
  model.safetensors   the prefix encoder's weights under ChatGLM's names
                      (transformer.prefix_encoder.embedding.weight, .trans.0.*, .trans.2.*)
  expected.safetensors  logits [T, vocab], loss [1], prefix/<layer>/keys and /values
                      [1, pre_seq_len, kv_heads, head_dim], grad/<name> of every prefix weight
  fixture.json        the packed batch (input_ids, position_ids, cu_seqlens, labels aligned so
                      labels[t] is the target of logits[t]; -100 ignored), pre_seq_len,
                      prefix_projection, and the versions that made it

Each sequence of the packed batch runs on its own, with a fresh cache holding the prefix, and
the logits are concatenated: what packed attention with a per-sequence prefix computes. The
prefix encoder runs in eval mode (ChatGLM's dropout of 0.1 is off), so the numbers are exact.
"""
import argparse
import json
import math
import shutil
from pathlib import Path

import torch
import torch.nn.functional as F
import transformers
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, DynamicCache

PRE_SEQ_LEN = 4
LENGTHS = [5, 1, 9]
SEED = 1234
PREFIX = "transformer.prefix_encoder."


class PrefixEncoder(torch.nn.Module):
    """ChatGLM2's prefix encoder with the projection: [pre_seq_len] ids -> [pre_seq_len, width]."""

    def __init__(self, pre_seq_len, width, hidden):
        super().__init__()
        self.embedding = torch.nn.Embedding(pre_seq_len, width)
        self.trans = torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.Tanh(),
                                         torch.nn.Linear(hidden, width))

    def forward(self, ids):
        return self.trans(self.embedding(ids))


def fixed_weights(encoder, generator):
    """torch's default initialisation, drawn from a seeded generator so the file is reproducible."""
    with torch.no_grad():
        encoder.embedding.weight.copy_(torch.randn(encoder.embedding.weight.shape, generator=generator))
        for linear in (encoder.trans[0], encoder.trans[2]):
            bound = 1.0 / math.sqrt(linear.weight.shape[1])
            for p in (linear.weight, linear.bias):
                p.copy_((torch.rand(p.shape, generator=generator) * 2 - 1) * bound)


def per_layer_prefix(encoder, config):
    """[layers] of (keys, values), each [1, kv_heads, pre_seq_len, head_dim] as transformers'
    cache holds them. ChatGLM views the encoder's output as [batch, pre_seq_len, layers * 2,
    kv_heads, head_dim] and splits the third dim into (key, value) pairs layer by layer."""
    layers = config.num_hidden_layers
    kv_heads = config.num_key_value_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    rows = encoder(torch.arange(PRE_SEQ_LEN))  # [pre_seq_len, width]
    split = rows.view(1, PRE_SEQ_LEN, layers * 2, kv_heads, head_dim)
    # -> [layers * 2, batch, kv_heads, pre_seq_len, head_dim]
    split = split.permute(2, 0, 3, 1, 4)
    return [(split[2 * layer], split[2 * layer + 1]) for layer in range(layers)]


def make_batch(vocab):
    g = torch.Generator().manual_seed(SEED + 1)
    ids, positions, labels, cu = [], [], [], [0]
    for length in LENGTHS:
        ids += torch.randint(1, vocab, (length,), generator=g).tolist()
        positions += list(range(length))
        target = torch.randint(0, vocab, (length,), generator=g).tolist()
        drop = (torch.rand(length, generator=g) < 0.25).tolist()
        labels += [-100 if d else t for t, d in zip(target, drop)]
        cu.append(cu[-1] + length)
    return {"input_ids": ids, "position_ids": positions, "cu_seqlens": cu, "labels": labels}


def cache_holding(prefix, config):
    """A fresh cache whose every layer holds the prefix keys and values (clones: the forward
    appends to the cache, and the prefix's autograd graph must stay intact)."""
    try:
        cache = DynamicCache(config=config)
    except TypeError:
        cache = DynamicCache()
    for layer, (keys, values) in enumerate(prefix):
        cache.update(keys, values, layer)
    return cache


def sequence_logits(model, seq, prefix):
    """One sequence after the prefix: positions from 0, every token sees the whole prefix."""
    n = seq.shape[1]
    return model(input_ids=seq,
                 position_ids=torch.arange(n)[None],
                 cache_position=torch.arange(PRE_SEQ_LEN, PRE_SEQ_LEN + n),
                 attention_mask=torch.ones(1, PRE_SEQ_LEN + n, dtype=torch.long),
                 past_key_values=cache_holding(prefix, model.config),
                 use_cache=True).logits[0]


def packed_logits(model, batch, prefix):
    ids = torch.tensor(batch["input_ids"])
    cu = batch["cu_seqlens"]
    return torch.cat([sequence_logits(model, ids[cu[b]:cu[b + 1]][None], prefix) for b in range(len(cu) - 1)])


def check_positions_are_not_shifted(model, batch, prefix):
    """The same prefix with positions counted after it must give other logits: proves that
    position_ids reached RoPE (transformers would otherwise count them from the cache length)."""
    ids = torch.tensor(batch["input_ids"])[:batch["cu_seqlens"][1]][None]
    n = ids.shape[1]
    with torch.no_grad():
        ours = sequence_logits(model, ids, prefix)
        shifted = model(input_ids=ids, position_ids=torch.arange(PRE_SEQ_LEN, PRE_SEQ_LEN + n)[None],
                        cache_position=torch.arange(PRE_SEQ_LEN, PRE_SEQ_LEN + n),
                        attention_mask=torch.ones(1, PRE_SEQ_LEN + n, dtype=torch.long),
                        past_key_values=cache_holding(prefix, model.config), use_cache=True).logits[0]
        plain = model(input_ids=ids, position_ids=torch.arange(n)[None]).logits[0]
    if torch.allclose(ours, shifted, atol=1e-6):
        raise SystemExit("position_ids did not change the logits: transformers ignored them")
    if torch.allclose(ours, plain, atol=1e-6):
        raise SystemExit("the prefix did not change the logits: the cache was not attended to")


def main():
    root = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=root / "tests" / "data" / "models" / "qwen2")
    parser.add_argument("--out", type=Path, default=root / "tests" / "data" / "models" / "qwen2_ptuning")
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)

    model = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation="eager", dtype=torch.float32).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    width = config.num_hidden_layers * 2 * config.num_key_value_heads * head_dim
    encoder = PrefixEncoder(PRE_SEQ_LEN, width, config.hidden_size).float().eval()
    fixed_weights(encoder, torch.Generator().manual_seed(SEED))

    batch = make_batch(config.vocab_size)
    prefix = per_layer_prefix(encoder, config)
    check_positions_are_not_shifted(model, batch, prefix)
    logits = packed_logits(model, batch, prefix)
    loss = F.cross_entropy(logits, torch.tensor(batch["labels"]), ignore_index=-100)
    loss.backward()

    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    weights = {PREFIX + name: p.detach().contiguous() for name, p in encoder.named_parameters()}
    save_file(weights, str(args.out / "model.safetensors"), metadata={"format": "pt"})
    model_config = json.loads((args.model / "config.json").read_text())
    model_config.update(pre_seq_len=PRE_SEQ_LEN, prefix_projection=True)
    (args.out / "config.json").write_text(json.dumps(model_config, indent=2) + "\n")

    expected = {"logits": logits.detach().contiguous(), "loss": loss.detach().reshape(1)}
    for layer, (keys, values) in enumerate(prefix):
        # [1, kv_heads, pre_seq_len, head_dim] -> zerotune's [1, pre_seq_len, kv_heads, head_dim]
        expected[f"prefix/{layer}/keys"] = keys.detach().transpose(1, 2).contiguous()
        expected[f"prefix/{layer}/values"] = values.detach().transpose(1, 2).contiguous()
    for name, p in encoder.named_parameters():
        expected[f"grad/{PREFIX}{name}"] = p.grad.detach().contiguous()
    save_file(expected, str(args.out / "expected.safetensors"), metadata={"format": "pt"})
    fixture = dict(batch, pre_seq_len=PRE_SEQ_LEN, prefix_projection=True,
                   made_with=f"transformers {transformers.__version__}, torch {torch.__version__}")
    (args.out / "fixture.json").write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"qwen2 P-Tuning v2: loss {loss.item():.6f}, {len(batch['input_ids'])} tokens -> {args.out}")


if __name__ == "__main__":
    main()
