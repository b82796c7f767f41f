"""nuvec.core.distributed (mlx.core.distributed's API) and nuvec.lm.load's group: a single process gets a group of one
whose collectives are identities; two processes joined by the TCP ring (MLX_RANK and MLX_HOSTFILE, as nuvec launch
sets them) compute every collective, point-to-point messages, a split group and a gradient through all_sum against
NumPy, and generate from a tiny Llama split between them (tensor parallel and pipeline) the tokens one process
generates alone."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import nuvec.core as mx
import nuvec.lm as lm
from nuvec.utils import tree_flatten
from test_lm import folder  # noqa: F401 (the tiny Llama folder fixture)

dist = mx.distributed

PROMPT = [1, 5, 17, 33, 8]

WORKER = r"""
import json, sys
import nuvec.core as mx
import nuvec.lm as lm
from nuvec.utils import tree_flatten
dist = mx.distributed
g = dist.init(strict=True, backend="ring")
r, n = g.rank(), g.size()
x = mx.arange(6, dtype=mx.float32).reshape(2, 3) * (r + 1)
out = {"rank": r, "size": n, "backend": g.backend,
       "all_sum": dist.all_sum(x).tolist(), "all_gather": dist.all_gather(x).tolist(),
       "all_max": dist.all_max(-x).tolist(), "all_min": dist.all_min(x, group=g).tolist(),
       "sum_scatter": dist.sum_scatter(mx.ones((4, 2)) * (r + 1)).tolist(),
       "int_sum": dist.all_sum(mx.array([r + 1, 10], mx.int32)).tolist(),
       "grad": mx.grad(lambda y: dist.all_sum(y * y).sum())(x).tolist()}
peer = 1 - r
if r == 0:
    mx.eval(dist.send(x, peer))
    out["received"] = dist.recv_like(x, peer).tolist()
else:
    out["received"] = dist.recv((2, 3), mx.float32, peer).tolist()
    mx.eval(dist.send(x * 10, peer))
sub = g.split(0, n - 1 - r)
out["split"] = [sub.rank(), sub.size(), dist.all_sum(mx.array(float(sub.rank())), group=sub).item()]
for pipeline in (False, True):
    model, tokenizer = lm.load(sys.argv[1], group=g, pipeline=pipeline)
    tokens = [int(t.token) for t in lm.stream_generate(model, tokenizer, PROMPT, max_tokens=8)]
    kept = tree_flatten(model.parameters())
    out["pipeline" if pipeline else "tensor"] = {"tokens": tokens, "bytes": sum(a.nbytes for _, a in kept),
                                                 "names": sorted(name for name, _ in kept)}
print(json.dumps(out))
"""


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_single_process_group_is_identity():
    g = dist.init()
    assert (g.rank(), g.size(), g.backend) == (0, 1, "none")
    x = mx.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    for op in (dist.all_sum, dist.all_gather, dist.all_max, dist.all_min, dist.sum_scatter):
        np.testing.assert_array_equal(np.asarray(op(x)), np.asarray(x), err_msg=op.__name__)
    assert dist.all_sum(3.0).item() == 3.0  # a Python scalar is an array too
    assert "size=1" in repr(g)


def test_point_to_point_needs_a_peer():
    with pytest.raises(ValueError):
        mx.eval(dist.send(mx.ones((2,)), 1))


def test_two_processes_over_the_ring(folder, tmp_path):  # noqa: F811 (the fixture)
    hostfile = tmp_path / "hosts.json"
    hostfile.write_text(json.dumps([["127.0.0.1:%d" % p] for p in free_ports(2)]))
    script = tmp_path / "worker.py"
    script.write_text("PROMPT = %r\n" % PROMPT + WORKER)
    ranks = []
    for rank in range(2):
        env = dict(os.environ, MLX_RANK=str(rank), MLX_HOSTFILE=str(hostfile), NUVEC_DISTRIBUTED_TIMEOUT="60")
        ranks.append(subprocess.Popen([sys.executable, str(script), str(folder)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    results = []
    for p in ranks:
        stdout, stderr = p.communicate(timeout=240)
        assert p.returncode == 0, stderr
        results.append(json.loads(stdout.strip().splitlines()[-1]))

    x = [np.arange(6, dtype=np.float32).reshape(2, 3) * (r + 1) for r in range(2)]
    model, tokenizer = lm.load(folder)
    alone = [int(t.token) for t in lm.stream_generate(model, tokenizer, PROMPT, max_tokens=8)]
    whole = tree_flatten(model.parameters())
    whole_bytes = sum(a.nbytes for _, a in whole)
    layers = lambda names: {n.split(".")[2] for n in names if n.startswith("model.layers.")}  # noqa: E731
    for r, out in enumerate(results):
        assert (out["rank"], out["size"], out["backend"]) == (r, 2, "ring")
        np.testing.assert_array_equal(out["all_sum"], x[0] + x[1])
        np.testing.assert_array_equal(out["all_gather"], np.concatenate(x))
        np.testing.assert_array_equal(out["all_max"], np.maximum(-x[0], -x[1]))
        np.testing.assert_array_equal(out["all_min"], np.minimum(x[0], x[1]))
        np.testing.assert_array_equal(out["sum_scatter"], np.full((2, 2), 3.0))
        assert out["int_sum"] == [3, 20]
        # The vjp of all_sum passes the cotangent through (MLX's rule): d/dy sum(all_sum(y * y)) = 2y on each rank.
        np.testing.assert_allclose(out["grad"], 2 * x[r])
        np.testing.assert_array_equal(out["received"], x[1] * 10 if r == 0 else x[0])
        assert out["split"] == [1 - r, 2, 1.0]
        for split in ("tensor", "pipeline"):
            assert out[split]["tokens"] == alone, (split, out[split]["tokens"], alone)
        # Each process keeps its part: slices of every layer, or a run of the layers.
        assert out["tensor"]["bytes"] < 0.75 * whole_bytes, (out["tensor"]["bytes"], whole_bytes)
        assert layers(out["tensor"]["names"]) == {"0", "1"}
        assert out["pipeline"]["bytes"] < 0.9 * whole_bytes, (out["pipeline"]["bytes"], whole_bytes)
        assert layers(out["pipeline"]["names"]) == {str(r)}, out["pipeline"]["names"]
