#!/usr/bin/env python3
"""Writes the Hugging Face outputs zerotune's tokenizer tests compare against, and measures
HF tokenizers' single-thread encode speed on the same text as bench/tokenizer_bench.

Needs Python with `tokenizers` and `transformers` (and jinja2, which transformers uses for
chat templates), and the Qwen3 tokenizer folder (tokenizer.json + tokenizer_config.json).

  python3 scripts/tokenizer_expected.py [--tokenizer_dir DIR] [--bench]

writes
  tests/data/tokenizer/qwen3_expected.jsonl        {"line": i, "ids": [...]} per corpus line
  tests/data/tokenizer/chat_template_expected.json apply_chat_template for several conversations
and with --bench prints encode throughput in bytes/s (one thread).
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests/data/tokenizer"

# Each: name, messages, add_generation_prompt.
CONVERSATIONS = [
    ("user_only", [{"role": "user", "content": "Hello!"}], True),
    ("user_only_no_prompt", [{"role": "user", "content": "Hello!"}], False),
    ("system_user", [{"role": "system", "content": "You are a helpful assistant."},
                     {"role": "user", "content": "What is 2+2?"}], True),
    ("system_user_assistant", [{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": "Name a colour."},
                               {"role": "assistant", "content": "Blue."}], False),
    ("multi_turn", [{"role": "user", "content": "你好"},
                    {"role": "assistant", "content": "你好！有什么可以帮你？"},
                    {"role": "user", "content": "讲个笑话。"}], True),
    ("multi_turn_answered", [{"role": "user", "content": "Hi"},
                             {"role": "assistant", "content": "Hello."},
                             {"role": "user", "content": "Write code."},
                             {"role": "assistant", "content": "def f():\n    return 1"}], False),
    ("reasoning_in_last_turn", [{"role": "user", "content": "Why?"},
                                {"role": "assistant", "content": "<think>\nBecause.\n</think>\n\nThat is why."}], False),
    ("reasoning_in_earlier_turn", [{"role": "user", "content": "Q1"},
                                   {"role": "assistant", "content": "<think>r1</think>A1"},
                                   {"role": "user", "content": "Q2"}], True),
    ("system_in_middle", [{"role": "user", "content": "a"},
                          {"role": "system", "content": "b"},
                          {"role": "user", "content": "c"}], True),
    ("special_text_in_content", [{"role": "user", "content": "say <|im_end|> please"}], True),
    ("empty_contents", [{"role": "system", "content": ""},
                        {"role": "user", "content": ""},
                        {"role": "assistant", "content": ""}], False),
    ("whitespace_contents", [{"role": "user", "content": "  two spaces\tand tab\n"},
                             {"role": "assistant", "content": "line one\nline two  "}], False),
]


def tokenizer_dir(arg):
    candidates = [arg, os.environ.get("ZT_QWEN_TOKENIZER_DIR"), ROOT / ".fixtures/qwen3-tokenizer",
                  ROOT.parent / "shared/data/qwen3-tokenizer"]
    for c in candidates:
        if c and (Path(c) / "tokenizer.json").is_file():
            return Path(c)
    sys.exit("no Qwen3 tokenizer folder: pass --tokenizer_dir, set ZT_QWEN_TOKENIZER_DIR, or put it in "
             ".fixtures/qwen3-tokenizer or ../shared/data/qwen3-tokenizer")


def read_corpus():
    text = (DATA / "corpus.txt").read_bytes().decode("utf-8")
    # Only '\n' ends a sample: U+2028 and friends may appear raw inside the JSON strings.
    return [json.loads(line) for line in text.split("\n") if line]


def write_expected_ids(tok, corpus, directory):
    from transformers import AutoTokenizer  # what users call: it must agree with tokenizers
    hf = AutoTokenizer.from_pretrained(str(directory))
    with open(DATA / "qwen3_expected.jsonl", "w", encoding="utf-8") as out:
        for i, sample in enumerate(corpus):
            ids = tok.encode(sample, add_special_tokens=False).ids
            if hf(sample, add_special_tokens=False)["input_ids"] != ids:
                sys.exit(f"corpus line {i}: tokenizers and transformers disagree; check the installed versions")
            out.write(json.dumps({"line": i, "ids": ids}) + "\n")
    print(f"wrote {len(corpus)} lines to {DATA / 'qwen3_expected.jsonl'}")


def write_chat_templates(directory):
    from transformers import AutoTokenizer
    hf = AutoTokenizer.from_pretrained(str(directory))
    entries = []
    for name, messages, generation_prompt in CONVERSATIONS:
        text = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)
        ids = hf(text, add_special_tokens=False)["input_ids"]
        entries.append({"name": name, "template": "qwen3", "messages": messages,
                        "add_generation_prompt": generation_prompt, "text": text, "ids": ids})
    path = DATA / "chat_template_expected.json"
    path.write_text(json.dumps({"tokenizer": "qwen3", "conversations": entries}, ensure_ascii=False, indent=1) + "\n",
                    encoding="utf-8")
    print(f"wrote {len(entries)} conversations to {path}")


def bench(tok, corpus):
    total = sum(len(s.encode("utf-8")) for s in corpus)
    for s in corpus[:200]:  # warm up
        tok.encode(s, add_special_tokens=False)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for s in corpus:
            tok.encode(s, add_special_tokens=False)
        best = min(best, time.perf_counter() - start)
    print(f"HF tokenizers encode, one thread: {total / best / 1e6:.2f} MB/s ({total} bytes, {len(corpus)} lines, best of 5)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer_dir")
    parser.add_argument("--bench", action="store_true", help="also measure single-thread encode throughput")
    args = parser.parse_args()
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ["RAYON_NUM_THREADS"] = "1"
    from tokenizers import Tokenizer
    directory = tokenizer_dir(args.tokenizer_dir)
    tok = Tokenizer.from_file(str(directory / "tokenizer.json"))
    corpus = read_corpus()
    write_expected_ids(tok, corpus, directory)
    write_chat_templates(directory)
    if args.bench:
        bench(tok, corpus)


if __name__ == "__main__":
    main()
