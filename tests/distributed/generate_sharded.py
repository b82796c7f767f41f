#!/usr/bin/python3
"""nuvec generate under nuvec launch -n N shards the model across the ranks (tensor parallel, or with --pipeline
its layers) and decodes what one process decodes: a tiny random Llama folder (written here with NumPy: config.json, model.safetensors, a word-level
tokenizer.json) is run once alone and once on N ranks with --json; the generated ids must be equal, the
log-probabilities close (the ranks sum partial products in another order), and only rank 0 prints.

usage: generate_sharded.py NUVEC RANKS WORK_DIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

nuvec, ranks, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
model = os.path.join(work, "model")
os.makedirs(model)

hidden, heads, kv_heads, head_dim, ffn, vocab, layers = 64, 8, 4, 16, 128, 64, 2
config = {"model_type": "llama", "vocab_size": vocab, "hidden_size": hidden, "num_hidden_layers": layers,
          "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
          "intermediate_size": ffn, "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
          "hidden_act": "silu", "tie_word_embeddings": False}
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


def special(i, content):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


words = {"<unk>": 0, "<s>": 1, "</s>": 2}
words.update({"w%d" % i: i for i in range(3, vocab)})
tokenizer = {"version": "1.0", "added_tokens": [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
             "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None,
             "decoder": None, "model": {"type": "WordLevel", "vocab": words, "unk_token": "<unk>"}}
with open(os.path.join(model, "tokenizer.json"), "w") as f:
    json.dump(tokenizer, f)
with open(os.path.join(model, "tokenizer_config.json"), "w") as f:
    json.dump({"bos_token": "<s>", "eos_token": "</s>"}, f)

generate = [nuvec, "generate", "--model", model, "--prompt-ids", "5,17,33,8,41", "--max-tokens", "12", "--json"]
one = json.loads(subprocess.run(generate, check=True, capture_output=True, text=True).stdout)
# The seed gives a varied continuation that does not end early, so a wrong split would show.
assert len(set(one["generated_ids"])) > 6, one["generated_ids"]
# Tensor parallel (the default), then pipeline parallel.
for extra in [[], ["--pipeline"]]:
    launched = subprocess.run([nuvec, "launch", "-n", str(ranks), "--"] + generate + extra, check=True,
                              capture_output=True, text=True).stdout
    lines = [line for line in launched.splitlines() if "] {" in line]
    assert len(lines) == 1 and lines[0].startswith("[0] {"), "expected one JSON line, from rank 0:\n" + launched
    many = json.loads(lines[0][4:])
    assert many["generated_ids"] == one["generated_ids"], (extra, many["generated_ids"], one["generated_ids"])
    np.testing.assert_allclose(many["logprobs"], one["logprobs"], rtol=1e-4, atol=1e-4, err_msg=str(extra))
    print("%d ranks %s generated %s, as one process did" % (ranks, extra, many["generated_ids"]))
