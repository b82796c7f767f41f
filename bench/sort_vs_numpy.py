#!/usr/bin/env python3
"""Sorting benchmark: nuvec's sort and topk against NumPy's np.sort and np.partition, in one run.

    python3 bench/sort_vs_numpy.py [--bench build/release/bench/nuvec_sort_bench] [--rows sort_vec,topk_rows]

nuvec_sort_bench times the nuvec side (see its header); this script times NumPy the same way (float32 uniform in
[-2, 2), two warm-up reps, the median of 7 reps, 3 when a rep takes over 500 ms) in /usr/bin/python3 (Debian's
numpy), and prints one table with the ratio NumPy time / nuvec time (above 1: nuvec is faster).
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BENCH = REPO / "build" / "release" / "bench" / "nuvec_sort_bench"
NUMPY_PYTHON = "/usr/bin/python3"
TOP_K = 100

ROWS = {
    # name: (nuvec op, NumPy op)
    "sort_vec": ("sort(x), 2^24 f32", "np.sort(x)"),
    "sort_rows": ("sort(x, -1), 4096x4096 f32", "np.sort(x, axis=-1)"),
    "argsort_rows": ("argsort(x, -1), 4096x4096 f32", "np.argsort(x, axis=-1, kind='stable')"),
    "topk_vec": (f"topk(x, {TOP_K}), 2^24 f32", f"np.partition(x, n - {TOP_K})[n - {TOP_K}:]"),
    "topk_rows": (f"topk(x, {TOP_K}, -1), 4096x4096 f32", f"np.partition(x, n - {TOP_K}, axis=-1)[:, n - {TOP_K}:]"),
}


def numpy_times(rows):
    """Milliseconds (median) per row, timed in this process (which must see NumPy)."""
    import numpy as np

    rng = np.random.default_rng(1)
    vec = rng.uniform(-2.0, 2.0, size=1 << 24).astype(np.float32)
    square = rng.uniform(-2.0, 2.0, size=(4096, 4096)).astype(np.float32)
    n_vec, n_row = vec.size, square.shape[1]
    ops = {
        "sort_vec": lambda: np.sort(vec),
        "sort_rows": lambda: np.sort(square, axis=-1),
        "argsort_rows": lambda: np.argsort(square, axis=-1, kind="stable"),
        "topk_vec": lambda: np.partition(vec, n_vec - TOP_K)[n_vec - TOP_K:],
        "topk_rows": lambda: np.partition(square, n_row - TOP_K, axis=-1)[:, n_row - TOP_K:],
    }
    out = {}
    for name in rows:
        warm = 0.0
        for _ in range(2):
            t0 = time.perf_counter()
            ops[name]()
            warm = (time.perf_counter() - t0) * 1e3
        reps = 3 if warm > 500.0 else 7
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            ops[name]()
            times.append((time.perf_counter() - t0) * 1e3)
        times.sort()
        out[name] = times[len(times) // 2]
        print(f"numpy {name} {out[name]:.3f} ms", file=sys.stderr)
    return out


def nuvec_times(bench, rows):
    result = subprocess.run([str(bench), "--rows", ",".join(rows)], capture_output=True, text=True, check=True)
    out = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "row":
            fields = dict(p.split("=", 1) for p in parts[2:])
            out[parts[1]] = (float(fields["median_ms"]), fields["check"])
            print(f"nuvec {parts[1]} {fields['median_ms']} ms check={fields['check']}", file=sys.stderr)
        elif parts and parts[0] == "error":
            out[parts[1]] = (float("nan"), "error: " + " ".join(parts[2:]))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default=str(DEFAULT_BENCH))
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--numpy-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    rows = [r for r in args.rows.split(",") if r]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        parser.error(f"unknown rows: {', '.join(unknown)} (known: {', '.join(ROWS)})")
    if args.numpy_only:
        for name, ms in numpy_times(rows).items():
            print(f"{name} {ms}")
        return
    nuvec = nuvec_times(args.bench, rows)
    # NumPy in Debian's interpreter (the one the test oracle uses), whatever python runs this script.
    child = subprocess.run([NUMPY_PYTHON, __file__, "--numpy-only", "--rows", ",".join(rows)], capture_output=True,
                           text=True, check=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    numpy = {line.split()[0]: float(line.split()[1]) for line in child.stdout.splitlines()}
    print(f"threads: nuvec {os.environ.get('NUVEC_NUM_THREADS', os.cpu_count())}, NumPy 1 (np.sort is single-threaded)")
    print(f"{'row':<14}{'nuvec op':<34}{'nuvec ms':>10}{'NumPy ms':>10}{'NumPy/nuvec':>13}  check")
    for name in rows:
        ms, check = nuvec.get(name, (float("nan"), "missing"))
        np_ms = numpy.get(name, float("nan"))
        print(f"{name:<14}{ROWS[name][0]:<34}{ms:>10.1f}{np_ms:>10.1f}{np_ms / ms:>12.2f}x  {check}")
    print("NumPy side: " + "; ".join(f"{name}: {ROWS[name][1]}" for name in rows))


if __name__ == "__main__":
    main()
