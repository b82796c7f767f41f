#!/usr/bin/env python3
"""The Python bindings' overhead, in one run:

- per call: `a + b` on two 4-element float32 arrays, evaluated (nuvec: mx.eval(a + b)), against NumPy's and
  PyTorch's `a + b` (eager, so already computed), and the ratios;
- a large element-wise op: x + y over 2^24 float32 from Python, against the same row of the C++ benchmark
  (nuvec_bench --rows add), and the ratio.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/run_python.py [--bench build/release/bench/nuvec_bench]

Per-call times are the best of 7 repeats of 20,000 calls; the large op is the median of 15 reps after 2 warm-up
reps, the methodology of nuvec_bench.
"""

import argparse
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "build" / "release" / "python"))

import nuvec.core as mx  # noqa: E402

CALLS = 20_000
REPEATS = 7


def per_call_us(stmt, setup_globals):
    timer = timeit.Timer(stmt, globals=setup_globals)
    return min(timer.repeat(REPEATS, CALLS)) / CALLS * 1e6


def small_op():
    x = np.arange(4, dtype=np.float32)
    a, b = mx.array(x), mx.array(x + 1)
    rows = {"nuvec": per_call_us("mx.eval(a + b)", {"mx": mx, "a": a, "b": b}),
            "numpy": per_call_us("x + y", {"x": x, "y": x + 1})}
    try:
        import torch

        torch.set_num_threads(1)
        t = torch.from_numpy(x)
        rows["torch"] = per_call_us("s + u", {"s": t, "u": t + 1})
    except ImportError:
        pass
    return rows


def large_op_ms():
    n = 1 << 24
    x = mx.random.uniform(shape=(n,))
    y = mx.random.uniform(shape=(n,))
    mx.eval(x, y)
    times = []
    for rep in range(17):
        start = time.perf_counter()
        mx.eval(x + y)
        if rep >= 2:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def cpp_add_ms(bench):
    out = subprocess.run([str(bench), "--rows", "add", "--no-bandwidth"], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        if line.startswith("row add "):
            fields = dict(f.split("=", 1) for f in line.split()[2:])
            return float(fields["median_ms"])
    raise RuntimeError(f"nuvec_bench printed no add row:\n{out.stdout}\n{out.stderr}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default=REPO / "build" / "release" / "bench" / "nuvec_bench", type=Path)
    args = parser.parse_args()

    rows = small_op()
    print("small op: a + b, 4 float32, evaluated (per call)")
    for name, us in rows.items():
        print(f"  {name:6s} {us:8.3f} us")
    print(f"  nuvec / numpy {rows['nuvec'] / rows['numpy']:.2f}x")
    if "torch" in rows:
        print(f"  nuvec / torch {rows['nuvec'] / rows['torch']:.2f}x")

    python_ms = large_op_ms()
    print("large op: x + y, 2^24 float32 (median)")
    print(f"  python {python_ms:8.3f} ms")
    if args.bench.exists():
        cpp_ms = cpp_add_ms(args.bench)
        print(f"  c++    {cpp_ms:8.3f} ms")
        print(f"  python / c++ {python_ms / cpp_ms:.2f}x")
    else:
        print(f"  c++: {args.bench} not built (cmake --build build/release --target nuvec_bench)")


if __name__ == "__main__":
    main()
