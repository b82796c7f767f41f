#!/usr/bin/env python3
"""conv2d forward, nuvec against PyTorch on the CPU, in one run; prints one table.

    python3 bench/conv_vs_torch.py [--bench build/release/bench/nuvec_conv_bench] [--rows a,b] [--threads 2]
                                   [--cpu-time] [--markdown]

nuvec_conv_bench times nuvec (what conv2d picks, and each implementation forced: oneDNN, im2col + GEMM); this
script then times PyTorch (Debian's python3-torch under /usr/bin/python3) on the same rows with
torch.set_num_threads(2) (--threads), both in NCHW and in the channels_last memory format, and reports the faster as
"torch". Same methodology on both sides: float32 inputs uniform in [-1, 1), two warm-up reps, the median of 15
reps (7 when a rep takes over 100 ms, 3 over 500 ms). nuvec runs with NUVEC_NUM_THREADS set to the same count.
ratio = nuvec / torch (below 1: nuvec is faster). --cpu-time compares the CPU time of each process (all its
threads, spinning ones included) instead of the wall clock: with --threads 1 that is the computation alone,
which a machine loaded by other work does not inflate.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BENCH = REPO / "build" / "release" / "bench" / "nuvec_conv_bench"
TORCH_PYTHON = "/usr/bin/python3"
TORCH_PATH = "/usr/lib/python3/dist-packages"
CPU_TIME = False  # --cpu-time: compare the processes' CPU time instead of the wall clock


def torch_worker(rows, threads):
    """Times PyTorch on `rows` ((name, n, h, w, c_in, c_out, k, stride, pad, transposed) tuples); one line per
    layout."""
    import statistics
    import time

    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(7)
    with torch.no_grad():
        for name, n, h, w, c_in, c_out, k, stride, pad, transposed in rows:
            x = torch.rand(n, c_in, h, w) * 2 - 1
            wt = torch.rand(*((c_in, c_out) if transposed else (c_out, c_in)), k, k) * 2 - 1
            for layout in ("nchw", "channels_last"):
                if layout == "channels_last":
                    xl = x.contiguous(memory_format=torch.channels_last)
                    wl = wt.contiguous(memory_format=torch.channels_last)
                else:
                    xl, wl = x, wt

                def rep():
                    c0 = time.process_time()
                    t0 = time.perf_counter()
                    if transposed:
                        F.conv_transpose2d(xl, wl, stride=stride, padding=pad, output_padding=stride - 1)
                    else:
                        F.conv2d(xl, wl, stride=stride, padding=pad)
                    return (time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3

                rep()
                warm = rep()[0]
                reps = 3 if warm > 500 else 7 if warm > 100 else 15
                measured = [rep() for _ in range(reps)]
                times = [m[0] for m in measured]
                cpu = statistics.median(m[1] for m in measured)
                print("row %s backend=torch_%s median_ms=%.4f min_ms=%.4f cpu_ms=%.4f reps=%d"
                      % (name, layout, statistics.median(times), min(times), cpu, reps), flush=True)


def parse(lines):
    """{(row, backend): median_ms or cpu_ms} from the benchmark lines; errors are reported on stderr."""
    out = {}
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "error":
            print("error: " + line, file=sys.stderr)
            continue
        if parts[0] != "row":
            continue
        fields = dict(p.split("=", 1) for p in parts[2:])
        out[(parts[1], fields["backend"])] = float(fields["cpu_ms" if CPU_TIME else "median_ms"])
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        rows = [tuple([r[0]] + [int(v) for v in r[1:]]) for r in (line.split() for line in sys.stdin) if r]
        torch_worker(rows, int(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=str(DEFAULT_BENCH))
    ap.add_argument("--rows", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cpu-time", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    global CPU_TIME
    CPU_TIME = args.cpu_time

    listing = subprocess.run([args.bench, "--list"], check=True, capture_output=True, text=True).stdout.splitlines()
    wanted = set(args.rows.split(",")) if args.rows else None
    rows = [line for line in listing if line and (wanted is None or line.split()[0] in wanted)]
    names = [line.split()[0] for line in rows]

    env = dict(os.environ)
    env["NUVEC_NUM_THREADS"] = str(args.threads)
    print("timing nuvec ...", file=sys.stderr)
    nuvec = subprocess.run([args.bench, "--rows", ",".join(names)], check=True, capture_output=True, text=True,
                           env=env).stdout.splitlines()
    print("timing torch ...", file=sys.stderr)
    torch_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    torch_env["PYTHONPATH"] = TORCH_PATH
    torch_out = subprocess.run([TORCH_PYTHON, __file__, "--torch-worker", str(args.threads)], input="\n".join(rows), check=True,
                               capture_output=True, text=True, env=torch_env).stdout.splitlines()
    t = parse(nuvec + torch_out)

    header = ["row", "nuvec ms", "oneDNN ms", "GEMM ms", "torch NCHW ms", "torch NHWC ms", "torch ms", "ratio"]
    table = []
    for name in names:
        def get(backend):
            return t.get((name, backend))
        best_torch = min(v for v in (get("torch_nchw"), get("torch_channels_last")) if v is not None)
        nv = get("automatic")
        cells = [name] + ["%.2f" % v if v is not None else "-" for v in
                          (nv, get("onednn"), get("gemm"), get("torch_nchw"), get("torch_channels_last"), best_torch)]
        cells.append("%.2f" % (nv / best_torch) if nv is not None else "-")
        table.append(cells)
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for cells in table:
            print("| " + " | ".join(cells) + " |")
    else:
        widths = [max(len(r[i]) for r in [header] + table) for i in range(len(header))]
        for cells in [header] + table:
            print("  ".join(c.rjust(wd) if i else c.ljust(wd) for i, (c, wd) in enumerate(zip(cells, widths))))


if __name__ == "__main__":
    main()
