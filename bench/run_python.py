#!/usr/bin/env python3
"""The Python bindings' overhead, in one run:

- per call: `a + b` on two 4-element float32 arrays, evaluated (nuvec: mx.eval(a + b)), against NumPy's and
  PyTorch's `a + b` (eager, so already computed), and the ratios; then the same op only built (nuvec's lazy node),
  with a Python scalar, and converted to NumPy (np.asarray of the result); a reduction as a function and as a
  method (evaluated), and two views (a.reshape, a.T: built only, as NumPy's are views too); a unary function, a
  cumulative method and a concatenation built only; two properties; np.asarray of an evaluated array; clip built
  only and a split into two views;
- a large element-wise op: x + y over 2^24 float32 from Python, against the same row of the C++ benchmark
  (nuvec_bench --rows add), and the ratio.

    /usr/bin/python3 bench/run_python.py [--bench build/release/bench/nuvec_bench] [--package build/release/python]
        [--cpu-time]

Per-call times are the best of 7 repeats of 20,000 calls; the large op is the median of 15 reps after 2 warm-up
reps, the methodology of nuvec_bench.
"""

import argparse
import importlib
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
mx = None  # nuvec.core, imported by main from --package

CALLS = 20_000
REPEATS = 7


CLOCK = time.perf_counter  # --cpu-time: time.thread_time, steadier than wall time on a shared machine


def per_call_us(stmt, setup_globals):
    timer = timeit.Timer(stmt, timer=CLOCK, globals=setup_globals)
    return min(timer.repeat(REPEATS, CALLS)) / CALLS * 1e6


# (label, nuvec, NumPy, PyTorch): a, b are nuvec arrays, x, y NumPy's, s, u PyTorch's, of the same 4 float32.
SMALL_OPS = [
    ("a + b, evaluated", "mx.eval(a + b)", "x + y", "s + u"),
    ("a + b, built only", "a + b", "x + y", "s + u"),
    ("a * 2.0, evaluated", "mx.eval(a * 2.0)", "x * 2.0", "s * 2.0"),
    ("np.asarray(a + b)", "np.asarray(a + b)", "np.asarray(x + y)", "np.asarray(s + u)"),
    ("sum(a), evaluated", "mx.eval(mx.sum(a))", "np.sum(x)", "torch.sum(s)"),
    ("a.sum(), evaluated", "mx.eval(a.sum())", "x.sum()", "s.sum()"),
    ("a.reshape(2, 2)", "a.reshape(2, 2)", "x.reshape(2, 2)", "s.reshape(2, 2)"),
    ("a.T", "a.T", "x.T", "s.t()"),
    ("mx.exp(a), built", "mx.exp(a)", "np.exp(x)", "torch.exp(s)"),
    ("a.cumsum(0), built", "a.cumsum(0)", "x.cumsum(0)", "s.cumsum(0)"),
    ("concatenate, built", "mx.concatenate([a, b])", "np.concatenate([x, y])", "torch.cat([s, u])"),
    ("a.shape", "a.shape", "x.shape", "s.shape"),
    ("a.dtype", "a.dtype", "x.dtype", "s.dtype"),
    ("np.asarray(a)", "np.asarray(a)", "np.asarray(x)", "np.asarray(s)"),
    ("clip, built", "mx.clip(a, 1.0, 2.0)", "np.clip(x, 1.0, 2.0)", "torch.clamp(s, 1.0, 2.0)"),
    ("a.split(2)", "a.split(2)", "np.split(x, 2)", "s.split(2)"),
]


def small_ops():
    x = np.arange(4, dtype=np.float32)
    names = {"mx": mx, "np": np, "a": mx.array(x), "b": mx.array(x + 1), "x": x, "y": x + 1}
    try:
        import torch

        torch.set_num_threads(1)
        names.update(torch=torch, s=torch.from_numpy(x), u=torch.from_numpy(x + 1))
    except ImportError:
        torch = None
    rows = []
    for label, nuvec_stmt, numpy_stmt, torch_stmt in SMALL_OPS:
        row = {"label": label, "nuvec": per_call_us(nuvec_stmt, names), "numpy": per_call_us(numpy_stmt, names)}
        if torch is not None:
            row["torch"] = per_call_us(torch_stmt, names)
        rows.append(row)
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
    parser.add_argument("--package", default=REPO / "build" / "release" / "python", type=Path,
                        help="the folder holding the nuvec package (another build's, to compare)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time the small ops in the calling thread's CPU time instead of wall time")
    args = parser.parse_args()
    sys.path.insert(0, str(args.package))
    global mx, CLOCK
    if args.cpu_time:
        CLOCK = time.thread_time
    mx = importlib.import_module("nuvec.core")

    rows = small_ops()
    print("small ops on 4 float32, per call (us)")
    print(f"  {'':20s} {'nuvec':>8s} {'numpy':>8s} {'torch':>8s} {'/numpy':>7s} {'/torch':>7s}")
    for row in rows:
        torch_us = row.get("torch")
        torch_time = f"{torch_us:8.3f}" if torch_us else f"{'-':>8s}"
        torch_ratio = f"{row['nuvec'] / torch_us:6.2f}x" if torch_us else f"{'-':>7s}"
        print(f"  {row['label']:20s} {row['nuvec']:8.3f} {row['numpy']:8.3f} {torch_time} "
              f"{row['nuvec'] / row['numpy']:6.2f}x {torch_ratio}")

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
