#!/usr/bin/env python3
"""LoRA adapters between zerotune and Hugging Face PEFT, with PEFT as the oracle.

Needs python3 with torch, safetensors, transformers (5.x) and peft. Everything runs in
float32 on the CPU. Two modes:

  python3 scripts/check_peft.py check BASE ADAPTER [ADAPTER ...]
      For each ADAPTER folder written by zerotune (tests/models/peft/lora_files_test writes them under
      <build>/lora_peft_check/<arch>/ for the fixture models), loads the base model folder
      BASE with transformers and the adapter with PeftModel.from_pretrained, runs the batch
      of ADAPTER/logits.safetensors and asserts that PEFT's logits equal zerotune's within a
      relative error of 1e-5. BASE may contain "{arch}", replaced by the adapter folder's name.

  python3 scripts/check_peft.py fixture [--out tests/data/models/qwen2_lora]
      Writes the fixture of tests/models/peft/lora_files_test.cpp: a LoRA adapter on every linear module of
      tests/data/models/qwen2 made and saved by PEFT itself (rank 4, alpha 8, lora_B random so
      that the adapter matters), and expected.safetensors with the logits PEFT computes on the
      batch of tests/data/models/qwen2/fixture.json.

logits.safetensors holds input_ids [T] (int64), cu_seqlens [S + 1] (int64; the sequences are
packed back to back, positions restarting at each) and logits [T, vocab] (float32). Packed
sequences are run one at a time and their logits concatenated, which is what packed attention
with restarting positions computes.
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

ROOT = Path(__file__).resolve().parent.parent
QWEN2 = ROOT / "tests" / "data" / "models" / "qwen2"
TOLERANCE = 1e-5
FIXTURE_SEED = 21


def load_base(path):
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()


def packed_logits(model, input_ids, cu_seqlens):
    pieces = []
    with torch.no_grad():
        for start, end in zip(cu_seqlens[:-1], cu_seqlens[1:]):
            seq = input_ids[start:end][None]
            position_ids = torch.arange(seq.shape[1])[None]
            pieces.append(model(input_ids=seq, position_ids=position_ids).logits[0])
    return torch.cat(pieces)


def relative_error(actual, expected):
    """As zerotune's tests measure it: ||a - b|| / ||b||."""
    a, b = actual.double(), expected.double()
    return (torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b)).item()


def check(base_pattern, adapters):
    failures = 0
    for adapter in map(Path, adapters):
        base = base_pattern.replace("{arch}", adapter.name)
        data = load_file(str(adapter / "logits.safetensors"))
        model = PeftModel.from_pretrained(load_base(base), str(adapter)).eval()
        input_ids, cu_seqlens = data["input_ids"].long(), data["cu_seqlens"].long().tolist()
        logits = packed_logits(model, input_ids, cu_seqlens)
        with model.disable_adapter():
            base_logits = packed_logits(model, input_ids, cu_seqlens)
        error = relative_error(logits, data["logits"])
        # An adapter that changed nothing would pass against the base model's logits alone.
        effect = relative_error(base_logits, data["logits"])
        ok = logits.shape == data["logits"].shape and error <= TOLERANCE and effect > 1e-3
        print(f"{'ok  ' if ok else 'FAIL'} {adapter}: relative error {error:.3g} against PEFT on {base} "
              f"(the adapter moves the logits by {effect:.3g})")
        failures += 0 if ok else 1
    return failures


def fixture_batch():
    batch = json.loads((QWEN2 / "fixture.json").read_text())
    return torch.tensor(batch["input_ids"]), batch["cu_seqlens"]


def write_fixture(out):
    torch.manual_seed(FIXTURE_SEED)
    torch.use_deterministic_algorithms(True)
    config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, task_type="CAUSAL_LM", bias="none",
                        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    model = get_peft_model(load_base(QWEN2), config).eval()
    generator = torch.Generator().manual_seed(FIXTURE_SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.2)
    input_ids, cu_seqlens = fixture_batch()
    logits = packed_logits(model, input_ids, cu_seqlens)
    base_logits = packed_logits(load_base(QWEN2), input_ids, cu_seqlens)
    if relative_error(base_logits, logits) < 1e-3:
        sys.exit("the random adapter barely changes the logits; the fixture would test nothing")
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(str(out))
    (out / "README.md").unlink(missing_ok=True)  # PEFT's model card: not needed to load
    # The base model as the repository names it, not this machine's absolute path.
    config_path = out / "adapter_config.json"
    adapter_config = json.loads(config_path.read_text())
    adapter_config["base_model_name_or_path"] = "tests/data/models/qwen2"
    config_path.write_text(json.dumps(adapter_config, indent=2, sort_keys=True) + "\n")
    save_file({"logits": logits.contiguous()}, str(out / "expected.safetensors"), metadata={"format": "pt"})
    total = sum(f.stat().st_size for f in out.iterdir())
    print(f"wrote {out} ({total / 1e3:.0f} kB): {sorted(f.name for f in out.iterdir())}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    check_mode = modes.add_parser("check", help="PEFT loads zerotune's adapters and computes zerotune's logits")
    check_mode.add_argument("base", help="base model folder; {arch} is replaced by each adapter folder's name")
    check_mode.add_argument("adapters", nargs="+", help="adapter folders holding logits.safetensors")
    fixture_mode = modes.add_parser("fixture", help="write tests/data/models/qwen2_lora with PEFT")
    fixture_mode.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "models" / "qwen2_lora")
    args = parser.parse_args()
    if args.mode == "check":
        failures = check(args.base, args.adapters)
        sys.exit(f"{failures} adapter(s) differ from PEFT" if failures else 0)
    write_fixture(args.out)


if __name__ == "__main__":
    main()
