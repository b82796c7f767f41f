#!/usr/bin/env python3
"""Language-model speed of nuvec against llama.cpp on the same GGUF files, side by side in one run.

For each file: the memory bandwidth (nuvec_lm_models bandwidth, arrays of 512 MiB on the same threads), then
`nuvec bench --model F -p P -n N -t T -r R` and `llama-bench -m F -p P -n N -t T -r R -o json`, turn about
(--rounds times each; a round's figure is the tool's mean over its R repetitions, and the table gives the median
over rounds). Prints one row per model and test:

    model  type  test  nuvec_tok/s  llama_tok/s  ratio   [decode rows:] MiB/token  GB/s  max_tok/s  nuvec_frac  llama_frac

ratio is nuvec over llama.cpp (above 1: nuvec is faster). Decode rows carry the memory roofline: the bytes a token
reads, over the copy bandwidth measured beside it (STREAM's count: bytes read plus bytes written), give the most
tokens per second; *_frac is the fraction of that each program reaches. A token only reads, and on some machines
reading alone is slower than copying (a virtual machine in session 22: 34 GB/s summing, 42 GB/s copying), so the
rows also give the read bandwidth measured beside them and the fractions of that roofline (*_rfrac). The bytes a
token reads are the file's tensor bytes as the file stores them (what llama.cpp streams; nuvec repacks some types
wider) less the token embedding, of which decoding reads one row (unless the embedding is also the output matrix,
tied, when all of it is read), plus the KV cache at 2 bytes per element (llama.cpp's F16 cache) averaged over the N
decoded positions.
Then a memory table: the largest resident set of each program over its runs, and nuvec's own peak of allocated
memory (`nuvec generate --json`'s peak_memory_bytes after a P-token prompt and N generated tokens), against the
file's size plus the KV cache of P + N positions.

usage: python3 bench/run_lm.py --llama-bench PATH [--nuvec build/release/apps/nuvec]
                               [--models-tool build/release/bench/nuvec_lm_models] [-p 512] [-n 128] [-t 2] [-r 3]
                               [--rounds 1] [--llama-env KEY=VALUE] [--no-memory]
                               [--matmul-precision highest|high|medium] FILE.gguf...

The model files come from nuvec_lm_models (built with the bench targets), e.g.
    build/release/bench/nuvec_lm_models write --shape small --type Q4_0 --out /tmp/lm/small-Q4_0.gguf
(shapes small and 1b, types F16, Q8_0, Q4_0, Q4_K_M; the 1B files take 0.8-2.5 GB each).
llama-bench is not part of nuvec and this script neither fetches nor builds it. Build llama.cpp from source outside
the repository (the tool library's `fetch` brings github:ggerganov/llama.cpp, build b4747), for this CPU:
    cmake -S llama.cpp -B llama.cpp-build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF
    cmake --build llama.cpp-build -j2 --target llama-bench
and pass llama.cpp-build/bin/llama-bench as --llama-bench.

On a machine that other jobs keep busy, llama.cpp built with OpenMP (GGML_OPENMP, the default) spins at its
barriers while the other thread waits for a core, and loses up to 10x; `--llama-env OMP_WAIT_POLICY=PASSIVE` makes
its threads sleep instead (on a quiet machine leave it out: spinning is what llama.cpp is measured with).

nuvec runs at its language-model commands' float32 matmul precision, "high" (quantized weights meet activations
carried with 16 bits, where llama.cpp carries 8); --matmul-precision medium carries 8 bits per 32 values as
llama.cpp does (GGUF block formats), highest measures float32 throughout.
"""

import argparse
import json
import mmap
import os
import re
import selectors
import statistics
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ggml_type: (elements per block, bytes per block).
GGML_BLOCKS = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 9: (32, 36),
    10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 15: (256, 292),
    24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8), 30: (1, 2),
}
GGML_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 10: "Q2_K", 11: "Q3_K",
              12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 30: "BF16"}
# GGUF metadata value types: struct format of the fixed-size ones.
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class GGUF:
    """The metadata scalars and the tensor infos (name, shape innermost first, type, bytes) of a GGUF file."""

    def __init__(self, path):
        with open(path, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.pos = 0
        self.data = data
        magic, version, n_tensors, n_kv = struct.unpack_from("<IIQQ", data, 0)
        if magic != 0x46554747 or version not in (2, 3):
            raise ValueError(f"{path}: not a GGUF file of version 2 or 3")
        self.pos = 24
        self.meta = {}
        for _ in range(n_kv):
            key = self._string()
            self.meta[key] = self._value(self._u32())
        self.tensors = []
        for _ in range(n_tensors):
            name = self._string()
            dims = [self._u64() for _ in range(self._u32())]
            ggml_type = self._u32()
            self._u64()  # offset
            count = 1
            for d in dims:
                count *= d
            elems, size = GGML_BLOCKS[ggml_type]
            self.tensors.append((name, dims, ggml_type, count // elems * size))
        data.close()
        self.data = None

    def _u32(self):
        (v,) = struct.unpack_from("<I", self.data, self.pos)
        self.pos += 4
        return v

    def _u64(self):
        (v,) = struct.unpack_from("<Q", self.data, self.pos)
        self.pos += 8
        return v

    def _string(self):
        n = self._u64()
        s = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return s.decode("utf-8", errors="replace")

    def _value(self, kind):
        if kind in SCALARS:
            fmt = SCALARS[kind]
            (v,) = struct.unpack_from(fmt, self.data, self.pos)
            self.pos += struct.calcsize(fmt)
            return v
        if kind == 8:
            return self._string()
        if kind == 9:
            inner, n = self._u32(), self._u64()
            if inner in SCALARS:  # skipped: only the length matters here
                self.pos += n * struct.calcsize(SCALARS[inner])
            else:
                for _ in range(n):
                    self._value(inner)
            return n
        raise ValueError(f"unknown GGUF value type {kind}")

    def describe(self):
        """(architecture, weight type: the most common of the matrices', or the file_type's)."""
        arch = self.meta.get("general.architecture", "?")
        counts = {}
        for _, dims, t, size in self.tensors:
            if len(dims) == 2:
                counts[t] = counts.get(t, 0) + size
        main = max(counts, key=counts.get) if counts else 0
        return arch, GGML_NAMES.get(main, str(main))

    def kv_bytes_per_position(self, element_bytes=2):
        a = self.meta["general.architecture"]
        layers = self.meta[f"{a}.block_count"]
        heads = self.meta[f"{a}.attention.head_count"]
        kv_heads = self.meta.get(f"{a}.attention.head_count_kv", heads)
        head_dim = self.meta.get(f"{a}.attention.key_length", self.meta[f"{a}.embedding_length"] // heads)
        return 2 * layers * kv_heads * head_dim * element_bytes

    def decode_weight_bytes(self):
        """Bytes of weights one decoded token reads: all tensors, less the embedding table unless it is tied."""
        names = {name for name, _, _, _ in self.tensors}
        total = sum(size for _, _, _, size in self.tensors)
        embd = [size // dims[1] * (dims[1] - 1) for name, dims, _, size in self.tensors if name == "token_embd.weight"]
        if "output.weight" in names and embd:
            total -= embd[0]  # one row of it is read
        return total


def run_rss(command, env=None):
    """Runs a command, returning (stdout, max RSS in bytes) measured with wait4 on the child."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=None if env is None else {**os.environ, **env})
    out = bytearray()
    err = bytearray()
    # Read both pipes to the end without deadlock, then reap the child with wait4 for its rusage.
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    while sel.get_map():
        for key, _ in sel.select():
            chunk = os.read(key.fileobj.fileno(), 65536)
            if not chunk:
                sel.unregister(key.fileobj)
            else:
                key.data.extend(chunk)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({proc.returncode}):\n{err.decode(errors='replace')[-2000:]}")
    return out.decode(errors="replace"), usage.ru_maxrss * 1024


def nuvec_bench(args, path):
    out, rss = run_rss([args.nuvec, "bench", "--model", path, "-p", str(args.p), "-n", str(args.n),
                        "-t", str(args.t), "-r", str(args.r), "--matmul-precision", args.matmul_precision])
    rates = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 7 and re.fullmatch(r"(pp|tg)\d+", cells[5]):
            rates[cells[5]] = float(cells[6].split()[0])
    return rates, rss


def llama_bench(args, path):
    out, rss = run_rss([args.llama_bench, "-m", path, "-p", str(args.p), "-n", str(args.n), "-t", str(args.t),
                        "-r", str(args.r), "-o", "json"], env=dict(kv.split("=", 1) for kv in args.llama_env))
    rates = {}
    for test in json.loads(out):
        name = f"pp{test['n_prompt']}" if test["n_gen"] == 0 else f"tg{test['n_gen']}"
        rates[name] = float(test["avg_ts"])
    return rates, rss


def bandwidth(args):
    out = subprocess.run([args.models_tool, "bandwidth", "-t", str(args.t), "-r", "5"], check=True,
                         capture_output=True, text=True).stdout
    return float(re.search(r"copy_gbs=([\d.]+)", out).group(1)), float(re.search(r"read_gbs=([\d.]+)", out).group(1))


def peak_memory(args, path, vocab):
    ids = ",".join(str((7919 * i) % (vocab - 300)) for i in range(args.p))
    out, rss = run_rss([args.nuvec, "generate", "--model", path, "--prompt-ids", ids, "--max-tokens", str(args.n),
                        "--json"])
    return json.loads(out)["timings"]["peak_memory_bytes"], rss


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog="See the header of this file for how to get llama-bench and the models.")
    parser.add_argument("files", nargs="+", help="GGUF files (nuvec_lm_models write ...)")
    parser.add_argument("--llama-bench", required=True, help="llama.cpp's llama-bench, built outside the repository")
    parser.add_argument("--nuvec", default=os.path.join(ROOT, "build", "release", "apps", "nuvec"))
    parser.add_argument("--models-tool", default=os.path.join(ROOT, "build", "release", "bench", "nuvec_lm_models"))
    parser.add_argument("-p", type=int, default=512)
    parser.add_argument("-n", type=int, default=128)
    parser.add_argument("-t", type=int, default=2)
    parser.add_argument("-r", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--llama-env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment for llama-bench, e.g. OMP_WAIT_POLICY=PASSIVE on a loaded machine")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs of nuvec generate")
    parser.add_argument("--matmul-precision", default="high", choices=["highest", "high", "medium"],
                        help="nuvec's float32 matmul precision (its language-model commands' default: high)")
    args = parser.parse_args()

    rows = []
    memory = []
    header = (f"{'model':<22} {'type':<7} {'test':<6} {'nuvec_tok/s':>11} {'llama_tok/s':>11} {'ratio':>6}   "
              f"{'MiB/token':>9} {'GB/s':>6} {'max_tok/s':>9} {'nuvec_frac':>10} {'llama_frac':>10}   "
              f"{'read_GB/s':>9} {'nuvec_rfrac':>11} {'llama_rfrac':>11}")
    print(header, flush=True)
    for path in args.files:
        gguf = GGUF(path)
        arch, wtype = gguf.describe()
        name = os.path.basename(path)
        results = {"nuvec": {}, "llama": {}}
        rss = {"nuvec": 0, "llama": 0}
        gbs = [bandwidth(args)]
        for _ in range(args.rounds):
            for tool, fn in (("nuvec", nuvec_bench), ("llama", llama_bench)):
                rates, peak = fn(args, path)
                rss[tool] = max(rss[tool], peak)
                for test, rate in rates.items():
                    results[tool].setdefault(test, []).append(rate)
        gbs.append(bandwidth(args))
        bw = statistics.mean(copy for copy, _ in gbs)
        read_bw = statistics.mean(read for _, read in gbs)
        for test in sorted(results["nuvec"], key=lambda t: (t[:2] != "pp", t)):
            nv = statistics.median(results["nuvec"][test])
            ll = statistics.median(results["llama"].get(test, [float("nan")]))
            line = f"{name:<22} {wtype:<7} {test:<6} {nv:>11.2f} {ll:>11.2f} {nv / ll:>6.2f}"
            if test.startswith("tg"):
                n = int(test[2:])
                per_token = gguf.decode_weight_bytes() + gguf.kv_bytes_per_position() * (n + 1) / 2
                ceiling = bw * 1e9 / per_token
                read_ceiling = read_bw * 1e9 / per_token
                line += (f"   {per_token / 2**20:>9.1f} {bw:>6.1f} {ceiling:>9.1f} {nv / ceiling:>10.2f} "
                         f"{ll / ceiling:>10.2f}   {read_bw:>9.1f} {nv / read_ceiling:>11.2f} "
                         f"{ll / read_ceiling:>11.2f}")
            print(line, flush=True)
            rows.append(line)
        if not args.no_memory:
            vocab = next(dims[1] for tname, dims, _, _ in gguf.tensors if tname == "token_embd.weight")
            peak, gen_rss = peak_memory(args, path, vocab)
            kv = gguf.kv_bytes_per_position(4) * (args.p + args.n)
            memory.append((name, os.path.getsize(path), kv, peak, gen_rss, rss["nuvec"], rss["llama"]))
            print(f"[memory] {name}: peak allocated {peak / 2**20:.1f} MiB, generate RSS {gen_rss / 2**20:.1f} MiB",
                  file=sys.stderr, flush=True)
    if memory:
        print()
        print(f"{'model':<22} {'file_MiB':>9} {'kv_f32_MiB':>10} {'nuvec_peak_alloc_MiB':>20} "
              f"{'nuvec_generate_rss_MiB':>22} {'nuvec_bench_rss_MiB':>19} {'llama_bench_rss_MiB':>19}")
        for name, size, kv, peak, gen_rss, nv_rss, ll_rss in memory:
            print(f"{name:<22} {size / 2**20:>9.1f} {kv / 2**20:>10.1f} {peak / 2**20:>20.1f} "
                  f"{gen_rss / 2**20:>22.1f} {nv_rss / 2**20:>19.1f} {ll_rss / 2**20:>19.1f}")


if __name__ == "__main__":
    main()
