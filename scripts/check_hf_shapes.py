#!/usr/bin/env python3
"""Real-size Qwen and GLM shapes in bf16 on the GPU: zerotune against transformers.

    python3 scripts/check_hf_shapes.py [--zerotune build-gpu/bin/model_outputs] [--layers N] [--shapes a,b]

Needs a CUDA GPU, torch, safetensors, transformers (5.x) and a build of tools/model_outputs.
For each shape, a model with the released model's config.json (random weights; --layers N
keeps the first N layers) is built by transformers on the GPU in bf16 and saved with
save_pretrained. On one batch, 2 sequences x 512 random token ids without padding (labels:
the next id of the same sequence, the last one -100), transformers runs forward (SDPA) + mean
cross-entropy + backward in bf16, then in fp32 on the very same weights (the reference), and
zerotune in bf16 on the saved folder (the two sequences packed back to back).

Two bf16 runs differ by their rounding alone by a few percent on these sizes, so each is
measured against fp32: a shape passes when the loss is within 1e-2 relative of
transformers' bf16 loss and zerotune's relative error from fp32 (||ours - fp32|| / ||fp32||)
is at most 2e-2 for the logits and 5e-2 for each checked gradient (embedding, first layer's
q_proj and input norm, last layer's down_proj, final norm, untied head), or at most 1.5 times
transformers' own bf16 error where that is larger. ours-theirs is printed too. Timings are the
mean of 3 forward+backward passes after a warm-up. Prints one row per shape; exits 1 if any
shape fails.
"""
import argparse
import collections
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM

ROOT = Path(__file__).resolve().parent.parent
SEQUENCES, SEQ_LEN = 2, 512
TIMED_PASSES = 3
SEED = 1234
LOGITS_TOL, LOSS_TOL, GRAD_TOL = 2e-2, 1e-2, 5e-2
SLACK = 1.5  # how much further from fp32 than transformers' bf16 zerotune's bf16 may be

QWEN2 = dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_act="silu", attention_dropout=0.0,
             bos_token_id=151643, eos_token_id=151643, initializer_range=0.02, max_position_embeddings=32768,
             rms_norm_eps=1e-6, rope_theta=1000000.0, sliding_window=32768, use_sliding_window=False,
             tie_word_embeddings=True, vocab_size=151936)
# The released config.json files, in transformers 4.x's spelling (which 5.x reads too).
SHAPES = {
    "Qwen2.5-0.5B": dict(QWEN2, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, max_window_layers=24),
    "Qwen2.5-1.5B": dict(QWEN2, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                         num_attention_heads=12, num_key_value_heads=2, max_window_layers=21),
    "Qwen3-0.6B": dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_act="silu",
                       attention_bias=False, attention_dropout=0.0, bos_token_id=151643, eos_token_id=151645,
                       head_dim=128, hidden_size=1024, initializer_range=0.02, intermediate_size=3072,
                       max_position_embeddings=40960, max_window_layers=28, num_attention_heads=16,
                       num_hidden_layers=28, num_key_value_heads=8, rms_norm_eps=1e-6, rope_theta=1000000.0,
                       sliding_window=None, use_sliding_window=False, tie_word_embeddings=True, vocab_size=151936),
    "GLM-4-9B": dict(architectures=["GlmForCausalLM"], model_type="glm", hidden_act="silu", attention_bias=True,
                     attention_dropout=0.0, eos_token_id=[151329, 151336, 151338], pad_token_id=151329,
                     head_dim=128, hidden_size=4096, initializer_range=0.02, intermediate_size=13696,
                     max_position_embeddings=131072, num_attention_heads=32, num_hidden_layers=40,
                     num_key_value_heads=2, partial_rotary_factor=0.5, rms_norm_eps=1.5625e-07,
                     rope_theta=10000.0, tie_word_embeddings=False, vocab_size=151552),
}


def config_for(name, layers, workdir, values=None):
    """SHAPES[name] (or `values`) as a transformers config, keeping the first `layers` layers."""
    values = dict(values or SHAPES[name])
    if layers:
        values["num_hidden_layers"] = layers
        if "max_window_layers" in values:
            values["max_window_layers"] = min(values["max_window_layers"], layers)
    folder = workdir / "config"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(values, indent=2))
    return AutoConfig.from_pretrained(folder)


def spread_weights(model, seed):
    """transformers' init (std 0.02, unit norms, zero biases) gives near-uniform logits and
    leaves biases and norm weights untested: draw every parameter with a real spread instead."""
    g = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or "layernorm" in name:
                p.normal_(1.0, 0.1, generator=g)
            elif name.endswith(".bias") or "embed_tokens" in name:
                p.normal_(0.0, 0.1, generator=g)
            else:
                p.normal_(0.0, p.shape[-1] ** -0.5, generator=g)


def rope_frequencies(module):
    """What the rotary embedding computes at construction, in float32."""
    init = getattr(module, "rope_init_fn", None) or getattr(module, "compute_default_rope_parameters", None)
    if init is not None:
        return init(module.config, module.inv_freq.device)[0].float()
    c = module.config
    params = getattr(c, "rope_parameters", None) or {}
    base = params.get("rope_theta", getattr(c, "rope_theta", 10000.0))
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    dim = int(head_dim * params.get("partial_rotary_factor", getattr(c, "partial_rotary_factor", 1.0)))
    return 1.0 / (base ** (torch.arange(0, dim, 2, device=module.inv_freq.device).float() / dim))


def exact_rope_frequencies(model):
    """Casting a model to bf16 rounds its rotary embedding's inv_freq buffer to bf16 too (a
    relative error of 4e-3, half a radian at position 500), which loading a checkpoint with
    dtype=bfloat16 does not do: every run here uses the float32 frequencies a user's model has."""
    for module in model.modules():
        if isinstance(getattr(module, "inv_freq", None), torch.Tensor):
            module.inv_freq = rope_frequencies(module)


def build(config, seed, device="cuda"):
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16, attn_implementation="sdpa")
    model = model.to(device, torch.bfloat16)  # a no-op unless this transformers ignored the context or dtype
    exact_rope_frequencies(model)
    spread_weights(model, seed)
    return model


def make_batch(vocab, seed, sequences=SEQUENCES, seq_len=SEQ_LEN):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (sequences, seq_len), generator=g)
    labels = ids.roll(-1, dims=1)
    labels[:, -1] = -100
    return ids, labels


def write_packed_inputs(ids, labels, path):
    sequences, seq_len = ids.shape
    positions = torch.arange(seq_len).repeat(sequences)
    cu_seqlens = torch.arange(0, sequences * seq_len + 1, seq_len, dtype=torch.int32)
    save_file({"input_ids": ids.reshape(-1).contiguous(), "positions": positions, "cu_seqlens": cu_seqlens,
               "labels": labels.reshape(-1).contiguous()}, str(path))


def checked_parameters(model):
    n = model.config.num_hidden_layers
    names = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
             "model.layers.0.input_layernorm.weight", f"model.layers.{n - 1}.mlp.down_proj.weight", "model.norm.weight"]
    if not model.config.tie_word_embeddings:
        names.append("lm_head.weight")
    return names


Outputs = collections.namedtuple("Outputs", "logits loss grads")


def transformers_pass(model, ids, labels):
    model.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    start = time.perf_counter()
    logits = model(input_ids=ids).logits
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100)
    loss.backward()
    torch.cuda.synchronize()
    return logits.detach().reshape(-1, logits.shape[-1]), loss.item(), (time.perf_counter() - start) * 1e3


def gradients(model, names):
    params = dict(model.named_parameters())
    return {name: params[name].grad.detach().clone() for name in names}


def run_transformers(model, ids, labels, names):
    """bf16 (compared and timed), then the same weights in fp32: the reference for both bf16 runs."""
    transformers_pass(model, ids, labels)  # warm-up
    times = []
    for _ in range(TIMED_PASSES):
        logits, loss, ms = transformers_pass(model, ids, labels)
        times.append(ms)
    bf16 = Outputs(logits, loss, gradients(model, names))
    model.float()
    logits, loss, _ = transformers_pass(model, ids, labels)
    return bf16, Outputs(logits, loss, gradients(model, names)), sum(times) / len(times)


def run_zerotune(binary, folder, inputs, outputs, names):
    result = subprocess.run([str(binary), str(folder), str(inputs), str(outputs), *names], capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise RuntimeError(f"model_outputs exited {result.returncode}: {result.stderr.strip()}")
    print("  " + result.stdout.strip())
    with safe_open(str(outputs), "pt", device="cuda:0") as f:
        grads = {n: f.get_tensor(f"grad/{n}") for n in names}
        ours = Outputs(f.get_tensor("logits"), f.get_tensor("loss").item(), grads)
        ms = float(f.metadata()["forward_backward_ms"])
    return ours, ms


def relative_error(a, b):
    b = b.float()
    return (torch.linalg.vector_norm(a.float() - b) / torch.linalg.vector_norm(b)).item()


def errors(a, b):
    """Relative errors of a against b: logits, then each gradient."""
    return relative_error(a.logits, b.logits), {n: relative_error(a.grads[n], b.grads[n]) for n in b.grads}


def close_enough(ours, theirs, tolerance):
    """Within the tolerance of fp32, or not much further from it than transformers' own bf16."""
    return ours <= max(tolerance, SLACK * theirs)


def check_shape(name, args):
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        workdir = Path(tmp)
        config = config_for(name, args.layers, workdir)
        model = build(config, SEED)
        params = sum(p.numel() for p in model.parameters())
        folder = workdir / "model"
        model.save_pretrained(folder)
        ids, labels = make_batch(config.vocab_size, SEED)
        write_packed_inputs(ids, labels, workdir / "inputs.safetensors")
        names = checked_parameters(model)
        theirs, fp32, their_ms = run_transformers(model, ids.cuda(), labels.cuda(), names)
        del model
        gc.collect()
        torch.cuda.empty_cache()  # leaves the GPU to zerotune
        ours, our_ms = run_zerotune(args.zerotune, folder, workdir / "inputs.safetensors",
                                    workdir / "outputs.safetensors", names)
    logits_vs_theirs, grads_vs_theirs = errors(ours, theirs)
    logits_ours, grads_ours = errors(ours, fp32)
    logits_theirs, grads_theirs = errors(theirs, fp32)
    for n in names:
        print(f"  {n}: gradient error ours-theirs {grads_vs_theirs[n]:.2e}, ours-fp32 {grads_ours[n]:.2e}, "
              f"theirs-fp32 {grads_theirs[n]:.2e}")
    worst = max(names, key=lambda n: grads_ours[n] / max(GRAD_TOL, SLACK * grads_theirs[n]))
    passed = (abs(ours.loss - theirs.loss) <= LOSS_TOL * abs(theirs.loss)
              and close_enough(logits_ours, logits_theirs, LOGITS_TOL)
              and all(close_enough(grads_ours[n], grads_theirs[n], GRAD_TOL) for n in names))
    return {"shape": name, "layers": config.num_hidden_layers, "params": f"{params / 1e9:.3f}B",
            "loss ours / theirs / fp32": f"{ours.loss:.5f} / {theirs.loss:.5f} / {fp32.loss:.5f}",
            "logits err ours-theirs / ours-fp32 / theirs-fp32":
                f"{logits_vs_theirs:.2e} / {logits_ours:.2e} / {logits_theirs:.2e}",
            "grad err ours-theirs / ours-fp32 / theirs-fp32 (worst)":
                f"{grads_vs_theirs[worst]:.2e} / {grads_ours[worst]:.2e} / {grads_theirs[worst]:.2e} ({worst})",
            "fwd+bwd ms ours / theirs": f"{our_ms:.1f} / {their_ms:.1f}",
            "wall s": f"{time.perf_counter() - start:.0f}", "result": "PASS" if passed else "FAIL"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zerotune", type=Path, default=ROOT / "build-gpu/bin/model_outputs",
                        help="the model_outputs program (tools/model_outputs.cpp)")
    parser.add_argument("--layers", type=int, default=0, help="keep only the first N layers of every model")
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated subset of {', '.join(SHAPES)}")
    parser.add_argument("--workdir", default=None, help="where the temporary model folders go (default: the system's)")
    args = parser.parse_args()
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        sys.exit(f"unknown shape(s) {', '.join(unknown)}; choose from {', '.join(SHAPES)}")
    if not args.zerotune.is_file():
        sys.exit(f"{args.zerotune} not found: build it (cmake --build <build dir> --target model_outputs) "
                 "or pass --zerotune")
    if not torch.cuda.is_available():
        sys.exit("no CUDA GPU visible to torch")
    rows = []
    for name in shapes:
        print(f"{name}:", flush=True)
        try:
            rows.append(check_shape(name, args))
        except Exception as e:  # one broken shape must not hide the others' numbers
            print(f"  error: {e}", flush=True)
            rows.append({"shape": name, "layers": args.layers or SHAPES[name]["num_hidden_layers"],
                         "result": f"FAIL ({type(e).__name__})"})
        gc.collect()
        torch.cuda.empty_cache()
        print("  " + json.dumps(rows[-1]), flush=True)
    columns = list(max(rows, key=len))
    print("\n| " + " | ".join(columns) + " |\n|" + " --- |" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    sys.exit(0 if all(r["result"] == "PASS" for r in rows) else 1)


if __name__ == "__main__":
    main()
