#!/usr/bin/env python3
"""Writes the demo that `scripts/demo.sh` fine-tunes: examples/data/alpaca_demo.json (a small
alpaca dataset with a learnable pattern) and examples/tiny-qwen/, a Qwen2-architecture model of
503 tokens (hidden 96, 3 layers) whose weights are the transformers-made fixture in
tests/data/models/qwen2, with a byte-level BPE tokenizer.json trained here on the demo data
(256 byte tokens, 244 merges, then <|endoftext|>, <|im_start|>, <|im_end|>). Standard library
only; deterministic."""
import json
import shutil
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples/tiny-qwen"
DATA = ROOT / "examples/data/alpaca_demo.json"
VOCAB = 503
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
QWEN_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
              r"\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_to_unicode():
    """GPT-2's map of the 256 bytes onto printable characters."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def samples():
    out = []
    for a in range(10):
        for b in range(10):
            if (a * 7 + b * 3) % 4 == 0:
                out.append({"instruction": "Spell out the digits.", "input": f"{a} {b}",
                            "output": f"{NUMBERS[a]} {NUMBERS[b]}"})
    return out


def train_merges(texts, count, chars):
    words = Counter()
    for text in texts:
        for i, word in enumerate(text.split(" ")):
            piece = (" " if i else "") + word
            words[tuple(chars[b] for b in piece.encode())] += 1
    merges = []
    for _ in range(count):
        pairs = Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = max(sorted(pairs), key=lambda p: pairs[p])
        merges.append(best)
        merged = Counter()
        for word, n in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    return merges


def main():
    data = samples()
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    chars = byte_to_unicode()
    texts = [f"user\n{s['instruction']}\n{s['input']}" for s in data] + [f"assistant\n{s['output']}" for s in data]
    texts += ["system\nYou are a helpful assistant."]
    merges = train_merges(texts, VOCAB - 256 - len(SPECIALS), chars)
    vocab = {chars[b]: b for b in range(256)}
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    assert len(vocab) + len(SPECIALS) <= VOCAB, len(vocab)
    first_special = VOCAB - len(SPECIALS)
    added = [{"id": first_special + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(SPECIALS)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN_REGEX}, "behavior": "Isolated", "invert": False}, byte_level]},
        "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [[l, r] for l, r in merges]},
    }
    MODEL.mkdir(parents=True, exist_ok=True)
    (MODEL / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False) + "\n")
    (MODEL / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "Qwen2Tokenizer", "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
        "add_bos_token": False, "add_prefix_space": False, "model_max_length": 256,
        # Qwen2.5-Instruct's own template, so the demo model gets the Qwen2.5 layout by default.
        "chat_template": (ROOT / "tests/data/chat_templates/qwen2_5.jinja").read_text()}, indent=1) + "\n")
    fixture = ROOT / "tests/data/models/qwen2"
    config = json.loads((fixture / "config.json").read_text())
    config.update({"bos_token_id": None, "eos_token_id": first_special + 2, "pad_token_id": first_special})
    (MODEL / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (MODEL / "generation_config.json").write_text(json.dumps(
        {"eos_token_id": [first_special + 2, first_special], "pad_token_id": first_special, "do_sample": False}, indent=2) + "\n")
    shutil.copyfile(fixture / "model.safetensors", MODEL / "model.safetensors")
    print(f"{len(data)} samples -> {DATA}; {len(merges)} merges -> {MODEL}")


if __name__ == "__main__":
    main()
