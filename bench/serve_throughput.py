#!/usr/bin/env python3
"""`zerotune serve` under load: tokens/s and time to first token at 1, 8, 32 and 64 concurrent
clients, beside the engine's own figures (tools/generate_bench) on the same model, same GPU,
same run.

    python3 bench/serve_throughput.py --zerotune build-gpu/bin/zerotune --bench build-gpu/bin/generate_bench \\
        --tokenizer DIR [--shape 1.5b] [--clients 1,8,32,64] [--out results.json]

A model with Qwen2.5-1.5B's config (random weights, bf16) is built by transformers and saved
with the Qwen tokenizer of --tokenizer. The server runs it with --max_batch set to the largest
client count. Each client, a process of its own, sends streamed POST /v1/completions requests
one after another (a 128-token prompt of its own, 128 new tokens, greedy, `ignore_eos` so every
answer has them all) with Python's http.client over loopback: a warm-up round, then --rounds
measured ones. Time to first token (p50 and p99 over the requests) is from sending a request
to its first text chunk; a stream's rate is its tokens after the first over the time after the
first; the server's rate is all tokens over the wall time of the measured rounds. The server's
own figures come from its log (serve/throughput_log.h): its generation rate while it worked,
and its steps' mean time, apart for the steps that also prefilled prompts. generate_bench runs the same batch, prompt and answer lengths
in one process: its prefill time and steady decode rate, and the end-to-end rate they give
(batch x 128 tokens over prefill + 127 decode steps), which is what the server's rate is set
against to state its overhead.
"""
import argparse
import http.client
import json
import multiprocessing
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"

PROMPT, NEW = 128, 128
SHAPE_NAMES = {"0.5b": "Qwen2.5-0.5B", "1.5b": "Qwen2.5-1.5B"}


def save_model(shape, tokenizer_dir, work):
    # Imported here, not at the top: the client processes import this file and need no torch.
    sys.path.insert(0, str(SCRIPTS))
    from check_hf_shapes import build, config_for
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


def client(port, texts, ready, out):
    """One client's requests in turn, once every client is ready: each one's figures, or the
    first failure as text, put on `out`."""
    ready.wait()
    try:
        out.put([streamed_completion(port, text) for text in texts])
    except Exception as error:  # noqa: BLE001 - reported by load()
        out.put(repr(error))


def load(port, texts, clients, rounds):
    """`clients` processes each sending `rounds` requests in turn; every request's figures.
    Processes, not threads: at 64 streams one Python process parsing every chunk under its GIL
    would set the pace instead of the server. The clock starts when all of them have started."""
    context = multiprocessing.get_context("spawn")
    ready, out = context.Barrier(clients + 1), context.Queue()
    processes = [context.Process(target=client, args=(port, [texts[(index + r * clients) % len(texts)]
                                                             for r in range(rounds)], ready, out))
                 for index in range(clients)]
    for p in processes:
        p.start()
    ready.wait()
    start = time.perf_counter()
    answers = [out.get() for _ in processes]
    wall = time.perf_counter() - start
    for p in processes:
        p.join()
    errors = [a for a in answers if isinstance(a, str)]
    if errors:
        raise RuntimeError(f"{len(errors)} client(s) failed, first: {errors[0]}")
    return [r for a in answers for r in a], wall


LOG_LINE = re.compile(r"serve: ([\d.]+) s: prompt ([\d.]+) tokens/s, generation ([\d.]+) tokens/s; .*; (\d+) steps "
                      r"of ([\d.]+) ms mean, (\d+) of them with prompts(?: \(([\d.]+) ms mean\))?")


def server_figures(lines):
    """The server's own figures over its log lines (serve/throughput_log.h): generation tokens/s
    while it worked, its steps and their mean times."""
    busy = tokens = steps = prefill_steps = step_ms = prefill_ms = 0.0
    for line in lines:
        m = LOG_LINE.search(line)
        if not m:
            continue
        seconds, generation, n, mean, n_prefill = float(m[1]), float(m[3]), int(m[4]), float(m[5]), int(m[6])
        busy += seconds
        tokens += generation * seconds
        steps += n
        step_ms += n * mean
        prefill_steps += n_prefill
        prefill_ms += n_prefill * float(m[7] or 0)
    if not steps:
        return {}
    return {"busy_tokens_per_s": tokens / busy, "steps": int(steps), "step_ms_mean": step_ms / steps,
            "prefill_steps": int(prefill_steps),
            "prefill_step_ms_mean": prefill_ms / prefill_steps if prefill_steps else None}


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


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
                time.sleep(0.5)  # the server's line for the warm-up is written once it goes idle
                seen = len(Path(log).read_text(errors="replace").splitlines())
                results, wall = load(server.port, texts, clients, args.rounds)
                time.sleep(0.5)
                lines = Path(log).read_text(errors="replace").splitlines()[seen:]
            except RuntimeError as error:  # the rows measured so far are kept
                rows.append({"clients": clients, "error": f"{error}; {server.state()}"})
                break
            tokens = sum(r[2] for r in results)
            ttft = [1000 * r[0] for r in results]
            rows.append({"clients": clients, "requests": len(results), "tokens": tokens,
                         "server_tokens_per_s": tokens / wall,
                         "ttft_ms_mean": statistics.mean(ttft), "ttft_ms_p50": percentile(ttft, 0.5),
                         "ttft_ms_p99": percentile(ttft, 0.99), "ttft_ms_max": max(ttft),
                         "stream_tokens_per_s_median": statistics.median((r[2] - 1) / (r[1] - r[0]) for r in results),
                         "server_log": server_figures(lines)})
    finally:
        server.stop()
    for row in rows:
        if "error" not in row:
            row["engine"] = engine(args.bench, folder, row["clients"])
    return rows


def print_table(shape, rows):
    print(f"| shape | clients | server tok/s | stream tok/s (median) | TTFT p50 / p99 ms | server's own tok/s while busy "
          "| its steps: mean ms (with prompts: count, mean ms) | engine end-to-end tok/s | engine decode tok/s "
          "| engine prefill ms | server / engine |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "error" in r:
            print(f"| {shape} | {r['clients']} | error: {r['error'][-600:]} | | | | | | | | |")
            continue
        e, own = r["engine"], r["server_log"]
        steps = (f"{own['step_ms_mean']:.2f} ({own['prefill_steps']}, {own['prefill_step_ms_mean'] or 0:.2f})"
                 if own else "")
        busy = f"{own['busy_tokens_per_s']:.0f}" if own else ""
        head = (f"| {shape} | {r['clients']} | {r['server_tokens_per_s']:.0f} | {r['stream_tokens_per_s_median']:.0f} | "
                f"{r['ttft_ms_p50']:.1f} / {r['ttft_ms_p99']:.1f} | {busy} | {steps} |")
        if "error" in e:
            print(f"{head} engine error: {e['error'][-200:]} | | | |")
            continue
        print(f"{head} {e['end_to_end_tokens_per_s']:.0f} | {e['decode_tokens_per_s']:.0f} | "
              f"{1000 * e['prefill_s']:.1f} | {r['server_tokens_per_s'] / e['end_to_end_tokens_per_s']:.2f} |")


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
