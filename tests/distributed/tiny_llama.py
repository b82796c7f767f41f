"""A tiny random Llama folder for the multi-rank tests, written with NumPy: config.json, model.safetensors and a
word-level tokenizer.json ("<unk>", "<s>", "</s>", then words w3 ... w63). 8 attention heads over 4 key-value
heads, so 2 and 4 ranks split them evenly."""
import json
import os
import struct

import numpy as np


def special(i, content):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def write_tiny_llama(model):
    os.makedirs(model)
    hidden, heads, kv_heads, head_dim, ffn, vocab, layers = 64, 8, 4, 16, 128, 64, 2
    config = {"model_type": "llama", "vocab_size": vocab, "hidden_size": hidden, "num_hidden_layers": layers,
              "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
              "intermediate_size": ffn, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False}
    rng = np.random.default_rng(2)

    def matrix(rows, cols, scale=None):
        return rng.normal(0.0, scale if scale is not None else cols ** -0.5, (rows, cols)).astype(np.float32)

    weights = {"model.embed_tokens.weight": matrix(vocab, hidden, 1.0),
               "model.norm.weight": rng.normal(1.0, 0.1, hidden).astype(np.float32),
               # Spread logits keep greedy choices away from ties that summation order could flip.
               "lm_head.weight": matrix(vocab, hidden, 2.0)}
    for i in range(layers):
        p = "model.layers.%d." % i
        weights[p + "input_layernorm.weight"] = rng.normal(1.0, 0.1, hidden).astype(np.float32)
        weights[p + "post_attention_layernorm.weight"] = rng.normal(1.0, 0.1, hidden).astype(np.float32)
        weights[p + "self_attn.q_proj.weight"] = matrix(heads * head_dim, hidden)
        weights[p + "self_attn.k_proj.weight"] = matrix(kv_heads * head_dim, hidden)
        weights[p + "self_attn.v_proj.weight"] = matrix(kv_heads * head_dim, hidden)
        weights[p + "self_attn.o_proj.weight"] = matrix(hidden, heads * head_dim)
        weights[p + "mlp.gate_proj.weight"] = matrix(ffn, hidden)
        weights[p + "mlp.up_proj.weight"] = matrix(ffn, hidden)
        weights[p + "mlp.down_proj.weight"] = matrix(hidden, ffn)

    header, blobs, offset = {}, [], 0
    for name, value in weights.items():
        data = value.tobytes()
        header[name] = {"dtype": "F32", "shape": list(value.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header_bytes = json.dumps(header).encode()
    with open(os.path.join(model, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)) + header_bytes + b"".join(blobs))
    with open(os.path.join(model, "config.json"), "w") as f:
        json.dump(config, f)

    words = {"<unk>": 0, "<s>": 1, "</s>": 2}
    words.update({"w%d" % i: i for i in range(3, vocab)})
    tokenizer = {"version": "1.0", "added_tokens": [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
                 "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None,
                 "decoder": None, "model": {"type": "WordLevel", "vocab": words, "unk_token": "<unk>"}}
    with open(os.path.join(model, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f)
    with open(os.path.join(model, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<s>", "eos_token": "</s>"}, f)
