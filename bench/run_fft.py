#!/usr/bin/env python3
"""The FFT benchmark: runs nuvec_fft_bench and times the same transforms with numpy.fft, printing the ratio.

    python3 bench/run_fft.py [--bench build/release/bench/nuvec_fft_bench]

NumPy is timed in a child /usr/bin/python3 (Debian's numpy) with the same method as nuvec_fft_bench: inputs
uniform in [-1, 1) of the same dtype, two warm-up reps, then the median of 15. NumPy's pocketfft computes in
double whatever the input dtype (NumPy 1.x), nuvec in float for these float32 / complex64 inputs.
"""

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NUMPY_PYTHON = "/usr/bin/python3"

NUMPY_SIDE = r"""
import time, statistics
import numpy as np
rng = np.random.default_rng(0)
def c(shape):
    return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(np.complex64)
pow2, prime, real, square = c(1 << 20), c(100003), rng.uniform(-1, 1, 1 << 20).astype(np.float32), c((1024, 1024))
rows = {
    "fft_pow2": lambda: np.fft.fft(pow2),
    "fft_prime": lambda: np.fft.fft(prime),
    "rfft_pow2": lambda: np.fft.rfft(real),
    "fft2_1024": lambda: np.fft.fft2(square),
}
for name, fn in rows.items():
    times = []
    for i in range(17):
        start = time.perf_counter()
        fn()
        if i >= 2:
            times.append((time.perf_counter() - start) * 1e3)
    print(f"row {name} median_ms={statistics.median(times):.4f}", flush=True)
"""

DESCRIPTIONS = {
    "fft_pow2": "fft, 2^20 complex64",
    "fft_prime": "fft, 100003 (prime) complex64",
    "rfft_pow2": "rfft, 2^20 float32",
    "fft2_1024": "fft2, 1024x1024 complex64",
}


def parse(text):
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "row":
            fields = dict(p.split("=", 1) for p in parts[2:])
            rows[parts[1]] = float(fields["median_ms"])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=str(REPO / "build" / "release" / "bench" / "nuvec_fft_bench"))
    args = ap.parse_args()
    nuvec = parse(subprocess.run([args.bench], check=True, capture_output=True, text=True).stdout)
    numpy = parse(subprocess.run([NUMPY_PYTHON, "-c", NUMPY_SIDE], check=True, capture_output=True,
                                 text=True).stdout)
    print(f"{'row':12} {'what':32} {'nuvec ms':>10} {'numpy ms':>10} {'numpy/nuvec':>12}")
    for name, what in DESCRIPTIONS.items():
        a, b = nuvec.get(name), numpy.get(name)
        if a is None or b is None:
            print(f"{name:12} {what:32} {'missing':>10}", file=sys.stderr)
            continue
        print(f"{name:12} {what:32} {a:10.3f} {b:10.3f} {b / a:11.2f}x")


if __name__ == "__main__":
    main()
