#!/usr/bin/python3
"""nuvec train --distributed with N ranks ends with the weights of one process trained on the whole batch: both
runs train the CNN on the first 256 Fashion-MNIST images (4 steps of 64) and their model.safetensors are compared
with NumPy (the ranks sum their shards in another order, hence a tolerance).

usage: train_equal.py NUVEC RANKS WORK_DIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

nuvec, ranks, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
common = ["--limit", "256", "--epochs", "1", "--batch-size", "64"]
subprocess.run([nuvec, "train", *common, "--output", os.path.join(work, "one")], check=True,
               stdout=subprocess.DEVNULL)
subprocess.run([nuvec, "launch", "-n", ranks, "--", nuvec, "train", "--distributed", *common, "--output",
                os.path.join(work, "ranks")], check=True)


def load(path):
    with open(path, "rb") as f:
        header_size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_size))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=np.float32).reshape(info["shape"])
    return tensors


one = load(os.path.join(work, "one", "model.safetensors"))
many = load(os.path.join(work, "ranks", "model.safetensors"))
assert one.keys() == many.keys(), (one.keys(), many.keys())
worst = 0.0
for name in one:
    np.testing.assert_allclose(many[name], one[name], rtol=1e-4, atol=1e-5, err_msg=name)
    worst = max(worst, float(np.max(np.abs(many[name] - one[name]))))
print("%d tensors equal; largest difference %.3g" % (len(one), worst))
