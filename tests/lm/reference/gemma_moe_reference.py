#!/usr/bin/env python3
"""Reference forward passes of gemma2, gemma3_text, gemma3 (its language model), mixtral and qwen3_moe, written out
in PyTorch from the Hugging Face definitions (transformers is not installed): reads a model folder's config.json and
safetensors (MLX-quantized weights dequantized, per-expert or stacked expert weights), runs the whole sequence in
float64 without a cache, and reports the logits at every position and a greedy continuation. The safetensors
reading, dequantization and RoPE frequencies come from llama_reference.py.

Usage: gemma_moe_reference.py JOBS.json RESULTS.json
JOBS.json is a list of {"folder": DIR, "ids": [...], "greedy": N}; RESULTS.json gets one
{"shape": [T, V], "logits": [...], "greedy": [...]} per job.
"""
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_reference as base  # noqa: E402

F = torch.nn.functional


def rope_tables(head_dim, theta, scaling, max_pos, length):
    """cos and sin (T, D) of transformers' rotary embedding with this theta and rope_scaling."""
    cfg = base.Config({"model_type": "llama", "hidden_size": head_dim, "num_hidden_layers": 0,
                       "num_attention_heads": 1, "head_dim": head_dim, "rope_theta": theta,
                       "rope_scaling": scaling, "max_position_embeddings": max_pos})
    inv, factor = cfg.rope(length)
    angles = np.outer(np.arange(length, dtype=np.float64), inv)
    angles = torch.from_numpy(np.concatenate([angles, angles], axis=-1))
    return angles.cos() * factor, angles.sin() * factor


def apply_rope(x, table):  # x (heads, T, D)
    cos, sin = table
    return x * cos + base.rotate_half(x) * sin


def gemma_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + weight)


def softcap(x, cap):
    return x if cap is None else torch.tanh(x / cap) * cap


def given_or(config, key, default):
    """transformers' default when the key is absent; None stays None."""
    return config[key] if key in config else default


class Spec:
    """What the forward pass needs from config.json, per architecture."""

    def __init__(self, config):
        self.type = config["model_type"]
        c = config
        if self.type == "gemma3":
            c = dict(config.get("text_config") or {})
            c.setdefault("model_type", "gemma3_text")
        gemma = self.type in ("gemma2", "gemma3", "gemma3_text")
        gemma3 = self.type in ("gemma3", "gemma3_text")
        self.gemma, self.gemma3 = gemma, gemma3
        self.vocab = c.get("vocab_size", 262208 if gemma3 else 256000)
        self.hidden = c.get("hidden_size", 2304)
        self.layers = c.get("num_hidden_layers", 26)
        self.heads = c.get("num_attention_heads", 8)
        self.kv_heads = c.get("num_key_value_heads") or self.heads
        self.head_dim = c.get("head_dim") or (256 if gemma else self.hidden // self.heads)
        self.eps = c.get("rms_norm_eps", 1e-6)
        self.max_pos = c.get("max_position_embeddings", 8192)
        self.tied = c.get("tie_word_embeddings", gemma)
        self.qk_norm = gemma3 or self.type == "qwen3_moe"
        self.scale = (c.get("query_pre_attn_scalar", 256) if gemma else self.head_dim) ** -0.5
        self.attn_cap = given_or(c, "attn_logit_softcapping", 50.0 if self.type == "gemma2" else None)
        self.final_cap = given_or(c, "final_logit_softcapping", 30.0 if self.type == "gemma2" else None)
        theta = c.get("rope_theta", 1e6 if gemma3 else 10000.0)
        self.global_rope = (theta, c.get("rope_scaling"))
        self.local_rope = (c.get("rope_local_base_freq", 10000.0), None) if gemma3 else self.global_rope
        window = given_or(c, "sliding_window", 4096 if gemma else None)
        n = self.layers
        if c.get("layer_types"):
            self.windows = [c["sliding_window"] if t == "sliding_attention" else None for t in c["layer_types"]]
        elif self.type == "gemma2":
            self.windows = [window if i % 2 == 0 else None for i in range(n)]
        elif gemma3:
            pattern = c.get("sliding_window_pattern", 6)
            self.windows = [window if (i + 1) % pattern else None for i in range(n)]
        elif self.type == "mixtral":
            self.windows = [c.get("sliding_window")] * n
        elif c.get("use_sliding_window"):
            first = c.get("max_window_layers", 28)
            self.windows = [c.get("sliding_window", 4096) if i >= first else None for i in range(n)]
        else:
            self.windows = [None] * n
        if self.type == "mixtral":
            self.block, self.experts = "block_sparse_moe", c.get("num_local_experts", 8)
            self.expert_names = {"gate_proj": "w1", "up_proj": "w3", "down_proj": "w2"}
            self.top_k, self.normalize = c.get("num_experts_per_tok", 2), True
            self.moe_layers = set(range(n))
        elif self.type == "qwen3_moe":
            self.block, self.experts = "mlp", c.get("num_experts", 128)
            self.expert_names = {"gate_proj": "gate_proj", "up_proj": "up_proj", "down_proj": "down_proj"}
            self.top_k, self.normalize = c.get("num_experts_per_tok", 8), c.get("norm_topk_prob", False)
            dense = set(c.get("mlp_only_layers") or [])
            step = c.get("decoder_sparse_step", 1)
            self.moe_layers = {i for i in range(n) if i not in dense and self.experts > 0 and (i + 1) % step == 0}
        else:
            self.moe_layers = set()
        act = c.get("hidden_activation") or c.get("hidden_act") or "gelu_pytorch_tanh"
        self.act = {"silu": F.silu, "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh")}[act]


def language_model_weights(W):
    """The multimodal Gemma 3's language model under the text model's names; the vision tower dropped."""
    out = {}
    for name, value in W.items():
        if name.startswith(("vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                            "model.multi_modal_projector.")):
            continue
        for old, new in (("language_model.model.", "model."), ("model.language_model.", "model."),
                         ("language_model.lm_head.", "lm_head.")):
            if name.startswith(old):
                name = new + name[len(old):]
                break
        out[name] = value
    return out


def stacked_experts(W, prefix, spec, projection):
    """(E, out, in): stacked already (mlx-lm's switch_mlp) or stacked here from Hugging Face's per-expert names."""
    stacked = prefix + "switch_mlp." + projection + ".weight"
    if stacked in W:
        return W[stacked]
    name = spec.expert_names[projection]
    return torch.stack([W[f"{prefix}experts.{e}.{name}.weight"] for e in range(spec.experts)])


def mixture(W, prefix, spec, h):
    """transformers' sparse MoE block: softmax over all experts, top k, optionally renormalized."""
    probs = (h @ W[prefix + "gate.weight"].T).softmax(-1)
    top, chosen = probs.topk(spec.top_k, dim=-1)
    if spec.normalize:
        top = top / top.sum(-1, keepdim=True)
    gate, up, down = (stacked_experts(W, prefix, spec, p) for p in ("gate_proj", "up_proj", "down_proj"))
    out = torch.zeros_like(h)
    for t in range(h.shape[0]):
        for j in range(spec.top_k):
            e = int(chosen[t, j])
            inner = spec.act(gate[e] @ h[t]) * (up[e] @ h[t])
            out[t] += top[t, j] * (down[e] @ inner)
    return out


def forward(W, spec, ids):
    T, D = len(ids), spec.head_dim

    def linear(x, name):
        y = x @ W[name + ".weight"].T
        return y + W[name + ".bias"] if name + ".bias" in W else y

    def norm(x, name):
        if spec.gemma:
            return gemma_norm(x, W[name + ".weight"], spec.eps)
        return base.rms_norm(x, W[name + ".weight"], spec.eps)

    tables = {kind: rope_tables(D, theta, scaling, spec.max_pos, T)
              for kind, (theta, scaling) in (("global", spec.global_rope), ("local", spec.local_rope))}
    x = W["model.embed_tokens.weight"][torch.tensor(ids)]
    if spec.gemma:
        x = x * math.sqrt(spec.hidden)
    positions = torch.arange(T)
    for i in range(spec.layers):
        p = f"model.layers.{i}."
        h = norm(x, p + "input_layernorm")
        q, k, v = (linear(h, p + "self_attn." + n) for n in ("q_proj", "k_proj", "v_proj"))
        q, k = q.view(T, spec.heads, D), k.view(T, spec.kv_heads, D)
        v = v.view(T, spec.kv_heads, D).transpose(0, 1)
        if spec.qk_norm:
            q, k = norm(q, p + "self_attn.q_norm"), norm(k, p + "self_attn.k_norm")
        table = tables["local" if spec.windows[i] is not None else "global"]
        q, k = apply_rope(q.transpose(0, 1), table), apply_rope(k.transpose(0, 1), table)
        groups = spec.heads // spec.kv_heads
        k, v = k.repeat_interleave(groups, dim=0), v.repeat_interleave(groups, dim=0)
        scores = softcap(q @ k.transpose(-1, -2) * spec.scale, spec.attn_cap)
        allowed = positions[None, :] <= positions[:, None]
        if spec.windows[i] is not None:
            allowed &= positions[:, None] - positions[None, :] < spec.windows[i]
        scores = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        attended = linear((scores @ v).transpose(0, 1).reshape(T, spec.heads * D), p + "self_attn.o_proj")
        if spec.gemma:
            x = x + norm(attended, p + "post_attention_layernorm")
            h = norm(x, p + "pre_feedforward_layernorm")
        else:
            x = x + attended
            h = norm(x, p + "post_attention_layernorm")
        if i in spec.moe_layers:
            out = mixture(W, p + spec.block + ".", spec, h)
        else:
            out = linear(spec.act(linear(h, p + "mlp.gate_proj")) * linear(h, p + "mlp.up_proj"), p + "mlp.down_proj")
        x = x + (norm(out, p + "post_feedforward_layernorm") if spec.gemma else out)
    x = norm(x, "model.norm")
    head = W["lm_head.weight"] if "lm_head.weight" in W and not spec.tied else W["model.embed_tokens.weight"]
    return softcap(x @ head.T, spec.final_cap)


def run(job):
    with open(os.path.join(job["folder"], "config.json")) as f:
        config = json.load(f)
    spec = Spec(config)
    W = base.float_weights(job["folder"], config)
    if spec.type == "gemma3":
        W = language_model_weights(W)
    ids = list(job["ids"])
    logits = forward(W, spec, ids)
    greedy = []
    for _ in range(job.get("greedy", 0)):
        greedy.append(int(forward(W, spec, ids + greedy)[-1].argmax()))
    return {"shape": list(logits.shape), "logits": logits.flatten().tolist(), "greedy": greedy}


if __name__ == "__main__":
    base.main(run)
