#!/usr/bin/env python3
"""PEFT prefix-tuning adapters in zerotune, with PEFT itself as the oracle.

Needs python3 with torch, safetensors, transformers and peft, and a zerotune build (the
zerotune and model_outputs binaries). Everything runs in float32 on the CPU:

    python3 scripts/check_peft_prefix.py [--build build] [--work /tmp/peft_prefix_check]
                                         [--num_virtual_tokens 5] [--prefix_projection]

Steps:
  1. get_peft_model(tests/data/models/qwen2, PrefixTuningConfig(...)) with PEFT's random
     initialisation, save_pretrained into <work>/adapter, and load it back as a user does
     (PeftModel.from_pretrained).
  2. Semantics check, independent of zerotune: PEFT's logits equal the base model run on a
     cache holding the prefix with position_ids counted AFTER the prefix (num_virtual_tokens
     + i); with positions from 0 they differ. zerotune loads PEFT folders with
     PrefixPositions::kAfterPrefix on the strength of this.
  3. Logits: the packed batch of tests/data/models/qwen2/fixture.json through
     `model_outputs --adapter_name_or_path <work>/adapter` against PEFT's, sequence by
     sequence; relative error at most 1e-5, and the prefix must move the logits.
  4. Greedy tokens: a model folder of qwen2's weights with examples/tiny-qwen's tokenizer
     files (same vocabulary); for each prompt, `zerotune generate --output_format ids` with
     --adapter_name_or_path and with --ptuning_checkpoint against peft_model.generate.

Exits non-zero, saying what differed, when any check fails.
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch
from peft import PeftModel, PrefixTuningConfig, get_peft_model
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = Path(__file__).resolve().parent.parent
QWEN2 = ROOT / "tests" / "data" / "models" / "qwen2"
TOKENIZER_SOURCE = ROOT / "examples" / "tiny-qwen"
TOLERANCE = 1e-5
SEED = 7
PROMPTS = ["hello", "the quick brown fox", "1 2 3 4 5", "a"]
MAX_NEW_TOKENS = 10


def load_base(path):
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()


def relative_error(actual, expected):
    """As zerotune's tests measure it: ||a - b|| / ||b||."""
    a, b = actual.double(), expected.double()
    return (torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b)).item()


def make_adapter(out, num_virtual_tokens, prefix_projection):
    torch.manual_seed(SEED)
    config = PrefixTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=num_virtual_tokens,
                                prefix_projection=prefix_projection)
    model = get_peft_model(load_base(QWEN2), config).eval()
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(str(out))
    saved = json.loads((out / "adapter_config.json").read_text())
    table = load_file(str(out / "adapter_model.safetensors"))["prompt_embeddings"]
    print(f"saved {out}: prompt_embeddings {tuple(table.shape)}, token_dim {saved['token_dim']}, "
          f"num_attention_heads {saved['num_attention_heads']}, num_layers {saved['num_layers']}")
    return PeftModel.from_pretrained(load_base(QWEN2), str(out)).eval()


def fixture_sequences():
    batch = json.loads((QWEN2 / "fixture.json").read_text())
    ids, cu = batch["input_ids"], batch["cu_seqlens"]
    return [ids[start:end] for start, end in zip(cu[:-1], cu[1:])]


def peft_logits(model, sequences):
    with torch.no_grad():
        return torch.cat([model(input_ids=torch.tensor([s]), attention_mask=torch.ones(1, len(s))).logits[0]
                          for s in sequences])


def logits_by_hand(peft_model, sequences, first_position):
    """The base model on the cache PEFT builds from its prefix (get_prompt), positions given
    explicitly from `first_position`."""
    base = peft_model.get_base_model()
    pieces = []
    with torch.no_grad():
        for s in sequences:
            cache = peft_model.get_prompt(batch_size=1)  # a fresh cache: the forward appends to it
            positions = torch.arange(first_position, first_position + len(s))[None]
            pieces.append(base(input_ids=torch.tensor([s]), past_key_values=cache, position_ids=positions).logits[0])
    return torch.cat(pieces)


def check_semantics(peft_model, sequences, num_virtual_tokens):
    reference = peft_logits(peft_model, sequences)
    after = relative_error(logits_by_hand(peft_model, sequences, num_virtual_tokens), reference)
    from_zero = relative_error(logits_by_hand(peft_model, sequences, 0), reference)
    ok = after <= TOLERANCE and from_zero > 1e-4
    print(f"{'ok  ' if ok else 'FAIL'} PEFT's positions: after the prefix {after:.3g}, from zero {from_zero:.3g} "
          "(relative error against PEFT's logits)")
    return ok


def write_safetensors(path, tensors):
    save_file({name: t.contiguous() for name, t in tensors.items()}, str(path), metadata={"format": "pt"})


def check_logits(args, peft_model, sequences, adapter):
    ids = [t for s in sequences for t in s]
    cu = [0]
    for s in sequences:
        cu.append(cu[-1] + len(s))
    labels = [ids[i + 1] if i + 1 < cu[k + 1] else -100 for k in range(len(sequences)) for i in range(cu[k], cu[k + 1])]
    inputs, outputs = args.work / "inputs.safetensors", args.work / "outputs.safetensors"
    write_safetensors(inputs, {"input_ids": torch.tensor(ids), "cu_seqlens": torch.tensor(cu, dtype=torch.int32),
                               "positions": torch.cat([torch.arange(len(s)) for s in sequences]),
                               "labels": torch.tensor(labels)})
    run([args.build / "bin" / "model_outputs", QWEN2, inputs, outputs, "--device", "cpu", "--dtype", "f32",
         "--adapter_name_or_path", adapter])
    zerotune = load_file(str(outputs))["logits"]
    reference = peft_logits(peft_model, sequences)
    with peft_model.disable_adapter():
        base = peft_logits(peft_model, sequences)
    error, effect = relative_error(zerotune, reference), relative_error(base, reference)
    ok = zerotune.shape == reference.shape and error <= TOLERANCE and effect > 1e-3
    print(f"{'ok  ' if ok else 'FAIL'} logits: relative error {error:.3g} against PEFT "
          f"(the prefix moves them by {effect:.3g})")
    return ok


def model_with_tokenizer(work):
    folder = work / "model"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "generation_config.json"):
        shutil.copy(QWEN2 / name, folder / name)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOKENIZER_SOURCE / name, folder / name)
    return folder


def zerotune_tokens(args, model, prompt, flag, adapter):
    output = run([args.build / "bin" / "zerotune", "generate", "--model_name_or_path", model, "--device", "cpu",
                  "--prompt", prompt, "--max_new_tokens", str(MAX_NEW_TOKENS), "--output_format", "ids",
                  flag, adapter])
    lines = [line for line in output.splitlines() if line.startswith("[")]
    if len(lines) != 1:
        sys.exit(f"zerotune generate printed no single id line:\n{output}")
    return json.loads(lines[0])


def check_greedy(args, peft_model, adapter):
    model = model_with_tokenizer(args.work)
    tokenizer = AutoTokenizer.from_pretrained(str(model))
    eos = json.loads((model / "generation_config.json").read_text())["eos_token_id"]
    ok = True
    for prompt in PROMPTS:
        ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            out = peft_model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                      max_new_tokens=MAX_NEW_TOKENS, eos_token_id=eos, pad_token_id=0)
        expected = out[0, ids.shape[1]:].tolist()  # one sequence: no padding after an eos
        for flag in ("--adapter_name_or_path", "--ptuning_checkpoint"):
            got = zerotune_tokens(args, model, prompt, flag, adapter)
            same = got == expected
            ok &= same
            print(f"{'ok  ' if same else 'FAIL'} greedy {prompt!r} ({ids[0].tolist()}) with {flag}: zerotune {got}, "
                  f"PEFT {expected}")
    return ok


def run(command):
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(map(str, command))} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, default=ROOT / "build", help="zerotune build folder (has bin/)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/peft_prefix_check"))
    parser.add_argument("--num_virtual_tokens", type=int, default=5)
    parser.add_argument("--prefix_projection", action="store_true", help="train-time MLP (saved as its output)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    adapter = args.work / "adapter"
    peft_model = make_adapter(adapter, args.num_virtual_tokens, args.prefix_projection)
    sequences = fixture_sequences()
    results = [check_semantics(peft_model, sequences, args.num_virtual_tokens),
               check_logits(args, peft_model, sequences, adapter),
               check_greedy(args, peft_model, adapter)]
    sys.exit(0 if all(results) else "zerotune differs from PEFT (see FAIL above)")


if __name__ == "__main__":
    main()
