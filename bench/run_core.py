#!/usr/bin/env python3
"""The core benchmark: runs nuvec (nuvec_bench) and NumPy on the same rows in one run and prints one table.

    python3 bench/run_core.py [--bench build/release/bench/nuvec_bench] [--rows add,exp] [--markdown]

nuvec_bench times the nuvec side and measures the machine's copy bandwidth (the floor of the bandwidth rows);
this script times NumPy itself, with the same methodology (random inputs, 2 warm-up reps, the median of 15 reps,
7 when a rep takes over 100 ms, 3 over 500 ms, 201 under 1 ms), in a child /usr/bin/python3 that sees Debian's
numpy and runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed (they select slower kernels). Every row is
independent: a row that throws prints its error, a row that crashes or hangs nuvec_bench is marked and the
others are rerun in a fresh process.
"""

import argparse
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BENCH = REPO / "build" / "release" / "bench" / "nuvec_bench"
NUMPY_PYTHON = "/usr/bin/python3"
NUMPY_PATH = "/usr/lib/python3/dist-packages"
OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

# Row order, and what NumPy's side of a row really is when it is not the same operation.
ROWS = [
    "add", "mul_add", "exp", "tanh", "sum_all", "sum_rows", "sum_cols", "max_rows", "softmax_rows",
    "transpose_copy", "matmul_f32_1024", "matmul_f32_2048", "matmul_bf16_1024", "astype_bf16", "embedding_take",
    "chain_100",
]
NUMPY_STANDS_IN = {
    "matmul_bf16_1024": "numpy: f32 matmul (no bf16)",
    "astype_bf16": "numpy: uint32 rounding emulation (no bf16)",
}
DESCRIPTIONS = {
    "add": "x + y, 2^24 f32",
    "mul_add": "x * y + x, 2^24 f32",
    "exp": "exp(x), 2^24 f32",
    "tanh": "tanh(x), 2^24 f32",
    "sum_all": "sum(x), 4096x4096 f32",
    "sum_rows": "sum(x, -1), 4096x4096 f32",
    "sum_cols": "sum(x, 0), 4096x4096 f32",
    "max_rows": "max(x, -1), 4096x4096 f32",
    "softmax_rows": "softmax(x, -1), 4096x4096 f32",
    "transpose_copy": "contiguous(transpose(x)), 4096x4096 f32",
    "matmul_f32_1024": "matmul 1024^3 f32",
    "matmul_f32_2048": "matmul 2048^3 f32",
    "matmul_bf16_1024": "matmul 1024^3 bf16",
    "astype_bf16": "astype(x, bfloat16), 2^24 f32",
    "embedding_take": "take(table, ids, 0): 4096 rows of 32000x4096 f32",
    "chain_100": "100 element-wise ops on 1024 f32, one eval",
}
CHAIN_OPS = 100


# ---------------------------------------------------------------- the NumPy side (runs in the child)

def numpy_worker(rows):
    """Times NumPy on `rows`, printing nuvec_bench's line format."""
    import numpy as np

    def reps_for(warm_ms):
        if warm_ms < 1.0:
            return 201
        if warm_ms < 100.0:
            return 15
        if warm_ms < 500.0:
            return 7
        return 3

    def uniform(shape, seed):
        return np.random.default_rng(seed).uniform(-2.0, 2.0, size=shape).astype(np.float32)

    cache = {}

    def inp(key, shape, seed):
        if key not in cache:
            cache[key] = uniform(shape, seed)
        return cache[key]

    vec = 1 << 24
    side = 4096

    def x():
        return inp("x", vec, 1)

    def y():
        return inp("y", vec, 2)

    def sq():
        return inp("sq", (side, side), 3)

    def mat(n, which):
        return inp(f"{which}{n}", (n, n), (5 if which == "a" else 7) + (n == 2048))

    def chain():
        a = inp("chain", 1024, 4)

        def run():
            out = a
            for _ in range(CHAIN_OPS // 2):
                out = out * 1.0001 + 0.5  # python floats keep float32 (value-based casting)
            return out
        return run

    def softmax():
        a = sq()

        def run():
            e = np.exp(a - a.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)
        return run

    def astype_bf16():
        u = x().view(np.uint32)
        return lambda: ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)

    def matmul(n):
        a, b = mat(n, "a"), mat(n, "b")
        return lambda: a @ b

    def embedding_take():
        table = inp("table", (32000, 4096), 9)
        ids = ((np.arange(4096, dtype=np.int64) * 7919 + 13) % 32000).astype(np.int32)
        return lambda: np.take(table, ids, axis=0)

    setups = {
        "add": lambda: (lambda a, b: lambda: a + b)(x(), y()),
        "mul_add": lambda: (lambda a, b: lambda: a * b + a)(x(), y()),
        "exp": lambda: (lambda a: lambda: np.exp(a))(x()),
        "tanh": lambda: (lambda a: lambda: np.tanh(a))(x()),
        "sum_all": lambda: (lambda a: lambda: a.sum())(sq()),
        "sum_rows": lambda: (lambda a: lambda: a.sum(-1))(sq()),
        "sum_cols": lambda: (lambda a: lambda: a.sum(0))(sq()),
        "max_rows": lambda: (lambda a: lambda: a.max(-1))(sq()),
        "softmax_rows": softmax,
        "transpose_copy": lambda: (lambda a: lambda: np.ascontiguousarray(a.T))(sq()),
        "matmul_f32_1024": lambda: matmul(1024),
        "matmul_f32_2048": lambda: matmul(2048),
        "matmul_bf16_1024": lambda: matmul(1024),
        "astype_bf16": astype_bf16,
        "embedding_take": embedding_take,
        "chain_100": chain,
    }

    blas = sorted({line.split()[-1] for line in open("/proc/self/maps") if "blas" in line.split()[-1]})
    print(f"numpy version={np.__version__} blas={','.join(Path(b).name for b in blas) or 'unknown'}", flush=True)
    for name in rows:
        print(f"start {name}", flush=True)
        try:
            fn = setups[name]()
            warm_ms = 0.0
            for _ in range(2):
                t0 = time.perf_counter()
                out = fn()
                warm_ms = (time.perf_counter() - t0) * 1e3
            reps = reps_for(warm_ms)
            times = []
            for _ in range(reps):
                out = None  # free the previous output outside the timed region
                t0 = time.perf_counter()
                out = fn()
                times.append((time.perf_counter() - t0) * 1e3)
            del out
            print(f"row {name} median_ms={statistics.median(times):.6f} min_ms={min(times):.6f} reps={reps}",
                  flush=True)
        except Exception as e:  # a failing row must not stop the others
            print(f"error {name} {type(e).__name__}: {e}".replace("\n", " "), flush=True)


# ---------------------------------------------------------------- running the two sides

def parse_fields(tokens):
    fields = {}
    for tok in tokens:
        key, sep, value = tok.partition("=")
        if sep:
            fields[key] = value
    return fields


def stream_lines(cmd, env, line_timeout, stderr_file):
    """Yields the child's stdout lines; yields ('timeout', None) and kills it when no line comes for line_timeout s."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr_file, env=env, text=True, bufsize=1)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        while True:
            if not sel.select(timeout=line_timeout):
                proc.kill()
                proc.wait()
                yield "timeout", None
                return
            line = proc.stdout.readline()
            if not line:
                break
            yield "line", line.rstrip("\n")
        yield "exit", proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run_side(label, make_cmd, env, rows, line_timeout, results, info):
    """Runs a side over `rows`, rerunning what is left after a crash or hang. Fills results[name] and info."""
    remaining = list(rows)
    first = True
    while remaining:
        current = None
        done = set()
        with tempfile.TemporaryFile(mode="w+") as err:
            outcome = None
            for kind, value in stream_lines(make_cmd(remaining, first), env, line_timeout, err):
                if kind != "line":
                    outcome = (kind, value)
                    continue
                parts = value.split(" ", 2)
                tag = parts[0]
                if tag == "start" and len(parts) > 1:
                    current = parts[1]
                elif tag == "row" and len(parts) > 1:
                    fields = parse_fields(value.split()[2:])
                    results[parts[1]] = {"ms": float(fields["median_ms"]), "min_ms": float(fields["min_ms"]),
                                         "reps": int(fields["reps"]), "check": fields.get("check", "")}
                    done.add(parts[1])
                    current = None
                    print(f"  {label:5} {parts[1]:18} {float(fields['median_ms']):10.3f} ms", file=sys.stderr)
                elif tag == "error" and len(parts) > 1:
                    results[parts[1]] = {"error": parts[2] if len(parts) > 2 else "error"}
                    done.add(parts[1])
                    current = None
                    print(f"  {label:5} {parts[1]:18} error: {results[parts[1]]['error'][:80]}", file=sys.stderr)
                else:  # machine-wide lines: bandwidth, nuvec, numpy
                    info[tag] = parse_fields(value.split()[1:])
            err.seek(0)
            err_tail = err.read()[-400:].strip().replace("\n", " | ")
        first = False
        if current is not None:  # the row that was running crashed or hung the process
            why = "hung (no output)" if outcome and outcome[0] == "timeout" else f"crashed (exit {outcome[1]})"
            results[current] = {"error": f"{why}: {err_tail}"}
            done.add(current)
            print(f"  {label:5} {current:18} {why}", file=sys.stderr)
        elif outcome and (outcome[0] == "timeout" or outcome[1] != 0) and not done:
            for name in remaining:  # failed before any row: nothing to retry
                results[name] = {"error": f"{label} failed ({outcome}): {err_tail}"}
            return
        remaining = [r for r in remaining if r not in done]


def nuvec_meta(bench):
    """bytes and flops of every row, from nuvec_bench --list."""
    out = subprocess.run([str(bench), "--list"], check=True, capture_output=True, text=True).stdout
    meta = {}
    for line in out.splitlines():
        name, *rest = line.split()
        fields = parse_fields(rest)
        meta[name] = {"bytes": float(fields.get("bytes", 0)), "flops": float(fields.get("flops", 0))}
    return meta


def combine_rounds(rounds):
    """One result per row: the median over the rounds where it ran (an error only when it never ran)."""
    combined = {}
    for name in {n for r in rounds for n in r}:
        ran = [r[name] for r in rounds if "ms" in r.get(name, {})]
        if not ran:
            combined[name] = next(r[name] for r in rounds if name in r)
            continue
        bad = [x["check"] for x in ran if x.get("check") not in (None, "", "ok")]
        combined[name] = {"ms": statistics.median(x["ms"] for x in ran), "min_ms": min(x["min_ms"] for x in ran),
                          "reps": sum(x["reps"] for x in ran), "check": bad[0] if bad else ran[0].get("check", "")}
    return combined


# ---------------------------------------------------------------- the table

def cpu_line():
    model, flags = "unknown CPU", set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name") and model == "unknown CPU":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    wanted = ["avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16"]
    have = [f for f in wanted if f in flags]
    return f"{model}, {os.cpu_count()} cores ({' '.join(have) or 'no avx2'}), {mem_gib:.0f} GiB"


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def build_table(rows, meta, nuvec, numpy, bandwidth_gbs):
    header = ["name", "nuvec_ms", "numpy_ms", "numpy/nuvec", "floor_ms", "nuvec/floor", "MiB", "note"]
    table, errors = [], []
    for name in rows:
        m = meta.get(name, {"bytes": 0.0, "flops": 0.0})
        nv, np_ = nuvec.get(name, {}), numpy.get(name, {})
        nv_ms, np_ms = nv.get("ms"), np_.get("ms")
        floor_ms = m["bytes"] / (bandwidth_gbs * 1e9) * 1e3 if m["bytes"] and bandwidth_gbs and not m["flops"] else None
        notes = []
        if m["flops"]:
            parts = [f"{side} {m['flops'] / (ms * 1e-3) / 1e9:.0f}" for side, ms in (("nuvec", nv_ms), ("numpy", np_ms))
                     if ms]
            if parts:
                notes.append(", ".join(parts) + " GFLOP/s")
        elif floor_ms and nv_ms:
            notes.append(f"nuvec {m['bytes'] / (nv_ms * 1e-3) / 1e9:.1f} GB/s")
        if name == "chain_100":
            parts = [f"{side} {ms * 1e3 / CHAIN_OPS:.2f}" for side, ms in (("nuvec", nv_ms), ("numpy", np_ms)) if ms]
            if parts:
                notes.append(", ".join(parts) + " us/op")
        if name in NUMPY_STANDS_IN:
            notes.append(NUMPY_STANDS_IN[name])
        if nv.get("check") and nv["check"] != "ok":
            notes.append(f"CHECK {nv['check']}")
        for side, res in (("nuvec", nv), ("numpy", np_)):
            if "error" in res:
                errors.append(f"{name} ({side}): {res['error']}")

        def status(res, ms):
            if ms is not None:
                return f"{ms:.3f}"
            if "error" in res:
                return "pending" if "pending" in res["error"] else "error"
            return "-"

        table.append([
            name, status(nv, nv_ms), status(np_, np_ms),
            f"{np_ms / nv_ms:.2f}x" if nv_ms and np_ms else "-",
            fmt(floor_ms, ".3f"),
            f"{nv_ms / floor_ms:.2f}x" if nv_ms and floor_ms else "-",
            f"{m['bytes'] / 2**20:.0f}" if m["bytes"] else "-",
            "; ".join(notes),
        ])
    return header, table, errors


def print_table(header, table, markdown):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" if i in (0, len(header) - 1) else "--:" for i in range(len(header))) + "|")
        for r in table:
            print("| " + " | ".join(r) + " |")
        return
    widths = [max(len(str(r[i])) for r in [header] + table) for i in range(len(header))]
    for r in [header] + table:
        cells = [str(c).ljust(widths[i]) if i in (0, len(r) - 1) else str(c).rjust(widths[i]) for i, c in enumerate(r)]
        print("  ".join(cells).rstrip())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=str(DEFAULT_BENCH), help="path to nuvec_bench (default: %(default)s)")
    ap.add_argument("--rows", default="", help="comma-separated subset of: " + ",".join(ROWS))
    ap.add_argument("--no-numpy", action="store_true", help="time nuvec only")
    ap.add_argument("--no-nuvec", action="store_true", help="time NumPy only")
    ap.add_argument("--rounds", type=int, default=1,
                    help="alternate nuvec and NumPy this many times; each row reports the median of its rounds")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown (for bench/README.md)")
    ap.add_argument("--row-timeout", type=float, default=180, help="seconds a row may run before it counts as hung")
    ap.add_argument("--numpy-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    rows = [r for r in args.rows.split(",") if r] or ROWS
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        ap.error(f"unknown rows: {', '.join(unknown)}")
    if args.numpy_worker:
        numpy_worker(rows)
        return

    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    bench = Path(args.bench)
    meta, info = {}, {}
    nuvec_rounds, numpy_rounds, bandwidths = [], [], []
    if not args.no_nuvec and not bench.exists():
        sys.exit(f"{bench} not found: build it with\n  cmake --preset release && "
                 f"cmake --build build/release -j2 --target nuvec_bench")
    if bench.exists():
        meta = nuvec_meta(bench)  # bytes and flops per row, for the floor columns
    openblas_set = [v for v in OPENBLAS_VARS if v in os.environ]
    numpy_env = os.environ.copy()
    for v in OPENBLAS_VARS:
        numpy_env.pop(v, None)
    numpy_env["PYTHONPATH"] = NUMPY_PATH
    for rnd in range(args.rounds):
        if not args.no_nuvec:
            print(f"round {rnd + 1}/{args.rounds} nuvec: {bench}", file=sys.stderr)
            nuvec_rounds.append({})
            run_side("nuvec", lambda rem, first: [str(bench), "--rows", ",".join(rem)]
                     + ([] if first else ["--no-bandwidth"]),
                     os.environ.copy(), rows, args.row_timeout, nuvec_rounds[-1], info)
            if "copy_2t_gbs" in info.get("bandwidth", {}):
                bandwidths.append(info.pop("bandwidth"))
        if not args.no_numpy:
            print(f"round {rnd + 1}/{args.rounds} numpy: {NUMPY_PYTHON}", file=sys.stderr)
            numpy_rounds.append({})
            run_side("numpy", lambda rem, first: [NUMPY_PYTHON, str(Path(__file__).resolve()), "--numpy-worker",
                                                  "--rows", ",".join(rem)],
                     numpy_env, rows, args.row_timeout, numpy_rounds[-1], info)
    nuvec, numpy = combine_rounds(nuvec_rounds), combine_rounds(numpy_rounds)
    # The floor uses the best bandwidth seen: a ceiling, as STREAM reports its best rep.
    bw = max(bandwidths, key=lambda b: float(b["copy_2t_gbs"]), default={})

    bw2 = float(bw["copy_2t_gbs"]) if "copy_2t_gbs" in bw else None
    header, table, errors = build_table(rows, meta, nuvec, numpy, bw2)
    npinfo = info.get("numpy", {})
    nvinfo = info.get("nuvec", {})
    print()
    print(f"machine: {cpu_line()}; load average {load_before:.1f} at the start (above ~0.5: others are busy)")
    print(f"bandwidth: STREAM-like 512 MiB copy {bw.get('copy_1t_gbs', '-')} GB/s (1 thread), "
          f"{bw.get('copy_2t_gbs', '-')} GB/s (2 threads; the floor uses this); "
          f"64 MiB copy {bw.get('copy_64mib_2t_gbs', '-')} GB/s (2 threads, a row's working set)")
    print(f"nuvec threads: {nvinfo.get('threads', '-')}; numpy {npinfo.get('version', '-')} "
          f"(BLAS {npinfo.get('blas', '-')}); {' and '.join(openblas_set) + ' unset for numpy' if openblas_set else 'OPENBLAS_CORETYPE/L2_SIZE not set'}")
    print("columns: median ms; numpy/nuvec > 1 means nuvec is faster; floor = bytes / 2-thread copy bandwidth; "
          "nuvec/floor 1.00x = at the floor")
    print()
    print_table(header, table, args.markdown)
    if errors:
        print()
        print("errors:")
        for e in errors:
            print(f"  {e}")
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
