#!/usr/bin/env python3
"""Reference forward passes of the dense Llama-family models (llama, mistral, qwen2, qwen3, phi3), written out in
PyTorch from the Hugging Face definitions (transformers is not installed): reads a model folder's config.json and
safetensors (MLX-quantized weights dequantized here), runs the whole sequence in float64 without a cache, and
reports the logits at every position and a greedy continuation.

Usage: llama_reference.py JOBS.json RESULTS.json
JOBS.json is a list of {"folder": DIR, "ids": [...], "greedy": N}; RESULTS.json gets one
{"shape": [T, V], "logits": [...], "greedy": [...]} per job.
"""
import glob
import json
import math
import os
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "U32": np.uint32, "I32": np.int32}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, stop = info["data_offsets"]
        raw = data[base + start:base + stop]
        if info["dtype"] == "BF16":
            array = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            array = np.frombuffer(raw, DTYPES[info["dtype"]])
        tensors[name] = array.reshape(info["shape"])
    return tensors


def read_weights(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
        files = [os.path.join(folder, name) for name in files]
    else:
        files = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
    weights = {}
    for path in files:
        weights.update(read_safetensors(path))
    return weights


def dequantize(packed, scales, biases, group_size, bits):
    """MLX's affine format: values packed lowest bits first into uint32 words, scale * q + bias per group."""
    stream = np.unpackbits(packed.astype("<u4").view(np.uint8), axis=-1, bitorder="little")
    count = stream.shape[-1] // bits
    q = (stream.reshape(*stream.shape[:-1], count, bits).astype(np.int64) << np.arange(bits)).sum(-1)
    scale = np.repeat(scales.astype(np.float64), group_size, axis=-1)
    bias = np.repeat(biases.astype(np.float64), group_size, axis=-1)
    return q * scale + bias


def float_weights(folder, config):
    """Every weight as a float64 tensor, quantized ones dequantized with config.json's quantization."""
    raw = read_weights(folder)
    quantization = config.get("quantization") or {}
    out = {}
    for name, value in raw.items():
        if name.endswith(".scales") or name.endswith(".biases"):
            continue
        module = name[:-len(".weight")] if name.endswith(".weight") else None
        if module is not None and module + ".scales" in raw:
            params = quantization.get(module)
            params = params if isinstance(params, dict) else {}
            group_size = params.get("group_size", quantization["group_size"])
            bits = params.get("bits", quantization["bits"])
            value = dequantize(value, raw[module + ".scales"], raw[module + ".biases"], group_size, bits)
        out[name] = torch.from_numpy(np.array(value, dtype=np.float64))
    return out


class Config:
    def __init__(self, c):
        self.type = c["model_type"]
        self.hidden = c["hidden_size"]
        self.layers = c["num_hidden_layers"]
        self.heads = c["num_attention_heads"]
        self.kv_heads = c.get("num_key_value_heads") or self.heads
        default_head_dim = 128 if self.type == "qwen3" else self.hidden // self.heads
        self.head_dim = c.get("head_dim") or default_head_dim
        self.eps = c.get("rms_norm_eps", 1e-6)
        self.theta = c.get("rope_theta", 10000.0)
        self.rope_dim = int(self.head_dim * c.get("partial_rotary_factor", 1.0))
        self.max_pos = c.get("max_position_embeddings")
        self.scaling = c.get("rope_scaling")
        self.original_max_pos = c.get("original_max_position_embeddings")
        self.act = {"silu": torch.nn.functional.silu}[c.get("hidden_act", "silu")]
        self.windows = self.layer_windows(c)

    def layer_windows(self, c):
        n = self.layers
        if c.get("layer_types"):
            return [c["sliding_window"] if t == "sliding_attention" else None for t in c["layer_types"]]
        if self.type == "mistral":
            return [c.get("sliding_window", 4096)] * n
        if self.type == "phi3":
            return [c.get("sliding_window")] * n
        if self.type in ("qwen2", "qwen3") and c.get("use_sliding_window"):
            first = c.get("max_window_layers", 28)
            return [c.get("sliding_window", 4096) if i >= first else None for i in range(n)]
        return [None] * n

    def rope(self, seq_len):
        """transformers' inverse frequencies and attention factor for a sequence of seq_len positions."""
        dim, base = self.rope_dim, self.theta
        exponents = np.arange(0, dim, 2, dtype=np.float64) / dim
        inv = 1.0 / base ** exponents
        s = self.scaling
        kind = (s or {}).get("rope_type", (s or {}).get("type", "default"))
        if kind == "default":
            return inv, 1.0
        if kind == "linear":
            return inv / s["factor"], 1.0
        if kind == "dynamic":
            original = s.get("original_max_position_embeddings") or self.max_pos
            if seq_len > original:
                f = s["factor"]
                base = base * ((f * seq_len / original) - (f - 1)) ** (dim / (dim - 2))
                inv = 1.0 / base ** exponents
            return inv, 1.0
        if kind == "llama3":
            f = s["factor"]
            low, high = s.get("low_freq_factor", 1.0), s.get("high_freq_factor", 4.0)
            old = s.get("original_max_position_embeddings", 8192)
            wavelen = 2 * math.pi / inv
            out = np.where(wavelen > old / low, inv / f, inv)
            smooth = (old / wavelen - low) / (high - low)
            smoothed = (1 - smooth) * out / f + smooth * out
            medium = (wavelen >= old / high) & (wavelen <= old / low)
            return np.where(medium, smoothed, out), 1.0
        if kind == "yarn":
            f = s["factor"]
            original = s.get("original_max_position_embeddings") or self.max_pos
            fast, slow = s.get("beta_fast", 32), s.get("beta_slow", 1)

            def correction(rotations):
                return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

            low, high = math.floor(correction(fast)), math.ceil(correction(slow))
            low, high = max(low, 0), min(high, dim - 1)
            if low == high:
                high += 0.001
            ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
            extrapolation = 1 - ramp
            inv = inv / f * (1 - extrapolation) + inv * extrapolation

            def mscale(scale, m=1.0):
                return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

            factor = s.get("attention_factor")
            if factor is None:
                if "mscale" in s and "mscale_all_dim" in s:
                    factor = mscale(f, s["mscale"]) / mscale(f, s["mscale_all_dim"])
                else:
                    factor = mscale(f)
            return inv, factor
        if kind in ("longrope", "su"):
            original = self.original_max_pos or s.get("original_max_position_embeddings")
            if original:
                f = self.max_pos / original
            else:
                original, f = self.max_pos, s.get("factor", 1.0)
            factor = s.get("attention_factor")
            if factor is None:
                factor = 1.0 if f <= 1 else math.sqrt(1 + math.log(f) / math.log(original))
            ext = np.array(s["long_factor"] if seq_len > original else s["short_factor"], dtype=np.float64)
            return 1.0 / (ext * base ** exponents), factor
        raise ValueError("unknown rope type " + kind)


def rms_norm(x, weight, eps):
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def forward(W, cfg, ids):
    T = len(ids)
    D = cfg.head_dim

    def linear(x, name):
        y = x @ W[name + ".weight"].T
        return y + W[name + ".bias"] if name + ".bias" in W else y

    inv, attention_factor = cfg.rope(T)
    angles = np.outer(np.arange(T, dtype=np.float64), inv)
    angles = torch.from_numpy(np.concatenate([angles, angles], axis=-1))
    cos, sin = angles.cos() * attention_factor, angles.sin() * attention_factor

    def rope(x):  # (heads, T, D)
        r = cfg.rope_dim
        rotated = x[..., :r] * cos + rotate_half(x[..., :r]) * sin
        return torch.cat((rotated, x[..., r:]), dim=-1)

    x = W["model.embed_tokens.weight"][torch.tensor(ids)]
    positions = torch.arange(T)
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        h = rms_norm(x, W[p + "input_layernorm.weight"], cfg.eps)
        if cfg.type == "phi3":
            qkv = linear(h, p + "self_attn.qkv_proj")
            q, k, v = torch.split(qkv, [cfg.heads * D, cfg.kv_heads * D, cfg.kv_heads * D], dim=-1)
        else:
            q, k, v = (linear(h, p + "self_attn." + n) for n in ("q_proj", "k_proj", "v_proj"))
        q = q.view(T, cfg.heads, D)
        k = k.view(T, cfg.kv_heads, D)
        v = v.view(T, cfg.kv_heads, D).transpose(0, 1)
        if cfg.type == "qwen3":
            q = rms_norm(q, W[p + "self_attn.q_norm.weight"], cfg.eps)
            k = rms_norm(k, W[p + "self_attn.k_norm.weight"], cfg.eps)
        q, k = rope(q.transpose(0, 1)), rope(k.transpose(0, 1))
        groups = cfg.heads // cfg.kv_heads
        k, v = k.repeat_interleave(groups, dim=0), v.repeat_interleave(groups, dim=0)
        scores = q @ k.transpose(-1, -2) / math.sqrt(D)
        allowed = positions[None, :] <= positions[:, None]
        if cfg.windows[i] is not None:
            allowed &= positions[:, None] - positions[None, :] < cfg.windows[i]
        scores = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        attended = (scores @ v).transpose(0, 1).reshape(T, cfg.heads * D)
        x = x + linear(attended, p + "self_attn.o_proj")
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], cfg.eps)
        if cfg.type == "phi3":
            gate, up = linear(h, p + "mlp.gate_up_proj").chunk(2, dim=-1)
        else:
            gate, up = linear(h, p + "mlp.gate_proj"), linear(h, p + "mlp.up_proj")
        x = x + linear(cfg.act(gate) * up, p + "mlp.down_proj")
    x = rms_norm(x, W["model.norm.weight"], cfg.eps)
    head = W["lm_head.weight"] if "lm_head.weight" in W else W["model.embed_tokens.weight"]
    return x @ head.T


def run(job):
    with open(os.path.join(job["folder"], "config.json")) as f:
        raw_config = json.load(f)
    cfg = Config(raw_config)
    W = float_weights(job["folder"], raw_config)
    ids = list(job["ids"])
    logits = forward(W, cfg, ids)
    greedy = []
    for _ in range(job.get("greedy", 0)):
        step = forward(W, cfg, ids + greedy)[-1]
        greedy.append(int(step.argmax()))
    return {"shape": list(logits.shape), "logits": logits.flatten().tolist(), "greedy": greedy}


def main(run_job):
    """Reads the jobs file (argv[1]), runs each job, writes the results file (argv[2])."""
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    with torch.no_grad():
        results = [run_job(job) for job in jobs]
    with open(sys.argv[2], "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(run)
