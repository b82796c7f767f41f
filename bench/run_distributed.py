#!/usr/bin/env python3
"""All-reduce bus bandwidth with 2 ranks on loopback, 1 KiB to 256 MiB: nuvec's ring (nuvec launch), nuvec's MPI
backend (mpirun), Open MPI's MPI_Allreduce called directly (mpirun), and a plain memcpy of the same bytes.

Bus bandwidth is bytes * 2 (n - 1) / n / seconds, the data each rank moves in a ring all-reduce (NCCL's
definition); memcpy's is bytes / seconds.

usage: bench/run_distributed.py [BUILD_DIR]   (default build/release)
"""
import os
import subprocess
import sys

build = sys.argv[1] if len(sys.argv) > 1 else "build/release"
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
