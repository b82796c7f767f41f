"""nuvec.lm (mlx_lm's load, generate, stream_generate) on a tiny random Llama folder written here as tests/lm's
write_hf_folder does; greedy tokens checked against tests/lm/reference/llama_reference.py (PyTorch, float64)."""

import json
import pathlib
import subprocess

import numpy as np
import pytest

import nuvec.core as mx
import nuvec.lm as lm

REFERENCE = pathlib.Path(__file__).parent.parent / "lm" / "reference" / "llama_reference.py"
CONFIG = {
    "model_type": "llama", "vocab_size": 64, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0, "max_position_embeddings": 256, "tie_word_embeddings": False, "hidden_act": "silu",
    "bos_token_id": 1, "eos_token_id": 2,
}


def weight_shapes(c):
    hidden, inter, head_dim = c["hidden_size"], c["intermediate_size"], c["head_dim"]
    shapes = {"model.embed_tokens.weight": (c["vocab_size"], hidden), "model.norm.weight": (hidden,),
              "lm_head.weight": (c["vocab_size"], hidden)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": (hidden,), p + "post_attention_layernorm.weight": (hidden,),
            p + "self_attn.q_proj.weight": (c["num_attention_heads"] * head_dim, hidden),
            p + "self_attn.k_proj.weight": (c["num_key_value_heads"] * head_dim, hidden),
            p + "self_attn.v_proj.weight": (c["num_key_value_heads"] * head_dim, hidden),
            p + "self_attn.o_proj.weight": (hidden, c["num_attention_heads"] * head_dim),
            p + "mlp.gate_proj.weight": (inter, hidden), p + "mlp.up_proj.weight": (inter, hidden),
            p + "mlp.down_proj.weight": (hidden, inter),
        })
    return shapes


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_llama")
    rng = np.random.default_rng(7)
    weights = {}
    for name, shape in weight_shapes(CONFIG).items():
        norm = "norm" in name
        scale = 0.1 if norm or "q_proj" in name or "k_proj" in name else 0.05
        weights[name] = mx.array(rng.normal(1.0 if norm else 0.0, scale, shape).astype(np.float32))
    mx.save_safetensors(str(path / "model.safetensors"), weights)
    (path / "config.json").write_text(json.dumps(CONFIG))
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"w{i}": i for i in range(3, 64)}}
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i, t in enumerate(["<unk>", "<s>", "</s>"])]
    (path / "tokenizer.json").write_text(json.dumps({
        "version": "1.0", "added_tokens": special, "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}}))
    (path / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>"}))
    return path


def reference_greedy(folder, ids, steps, tmp_path):
    jobs, results = tmp_path / "jobs.json", tmp_path / "results.json"
    jobs.write_text(json.dumps([{"folder": str(folder), "ids": ids, "greedy": steps}]))
    subprocess.run(["/usr/bin/python3", str(REFERENCE), str(jobs), str(results)], check=True)
    return json.loads(results.read_text())[0]["greedy"]


def test_load_gives_model_and_tokenizer(folder):
    model, tokenizer = lm.load(folder)
    assert model.model_type == "llama"
    assert tokenizer.eos_token_id == 2
    assert tokenizer.encode("w5 w7 w9", add_special_tokens=False) == [5, 7, 9]
    assert tokenizer.decode([5, 7], skip_special_tokens=True).split() == ["w5", "w7"]


def test_stream_generate_matches_the_pytorch_greedy_continuation(folder, tmp_path):
    model, tokenizer = lm.load(folder)
    prompt = [1, 5, 17, 33, 9]
    responses = list(lm.stream_generate(model, tokenizer, prompt, max_tokens=8))
    tokens = [r.token for r in responses]
    expected = reference_greedy(folder, prompt, 8, tmp_path)
    if 2 in expected:  # generation stops at the EOS id, which it reports
        expected = expected[: expected.index(2) + 1]
    assert tokens == expected
    assert responses[-1].finish_reason in ("stop", "length")
    assert all(r.finish_reason is None for r in responses[:-1])
    assert responses[-1].prompt_tokens == len(prompt)
    assert responses[-1].generation_tokens == len(tokens)


def test_generate_returns_the_streamed_text(folder):
    model, tokenizer = lm.load(folder)
    text = lm.generate(model, tokenizer, "w5 w17 w33", max_tokens=6)
    streamed = "".join(r.text for r in lm.stream_generate(model, tokenizer, "w5 w17 w33", max_tokens=6))
    assert text == streamed


def test_closing_the_stream_stops_generation(folder):
    model, tokenizer = lm.load(folder)
    stream = lm.stream_generate(model, tokenizer, [1, 5, 6], max_tokens=200)
    first = next(stream)
    stream.close()
    assert first.generation_tokens == 1


def test_errors_reach_python(folder):
    model, tokenizer = lm.load(folder)
    with pytest.raises(ValueError):
        list(lm.stream_generate(model, tokenizer, [], max_tokens=2))
    with pytest.raises((ValueError, RuntimeError)):
        lm.load(folder / "missing")
