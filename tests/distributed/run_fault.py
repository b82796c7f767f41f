#!/usr/bin/python3
"""Runs tests/distributed/ranks/fault.cpp's program under a launcher and checks that every rank but the failing
rank 1 caught an error naming itself and the operation, and that the whole run ended well within its limit.

usage: run_fault.py kill|stall SIZE LIMIT_SECONDS reports|ends LAUNCHER... PROGRAM
("ends": only check that the run ended in time, for mpirun, which kills every rank when one dies.)
"""
import re
import subprocess
import sys
import time

mode, size, limit, check = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
command = sys.argv[5:] + [mode]
start = time.monotonic()
run = subprocess.run(command, capture_output=True, text=True, timeout=limit)
elapsed = time.monotonic() - start
output = run.stdout + run.stderr
print(output)
failures = []
for rank in range(size):
    if rank == 1 or check == "ends":
        continue
    # "[r] caught: ..." from nuvec launch, "[1,r]<stdout>:caught: ..." from mpirun --tag-output.
    pattern = r"(^\[%d\] |^\[1,%d\]<stdout>:)caught: \[all_sum\] rank %d: " % (rank, rank, rank)
    if not re.search(pattern, output, re.MULTILINE):
        failures.append("rank %d did not report the failure" % rank)
if "no error" in output:
    failures.append("a rank finished without an error")
print("elapsed %.1f s" % elapsed)
if failures:
    print("\n".join(failures))
    sys.exit(1)
