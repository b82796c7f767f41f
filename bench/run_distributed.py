#!/usr/bin/env python3
"""All-reduce bus bandwidth with 2 ranks on loopback, 1 KiB to 256 MiB: nuvec's ring (nuvec launch), nuvec's MPI
backend (mpirun), Open MPI's MPI_Allreduce called directly (mpirun), and a plain memcpy of the same bytes. Then
data-parallel training throughput: nuvec train --distributed (the Fashion-MNIST CNN) on 2 ranks over the ring and
over MPI against one process with the same global batch, in images per second.

Bus bandwidth is bytes * 2 (n - 1) / n / seconds, the data each rank moves in a ring all-reduce (NCCL's
definition); memcpy's is bytes / seconds. Training throughput is taken between the progress lines at 10% and at the
end of the epoch (so the first steps' warm-up is left out); each rank of 2 runs 1 thread, one process runs 2 (the
machine's cores) and, for reference, 1.

usage: bench/run_distributed.py [BUILD_DIR] [--train-only] [--train-images N]   (default build/release, 12800)
"""
import os
import re
import subprocess
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
train_only = "--train-only" in sys.argv
train_images = 12800
if "--train-images" in sys.argv:
    train_images = int(sys.argv[sys.argv.index("--train-images") + 1])
    args.remove(str(train_images))
build = args[0] if args else "build/release"
bench = os.path.join(build, "bench", "distributed_bench")
nuvec = os.path.join(build, "apps", "nuvec")
ranks = 2
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
mpirun = ["mpirun", "-np", str(ranks), "--oversubscribe", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include",
          "lo"]


def timings(command):
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    result = {}
    for line in out.splitlines():
        # nuvec launch puts "[rank] " in front of each line.
        words = line.split()
        if words and words[0].startswith("["):
            words = words[1:]
        if len(words) == 2 and words[0].isdigit():
            result[int(words[0])] = float(words[1])
    return result


def train_rate(command, threads):
    """Images per second of one epoch of nuvec train, from its progress lines ("... 13/100 ... 812 img/s ..."): the
    images and seconds between the first line past 10% of the steps and the last."""
    run_env = dict(env, NUVEC_NUM_THREADS=str(threads))
    out = subprocess.run(command, env=run_env, capture_output=True, text=True, check=True)
    points = []
    for line in (out.stdout + out.stderr).splitlines():
        m = re.search(r"(\d+)/(\d+) loss \S+ (\d+) img/s", line)
        if m:
            step, total, rate = int(m.group(1)), int(m.group(2)), float(m.group(3))
            images = step * train_batch
            points.append((step, total, images, images / rate if rate > 0 else 0.0))
    later = [p for p in points if p[0] * 10 >= p[1]]
    if len(later) < 2:
        raise RuntimeError("too few progress lines from " + " ".join(command) + ":\n" + out.stdout + out.stderr)
    first, last = later[0], later[-1]
    return (last[2] - first[2]) / (last[3] - first[3])


def training():
    data = "/usr/share/datasets/fashion-mnist"
    if not os.path.exists(os.path.join(data, "train-images-idx3-ubyte.gz")):
        print("data-parallel training: skipped, Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
        return
    train = [nuvec, "train", "--limit", str(train_images), "--epochs", "1", "--batch-size", str(train_batch),
             "--data", data, "--output", os.path.join(work, "train")]
    rates = {
        "1 process, 2 threads": train_rate(train, 2),
        "1 process, 1 thread": train_rate(train, 1),
        "ring, 2 ranks x 1 thread": train_rate([nuvec, "launch", "-n", str(ranks), "--"] + train + ["--distributed"],
                                               1),
        "MPI, 2 ranks x 1 thread": train_rate(mpirun + ["-x", "NUVEC_NUM_THREADS"] + train + ["--distributed"], 1),
    }
    base = rates["1 process, 2 threads"]
    print("\ndata-parallel training (nuvec train --distributed, CNN, global batch %d, %d images), images/s"
          % (train_batch, train_images))
    print("%28s%12s%16s" % ("", "images/s", "vs 1 process"))
    for name, rate in rates.items():
        print("%28s%12.0f%16.2f" % (name, rate, rate / base))


train_batch = 128
work = os.path.join(build, "bench_distributed_train")
if train_only:
    training()
    sys.exit(0)

runs = {
    "ring": timings([nuvec, "launch", "-n", str(ranks), "--", bench, "nuvec"]),
    "nuvec mpi": timings(mpirun + [bench, "nuvec"]),
    "MPI_Allreduce": timings(mpirun + [bench, "mpi"]),
    "memcpy": timings([bench, "memcpy"]),
}
factor = 2 * (ranks - 1) / ranks


def gbps(name, size):
    t = runs[name].get(size)
    if t is None:
        return None
    return size * (1 if name == "memcpy" else factor) / t / 1e9


def cell(value):
    return "%10s" % ("-" if value is None else "%.2f" % value)


print("all-reduce bus bandwidth, GB/s, %d ranks on loopback" % ranks)
print("%10s" % "bytes" + "".join("%15s" % n for n in runs) + "%14s" % "ring/OpenMPI")
for size in sorted(runs["memcpy"]):
    values = [gbps(n, size) for n in runs]
    ratio = None if values[0] is None or values[2] is None else values[0] / values[2]
    label = "%d KiB" % (size >> 10) if size < (1 << 20) else "%d MiB" % (size >> 20)
    print("%10s" % label + "".join("%15s" % cell(v).strip() for v in values) + "%14s" % cell(ratio).strip())

training()
