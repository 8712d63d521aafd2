#!/usr/bin/env python3
"""`zerotune serve` under load: tokens/s and time to first token at 1, 8, 32 and 64 concurrent
clients, beside the engine's own figures (tools/generate_bench) on the same model, same GPU,
same run.

    python3 bench/serve_throughput.py --zerotune build-gpu/bin/zerotune --bench build-gpu/bin/generate_bench \\
        --tokenizer DIR [--shape 1.5b] [--clients 1,8,32,64] [--out results.json]

A model with Qwen2.5-1.5B's config (random weights, bf16) is built by transformers and saved
with the Qwen tokenizer of --tokenizer. The server runs it with --max_batch set to the largest
client count. Each client sends streamed POST /v1/completions requests one after another
(a 128-token prompt of its own, 128 new tokens, greedy, `ignore_eos` so every answer has them
all) with Python's http.client over loopback: a warm-up round, then --rounds measured ones.
Time to first token is from sending a request to its first text chunk; a stream's rate is its
tokens after the first over the time after the first; the server's rate is all tokens over the
wall time of the measured rounds. generate_bench runs the same batch, prompt and answer lengths
in one process: its prefill time and steady decode rate, and the end-to-end rate they give
(batch x 128 tokens over prefill + 127 decode steps), which is what the server's rate is set
against to state its overhead.
"""
import argparse
import http.client
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from check_hf_shapes import build, config_for  # noqa: E402

PROMPT, NEW = 128, 128
SHAPE_NAMES = {"0.5b": "Qwen2.5-0.5B", "1.5b": "Qwen2.5-1.5B"}


def save_model(shape, tokenizer_dir, work):
    folder = work / "model"
    model = build(config_for(SHAPE_NAMES[shape], 0, work), seed=1).eval()
    model.save_pretrained(folder)
    del model
    for f in Path(tokenizer_dir).iterdir():
        if f.is_file() and f.name.startswith("tokenizer"):
            shutil.copy(f, folder / f.name)
    return folder


def prompts(tokenizer_dir, count):
    """`count` different prompts of PROMPT tokens each, from plain words of the vocabulary."""
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    words = [w for w in (tokenizer.decode([i]) for i in range(1000, 20000)) if w.strip().isalpha() and w[0] == " "]
    texts = []
    for c in range(count):
        ids = tokenizer(" ".join(words[(c * 37 + k * 11) % len(words)].strip() for k in range(PROMPT))).input_ids
        texts.append(tokenizer.decode(ids[:PROMPT]))
    return texts


class Server:
    def __init__(self, zerotune, folder, max_batch, log):
        self.log = open(log, "w")
        self.process = subprocess.Popen(
            [zerotune, "serve", "--model_name_or_path", str(folder), "--port", "0", "--max_batch", str(max_batch)],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.process.stdout.readline()
        if "listening on http://" not in line:
            self.process.kill()
            raise SystemExit(f"zerotune serve did not start (see {log}): {line!r}")
        self.port = int(line.rsplit(":", 1)[1])

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)
        self.log.close()

    def answers(self):
        """Whether GET /health answers 200."""
        try:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            connection.request("GET", "/health")
            ok = connection.getresponse().status == 200
            connection.close()
            return ok
        except OSError:
            return False

    def state(self, grace=60):
        """What became of the server after a failed request: whether it still answers, else its
        exit status and the last lines of its log. A dying process closes its socket before it
        can be reaped (a core dump, the GPU context torn down), so poll() alone says "runs"
        for a while after the port refuses connections: one that does not answer is waited
        for, up to `grace` seconds."""
        if self.process.poll() is None and self.answers():
            return "the server still runs and answers /health"
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        self.log.flush()
        tail = " / ".join(Path(self.log.name).read_text(errors="replace").splitlines()[-8:])
        if self.process.returncode is None:
            return f"the server process has not exited but does not answer /health; its log ends: {tail}"
        return f"the server exited with status {self.process.returncode}; its log ends: {tail}"


def streamed_completion(port, prompt):
    """One request: (seconds to the first text chunk, seconds to the end, completion tokens)."""
    body = json.dumps({"prompt": prompt, "max_tokens": NEW, "temperature": 0, "ignore_eos": True, "stream": True,
                       "stream_options": {"include_usage": True}})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    start = time.perf_counter()
    connection.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"status {response.status}: {response.read()[:500]!r}")
    first, tokens = None, 0
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if "error" in chunk:  # a failure after the stream began (its status is already 200)
            raise RuntimeError(f"error event: {chunk['error']}")
        if chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
        if first is None and chunk.get("choices") and chunk["choices"][0].get("text"):
            first = time.perf_counter() - start
    end = time.perf_counter() - start
    connection.close()
    return first, end, tokens


def load(port, texts, clients, rounds):
    """`clients` threads each sending `rounds` requests in turn; every request's figures."""
    results, errors = [], []

    def client(index):
        for r in range(rounds):
            try:
                results.append(streamed_completion(port, texts[(index + r * clients) % len(texts)]))
            except Exception as error:  # noqa: BLE001 - reported below
                errors.append(repr(error))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} request(s) failed, first: {errors[0]}")
    return results, wall


def engine(bench, folder, batch):
    out = subprocess.run([bench, str(folder), "--batch", str(batch), "--prompt_tokens", str(PROMPT),
                          "--new_tokens", str(NEW)], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr[-2000:]}
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    seconds = figures["prefill_s"] + batch * (NEW - 1) / figures["decode_tokens_per_s"]
    figures["end_to_end_tokens_per_s"] = batch * NEW / seconds
    return figures


def measure(args, folder, texts, log):
    rows = []
    server = Server(args.zerotune, folder, max(args.clients), log)
    try:
        for clients in args.clients:
            try:
                load(server.port, texts, clients, 1)  # warm-up: graphs captured for this batch size
                results, wall = load(server.port, texts, clients, args.rounds)
            except RuntimeError as error:  # the rows measured so far are kept
                rows.append({"clients": clients, "error": f"{error}; {server.state()}"})
                break
            tokens = sum(r[2] for r in results)
            rows.append({"clients": clients, "requests": len(results), "tokens": tokens,
                         "server_tokens_per_s": tokens / wall,
                         "ttft_ms_mean": 1000 * statistics.mean(r[0] for r in results),
                         "ttft_ms_max": 1000 * max(r[0] for r in results),
                         "stream_tokens_per_s_median": statistics.median((r[2] - 1) / (r[1] - r[0]) for r in results)})
    finally:
        server.stop()
    for row in rows:
        if "error" not in row:
            row["engine"] = engine(args.bench, folder, row["clients"])
    return rows


def print_table(shape, rows):
    print(f"| shape | clients | server tok/s | stream tok/s (median) | TTFT mean / max ms | engine end-to-end tok/s "
          "| engine decode tok/s | engine prefill ms | server / engine |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "error" in r:
            print(f"| {shape} | {r['clients']} | error: {r['error'][-600:]} | | | | | | |")
            continue
        e = r["engine"]
        if "error" in e:
            print(f"| {shape} | {r['clients']} | {r['server_tokens_per_s']:.0f} | | | engine error: {e['error'][-200:]} |")
            continue
        print(f"| {shape} | {r['clients']} | {r['server_tokens_per_s']:.0f} | {r['stream_tokens_per_s_median']:.0f} | "
              f"{r['ttft_ms_mean']:.1f} / {r['ttft_ms_max']:.1f} | {e['end_to_end_tokens_per_s']:.0f} | "
              f"{e['decode_tokens_per_s']:.0f} | {1000 * e['prefill_s']:.1f} | "
              f"{r['server_tokens_per_s'] / e['end_to_end_tokens_per_s']:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zerotune", required=True)
    parser.add_argument("--bench", required=True, help="tools/generate_bench of the same build")
    parser.add_argument("--tokenizer", required=True, help="folder with a Qwen tokenizer.json and tokenizer_config.json")
    parser.add_argument("--shape", default="1.5b", choices=sorted(SHAPE_NAMES))
    parser.add_argument("--clients", default="1,8,32,64", type=lambda s: [int(c) for c in s.split(",")])
    parser.add_argument("--rounds", type=int, default=3, help="measured requests per client")
    parser.add_argument("--log", default="serve.log", help="where the server's log goes")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = save_model(args.shape, args.tokenizer, Path(tmp))
        import torch
        torch.cuda.empty_cache()
        texts = prompts(args.tokenizer, max(args.clients) * (args.rounds + 1))
        rows = measure(args, folder, texts, args.log)
    print_table(SHAPE_NAMES[args.shape], rows)
    if args.out:
        args.out.write_text(json.dumps({"shape": SHAPE_NAMES[args.shape], "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
