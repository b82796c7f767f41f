#!/usr/bin/env python3
"""Training-step time of the Fashion-MNIST CNN and an MLP, nuvec against PyTorch on the CPU; prints one table.

    python3 bench/nn_vs_torch.py [--bench build/release/bench/nn_train_bench] [--threads 2] [--reps 15]

Both sides: batch 64 of random 28x28 images, cross entropy, Adam; one step is forward, backward, the update and
the evaluation of the new parameters. The median of --reps steps after two warm-up steps. PyTorch (Debian's
python3-torch under /usr/bin/python3) runs with torch.set_num_threads(--threads) in channels-last memory format
and in NCHW (the faster counts); nuvec with NUVEC_NUM_THREADS set to the same count. ratio = nuvec / torch.
"""

import argparse
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BENCH = REPO / "build" / "release" / "bench" / "nn_train_bench"

TORCH_CODE = r"""
import statistics, sys, time
import torch, torch.nn as nn, torch.nn.functional as F
torch.set_num_threads(int(sys.argv[1])); reps = int(sys.argv[2]); torch.manual_seed(0)
def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, 1, 1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
def timed(model, x, y):
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    def step():
        opt.zero_grad(); F.cross_entropy(model(x), y).backward(); opt.step()
    step(); step(); ts = []
    for _ in range(reps):
        t = time.perf_counter(); step(); ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)
x = torch.rand(64, 1, 28, 28); y = torch.randint(0, 10, (64,))
best = min(timed(cnn(), x, y), timed(cnn().to(memory_format=torch.channels_last),
                                    x.contiguous(memory_format=torch.channels_last), y))
print("cnn_train_step_b64", best)
print("mlp_train_step_b64", timed(nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)), x, y))
"""


def parse(text):
    return {name: float(value) for name, value in (line.split() for line in text.strip().splitlines())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", default=str(DEFAULT_BENCH))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    env = dict(os.environ, NUVEC_NUM_THREADS=str(args.threads))
    ours = parse(subprocess.run([args.bench, str(args.reps)], env=env, check=True, capture_output=True,
                                text=True).stdout)
    theirs = parse(subprocess.run(["/usr/bin/python3", "-c", TORCH_CODE, str(args.threads), str(args.reps)],
                                  check=True, capture_output=True, text=True).stdout)
    print("%-22s %10s %10s %7s" % ("step", "nuvec ms", "torch ms", "ratio"))
    for name, ms in ours.items():
        print("%-22s %10.2f %10.2f %7.2f" % (name, ms, theirs[name], ms / theirs[name]))


if __name__ == "__main__":
    main()
