#!/usr/bin/env python3
"""Serving load test: `nuvec serve` against llama.cpp's `llama-server` on the same GGUF file, side by side in one run.

Each server is started on a free loopback port with the same batch width (16 parallel sequences, 2 threads), then
after one warm-up request loaded by 1, 4, 16 and 64 concurrent clients (threads, loopback only), each sending
streamed /v1/completions
requests one after another: a prompt of about P tokens (random words of the file's own vocabulary, different for
every request) and max_tokens N, greedy. Per run it prints requests per second, output tokens per second over all
clients (the usage each stream ends with), and time to first chunk and time between chunks at p50 and p99 (a
server holds back the bytes of an unfinished UTF-8 character, so a chunk can carry more than one token: random-weight
models emit many); then nuvec's output tokens per second over llama-server's (above 1: nuvec is faster) and the p99
time to first token of each.

usage: python3 bench/run_serve.py --llama-server PATH --model FILE.gguf [--nuvec build/release/apps/nuvec]
                                  [--clients 1,4,16,64] [--requests 4] [-p 64] [-n 128] [--parallel 16] [-t 2]
                                  [--llama-env KEY=VALUE]

llama-server is not part of nuvec and this script neither fetches nor builds it. Build llama.cpp from source outside
the repository (the tool library's `fetch` brings github:ggerganov/llama.cpp, build b4747), for this CPU:
    cmake -S llama.cpp -B llama.cpp-build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF
    cmake --build llama.cpp-build -j2 --target llama-server
and pass llama.cpp-build/bin/llama-server as --llama-server. The model files come from nuvec_lm_models (see
bench/README.md), e.g. build/release/bench/nuvec_lm_models write --shape small --type Q4_0 --out /tmp/lm/small-Q4_0.gguf.
"""

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port, process, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode} before it was ready")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError("the server did not become ready")


def words(args):
    """Plain lowercase words of the model's own vocabulary (via nuvec's detokenizer of single ids)."""
    vocab = [f"w{i}" for i in range(200)]
    try:
        out = subprocess.run([args.nuvec, "detokenize", "--tokenizer", args.model, "--jsonl"],
                             input="\n".join(json.dumps([i]) for i in range(300, 3300)), capture_output=True,
                             text=True, check=True).stdout
        found = [w.strip() for w in (json.loads(line) for line in out.splitlines()) if w.strip().isalpha()]
        if len(found) >= 200:
            vocab = found
    except (OSError, subprocess.CalledProcessError):
        pass
    return vocab


def stream_request(port, prompt, n):
    """One streamed completion: (time to first token, gaps between tokens, tokens received, total seconds)."""
    body = json.dumps({"model": "m", "prompt": prompt, "max_tokens": n, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True}})
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    if response.status != 200:
        raise RuntimeError(f"status {response.status}: {response.read()[:200]!r}")
    first = None
    last = None
    gaps = []
    chunks = 0
    usage = None
    for raw in response:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            usage = chunk["usage"].get("completion_tokens")
        if not chunk.get("choices"):
            continue
        now = time.perf_counter()
        if first is None:
            first = now - start
        else:
            gaps.append(now - last)
        last = now
        chunks += 1
    conn.close()
    return first or 0.0, gaps, usage if usage is not None else chunks, time.perf_counter() - start


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def load(port, clients, args, vocab):
    results = []
    errors = []
    lock = threading.Lock()

    def client(index):
        rng = random.Random(index)
        for _ in range(args.requests):
            prompt = " ".join(rng.choice(vocab) for _ in range(args.p))
            try:
                r = stream_request(port, prompt, args.n)
            except (OSError, RuntimeError, ValueError) as e:
                with lock:
                    errors.append(str(e))
                continue
            with lock:
                results.append(r)

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    ttft = [r[0] for r in results]
    gaps = [g for r in results for g in r[1]]
    tokens = sum(r[2] for r in results)
    return {"requests_per_s": len(results) / wall, "tokens_per_s": tokens / wall, "ttft_p50": percentile(ttft, 0.5),
            "ttft_p99": percentile(ttft, 0.99), "tbt_p50": percentile(gaps, 0.5), "tbt_p99": percentile(gaps, 0.99),
            "errors": len(errors), "first_error": errors[0] if errors else ""}


def start_server(name, args, port):
    context = args.parallel * (args.p * 2 + args.n + 64)
    if name == "nuvec":
        command = [args.nuvec, "serve", "--model", f"m={args.model}", "--port", str(port), "--parallel",
                   str(args.parallel), "--max-queue", "1024", "--log-file", os.devnull]
        env = dict(os.environ, NUVEC_NUM_THREADS=str(args.t))  # nuvec's thread pool size
    else:
        command = [args.llama_server, "-m", args.model, "--port", str(port), "-np", str(args.parallel), "-t",
                   str(args.t), "-c", str(context), "--log-disable"]
        env = dict(os.environ, **dict(kv.split("=", 1) for kv in args.llama_env))
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wait_healthy(port, process)
    return process


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog="See the header of this file for how to get llama-server and the model.")
    parser.add_argument("--llama-server", required=True, help="llama.cpp's llama-server, built outside the repository")
    parser.add_argument("--model", required=True, help="a GGUF file (nuvec_lm_models write ...)")
    parser.add_argument("--nuvec", default=os.path.join(ROOT, "build", "release", "apps", "nuvec"))
    parser.add_argument("--clients", default="1,4,16,64", help="concurrent client counts, comma-separated")
    parser.add_argument("--requests", type=int, default=4, help="requests each client sends one after another")
    parser.add_argument("-p", type=int, default=64, help="prompt words a request")
    parser.add_argument("-n", type=int, default=128, help="max_tokens a request")
    parser.add_argument("--parallel", type=int, default=16, help="sequences each server decodes together")
    parser.add_argument("-t", type=int, default=2, help="threads")
    parser.add_argument("--llama-env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment for llama-server (OMP_WAIT_POLICY=PASSIVE on a busy machine)")
    args = parser.parse_args()
    vocab = words(args)
    counts = [int(c) for c in args.clients.split(",")]
    table = {}
    for name in ("nuvec", "llama"):
        port = free_port()
        process = start_server(name, args, port)
        try:
            # One request first: the first one pays for mapping in the weights and warming the kernels.
            stream_request(port, " ".join(vocab[:args.p]), args.n)
            for clients in counts:
                table[(name, clients)] = r = load(port, clients, args, vocab)
                print(f"{name:6} {clients:3} clients: {r['requests_per_s']:6.2f} req/s {r['tokens_per_s']:8.1f} tok/s  "
                      f"TTFT p50 {r['ttft_p50'] * 1e3:7.1f} ms p99 {r['ttft_p99'] * 1e3:7.1f} ms  "
                      f"TBT p50 {r['tbt_p50'] * 1e3:6.1f} ms p99 {r['tbt_p99'] * 1e3:6.1f} ms"
                      + (f"  {r['errors']} errors ({r['first_error']})" if r["errors"] else ""), flush=True)
        finally:
            process.terminate()
            process.wait(timeout=60)
    print()
    print("clients  nuvec/llama tok/s  TTFT p99 nuvec  TTFT p99 llama")
    for clients in counts:
        ours, theirs = table[("nuvec", clients)], table[("llama", clients)]
        ratio = ours["tokens_per_s"] / theirs["tokens_per_s"] if theirs["tokens_per_s"] else float("nan")
        print(f"{clients:7}  {ratio:17.2f}  {ours['ttft_p99'] * 1e3:11.1f} ms  {theirs['ttft_p99'] * 1e3:11.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
