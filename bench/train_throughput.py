#!/usr/bin/env python3
"""Training throughput of zerotune train beside HF + PyTorch on the same GPU.

For each shape (Qwen2.5-0.5B and -1.5B, random weights) it trains B=4 x S=2048 tokens per
step, full fine-tune in bf16 with fp32 master weights and AdamW, with `zerotune train` and
with transformers (SDPA attention, bf16 autocast over fp32 weights, fused torch AdamW;
eager and torch.compile); then LoRA (rank 8 on every linear layer) with zerotune against
transformers + PEFT in pure bf16. The 7b (Qwen2.5-7B) and glm4-9b (GLM-4-9B) shapes run
LoRA only, both sides with gradient checkpointing (with --keep-activations zerotune keeps its
activations instead, while the peer, which needs it, still checkpoints); with --qlora, zerotune
also trains them with the base quantized to NF4 at load (QLoRA) beside the same HF + PEFT bf16
LoRA peer. Prints
tokens/s, MFU and peak memory of each, one table, and under each row the three largest costs of zerotune's step profile
(--profile_steps over the warm-up steps after the first, so the measured steps run unprofiled).

  python3 bench/train_throughput.py --zerotune build-gpu/bin/zerotune --tokenizer DIR \\
      [--shapes 0.5b,1.5b,7b,glm4-9b] [--steps 8] [--warmup 3] [--skip-hf-compile] [--skip-hf-eager] [--zerotune-only]
      [--out results.json]

--tokenizer is a folder holding a Qwen tokenizer (tokenizer.json, tokenizer_config.json, ...).

How it measures
- Every run is its own process, so each starts on an empty GPU and is measured the same way.
  Peak memory, two ways: the caching allocator's peak (zerotune's memory_peak_gib log figure,
  torch.cuda.max_memory_allocated), and device memory in use (nvidia-smi, polled every
  100 ms) above what was in use before the process started, which includes the process's
  CUDA context and cached memory.
- Throughput: the first --warmup steps are left out; tokens/s = tokens of the --steps
  measured steps / their wall time. zerotune's steps are timed by its own per-step log
  (tokens_per_second in train_log.jsonl / trainer_state.json when it writes one), else by
  when each step's log line arrives (--logging_steps 1).
- MFU = FLOPs / time / 989 TFLOP/s (H200 dense bf16), with the FLOPs of a step
  6 * N * tokens + 12 * layers * heads * head_dim * S * tokens (PaLM's estimate, attention
  over full sequences of S tokens), N the parameters taking part in a matmul (the tied
  embedding counted once, as the LM head). LoRA rows use the same formula, so their MFU
  counts weight gradients LoRA does not compute.
- zerotune reads a synthetic alpaca dataset (--template none --train_on_prompt, every sample
  longer than 2048 tokens and truncated to it), so each micro-batch is exactly 4 x 2048 tokens;
  the peers train on random token ids of the same shape.
"""
import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PEAK_FLOPS = 989e12
BATCH = 4
SEQ = 2048
GIB = 1024 ** 3
SHAPES = {
    "0.5b": dict(name="Qwen2.5-0.5B", hidden_size=896, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2, intermediate_size=4864),
    "1.5b": dict(name="Qwen2.5-1.5B", hidden_size=1536, num_hidden_layers=28, num_attention_heads=12,
                 num_key_value_heads=2, intermediate_size=8960),
    # The largest Qwen2.5 whose full fine-tune with offloaded optimizer (20 bytes a parameter of
    # host memory) fits a 128 GiB host: bench/offload_throughput.py.
    "3b": dict(name="Qwen2.5-3B", hidden_size=2048, num_hidden_layers=36, num_attention_heads=16,
               num_key_value_heads=2, intermediate_size=11008),
    # LoRA only (a full fine-tune of these does not fit the peers), both sides with gradient checkpointing.
    "7b": dict(name="Qwen2.5-7B", hidden_size=3584, num_hidden_layers=28, num_attention_heads=28,
               num_key_value_heads=4, intermediate_size=18944, vocab_size=152064, tie_word_embeddings=False),
    # GLM-4-9B's transformer ("glm" as transformers names it) with the Qwen tokenizer's vocabulary.
    "glm4-9b": dict(name="GLM-4-9B", model_type="glm", architectures=["GlmForCausalLM"], hidden_size=4096,
                    num_hidden_layers=40, num_attention_heads=32, num_key_value_heads=2, head_dim=128,
                    intermediate_size=13696, vocab_size=152064, tie_word_embeddings=False, attention_bias=True,
                    partial_rotary_factor=0.5, rope_theta=10000.0, rms_norm_eps=1.5625e-07),
}
LORA_ONLY = {"7b", "glm4-9b"}
COMMON = dict(model_type="qwen2", architectures=["Qwen2ForCausalLM"], vocab_size=151936, hidden_act="silu",
              max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
              use_sliding_window=False, sliding_window=32768, max_window_layers=21, attention_dropout=0.0,
              initializer_range=0.02, bos_token_id=151643, eos_token_id=151643, torch_dtype="bfloat16")
LR = 1e-5
MODEL_FILES = {"config.json", "generation_config.json", "model.safetensors.index.json"}


def config_of(shape):
    return {k: v for k, v in dict(COMMON, **SHAPES[shape]).items() if k != "name"}


def matmul_parameters(c):
    d, layers, vocab = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    head_dim = d // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * head_dim, c["num_key_value_heads"] * head_dim
    layer = (d * q + q) + 2 * (d * kv + kv) + q * d + 3 * d * c["intermediate_size"] + 2 * d
    return layers * layer + d + vocab * d  # vocab * d: the LM head (an untied input embedding is a lookup)


def flops_per_token(c):
    attention_width = c["num_attention_heads"] * (c["hidden_size"] // c["num_attention_heads"])
    return 6 * matmul_parameters(c) + 12 * c["num_hidden_layers"] * attention_width * SEQ


# ---------------------------------------------------------------- workers (own processes)

def worker_build(args):
    """The random models (bf16 safetensors + tokenizer files) and the dataset zerotune reads."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    work = Path(args.workdir)
    for shape in args.shapes.split(","):
        folder = work / shape
        source = work / f"{shape}-config"
        source.mkdir(parents=True, exist_ok=True)
        (source / "config.json").write_text(json.dumps(config_of(shape)))
        config = AutoConfig.from_pretrained(source)
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
        model.save_pretrained(folder)
        del model
        for f in Path(args.tokenizer).iterdir():
            if f.is_file() and f.name not in MODEL_FILES and not f.name.endswith((".safetensors", ".bin")):
                shutil.copy(f, folder / f.name)
        print(f"built {SHAPES[shape]['name']} in {folder}", flush=True)
    write_dataset(AutoTokenizer.from_pretrained(args.tokenizer), work / "data.json", args.samples)


def write_dataset(tokenizer, path, count):
    """Alpaca records of random words, each longer than SEQ tokens (zerotune truncates to SEQ)."""
    rng = random.Random(0)
    words = []
    for i in rng.sample(range(1000, 100000), 5000):
        text = tokenizer.decode([i])
        if text.startswith(" ") and text[1:].isascii() and text[1:].isalpha():
            words.append(text)
    if len(words) < 100:
        raise SystemExit(f"only {len(words)} plain words in the vocabulary of {tokenizer.name_or_path}: is it a Qwen "
                         "tokenizer?")
    records = []
    for _ in range(count):
        output = "".join(rng.choice(words) for _ in range(SEQ + 256))
        length = len(tokenizer(output).input_ids)
        if length <= SEQ:
            raise SystemExit(f"a sample of {length} tokens is not longer than {SEQ}")
        records.append({"instruction": "Continue the text.", "input": "", "output": output})
    path.write_text(json.dumps(records))
    print(f"wrote {count} samples to {path}", flush=True)


def worker_peer(args):
    """HF + PyTorch training steps on random ids; prints one RESULT line of JSON."""
    import torch
    from transformers import AutoModelForCausalLM
    lora = args.worker == "peft"
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.bfloat16 if lora else torch.float32,
                                                 attn_implementation="sdpa").cuda().train()
    vocab = model.config.vocab_size
    if lora:
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear",
                                                 task_type="CAUSAL_LM"))
    if Path(args.model_dir).name in LORA_ONLY:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=LR, fused=True)
    step_fn = model
    if args.worker == "hf-compile":
        step_fn = torch.compile(model)
    total = args.warmup + args.steps
    ids = torch.randint(0, vocab, (total, BATCH, SEQ), device="cuda")

    def loss_of(i):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=not lora):
            return step_fn(input_ids=ids[i], labels=ids[i], use_cache=False).loss

    run_peer_steps(torch, loss_of, params, optimizer, args, BATCH * SEQ)


def run_peer_steps(torch, loss_of, params, optimizer, args, tokens_per_step):
    """The peers' steps (loss, backward, clipping at 1.0, AdamW), timed after --warmup; prints
    the RESULT line of JSON the measuring side reads."""
    times = []
    for i in range(args.warmup + args.steps):
        loss = loss_of(i)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter())
    seconds = times[-1] - times[args.warmup - 1]
    print("RESULT " + json.dumps({"tokens_per_second": args.steps * tokens_per_step / seconds,
                                  "alloc_peak_gib": torch.cuda.max_memory_allocated() / GIB,
                                  "last_loss": loss.item()}), flush=True)


# ---------------------------------------------------------------- measuring from outside

class MemoryPoll:
    """Peak device memory in use above the level before start(), by nvidia-smi every 100 ms."""

    def __init__(self, gpu):
        self.gpu = str(gpu)
        self.available = shutil.which("nvidia-smi") is not None
        self.peak_mib = None

    def _query(self):
        out = subprocess.run(["nvidia-smi", "-i", self.gpu, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, check=True).stdout
        return float(out.strip().splitlines()[0])

    def __enter__(self):
        if not self.available:
            return self
        self.baseline = self._query()
        self.proc = subprocess.Popen(["nvidia-smi", "-i", self.gpu, "--query-gpu=memory.used",
                                      "--format=csv,noheader,nounits", "-lms", "100"],
                                     stdout=subprocess.PIPE, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        return self

    def _read(self):
        for line in self.proc.stdout:
            try:
                used = float(line.strip())
            except ValueError:
                continue
            self.peak_mib = max(self.peak_mib or 0.0, used)

    def __exit__(self, *exc):
        if self.available:
            self.proc.terminate()
            self.proc.wait()
            self.thread.join()

    def peak_gib(self):
        if self.peak_mib is None:
            return None
        return max(0.0, self.peak_mib - self.baseline) * 1024 ** 2 / GIB


def run_logged(cmd, on_line=None, env=None):
    """Runs cmd with its stderr joined to stdout; returns (returncode, output lines)."""
    lines = []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if on_line:
            on_line(line)
    return proc.wait(), lines


def fail(what, lines):
    tail = "\n".join(lines[-30:])
    raise SystemExit(f"{what} failed; the end of its output:\n{tail}")


def run_peer(args, method, model_dir):
    if args.zerotune_only:
        return None
    cmd = [sys.executable, __file__, "--worker", method, "--model-dir", str(model_dir), "--steps", str(args.steps),
           "--warmup", str(args.warmup)]
    with MemoryPoll(args.gpu) as memory:
        code, lines = run_logged(cmd)
    if code != 0:
        fail(f"the {method} peer", lines)
    result = json.loads(next(l for l in lines if l.startswith("RESULT "))[len("RESULT "):])
    result["peak_gib"] = memory.peak_gib()
    return result


def log_entries(output_dir, stderr_lines):
    """The per-step log entries: train_log.jsonl, else trainer_state.json, else the printed dicts."""
    jsonl = Path(output_dir) / "train_log.jsonl"
    if jsonl.is_file():
        return [json.loads(l) for l in jsonl.read_text().splitlines() if l.strip()]
    state = Path(output_dir) / "trainer_state.json"
    if state.is_file():
        return json.loads(state.read_text()).get("log_history", [])
    entries = []
    for line in stderr_lines:
        start = line.find("{'loss'")
        if start >= 0:
            try:
                entries.append(ast.literal_eval(line[start:].replace("true", "True").replace("false", "False")))
            except (ValueError, SyntaxError):
                pass
    return entries


def zerotune_throughput(entries, arrivals, args, tokens_per_step):
    """tokens/s over the measured steps, from the trainer's own figure when it logs one."""
    steps = [e for e in entries if "loss" in e]  # not the eval_loss or train_loss entries
    rates = [e.get("tokens_per_second") or e.get("train_tokens_per_second") for e in steps[args.warmup:]]
    if len(rates) == args.steps and all(rates):
        return args.steps / sum(1.0 / r for r in rates), "trainer log"
    if len(arrivals) < args.warmup + args.steps:
        raise SystemExit(f"zerotune printed {len(arrivals)} step lines, expected {args.warmup + args.steps}")
    seconds = arrivals[args.warmup + args.steps - 1] - arrivals[args.warmup - 1]
    return args.steps * tokens_per_step / seconds, "log line arrival"


def run_zerotune(args, work, model_dir, method, extra=()):
    output_dir = work / f"out-{model_dir.name}-{method}"
    cmd = [args.zerotune, "train", "--model_name_or_path", str(model_dir), "--train_file", str(work / "data.json"),
           "--output_dir", str(output_dir), "--overwrite_output_dir", "--template", "none", "--train_on_prompt",
           "--max_length", str(SEQ), "--per_device_train_batch_size", str(BATCH), "--gradient_accumulation_steps", "1",
           "--bf16", "--max_steps", str(args.warmup + args.steps), "--logging_steps", "1", "--save_strategy", "no",
           "--report_to", "none", "--learning_rate", str(LR), "--device", "cuda"]
    cmd += ["--finetuning_type", "full"] if method == "full" else ["--finetuning_type", "lora", "--lora_rank", "8",
                                                                   "--lora_target", "all"]
    if model_dir.name in LORA_ONLY:
        cmd += ["--disable_gradient_checkpointing" if args.keep_activations else "--gradient_checkpointing"]
    # The warm-up steps after the first are profiled: the measured steps run unprofiled.
    profiled = args.warmup >= 2
    if profiled:
        cmd += ["--profile_steps", str(args.warmup - 1)]
    cmd += args.zerotune_args.split() + list(extra)
    arrivals = []

    def on_line(line):
        if "'loss':" in line:
            arrivals.append(time.perf_counter())

    with MemoryPoll(args.gpu) as memory:
        code, lines = run_logged(cmd, on_line)
    if code != 0:
        return None, lines
    state = json.loads((output_dir / "trainer_state.json").read_text())
    tokens_per_step = state.get("num_input_tokens_seen", 0) / max(1, state.get("global_step", 1))
    if tokens_per_step != BATCH * SEQ:
        print(f"note: zerotune trained {tokens_per_step:.0f} tokens per step, not {BATCH * SEQ}", flush=True)
    entries = log_entries(output_dir, lines)
    tokens_per_second, source = zerotune_throughput(entries, arrivals, args, tokens_per_step)
    alloc_peaks = [e["memory_peak_gib"] for e in entries if "memory_peak_gib" in e]
    profile = json.loads((output_dir / "step_profile.json").read_text()) if profiled else None
    shutil.rmtree(output_dir, ignore_errors=True)
    return {"tokens_per_second": tokens_per_second, "timed_by": source, "peak_gib": memory.peak_gib(),
            "alloc_peak_gib": max(alloc_peaks) if alloc_peaks else None, "last_loss": entries[-1].get("train_loss"),
            "profile": profile}, lines


def top_costs(result, count=3):
    """"gemm 52% · attention 18% · norm 6%": the largest families of zerotune's profiled steps."""
    profile = (result or {}).get("profile")
    if not profile:
        return "no profile"
    return " · ".join(f"{f['name']} {f['share']:.0%}" for f in profile["families"][:count])


def fmt(value, spec, width):
    return ("n/a" if value is None else format(value, spec)).rjust(width)


def print_table(rows):
    columns = f"{'tok/s':>9} {'MFU':>6} {'alloc GiB':>9} {'smi GiB':>8}"
    header = f"{'shape':<13} {'method':<8} {'zerotune':<9}{columns}   {'peer':<11}{columns} {'ratio':>6}"
    print("\n" + header + "\n" + "-" * len(header))

    def cells(m):
        m = m or {}
        return (f"{fmt(m.get('tokens_per_second'), ',.0f', 9)} {fmt(m.get('mfu'), '.1%', 6)}"
                f" {fmt(m.get('alloc_peak_gib'), '.1f', 9)} {fmt(m.get('peak_gib'), '.1f', 8)}")

    for r in rows:
        zt, peer = r["zerotune"], r["peer"]
        ratio = zt["tokens_per_second"] / peer["tokens_per_second"] if zt and peer else None
        print(f"{r['shape']:<13} {r['method']:<8} {'':<9}{cells(zt)}   {r['peer_name']:<11}{cells(peer)} "
              f"{fmt(ratio, '.2f', 6)}")
        print(f"{'':<13} {'':<8} top costs: {top_costs(zt)}")
    print(f"\ntok/s over the measured steps of B={BATCH} x S={SEQ}, ratio = zerotune / peer; MFU against "
          f"{PEAK_FLOPS / 1e12:.0f} TFLOP/s with 6*N*tokens + 12*layers*heads*head_dim*S*tokens FLOPs; alloc GiB = the "
          f"caching allocator's peak (zerotune's memory_peak_gib, torch.cuda.max_memory_allocated); smi GiB = device "
          f"memory above the level before the run (nvidia-smi: context and cache included)")


def with_mfu(result, shape):
    if result is not None:
        result["mfu"] = result["tokens_per_second"] * flops_per_token(config_of(shape)) / PEAK_FLOPS
    return result


def benchmark(args):
    shapes = args.shapes.split(",")
    for shape in shapes:
        if shape not in SHAPES:
            raise SystemExit(f"--shapes: unknown shape '{shape}'; choose from {', '.join(SHAPES)}")
    if not (Path(args.zerotune).is_file() and os.access(args.zerotune, os.X_OK)):
        raise SystemExit(f"--zerotune {args.zerotune}: no such executable; build it first (cmake --build ...)")
    if not (Path(args.tokenizer) / "tokenizer.json").is_file():
        raise SystemExit(f"--tokenizer {args.tokenizer}: no tokenizer.json there; pass a Qwen tokenizer folder")
    rows = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="zt-train-bench-") as tmp:
        work = Path(tmp)
        build = [sys.executable, __file__, "--worker", "build", "--workdir", str(work), "--shapes", args.shapes,
                 "--tokenizer", args.tokenizer, "--samples", str(BATCH * (args.warmup + args.steps))]
        code, lines = run_logged(build)
        if code != 0:
            fail("building the models", lines)
        lora_refused = None
        for shape in shapes:
            name, model_dir = SHAPES[shape]["name"], work / shape
            if shape in LORA_ONLY or args.skip_full:
                peer = with_mfu(run_peer(args, "peft", model_dir), shape)
                if not args.skip_lora:  # zerotune's bf16 LoRA row (the QLoRA rows keep the same peer)
                    zt_lora, lines = run_zerotune(args, work, model_dir, "lora")
                    if zt_lora is None:
                        fail(f"zerotune train (LoRA, {name})", lines)
                    rows.append({"shape": name, "method": "LoRA r8", "peer_name": "HF + PEFT",
                                 "zerotune": with_mfu(zt_lora, shape), "peer": peer})
                if args.qlora:
                    zt_qlora, lines = run_zerotune(args, work, model_dir, "lora", ["--quantization_bit", "4"])
                    if zt_qlora is None:
                        fail(f"zerotune train (QLoRA, {name})", lines)
                    rows.append({"shape": name, "method": "QLoRA r8", "peer_name": "HF + PEFT (bf16 LoRA)",
                                 "zerotune": with_mfu(zt_qlora, shape), "peer": peer})
                continue
            zt, lines = run_zerotune(args, work, model_dir, "full")
            if zt is None:
                fail(f"zerotune train (full, {name})", lines)
            peers = ([] if args.skip_hf_eager else ["hf"]) + ([] if args.skip_hf_compile else ["hf-compile"])
            for peer in peers:
                label = {"hf": "HF eager", "hf-compile": "HF compile"}[peer]
                rows.append({"shape": name, "method": "full", "peer_name": label,
                             "zerotune": with_mfu(dict(zt), shape), "peer": with_mfu(run_peer(args, peer, model_dir), shape)})
                peer_rate = (rows[-1]["peer"] or {}).get("tokens_per_second")
                print(f"{name} full: zerotune {zt['tokens_per_second']:,.0f} tok/s ({top_costs(zt)}), {label} "
                      f"{'n/a' if peer_rate is None else format(peer_rate, ',.0f')} tok/s", flush=True)
            if args.skip_lora or lora_refused:
                continue
            zt_lora, lines = run_zerotune(args, work, model_dir, "lora")
            if zt_lora is None:
                lora_refused = next((l for l in reversed(lines) if l.strip()), "no output")
                print(f"note: skipping the LoRA rows: zerotune train --finetuning_type lora failed: {lora_refused}",
                      flush=True)
                continue
            rows.append({"shape": name, "method": "LoRA r8", "peer_name": "HF + PEFT",
                         "zerotune": with_mfu(zt_lora, shape), "peer": with_mfu(run_peer(args, "peft", model_dir), shape)})
    print_table(rows)
    print(f"total {time.perf_counter() - start:.0f} s")
    if args.out:
        Path(args.out).write_text(json.dumps({"batch": BATCH, "seq": SEQ, "steps": args.steps, "warmup": args.warmup,
                                              "peak_flops": PEAK_FLOPS, "rows": rows}, indent=1) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--zerotune", help="the zerotune executable (a CUDA build)")
    parser.add_argument("--tokenizer", help="folder with a Qwen tokenizer.json and tokenizer_config.json")
    parser.add_argument("--shapes", default="0.5b,1.5b", help="comma-separated: " + ", ".join(SHAPES))
    parser.add_argument("--steps", type=int, default=8, help="measured optimizer steps per run")
    parser.add_argument("--warmup", type=int, default=3, help="steps run first and not measured")
    parser.add_argument("--skip-hf-compile", action="store_true", help="no torch.compile peer (saves minutes)")
    parser.add_argument("--skip-hf-eager", action="store_true",
                        help="no eager peer (the full fine-tune's goals name the compiled one)")
    parser.add_argument("--skip-lora", action="store_true",
                        help="no LoRA rows (7b/glm4-9b: no bf16 LoRA row, only the --qlora row beside the peer)")
    parser.add_argument("--skip-full", action="store_true",
                        help="no full fine-tune rows: each shape's LoRA row and its PEFT peer alone")
    parser.add_argument("--zerotune-only", action="store_true", help="no peers: zerotune's rows and profiles alone")
    parser.add_argument("--zerotune-args", default="",
                        help="extra zerotune train flags, e.g. '--attn_impl cudnn'; a single flag takes the = form: "
                             "--zerotune-args=--tf32")
    parser.add_argument("--keep-activations", action="store_true",
                        help="7b/glm4-9b: zerotune trains without gradient checkpointing (the peer keeps it)")
    parser.add_argument("--gpu", type=int, default=0, help="nvidia-smi index of the GPU the runs use")
    parser.add_argument("--qlora", action="store_true",
                        help="7b/glm4-9b: also zerotune's QLoRA (--quantization_bit 4, NF4) beside the same peer")
    parser.add_argument("--out", help="write every measurement here as JSON")
    parser.add_argument("--worker", choices=["build", "hf", "hf-compile", "peft"], help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    parser.add_argument("--samples", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.warmup < 1 or args.steps < 1:
        parser.error("--warmup and --steps must be at least 1")
    if args.skip_full and args.skip_lora:
        parser.error("--skip-full and --skip-lora together leave nothing to measure")
    if args.worker == "build":
        return worker_build(args)
    if args.worker:
        return worker_peer(args)
    if not args.zerotune or not args.tokenizer:
        parser.error("--zerotune and --tokenizer are required")
    benchmark(args)


if __name__ == "__main__":
    main()
