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


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_make_sampler_greedy_and_top_k_one_take_the_argmax():
    rng = np.random.default_rng(3)
    logprobs = np.log(softmax(rng.normal(size=(4, 50)))).astype(np.float32)
    greedy = lm.make_sampler()
    assert np.array_equal(np.array(greedy(mx.array(logprobs))), logprobs.argmax(-1))
    assert greedy(mx.array(logprobs[1])).item() == logprobs[1].argmax()  # one row (V) gives one token
    assert np.array_equal(np.array(lm.make_sampler(temp=1.5, top_k=1)(mx.array(logprobs))), logprobs.argmax(-1))
    with pytest.raises(ValueError, match="XTC"):
        lm.make_sampler(temp=1.0, xtc_probability=0.5)
    with pytest.raises(ValueError, match="min_p"):
        lm.make_sampler(temp=1.0, min_p=2.0)


def test_sampler_draws_follow_the_filtered_softmax():
    # References: NumPy's softmax at the temperature over the tokens each filter keeps.
    logits = np.array([2.0, 1.5, 1.0, 0.0, -1.0, -3.0], dtype=np.float32)
    batch = mx.array(np.tile(logits, (4000, 1)))
    tokens = np.array(lm.make_sampler(temp=0.8, top_k=3)(batch))
    kept = np.argsort(-logits)[:3]
    assert set(np.unique(tokens)) <= set(kept)
    frequencies = np.array([(tokens == k).mean() for k in kept])
    np.testing.assert_allclose(frequencies, softmax(logits[kept] / 0.8), atol=0.03)

    probs = softmax(logits.astype(np.float64))
    tokens = np.array(lm.make_sampler(temp=1.0, min_p=0.3)(batch))
    assert set(np.unique(tokens)) <= set(np.nonzero(probs >= 0.3 * probs.max())[0])

    order = np.argsort(-probs)
    kept = order[: np.searchsorted(np.cumsum(probs[order]), 0.7) + 1]  # the most probable tokens up to mass 0.7
    tokens = np.array(lm.make_sampler(temp=1.0, top_p=0.7)(batch))
    assert set(np.unique(tokens)) == set(kept)


def test_logits_processors_against_numpy():
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(2, 40)).astype(np.float32)
    tokens = np.array([3, 7, 7, 12, 30, 3], dtype=np.int32)
    bias, penalty = lm.make_logits_processors(logit_bias={5: 2.5, 7: -1.0}, repetition_penalty=1.3,
                                              repetition_context_size=4)
    expected = logits.copy()
    expected[:, 5] += 2.5
    expected[:, 7] -= 1.0
    np.testing.assert_allclose(np.array(bias(mx.array(tokens), mx.array(logits))), expected, rtol=1e-6)
    # CTRL's penalty on the last 4 ids: positive logits divided by it, negative ones multiplied.
    expected = logits.copy()
    for t in set(tokens[-4:].tolist()):
        expected[:, t] = np.where(expected[:, t] > 0, expected[:, t] / 1.3, expected[:, t] * 1.3)
    np.testing.assert_allclose(np.array(penalty(mx.array(tokens), mx.array(logits))), expected, rtol=1e-6)
    np.testing.assert_allclose(np.array(penalty(mx.array(tokens), mx.array(logits[0]))), expected[0], rtol=1e-6)
    assert lm.make_logits_processors() == []


def test_generation_takes_samplers_and_logits_processors(folder):
    model, tokenizer = lm.load(folder)
    prompt = [1, 5, 17, 33, 9]
    greedy = [r.token for r in lm.stream_generate(model, tokenizer, prompt, max_tokens=6)]
    sampled = lm.stream_generate(model, tokenizer, prompt, max_tokens=6, sampler=lm.make_sampler(temp=0.0))
    assert [r.token for r in sampled] == greedy
    forced = lm.stream_generate(model, tokenizer, prompt, max_tokens=6,
                                logits_processors=lm.make_logits_processors(logit_bias={40: 100.0}))
    assert [r.token for r in forced] == [40] * 6
    text = lm.generate(model, tokenizer, prompt, max_tokens=4, sampler=lm.make_sampler(temp=0.7, top_k=5),
                       logits_processors=lm.make_logits_processors(repetition_penalty=1.2))
    assert isinstance(text, str)



def test_generation_calls_python_samplers_and_processors_each_step(folder):
    model, tokenizer = lm.load(folder)
    prompt = [1, 5, 17, 33, 9]
    greedy = list(lm.stream_generate(model, tokenizer, prompt, max_tokens=6))
    # mlx_lm's idioms: a lambda sampler on log-probabilities, a processor on the ids so far and the logits.
    argmax = lm.stream_generate(model, tokenizer, prompt, max_tokens=6, sampler=lambda lp: mx.argmax(lp, -1))
    assert [r.token for r in argmax] == [r.token for r in greedy]
    seen = []

    def ban_greedy_first(tokens, logits):
        seen.append(tokens.tolist())
        return logits - 1e30 * (mx.arange(logits.shape[-1]) == greedy[0].token)

    banned = list(lm.stream_generate(model, tokenizer, prompt, max_tokens=4, logits_processors=[ban_greedy_first]))
    biased = list(lm.stream_generate(model, tokenizer, prompt, max_tokens=4, logits_processors=lm.make_logits_processors(
        logit_bias={greedy[0].token: -1e30})))
    assert [r.token for r in banned] == [r.token for r in biased]
    assert greedy[0].token not in [r.token for r in banned]
    # Each call sees the prompt and the tokens generated before it; reported log-probabilities stay the model's.
    assert seen == [prompt + [r.token for r in banned[:i]] for i in range(4)]
    assert [r.logprob for r in banned] == pytest.approx([r.logprob for r in biased])
    # A processor's or a sampler's exception reaches the caller; so does a wrong return.

    def broken(tokens, logits):
        raise ValueError("processor broke")

    with pytest.raises(ValueError, match="processor broke"):
        lm.generate(model, tokenizer, prompt, max_tokens=2, logits_processors=[broken])
    with pytest.raises(TypeError, match="a sampler must return a nuvec array; got list"):
        lm.generate(model, tokenizer, prompt, max_tokens=2, sampler=lambda lp: [3])
    with pytest.raises(ValueError, match="outside the vocabulary of 64"):
        lm.generate(model, tokenizer, prompt, max_tokens=2, sampler=lambda lp: mx.array(64))
    with pytest.raises(TypeError, match="must be callables"):
        lm.generate(model, tokenizer, prompt, max_tokens=2, logits_processors=[3])


CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}{{ 'w10' if m['role'] == 'user' else 'w11' }} "
                 "{{ m['content'] }} {% endfor %}{% if flag %}w12 {% endif %}{% if add_generation_prompt %}w11 "
                 "{% endif %}")


@pytest.fixture(scope="module")
def chat_folder(folder, tmp_path_factory):
    """The tiny model with a chat template, and a tokenizer that adds BOS to what it encodes."""
    path = tmp_path_factory.mktemp("tiny_chat_llama")
    for name in ("model.safetensors", "config.json"):
        (path / name).write_bytes((folder / name).read_bytes())
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    tokenizer["post_processor"] = {
        "type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                 {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    (path / "tokenizer.json").write_text(json.dumps(tokenizer))
    (path / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<s>", "eos_token": "</s>", "chat_template": CHAT_TEMPLATE}))
    return path


def test_tokenizer_wrapper_has_mlx_lms_surface(chat_folder):
    _, tokenizer = lm.load(chat_folder)
    assert (tokenizer.bos_token, tokenizer.bos_token_id) == ("<s>", 1)
    assert (tokenizer.eos_token, tokenizer.eos_token_id) == ("</s>", 2)
    assert 2 in tokenizer.eos_token_ids
    assert tokenizer.vocab_size == 64
    assert tokenizer.convert_tokens_to_ids("w5") == 5
    assert tokenizer.convert_tokens_to_ids(["w5", "nothing"]) == [5, None]
    assert tokenizer.convert_ids_to_tokens([5, 6]) == ["w5", "w6"]
    assert tokenizer.token_bytes(7) == b"w7"
    assert tokenizer.chat_template == CHAT_TEMPLATE
    assert tokenizer.encode("w5") == [1, 5]


def test_apply_chat_template_as_transformers(chat_folder):
    _, tokenizer = lm.load(chat_folder)
    messages = [{"role": "user", "content": "w5 w6"}, {"role": "assistant", "content": "w7"}]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    assert text == "<s>w10 w5 w6 w11 w7 "
    assert tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False).endswith("w7 w11 ")
    assert tokenizer.apply_chat_template(messages, tokenize=False, flag=True).endswith("w7 w12 ")
    # Token ids by default, without a second BOS.
    ids = tokenizer.apply_chat_template(messages)
    assert ids == [1, 10, 5, 6, 11, 7]
    assert tokenizer.apply_chat_template(messages, return_dict=True) == {"input_ids": ids, "attention_mask": [1] * 6}
    # A template given as its source, and the final message continued instead of closed.
    assert tokenizer.apply_chat_template(messages, chat_template="{{ messages[0]['content'] }}", tokenize=False) \
        == "w5 w6"
    assert tokenizer.apply_chat_template(messages, continue_final_message=True, tokenize=False) \
        == "<s>w10 w5 w6 w11 w7"
    with pytest.raises(ValueError, match="not compatible"):
        tokenizer.apply_chat_template(messages, continue_final_message=True, add_generation_prompt=True)
    with pytest.raises((ValueError, RuntimeError), match="line 1"):
        tokenizer.apply_chat_template(messages, chat_template="{% if %}")


def test_generate_on_a_chat_prompt_adds_no_second_bos(chat_folder):
    model, tokenizer = lm.load(chat_folder)
    text = tokenizer.apply_chat_template([{"role": "user", "content": "w5"}], add_generation_prompt=True,
                                         tokenize=False)
    responses = list(lm.stream_generate(model, tokenizer, text, max_tokens=2))
    assert responses[-1].prompt_tokens == len(tokenizer.apply_chat_template([{"role": "user", "content": "w5"}],
                                                                            add_generation_prompt=True))
    assert list(lm.stream_generate(model, tokenizer, "w5 w6", max_tokens=1))[-1].prompt_tokens == 3  # BOS added


def test_streaming_detokenizer_as_mlx_lms(folder):
    _, tokenizer = lm.load(folder)
    detokenizer = tokenizer.detokenizer
    detokenizer.reset()
    ids = [5, 17, 33, 9]
    segments = []
    for token in ids:
        detokenizer.add_token(token)
        segments.append(detokenizer.last_segment)
    detokenizer.finalize()
    segments.append(detokenizer.last_segment)
    assert "".join(segments) == detokenizer.text == tokenizer.decode(ids)
    assert detokenizer.tokens == ids
    detokenizer.reset()
    assert detokenizer.text == "" and detokenizer.tokens == []
