#!/usr/bin/env python3
"""zerotune's tokenizer against HF `tokenizers`: encode throughput on one core, same text, same machine.

    python3 scripts/tokenizer_speed.py run FOLDER       # needs `tokenizers`; prints the table

Every text is a file of one JSON string per line; each line is encoded on its own, without
special tokens, by bench/tokenizer_bench (BM_Qwen3Encode) and by HF tokenizers'
`Tokenizer.encode` (and `encode_batch`, which has no per-call Python cost), both pinned to
the same core with Rayon at one thread. The token totals must agree. MB/s is 1e6 bytes of
UTF-8 per second of wall time, best of a few passes.

A machine without PCRE2, utf8proc or sentencepiece (so without tokenizers in its own build)
gets FOLDER from a machine that has them:

    python3 scripts/tokenizer_speed.py pack FOLDER --bench BUILD/bench/tokenizer_bench \\
        [--tokenizer_dir DIR] [--english FILE...] [--chinese FILE...]

which copies the bench program and the shared libraries it needs beyond the C and C++
runtimes, the Qwen3 tokenizer (tokenizer.json, tokenizer_config.json) and the texts:
corpus.jsonl (tests/data/tokenizer/corpus.txt six times) and, given --english/--chinese,
en_zh.jsonl (their paragraphs, about 2 MB of English and 1 MB of Chinese, shuffled).
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Present on every glibc system, and newer there than here: never copied.
SYSTEM_LIBRARIES = ("linux-vdso", "libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "ld-linux", "libpthread.so",
                    "libdl.so", "librt.so")
PASSES = 3


def shared_libraries(binary):
    """The libraries `ldd` resolves for `binary`, less the C and C++ runtimes."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        match = re.match(r"\s*(\S+) => (\S+)", line)
        if match and match.group(2) == "not":
            sys.exit(f"{binary} needs {match.group(1)}, which this machine lacks too")
        if match and not match.group(1).startswith(SYSTEM_LIBRARIES):
            found.append(Path(match.group(2)))
    return found


def paragraphs(files, budget):
    """Blank-line separated paragraphs of `files`, repeated in order until `budget` bytes."""
    pieces = [p for f in files for p in Path(f).read_text(encoding="utf-8").split("\n\n") if p.strip()]
    out, size = [], 0
    while pieces and size < budget:
        for p in pieces:
            out.append(p)
            size += len(p.encode())
            if size >= budget:
                break
    return out


def write_lines(path, samples):
    path.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples), encoding="utf-8")
    print(f"{path}: {len(samples)} lines, {sum(len(s.encode()) for s in samples) / 1e6:.2f} MB")


def pack(args):
    out = Path(args.folder)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(args.bench, out / "tokenizer_bench")
    for library in shared_libraries(args.bench):
        shutil.copy2(library, out / library.name)
        print(f"copied {library}")
    tokenizer = out / "tokenizer"
    tokenizer.mkdir(exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(Path(args.tokenizer_dir) / name, tokenizer / name)
    corpus = [json.loads(line) for line in (ROOT / "tests/data/tokenizer/corpus.txt").read_text("utf-8").split("\n")
              if line]
    write_lines(out / "corpus.jsonl", corpus * 6)
    if args.english or args.chinese:
        mixed = paragraphs(args.english, 2_000_000) + paragraphs(args.chinese, 1_000_000)
        random.Random(0).shuffle(mixed)
        write_lines(out / "en_zh.jsonl", mixed)
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{out}: {total / 1e6:.1f} MB")


def read_lines(path):
    # Only '\n' ends a line, as std::getline in the bench: U+2028 and friends stay inside.
    return [json.loads(line) for line in path.read_bytes().decode("utf-8").split("\n") if line]


def zerotune_speed(folder, text, total_bytes):
    env = dict(os.environ, LD_LIBRARY_PATH=str(folder), ZT_QWEN_TOKENIZER_DIR=str(folder / "tokenizer"),
               ZT_TOKENIZER_BENCH_TEXT=str(text))
    result = subprocess.run([str(folder / "tokenizer_bench"), "--benchmark_filter=BM_Qwen3Encode$",
                             "--benchmark_format=json", f"--benchmark_repetitions={PASSES}", "--benchmark_min_time=1"],
                            capture_output=True, text=True, env=env, cwd=ROOT)
    if result.returncode != 0:
        sys.exit(f"tokenizer_bench failed ({result.returncode}): {result.stderr.strip()}")
    runs = [b for b in json.loads(result.stdout)["benchmarks"] if b.get("run_type") == "iteration"]
    if not runs or "error_message" in runs[0]:
        sys.exit(f"tokenizer_bench ran nothing: {runs[0].get('error_message') if runs else result.stdout}")
    seconds = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    best = min(b["real_time"] * seconds[b["time_unit"]] for b in runs)
    return total_bytes / best / 1e6, int(runs[0]["tokens"])


def best_seconds(work):
    work()  # warm-up
    best = float("inf")
    for _ in range(PASSES):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def run(args):
    folder = Path(args.folder).resolve()
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[-1]})  # the bench inherits it
    os.environ.update(TOKENIZERS_PARALLELISM="false", RAYON_NUM_THREADS="1")
    from tokenizers import Tokenizer, __version__
    tok = Tokenizer.from_file(str(folder / "tokenizer/tokenizer.json"))
    print(f"HF tokenizers {__version__}, one core (cpu {cores[-1]}), best of {PASSES} passes, "
          "each line encoded alone\n")
    print("| text | MB | lines | tokens zerotune / HF | zerotune MB/s | HF encode MB/s | HF encode_batch MB/s | "
          "zerotune / best HF |\n|" + " --- |" * 8)
    failed = False
    for text in sorted(folder.glob("*.jsonl")):
        lines = read_lines(text)
        total = sum(len(s.encode()) for s in lines)
        ours, our_tokens = zerotune_speed(folder, text, total)
        hf_tokens = sum(len(e.ids) for e in tok.encode_batch(lines, add_special_tokens=False))
        one = total / best_seconds(lambda: [tok.encode(s, add_special_tokens=False) for s in lines]) / 1e6
        batch = total / best_seconds(lambda: tok.encode_batch(lines, add_special_tokens=False)) / 1e6
        failed |= our_tokens != hf_tokens
        print(f"| {text.name} | {total / 1e6:.2f} | {len(lines)} | {our_tokens} / {hf_tokens}"
              f"{'' if our_tokens == hf_tokens else ' MISMATCH'} | {ours:.2f} | {one:.2f} | {batch:.2f} | "
              f"{ours / max(one, batch):.2f}x |", flush=True)
    sys.exit(1 if failed else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("pack", help="gather the bench, its libraries, the tokenizer and the texts")
    p.add_argument("folder")
    p.add_argument("--bench", type=Path, required=True, help="a build's bench/tokenizer_bench")
    p.add_argument("--tokenizer_dir", type=Path, default=ROOT.parent / "shared/data/qwen3-tokenizer")
    p.add_argument("--english", nargs="*", default=[], help="English text files (paragraphs split at blank lines)")
    p.add_argument("--chinese", nargs="*", default=[], help="Chinese text files")
    r = commands.add_parser("run", help="measure both on this machine")
    r.add_argument("folder")
    args = parser.parse_args()
    pack(args) if args.command == "pack" else run(args)


if __name__ == "__main__":
    main()
