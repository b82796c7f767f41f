#!/usr/bin/env python3
"""compile's benchmark: eager nuvec, compiled nuvec, NumPy and the bandwidth floor side by side, in one run.

    python3 bench/run_compile.py [--bench build/release/bench/compile_bench] [--markdown] [--runs N] [--wait-idle S]

compile_bench times nuvec (eager and compiled: medians of 11 after 2 warm-ups, taken turn about with each other and the
row's floor kernel, which moves the bytes the row must move, each large input read once and each output written once,
and nothing else); this script times NumPy on the same workloads (float32, 2^24 elements; layer norm over rows of
4096x4096) in a child /usr/bin/python3 that sees Debian's NumPy. See compile_bench.cpp's header for the floor's method.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BENCH = REPO / "build" / "release" / "bench" / "compile_bench"

NUMPY_CODE = r"""
import time, statistics, numpy as np
rng = np.random.default_rng(0)
n = 1 << 24
x = rng.uniform(-2, 2, n).astype(np.float32)
x2 = x.reshape(4096, 4096)
w = rng.uniform(-1, 1, 4096).astype(np.float32)
b = rng.uniform(-1, 1, 4096).astype(np.float32)
p, g, m = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(3))
v = rng.uniform(0, 1, n).astype(np.float32)
def affine():
    return x * np.float32(1.0009765625) + np.float32(0.5)
def gelu():
    return 0.5 * x * (1 + np.tanh(np.float32(0.7978845608) * (x + np.float32(0.044715) * x * x * x)))
def silu():
    return x / (1 + np.exp(-x))
def layer_norm():
    mu = x2.mean(-1, keepdims=True)
    xc = x2 - mu
    var = (xc * xc).mean(-1, keepdims=True)
    return xc / np.sqrt(var + np.float32(1e-5)) * w + b
def adam():
    m1 = np.float32(0.9) * m + np.float32(0.1) * g
    v1 = np.float32(0.999) * v + np.float32(0.001) * g * g
    return p - np.float32(1e-3) * m1 / (np.sqrt(v1) + np.float32(1e-8)), m1, v1
def power3():
    return x ** np.float32(3)
mz = vz = np.broadcast_to(np.float32(0), n)
def adam_zeros():
    m1 = np.float32(0.9) * mz + np.float32(0.1) * g
    v1 = np.float32(0.999) * vz + np.float32(0.001) * g * g
    return p - np.float32(1e-3) * m1 / (np.sqrt(v1) + np.float32(1e-8)), m1, v1
column = rng.uniform(-1, 1, (4096, 1)).astype(np.float32)
def broadcast_column():
    return x2 * column + np.float32(0.5)
def transposed():
    return x2.T * np.float32(1.0009765625) + np.float32(0.5)
wide = rng.uniform(-2, 2, (4096, 4096 + 64)).astype(np.float32)
def sliced():
    return wide[:, 32:4096 + 32] * np.float32(1.0009765625) + np.float32(0.5)
for name, f in [("affine", affine), ("gelu_tanh", gelu), ("silu", silu), ("layer_norm", layer_norm),
                ("layer_norm_fast", layer_norm), ("adam", adam), ("gelu_mlx", gelu), ("power3", power3),
                ("adam_zeros", adam_zeros), ("broadcast_column", broadcast_column), ("transposed", transposed),
                ("sliced", sliced)]:
    f(); f()
    times = []
    for _ in range(9):
        t0 = time.perf_counter(); f(); times.append((time.perf_counter() - t0) * 1e3)
    print(name, statistics.median(times))
"""

DESCRIPTIONS = {
    "affine": "x * c + d, 2^24 f32 (the floor's check)",
    "gelu_tanh": "GELU, tanh form, 2^24 f32",
    "silu": "x * sigmoid(x), 2^24 f32",
    "layer_norm": "layer norm from plain ops, 4096x4096 f32",
    "layer_norm_fast": "fast::layer_norm primitive, 4096x4096 f32",
    "adam": "Adam update (p, m, v), 2^24 f32",
    "gelu_mlx": "GELU as MLX writes it (0-d array constants, power(x, 3)), 2^24 f32",
    "power3": "power(x, array(3.0f)), 2^24 f32",
    "adam_zeros": "Adam update, zero moments as broadcast views, 2^24 f32",
    "broadcast_column": "x * column + 0.5, column (4096, 1) broadcast, 4096x4096 f32",
    "transposed": "x.T * c + d, 4096x4096 f32",
    "sliced": "x[:, 32:4128] * c + d from 4096x4160, f32",
}


def parse_bench(text):
    rows, info = {}, {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        fields = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if parts[0] == "row":
            rows[parts[1]] = {k: float(v) for k, v in fields.items()}
        else:
            info[parts[0]] = {k: float(v) for k, v in fields.items()}
    return rows, info


def cpu_times():
    """(busy, idle) jiffies of all CPUs since boot, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, idle


def wait_idle(limit_s):
    """Waits until the CPUs were at least 90% idle over 2 s, at most limit_s seconds: a line saying how long and
    whether they were. Compute-bound rows run at half speed while another process shares a core, the floor less so."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        busy0, idle0 = cpu_times()
        time.sleep(2)
        busy1, idle1 = cpu_times()
        if (idle1 - idle0) >= 0.9 * ((busy1 - busy0) + (idle1 - idle0)):
            return f"CPUs idle after {time.monotonic() - start:.0f} s of waiting"
    return f"CPUs still busy after {limit_s:.0f} s of waiting"


def cpu_model():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def print_table(header, table, markdown):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in table:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(header)]
        print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        for row in table:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default=str(DEFAULT_BENCH))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--wait-idle", type=float, default=0, metavar="S",
                        help="before each run, wait up to S seconds for the CPUs to be 90%% idle over 2 s")
    parser.add_argument("--runs", type=int, default=1,
                        help="run the benchmark this many times; each run's table, then each ratio's range")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    numpy = subprocess.run(["/usr/bin/python3", "-c", NUMPY_CODE], capture_output=True, text=True, check=True)
    numpy_ms = {line.split()[0]: float(line.split()[1]) for line in numpy.stdout.splitlines() if line.strip()}
    header = ["workload", "eager ms", "compiled ms", "numpy ms", "floor ms (min-max)", "floor GB/s", "compiled / floor",
              "eager / compiled"]
    ratios = {}
    floor_gbs = {}
    for run in range(args.runs):
        waited = "; " + wait_idle(args.wait_idle) if args.wait_idle > 0 else ""
        load_before = os.getloadavg()[0]
        bench = subprocess.run([args.bench], capture_output=True, text=True, check=True)
        load_after = os.getloadavg()[0]
        rows, info = parse_bench(bench.stdout)
        table = []
        for name, r in rows.items():
            floor = r["floor_ms"]
            ratios.setdefault(name, []).append(r["compiled_ms"] / floor)
            floor_gbs.setdefault(name, []).append(r["bytes"] / (floor * 1e6))
            table.append([DESCRIPTIONS.get(name, name), f"{r['eager_ms']:.2f}", f"{r['compiled_ms']:.2f}",
                          f"{numpy_ms.get(name, float('nan')):.2f}",
                          f"{floor:.2f} ({r['floor_min_ms']:.2f}-{r['floor_max_ms']:.2f})",
                          f"{r['bytes'] / (floor * 1e6):.1f}", f"{r['compiled_ms'] / floor:.2f}x",
                          f"{r['eager_ms'] / r['compiled_ms']:.2f}x"])
        if args.runs > 1:
            print(f"run {run + 1} of {args.runs}")
        print_table(header, table, args.markdown)
        print(f"floor GB/s: bytes read + written per second; {cpu_model()}, {os.cpu_count()} cores; load average "
              f"{load_before:.2f} before, {load_after:.2f} after{waited}")
        fc = info["first_call"]
        print(f"first call: {fc['compile_ms']:.0f} ms with the compiler (empty kernel cache); a new compiled function "
              f"of the same graph: {fc['retrace_ms']:.2f} ms (traced again, kernel already built)")
        oh = info["overhead"]
        print(f"per call, 4-element GELU: eager {oh['eager_us']:.1f} us, cached compiled {oh['compiled_us']:.1f} us")
        print()
    if args.runs > 1:
        print("compiled / floor over the runs (min, median, max), and the floor's GB/s (min-max):")
        for name, values in ratios.items():
            v = sorted(values)
            g = sorted(floor_gbs[name])
            print(f"  {DESCRIPTIONS.get(name, name)}: {v[0]:.2f}x, {v[len(v) // 2]:.2f}x, {v[-1]:.2f}x; "
                  f"floor {g[0]:.1f}-{g[-1]:.1f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
