#!/usr/bin/env python3
"""Forward plus backward of an MLP and a transformer block, nuvec against PyTorch on the CPU, in one run.

    python3 bench/training_vs_torch.py [--bench build/release/bench/training_bench] [--threads 2]
                                       [--torch-threads 1] [--reps 15] [--rounds 2] [--markdown]

training_bench times nuvec on --threads threads; this script then times PyTorch (Debian's python3-torch under
/usr/bin/python3) on the same models with torch.set_num_threads(--torch-threads). The default pairs nuvec on two
threads with PyTorch's "1 thread", its fastest setting on a 2-core machine: its oneDNN GEMMs still use both cores
there, and set_num_threads(2) runs 2-3x slower. The models: a 4-layer MLP (batch 256, width 1024, ReLU, cross-entropy
over 10 classes) and a pre-norm transformer block (batch 8, 128 tokens, width 256, 4 heads, causal attention
written out, as torch 1.13 has no fused attention, GELU tanh MLP of width 1024; loss mean(out^2)). One step is
the loss and every parameter's gradient (nuvec: value_and_grad then eval; torch: forward, backward, gradients
zeroed by set_to_none). Then two whole training steps, optimizer included: nuvec train's CNN (batch 64 of 28x28
images, Adam; the epoch time is 938 such steps) and nuvec gpt's byte-level llama (4 layers, width 128, 4 heads,
SwiGLU of width 512, RoPE, tied embeddings over 259 tokens; batch 32 x 128 tokens, AdamW, gradient clipping at norm 1; tokens per second = 4096 / step time). Two warm-up
steps, then the median of --reps steps; both sides run --rounds times, alternating, and keep their best median (a
busy machine slows one round, rarely all). ratio = nuvec / torch (below 1: nuvec is faster).
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BENCH = REPO / "build" / "release" / "bench" / "training_bench"
TORCH_PYTHON = "/usr/bin/python3"
TORCH_PATH = "/usr/lib/python3/dist-packages"


def torch_worker(threads, reps):
    import statistics
    import time

    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(0)

    def mlp():
        layers = []
        for i in range(4):
            out = 10 if i == 3 else 1024
            layers += [torch.empty(out, 1024).uniform_(-0.03, 0.03).requires_grad_(),
                       torch.zeros(out, requires_grad=True)]
        x = torch.randn(256, 1024)
        labels = torch.randint(0, 10, (256,))

        def loss():
            h = x
            for i in range(4):
                h = F.linear(h, layers[2 * i], layers[2 * i + 1])
                if i < 3:
                    h = torch.relu(h)
            return F.cross_entropy(h, labels)
        return "mlp_4x1024_b256", layers, loss

    def block():
        b, t, d, heads = 8, 128, 256, 4

        def w(o, i):
            return torch.empty(o, i).uniform_(-0.05, 0.05).requires_grad_()

        def z(n):
            return torch.zeros(n, requires_grad=True)
        p = [torch.ones(d, requires_grad=True), z(d), w(3 * d, d), z(3 * d), w(d, d), z(d),
             torch.ones(d, requires_grad=True), z(d), w(4 * d, d), z(4 * d), w(d, 4 * d), z(d)]
        x0 = torch.randn(b, t, d)
        mask = torch.ones(t, t, dtype=torch.bool).tril()

        def loss():
            x = x0
            h = F.layer_norm(x, (d,), p[0], p[1], 1e-5)
            q, k, v = F.linear(h, p[2], p[3]).split(d, -1)

            def split_heads(u):
                return u.reshape(b, t, heads, d // heads).transpose(1, 2)
            q, k, v = split_heads(q), split_heads(k), split_heads(v)
            scores = (q @ k.transpose(-1, -2)) * (1.0 / (d // heads) ** 0.5)
            attn = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ v
            x = x + F.linear(attn.transpose(1, 2).reshape(b, t, d), p[4], p[5])
            h = F.layer_norm(x, (d,), p[6], p[7], 1e-5)
            x = x + F.linear(F.gelu(F.linear(h, p[8], p[9]), approximate="tanh"), p[10], p[11])
            return (x * x).mean()
        return "transformer_block_b8_l128_d256", p, loss

    def cnn():
        import torch.nn as nn
        model = nn.Sequential(nn.Conv2d(1, 32, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, 1, 1),
                              nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(),
                              nn.Linear(128, 10))
        x = torch.rand(64, 1, 28, 28)
        y = torch.randint(0, 10, (64,))
        return "cnn_train_step_b64", model, torch.optim.Adam(model.parameters(), 1e-3), lambda: F.cross_entropy(
            model(x), y), False

    def llama():
        # The byte-level llama of `nuvec gpt` (apps/gpt/model.cpp): RMSNorm, half-split RoPE, SwiGLU, tied
        # embeddings, 259 tokens.
        import torch.nn as nn
        d, heads, layers, ctx, vocab = 128, 4, 4, 128, 259
        hd = d // heads

        class RMSNorm(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(d))

            def forward(self, x):
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight

        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
        angles = torch.outer(torch.arange(ctx).float(), inv_freq)
        cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)

        def rope(x):
            x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
            return x * cos + torch.cat([-x2, x1], -1) * sin

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.n1, self.n2 = RMSNorm(), RMSNorm()
                self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
                self.gate, self.up = nn.Linear(d, 4 * d, bias=False), nn.Linear(d, 4 * d, bias=False)
                self.down = nn.Linear(4 * d, d, bias=False)

            def forward(self, x):
                b, t, _ = x.shape
                h = self.n1(x)
                q, k, v = [u.reshape(b, t, heads, hd).transpose(1, 2) for u in (self.q(h), self.k(h), self.v(h))]
                q, k = rope(q), rope(k)
                scores = (q @ k.transpose(-1, -2)) * (1.0 / hd ** 0.5)
                mask = torch.ones(t, t, dtype=torch.bool).tril()
                a = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ v
                x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
                h = self.n2(x)
                return x + self.down(F.silu(self.gate(h)) * self.up(h))

        class Llama(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(vocab, d)
                self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
                self.norm = RMSNorm()

            def forward(self, ids):
                return self.norm(self.blocks(self.embed(ids))) @ self.embed.weight.T

        model = Llama()
        tokens = torch.randint(0, vocab, (32, ctx + 1))
        x, y = tokens[:, :-1], tokens[:, 1:]
        return "llama_train_step_b32_l128", model, torch.optim.AdamW(model.parameters(), 3e-3), lambda: F.cross_entropy(
            model(x).reshape(-1, vocab), y.reshape(-1)), True

    for name, model, opt, loss, clip in (cnn(), llama()):
        def train_step():
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss().backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return (time.perf_counter() - t0) * 1e3
        train_step()
        train_step()
        times = [train_step() for _ in range(reps)]
        print("row %s median_ms=%.3f min_ms=%.3f reps=%d" % (name, statistics.median(times), min(times), reps),
              flush=True)

    for name, params, loss in (mlp(), block()):
        def step():
            for q in params:
                q.grad = None
            t0 = time.perf_counter()
            loss().backward()
            return (time.perf_counter() - t0) * 1e3
        step()
        step()
        times = [step() for _ in range(reps)]
        print("row %s median_ms=%.3f min_ms=%.3f reps=%d" % (name, statistics.median(times), min(times), reps),
              flush=True)


def parse(lines):
    out = {}
    for line in lines:
        parts = line.split()
        if parts and parts[0] == "row":
            fields = dict(p.split("=", 1) for p in parts[2:])
            out[parts[1]] = float(fields["median_ms"])
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        torch_worker(int(sys.argv[2]), int(sys.argv[3]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=str(DEFAULT_BENCH))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    env = dict(os.environ)
    env["NUVEC_NUM_THREADS"] = str(args.threads)
    torch_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    torch_env["PYTHONPATH"] = TORCH_PATH
    nuvec, torch = {}, {}

    def keep_best(best, rows):
        for name, ms in rows.items():
            best[name] = min(ms, best.get(name, ms))
    for round_index in range(args.rounds):
        print("round %d: timing nuvec ..." % (round_index + 1), file=sys.stderr)
        keep_best(nuvec, parse(subprocess.run([args.bench, "--reps", str(args.reps)], check=True,
                                              capture_output=True, text=True, env=env).stdout.splitlines()))
        print("round %d: timing torch ..." % (round_index + 1), file=sys.stderr)
        keep_best(torch, parse(subprocess.run(
            [TORCH_PYTHON, __file__, "--torch-worker", str(args.torch_threads), str(args.reps)], check=True,
            capture_output=True, text=True, env=torch_env).stdout.splitlines()))
    header = ["model", "nuvec ms", "torch ms", "ratio", "per epoch / throughput (nuvec vs torch)"]

    def extra(name):
        if name.startswith("cnn"):
            return "epoch %.1f s vs %.1f s" % (nuvec[name] * 938 / 1e3, torch[name] * 938 / 1e3)
        if name.startswith("llama"):
            return "%.0f vs %.0f tokens/s" % (4096e3 / nuvec[name], 4096e3 / torch[name])
        return ""
    table = [[name, "%.2f" % nuvec[name], "%.2f" % torch[name], "%.2f" % (nuvec[name] / torch[name]), extra(name)]
             for name in nuvec]
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
