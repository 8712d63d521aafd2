#!/usr/bin/env python3
"""zerotune's forward against transformers', activation by activation (llm.c style).

    python3 scripts/compare_activations.py --shape Qwen3-0.6B [--layers 4] [--zerotune build-gpu/bin/model_outputs]
    python3 scripts/compare_activations.py --shape tiny:Qwen3-0.6B --device cpu --dtype fp32   # plumbing check

Needs torch, safetensors, transformers (5.x) and a build of tools/model_outputs. One shape of
scripts/check_hf_shapes.py (its config, random weights, batch of 2 x 512 tokens) is built by
transformers and saved; transformers runs the forward in the compared dtype and in fp32 (the
reference, same weights), recording the same points zerotune records (models/activation_dump.h)
by forward hooks; then zerotune's model_outputs --dump_activations runs the saved folder.

Each point is named after the transformers module whose output it is, except:
  self_attn.rope_q / rope_k  q and k after RoPE (Qwen3: after q_norm/k_norm), as the attention
                             function receives them (a registered AttentionInterface wrapper
                             around SDPA records them); k before GQA's repetition
  self_attn.attn_out         the attention output before o_proj (o_proj's input)
  mlp.act                    silu(gate) * up (down_proj's input)
  self_attn, mlp             before glm4's post_self_attn_layernorm / post_mlp_layernorm
  model.layers.N             the layer's output (residuals added)
Every point is compared as [tokens, features] in float32.

For each point it prints ||x - fp32|| / ||fp32|| of transformers' run and of zerotune's, their
ratio, and the ratio's growth over the worst ratio among the point's inputs: an op that rounds
more than transformers' makes the ratio grow where it runs. Rows whose growth reaches --jump
are flagged and the first one is named at the end. With --dtype fp32 there is no transformers
run to compare: zerotune's errors must stay within 1e-4 (a check of the plumbing, exit 1 if not).
"""
import argparse
import gc
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_hf_shapes as hf  # noqa: E402  (the shapes, weights and batch of the real-size check)

ROOT = Path(__file__).resolve().parent.parent
FP32_TOLERANCE = 1e-4
# The points a layer may have, in forward order, each with what it is computed from: a list of
# inputs, each a list of alternatives of which the first the model has is the one it reads
# ("<previous>": the layer's input). The layer output reads the residual's two sides.
ATTENTION_BRANCH = ["post_self_attn_layernorm", "self_attn"]
LAYER_POINTS = [
    ("input_layernorm", [["<previous>"]]),
    ("self_attn.q_proj", [["input_layernorm"]]),
    ("self_attn.k_proj", [["input_layernorm"]]),
    ("self_attn.v_proj", [["input_layernorm"]]),
    ("self_attn.q_norm", [["self_attn.q_proj"]]),
    ("self_attn.k_norm", [["self_attn.k_proj"]]),
    ("self_attn.rope_q", [["self_attn.q_norm", "self_attn.q_proj"]]),
    ("self_attn.rope_k", [["self_attn.k_norm", "self_attn.k_proj"]]),
    ("self_attn.attn_out", [["self_attn.rope_q", "self_attn.q_norm", "self_attn.q_proj"],
                            ["self_attn.rope_k", "self_attn.k_norm", "self_attn.k_proj"], ["self_attn.v_proj"]]),
    ("self_attn", [["self_attn.attn_out"]]),
    ("post_self_attn_layernorm", [["self_attn"]]),
    ("post_attention_layernorm", [ATTENTION_BRANCH, ["<previous>"]]),
    ("mlp.act", [["post_attention_layernorm"]]),
    ("mlp", [["mlp.act"]]),
    ("post_mlp_layernorm", [["mlp"]]),
    ("", [["post_mlp_layernorm", "mlp"], ATTENTION_BRANCH, ["<previous>"]]),
]


def layer_name(layer, point):
    return f"model.layers.{layer}" + (f".{point}" if point else "")


def point_graph(layers):
    """[(name, inputs)] of every point a model of `layers` layers may have, in forward order,
    inputs as in LAYER_POINTS with full names."""
    graph = [("model.embed_tokens", [])]
    previous = "model.embed_tokens"
    for layer in range(layers):
        for point, inputs in LAYER_POINTS:
            full = [[previous if a == "<previous>" else layer_name(layer, a) for a in group] for group in inputs]
            graph.append((layer_name(layer, point), full))
        previous = layer_name(layer, "")
    graph.append(("model.norm", [[previous]]))
    graph.append(("lm_head", [["model.norm", previous]]))
    return graph


def tiny_values(values):
    """A few-thousand-parameter config of the same family: same layout, RoPE, GQA ratio and
    q width over the hidden size, so the plumbing runs on a CPU in seconds."""
    heads, kv_heads, hidden = 4, 2, 64
    head_dim = values.get("head_dim", values["hidden_size"] // values["num_attention_heads"])
    widen = head_dim * values["num_attention_heads"] // values["hidden_size"]
    small = dict(values, hidden_size=hidden, intermediate_size=96, num_attention_heads=heads,
                 num_key_value_heads=kv_heads, vocab_size=512, max_position_embeddings=4096,
                 bos_token_id=0, eos_token_id=1)
    if "head_dim" in values:
        small["head_dim"] = widen * hidden // heads
    if "pad_token_id" in values:
        small["pad_token_id"] = 2
    return small


def shape_values(shape):
    if shape.startswith("tiny:"):
        return tiny_values(hf.SHAPES[shape[len("tiny:"):]])
    return hf.SHAPES[shape]


class Recorder:
    """Forward hooks (and an attention wrapper) that keep each point as float32 [tokens, features]."""

    def __init__(self):
        self.tensors = {}
        self.active = False

    def keep(self, name, value):
        """value: [batch, seq, ...], the batch's sequences back to back as zerotune packs them."""
        if self.active:
            self.tensors[name] = value.detach().reshape(value.shape[0] * value.shape[1], -1).float().cpu()


RECORDER = Recorder()


def record_attention_inputs(module, query, key, value, attention_mask, **kwargs):
    """SDPA, recording q and k ([batch, heads, seq, head_dim], after RoPE) as [tokens, heads * head_dim]."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    RECORDER.keep(layer_name(module.layer_idx, "self_attn.rope_q"), query.transpose(1, 2))
    RECORDER.keep(layer_name(module.layer_idx, "self_attn.rope_k"), key.transpose(1, 2))
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


def use_recording_attention(model):
    """Switches the model to SDPA wrapped by record_attention_inputs (same numbers as "sdpa").
    Returns False, leaving the model as it was, where this transformers has no AttentionInterface."""
    try:
        from transformers import AttentionInterface, AttentionMaskInterface
        from transformers.masking_utils import sdpa_mask
    except ImportError:
        return False
    AttentionInterface.register("zt_recording_sdpa", record_attention_inputs)
    AttentionMaskInterface.register("zt_recording_sdpa", sdpa_mask)  # else the causal mask is dropped
    try:
        model.set_attn_implementation("zt_recording_sdpa")
    except (AttributeError, ValueError) as e:
        print(f"cannot switch the attention function ({e})")
        return False
    return True


def first_output(output):
    return output[0] if isinstance(output, tuple) else output


def install_hooks(model, graph):
    """A hook per point that is a module's output, or (attn_out, mlp.act) a projection's input."""
    modules = dict(model.named_modules())
    handles = []
    for name, _ in graph:
        if name.endswith(".self_attn.attn_out") or name.endswith(".mlp.act"):
            target = name.replace("self_attn.attn_out", "self_attn.o_proj").replace("mlp.act", "mlp.down_proj")
            if target in modules:
                handles.append(modules[target].register_forward_pre_hook(
                    lambda m, args, n=name: RECORDER.keep(n, args[0])))
        elif name in modules:
            handles.append(modules[name].register_forward_hook(
                lambda m, args, out, n=name: RECORDER.keep(n, first_output(out))))
    return handles


def transformers_activations(model, ids):
    RECORDER.tensors, RECORDER.active = {}, True
    with torch.no_grad():
        model(input_ids=ids)
    RECORDER.active = False
    return RECORDER.tensors


def run_zerotune(args, folder, workdir):
    outputs, activations = workdir / "outputs.safetensors", workdir / "zerotune_activations.safetensors"
    dtype = "bf16" if args.dtype == "bf16" else "f32"
    command = [str(args.zerotune), str(folder), str(workdir / "inputs.safetensors"), str(outputs),
               "--dump_activations", str(activations), "--device", args.device, "--dtype", dtype]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"model_outputs exited {result.returncode}: {result.stderr.strip()}")
    print("zerotune: " + result.stdout.strip(), flush=True)
    with safe_open(str(activations), "pt", device="cpu") as f:
        return {name: f.get_tensor(name) for name in f.keys()}


def relative_error(x, reference):
    """||x - reference|| / ||reference||; None where either is absent or the shapes differ."""
    if x is None or reference is None or x.shape != reference.shape:
        return None
    denominator = torch.linalg.vector_norm(reference).item()
    return torch.linalg.vector_norm(x - reference).item() / denominator if denominator else 0.0


def problem(name, reference, ours):
    if name not in reference or name not in ours:
        return "missing in " + ("transformers" if name not in reference else "zerotune")
    if reference[name].shape != ours[name].shape:
        return f"shape {tuple(ours[name].shape)} in zerotune, {tuple(reference[name].shape)} in transformers"
    return ""


def input_ratio(inputs, ratios):
    """The worst ratio among the points a point reads (the first present of each alternative group)."""
    read = [next((a for a in group if a in ratios), None) for group in inputs]
    return max((ratios[r] for r in read if r is not None and ratios[r] is not None), default=None)


def compare(graph, reference, theirs, ours, jump):
    """One row per point: errors against fp32, their ratio, its growth over the inputs' ratio, a flag."""
    rows, ratios = [], {}
    for name, inputs in graph:
        if name not in reference and name not in ours:
            continue  # a point this architecture does not have
        e_theirs = relative_error(theirs.get(name), reference.get(name)) if theirs is not None else None
        e_ours = relative_error(ours.get(name), reference.get(name))
        ratio = e_ours / e_theirs if e_ours is not None and e_theirs else None
        base = input_ratio(inputs, ratios)
        growth = ratio / base if ratio is not None and base else None
        ratios[name] = ratio
        flag = problem(name, reference, ours) or ("<< jump" if growth is not None and growth >= jump else "")
        rows.append((name, e_theirs, e_ours, ratio, growth, flag))
    return rows


def fmt(value, spec=".2e"):
    return "-" if value is None else format(value, spec)


def print_table(rows, dtype):
    print(f"\n{'point':<44} {'theirs-fp32':>11} {'ours-fp32':>11} {'ratio':>7} {'growth':>7}")
    for name, e_theirs, e_ours, ratio, growth, flag in rows:
        if name.endswith(".input_layernorm"):
            print(f"--- {name.rsplit('.', 1)[0]}")
        print(f"{name:<44} {fmt(e_theirs):>11} {fmt(e_ours):>11} {fmt(ratio, '.2f'):>7} {fmt(growth, '.2f'):>7} {flag}")
    jumps = [r[0] for r in rows if r[5] == "<< jump"]
    if dtype == "bf16":
        print("\nfirst jump: " + (jumps[0] if jumps else "none"))


def save_activations(path, tensors):
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(path))


def run(args, workdir):
    values = shape_values(args.shape)
    config = hf.config_for(args.shape, args.layers, workdir, values)
    model = hf.build(config, hf.SEED, args.device)
    folder = workdir / "model"
    model.save_pretrained(folder)
    ids, labels = hf.make_batch(config.vocab_size, hf.SEED, hf.SEQUENCES, args.seq_len)
    hf.write_packed_inputs(ids, labels, workdir / "inputs.safetensors")
    ids = ids.to(args.device)
    graph = point_graph(config.num_hidden_layers)
    if not use_recording_attention(model):
        print("this transformers has no AttentionInterface: rope_q/rope_k are not recorded")
    install_hooks(model, graph)
    theirs = transformers_activations(model, ids) if args.dtype == "bf16" else None
    reference = transformers_activations(model.float(), ids)
    if args.workdir:  # kept for a closer look beside zerotune_activations.safetensors
        save_activations(workdir / "transformers_fp32.safetensors", reference)
        if theirs is not None:
            save_activations(workdir / "transformers_bf16.safetensors", theirs)
    del model
    gc.collect()
    if args.device == "cuda":
        torch.cuda.empty_cache()  # leaves the GPU to zerotune
    ours = run_zerotune(args, folder, workdir)
    rows = compare(graph, reference, theirs, ours, args.jump)
    print_table(rows, args.dtype)
    if args.detail:
        print_detail(args.detail, reference, theirs, ours, config)
    return rows


def print_detail(name, reference, theirs, ours, config):
    """Where one point's error lies: its worst tokens, and (for per-head points) the error by
    position within a head, each for zerotune and transformers against fp32."""
    if name not in reference or name not in ours:
        print(f"\n--detail {name}: not recorded")
        return
    ref = reference[name].double()
    print(f"\n{name}: worst tokens (index: ours, theirs)")
    for label, x in (("ours", ours[name]), ("theirs", theirs.get(name) if theirs else None)):
        if x is None:
            continue
        per_token = (x.double() - ref).norm(dim=1) / ref.norm(dim=1).clamp_min(1e-30)
        worst = per_token.topk(min(8, per_token.numel()))
        print(f"  {label:6}: " + ", ".join(f"{i}: {e:.2e}" for e, i in zip(worst.values.tolist(), worst.indices.tolist())))
        print(f"  {label:6}: median token error {per_token.median():.2e}")
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    if ref.shape[1] % head_dim == 0:
        for label, x in (("ours", ours[name]), ("theirs", theirs.get(name) if theirs else None)):
            if x is None:
                continue
            diff = (x.double() - ref).reshape(ref.shape[0], -1, head_dim)
            scale = ref.reshape(ref.shape[0], -1, head_dim)
            by_dim = diff.pow(2).sum(dim=(0, 1)).sqrt() / scale.pow(2).sum(dim=(0, 1)).sqrt()
            print(f"  {label:6} by dim: " + " ".join(f"{e:.1e}" for e in by_dim.tolist()))


def check_plumbing(rows, dtype):
    """Every point on both sides; in fp32, zerotune within FP32_TOLERANCE of transformers."""
    missing = [r[0] for r in rows if r[5] and r[5] != "<< jump"]
    loose = [r[0] for r in rows if dtype == "fp32" and r[2] is not None and r[2] > FP32_TOLERANCE]
    for name in missing:
        print(f"error: {name} is not recorded alike on both sides")
    for name in loose:
        print(f"error: {name} is further than {FP32_TOLERANCE} from transformers in fp32")
    return not missing and not loose


def parse_args():
    shapes = list(hf.SHAPES) + [f"tiny:{s}" for s in hf.SHAPES]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", required=True, choices=shapes, help="a check_hf_shapes.py shape, or tiny:<shape>")
    parser.add_argument("--layers", type=int, default=4, help="keep only the first N layers (default 4)")
    parser.add_argument("--zerotune", type=Path, default=ROOT / "build-gpu/bin/model_outputs",
                        help="the model_outputs program (tools/model_outputs.cpp)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16", help="the compared runs' dtype")
    parser.add_argument("--seq_len", type=int, default=hf.SEQ_LEN, help=f"tokens per sequence (default {hf.SEQ_LEN})")
    parser.add_argument("--jump", type=float, default=1.3, help="growth of the ratio that flags a point")
    parser.add_argument("--detail", help="a point whose error to break down by token and by position in a head")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep the model, inputs and every activation file here (default: a temporary folder)")
    return parser.parse_args()


def main():
    args = parse_args()
    if not args.zerotune.is_file():
        sys.exit(f"{args.zerotune} not found: build it (cmake --build <build dir> --target model_outputs) "
                 "or pass --zerotune")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("no CUDA GPU visible to torch (--device cpu runs a tiny:<shape> on the CPU)")
    torch.backends.cuda.matmul.allow_tf32 = False  # an fp32 reference, not a TF32 one
    print(f"{args.shape}, {args.layers} layers, {hf.SEQUENCES} x {args.seq_len} tokens, {args.dtype} on {args.device}; "
          f"torch {torch.__version__}", flush=True)
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
        rows = run(args, args.workdir)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            rows = run(args, Path(tmp))
    sys.exit(0 if check_plumbing(rows, args.dtype) else 1)


if __name__ == "__main__":
    main()
