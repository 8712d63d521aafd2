#!/usr/bin/env python3
"""Writes the model fixtures of tests/models/hf_fixtures_test.cpp and tests/models/model_gpu_test.cpp.

Hugging Face transformers is the oracle: for each architecture a tiny random model with
awkward sizes is built by transformers itself, saved as transformers saves it, and run on a
fixed packed batch. Needs python3 with torch, safetensors and transformers (5.x; 4.51 or
later, which has Glm4, works too). Run from anywhere:

    python3 scripts/make_model_fixtures.py [--out tests/data/models]

For each of qwen2, qwen3, glm, glm4 (transformers' layout) and chatglm (THUDM's layout) it
writes <out>/<arch>/:
  config.json, model.safetensors, generation_config.json   the model folder
  expected.safetensors   logits [T, vocab], loss [1], grad/<parameter name> for every parameter
  fixture.json           the batch (input_ids, position_ids, cu_seqlens, labels, aligned so
                         labels[t] is the target of logits[t]; -100 ignored), the greedy prompt
                         and the new tokens transformers' generate produced for it
The chatglm folder holds the glm model's very weights renamed and fused into THUDM's names
(query_key_value = cat(q, k, v), dense_h_to_4h = gate_up_proj), with a THUDM config.json;
its expected numbers are the glm model's.

The packed batch (sequences of 7, 1 and 12 tokens) is run one sequence at a time and the
logits concatenated, which is what packed attention with restarting positions computes.
"""
import argparse
import json
import math
import shutil
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
import transformers
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM

VOCAB = 503
HIDDEN = 96
FFN = 120
HEADS = 6
KV_HEADS = 2
LENGTHS = [7, 1, 12]
PROMPT_LEN = 6
NEW_TOKENS = 32
MIN_DISTINCT = 6
EOS = [2, 5]
PAD = 0

COMMON = {
    "vocab_size": VOCAB,
    "hidden_size": HIDDEN,
    "intermediate_size": FFN,
    "num_attention_heads": HEADS,
    "num_key_value_heads": KV_HEADS,
    "hidden_act": "silu",
    "max_position_embeddings": 256,
    "initializer_range": 0.02,
    "pad_token_id": PAD,
    "bos_token_id": 1,
    "eos_token_id": EOS,
    "torch_dtype": "float32",
    "attention_dropout": 0.0,
}

# Configs in transformers 4.x's spelling (rope_theta at the top level), which both 4.x and
# 5.x read; save_pretrained then writes them in the installed version's own spelling.
CONFIGS = {
    "qwen2": dict(COMMON, model_type="qwen2", architectures=["Qwen2ForCausalLM"], num_hidden_layers=3,
                  rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, use_sliding_window=False,
                  sliding_window=4096, max_window_layers=3),
    # head_dim 24 makes q's width (144) differ from hidden_size, as in the real Qwen3 models.
    "qwen3": dict(COMMON, model_type="qwen3", architectures=["Qwen3ForCausalLM"], num_hidden_layers=2,
                  head_dim=24, rope_theta=1000000.0, rms_norm_eps=1e-6, attention_bias=False,
                  tie_word_embeddings=False, use_sliding_window=False, sliding_window=4096, max_window_layers=2),
    # rope_theta 10000 * 50: the chatglm copy says rope_ratio 50.
    "glm": dict(COMMON, model_type="glm", architectures=["GlmForCausalLM"], num_hidden_layers=2, head_dim=16,
                partial_rotary_factor=0.5, rope_theta=500000.0, rms_norm_eps=1e-5, attention_bias=True,
                tie_word_embeddings=False),
    # glm4 adds the norms after attention and after the MLP.
    "glm4": dict(COMMON, model_type="glm4", architectures=["Glm4ForCausalLM"], num_hidden_layers=2, head_dim=16,
                 partial_rotary_factor=0.5, rope_theta=10000.0, rms_norm_eps=1.5625e-7, attention_bias=True,
                 tie_word_embeddings=False),
}
SEEDS = {"qwen2": 11, "qwen3": 12, "glm": 13, "glm4": 14}


def reinit(model, seed):
    """Weights larger than initializer_range gives, so logits are peaked and greedy choices clear."""
    g = torch.Generator().manual_seed(seed)
    # A tied head scores each token by its own embedding: a large table makes the model repeat
    # its last token.
    tied = getattr(model.config, "tie_word_embeddings", False)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float64)
            if name.endswith("norm.weight") or "layernorm" in name:
                value = 1.0 + 0.1 * noise
            elif name.endswith(".bias"):
                value = 0.1 * noise
            elif "embed_tokens" in name:
                value = (0.1 if tied else 0.3) * noise
            else:
                value = noise / math.sqrt(p.shape[-1])
            p.copy_(value.to(p.dtype))


def make_batch(arch, vocab):
    """Three sequences; qwen batches include the padding id, whose embedding row gets no gradient."""
    g = torch.Generator().manual_seed(100 + SEEDS[arch])
    ids, positions, labels, cu = [], [], [], [0]
    for length in LENGTHS:
        seq = torch.randint(1, vocab, (length,), generator=g).tolist()
        if arch.startswith("qwen") and length > 2:
            seq[1] = PAD
        target = torch.randint(0, vocab, (length,), generator=g).tolist()
        drop = torch.rand(length, generator=g) < 0.25
        ids += seq
        positions += list(range(length))
        labels += [-100 if d else t for t, d in zip(target, drop.tolist())]
        cu.append(cu[-1] + length)
    return {"input_ids": ids, "position_ids": positions, "cu_seqlens": cu, "labels": labels}


def packed_forward(model, batch):
    ids = torch.tensor(batch["input_ids"])
    cu = batch["cu_seqlens"]
    pieces = []
    for b in range(len(cu) - 1):
        seq = ids[cu[b]:cu[b + 1]][None]
        position_ids = torch.arange(seq.shape[1])[None]
        pieces.append(model(input_ids=seq, position_ids=position_ids).logits[0])
    return torch.cat(pieces)


def greedy_margins(model, prompt, new_tokens):
    """The gap between the two largest logits at every greedy step, recomputed without cache."""
    with torch.no_grad():
        full = torch.tensor(prompt + new_tokens)[None]
        logits = model(input_ids=full).logits[0, len(prompt) - 1:len(prompt) - 1 + len(new_tokens)]
    top2 = logits.topk(2, dim=-1).values
    return (top2[:, 0] - top2[:, 1]).tolist()


def greedy(model, arch, vocab):
    """A prompt whose greedy continuation has clear margins (no near-ties for fp32 noise to flip)
    and varies (a continuation repeating one token would pass with a broken cache)."""
    g = torch.Generator().manual_seed(200 + SEEDS[arch])
    for _ in range(20):
        prompt = torch.randint(6, vocab, (PROMPT_LEN,), generator=g).tolist()
        ids = torch.tensor(prompt)[None]
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS,
                             do_sample=False, eos_token_id=EOS, pad_token_id=PAD)
        new_tokens = out[0, len(prompt):].tolist()
        if len(set(new_tokens)) >= MIN_DISTINCT and min(greedy_margins(model, prompt, new_tokens)) > 1e-3:
            return prompt, new_tokens
    raise SystemExit(f"{arch}: no prompt with a varied greedy continuation and clear margins found")


def build(arch, workdir):
    source = workdir / f"{arch}-config"
    source.mkdir()
    (source / "config.json").write_text(json.dumps(CONFIGS[arch], indent=2))
    config = AutoConfig.from_pretrained(source)
    torch.manual_seed(SEEDS[arch])
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").float().eval()
    reinit(model, SEEDS[arch])
    return model


def run_oracle(model, arch):
    batch = make_batch(arch, VOCAB)
    model.zero_grad()
    logits = packed_forward(model, batch)
    loss = F.cross_entropy(logits, torch.tensor(batch["labels"]), ignore_index=-100)
    loss.backward()
    expected = {"logits": logits.detach().contiguous(), "loss": loss.detach().reshape(1)}
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
    prompt, new_tokens = greedy(model, arch, VOCAB)
    return batch, expected, grads, prompt, new_tokens


def write_fixture(folder, batch, expected, grads, prompt, new_tokens, arch):
    tensors = dict(expected)
    tensors.update({f"grad/{name}": g.contiguous() for name, g in grads.items()})
    save_file(tensors, str(folder / "expected.safetensors"), metadata={"format": "pt"})
    fixture = dict(batch, arch=arch, prompt=prompt, greedy_new_tokens=new_tokens, max_new_tokens=NEW_TOKENS,
                   eos_token_id=EOS, made_with=f"transformers {transformers.__version__}, torch {torch.__version__}")
    (folder / "fixture.json").write_text(json.dumps(fixture, indent=1) + "\n")


def write_generation_config(folder):
    config = {"bos_token_id": 1, "eos_token_id": EOS, "pad_token_id": PAD, "do_sample": False}
    (folder / "generation_config.json").write_text(json.dumps(config, indent=2) + "\n")


def chatglm_names(glm_tensors, layers):
    """The glm model's tensors under THUDM's names, q/k/v and gate/up fused."""
    out = {
        "transformer.embedding.word_embeddings.weight": glm_tensors["model.embed_tokens.weight"],
        "transformer.encoder.final_layernorm.weight": glm_tensors["model.norm.weight"],
        "transformer.output_layer.weight": glm_tensors["lm_head.weight"],
    }
    for i in range(layers):
        hf, th = f"model.layers.{i}.", f"transformer.encoder.layers.{i}."
        for kind in ("weight", "bias"):
            out[th + f"self_attention.query_key_value.{kind}"] = torch.cat(
                [glm_tensors[hf + f"self_attn.{p}_proj.{kind}"] for p in "qkv"])
        out[th + "self_attention.dense.weight"] = glm_tensors[hf + "self_attn.o_proj.weight"]
        out[th + "input_layernorm.weight"] = glm_tensors[hf + "input_layernorm.weight"]
        out[th + "post_attention_layernorm.weight"] = glm_tensors[hf + "post_attention_layernorm.weight"]
        out[th + "mlp.dense_h_to_4h.weight"] = glm_tensors[hf + "mlp.gate_up_proj.weight"]
        out[th + "mlp.dense_4h_to_h.weight"] = glm_tensors[hf + "mlp.down_proj.weight"]
    return {name: t.detach().contiguous().clone() for name, t in out.items()}


def write_chatglm(folder, glm, batch, expected, grads, prompt, new_tokens):
    c = CONFIGS["glm"]
    head_dim = c["head_dim"]
    config = {
        "architectures": ["ChatGLMModel"],
        "auto_map": {"AutoConfig": "configuration_chatglm.ChatGLMConfig",
                     "AutoModel": "modeling_chatglm.ChatGLMForConditionalGeneration",
                     "AutoModelForCausalLM": "modeling_chatglm.ChatGLMForConditionalGeneration"},
        "model_type": "chatglm",
        "num_layers": c["num_hidden_layers"],
        "padded_vocab_size": VOCAB,
        "hidden_size": HIDDEN,
        "ffn_hidden_size": FFN,
        "kv_channels": head_dim,
        "num_attention_heads": HEADS,
        "multi_query_attention": True,
        "multi_query_group_num": KV_HEADS,
        "layernorm_epsilon": c["rms_norm_eps"],
        "rmsnorm": True,
        "apply_residual_connection_post_layernorm": False,
        "post_layer_norm": True,
        "add_bias_linear": False,
        "add_qkv_bias": True,
        "bias_dropout_fusion": True,
        "rope_ratio": c["rope_theta"] / 10000.0,
        "original_rope": True,
        "seq_length": 256,
        "hidden_dropout": 0.0,
        "attention_dropout": 0.0,
        "apply_query_key_layer_scaling": True,
        "attention_softmax_in_fp32": True,
        "fp32_residual_connection": False,
        "tie_word_embeddings": False,
        "eos_token_id": EOS,
        "pad_token_id": PAD,
        "torch_dtype": "float32",
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    weights = chatglm_names(dict(glm.named_parameters()), c["num_hidden_layers"])
    rotary = head_dim // 2
    weights["transformer.rotary_pos_emb.inv_freq"] = 1.0 / (10000 ** (torch.arange(0, rotary, 2).float() / rotary))
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    write_generation_config(folder)
    write_fixture(folder, batch, expected, chatglm_names(grads, c["num_hidden_layers"]), prompt, new_tokens, "chatglm")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_out = Path(__file__).resolve().parent.parent / "tests" / "data" / "models"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    with tempfile.TemporaryDirectory() as tmp:
        for arch in CONFIGS:
            model = build(arch, Path(tmp))
            batch, expected, grads, prompt, new_tokens = run_oracle(model, arch)
            folder = args.out / arch
            shutil.rmtree(folder, ignore_errors=True)
            model.save_pretrained(folder)
            write_generation_config(folder)
            write_fixture(folder, batch, expected, grads, prompt, new_tokens, arch)
            if arch == "glm":
                chatglm = args.out / "chatglm"
                shutil.rmtree(chatglm, ignore_errors=True)
                chatglm.mkdir(parents=True)
                write_chatglm(chatglm, model, batch, expected, grads, prompt, new_tokens)
            print(f"{arch}: loss {expected['loss'].item():.6f}, {len(new_tokens)} greedy tokens -> {folder}")
    total = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file())
    print(f"fixtures: {total / 1e6:.1f} MB in {args.out}")


if __name__ == "__main__":
    main()
