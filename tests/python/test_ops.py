"""nuvec.core's functions against NumPy: element-wise, reductions, layout, creation, linalg, fft, random, fast, io;
keyword arguments and defaults as MLX's, stream=, and the Python exceptions nuvec's errors become."""

import numpy as np
import pytest

import nuvec.core as mx

rng = np.random.default_rng(42)

UNARY = ["abs", "negative", "sign", "floor", "ceil", "square", "sqrt", "exp", "expm1", "log", "log2", "log10",
         "log1p", "sin", "cos", "tan", "arcsin", "arctan", "sinh", "cosh", "tanh", "arcsinh", "degrees", "radians",
         "reciprocal", "isnan", "isfinite", "logical_not"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [(5,), (2, 3, 4)])
def test_unary_against_numpy(name, shape):
    x = rng.uniform(0.1, 0.9, size=shape).astype(np.float32)
    np.testing.assert_allclose(np.array(getattr(mx, name)(mx.array(x))), getattr(np, name)(x), rtol=2e-5,
                               atol=1e-6)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
                                  "arctan2", "logaddexp"])
def test_binary_functions_against_numpy(name):
    x = rng.uniform(0.5, 2, size=(3, 1, 4)).astype(np.float32)
    y = rng.uniform(0.5, 2, size=(5, 1)).astype(np.float32)
    np.testing.assert_allclose(np.array(getattr(mx, name)(mx.array(x), mx.array(y))), getattr(np, name)(x, y),
                               rtol=2e-5)
    assert getattr(mx, name)(mx.array(x, mx.float16), 2).dtype == mx.float16


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_against_numpy(name, axis, keepdims):
    x = rng.uniform(0.5, 1.5, size=(2, 3, 4)).astype(np.float32)
    out = getattr(mx, name)(mx.array(x), axis=axis, keepdims=keepdims)
    expected = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(np.array(out), expected, rtol=1e-5)
    # The method form takes the same arguments.
    np.testing.assert_allclose(np.array(getattr(mx.array(x), name)(axis=axis, keepdims=keepdims)), expected,
                               rtol=1e-5)


def test_arg_reductions_sort_scan():
    x = rng.normal(size=(4, 6)).astype(np.float32)
    a = mx.array(x)
    assert np.array_equal(np.array(mx.argmax(a, axis=1)), np.argmax(x, axis=1))
    assert mx.argmin(a).item() == np.argmin(x)
    assert np.array_equal(np.array(mx.sort(a)), np.sort(x))
    assert np.array_equal(np.array(mx.sort(a, axis=None)), np.sort(x, axis=None))
    assert np.array_equal(np.array(mx.argsort(a, axis=0)), np.argsort(x, axis=0, kind="stable"))
    np.testing.assert_allclose(np.array(mx.cumsum(a, axis=1)), np.cumsum(x, axis=1), rtol=1e-5)
    np.testing.assert_allclose(np.array(mx.cumsum(a)), np.cumsum(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(mx.cumprod(a, axis=0, reverse=True)),
                               np.flip(np.cumprod(np.flip(x, 0), axis=0), 0), rtol=1e-5)
    np.testing.assert_allclose(np.array(mx.logsumexp(a, axis=1)), np.log(np.exp(x).sum(1)), rtol=1e-5)
    np.testing.assert_allclose(np.array(mx.softmax(a, axis=-1)), np.exp(x) / np.exp(x).sum(-1, keepdims=True),
                               rtol=1e-5)
    top = np.array(mx.topk(a, 2, axis=1))
    assert np.array_equal(np.sort(top, axis=1), np.sort(x, axis=1)[:, -2:])


def test_layout_ops():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = mx.array(x)
    checks = [
        (mx.reshape(a, (4, 6)), x.reshape(4, 6)),
        (a.reshape(6, 4), x.reshape(6, 4)),
        (mx.transpose(a, (2, 0, 1)), x.transpose(2, 0, 1)),
        (a.transpose(1, 0, 2), x.transpose(1, 0, 2)),
        (mx.swapaxes(a, 0, 2), x.swapaxes(0, 2)),
        (mx.moveaxis(a, 0, -1), np.moveaxis(x, 0, -1)),
        (mx.expand_dims(a, (0, 2)), np.expand_dims(x, (0, 2))),
        (mx.squeeze(mx.array(x[:1])), np.squeeze(x[:1])),
        (mx.flatten(a, 1), x.reshape(2, 12)),
        (mx.concatenate([a, a], axis=1), np.concatenate([x, x], axis=1)),
        (mx.stack([a, a], axis=-1), np.stack([x, x], axis=-1)),
        (mx.repeat(a, 2, axis=1), np.repeat(x, 2, axis=1)),
        (mx.tile(a, (1, 2, 1)), np.tile(x, (1, 2, 1))),
        (mx.pad(a, ((0, 0), (1, 2), (0, 1))), np.pad(x, ((0, 0), (1, 2), (0, 1)))),
        (mx.pad(a, 1, constant_values=-1), np.pad(x, 1, constant_values=-1)),
        (mx.roll(a, 2, axis=2), np.roll(x, 2, axis=2)),
        (mx.roll(a, 5), np.roll(x, 5)),
        (mx.broadcast_to(mx.array(x[0]), (5, 3, 4)), np.broadcast_to(x[0], (5, 3, 4))),
        (mx.diagonal(a, 0, 1, 2), np.diagonal(x, 0, 1, 2)),
        (mx.diag(mx.array([1.0, 2.0])), np.diag([1.0, 2.0])),
        (mx.trace(mx.array(x[0])), np.trace(x[0])),
        (mx.take(a, mx.array([2, 0]), axis=2), np.take(x, [2, 0], axis=2)),
        (mx.take(a, mx.array([5, 7])), np.take(x, [5, 7])),
        (mx.take_along_axis(a, mx.array(np.argsort(x, axis=2)), axis=2),
         np.take_along_axis(x, np.argsort(x, axis=2), axis=2)),
        (mx.where(a > 10, a, 0.5), np.where(x > 10, x, 0.5)),
        (mx.clip(a, 3, 9), np.clip(x, 3, 9)),
        (mx.tril(mx.array(x[0])), np.tril(x[0])),
        (mx.triu(mx.array(x[0]), 1), np.triu(x[0], 1)),
    ]
    for out, expected in checks:
        assert out.shape == expected.shape
        np.testing.assert_allclose(np.array(out), expected)
    parts = mx.split(a, 3, axis=1)
    assert [p.shape for p in parts] == [(2, 1, 4)] * 3
    parts = mx.split(a, [1, 3], axis=2)
    assert [p.shape for p in parts] == [(2, 3, 1), (2, 3, 2), (2, 3, 1)]


def test_creation_ops():
    assert mx.arange(5).dtype == mx.int32 and mx.arange(5).tolist() == list(range(5))
    np.testing.assert_allclose(np.array(mx.arange(0.0, 1.0, 0.25)), np.arange(0.0, 1.0, 0.25))
    assert mx.arange(1, 10, 3).tolist() == [1, 4, 7]
    np.testing.assert_allclose(np.array(mx.linspace(0, 1, 5)), np.linspace(0, 1, 5))
    assert mx.zeros((2, 3)).dtype == mx.float32 and mx.ones(4, mx.int8).tolist() == [1, 1, 1, 1]
    assert mx.full((2, 2), 3).dtype == mx.int32 and mx.full((2,), 2.5).tolist() == [2.5, 2.5]
    np.testing.assert_array_equal(np.array(mx.eye(3, 4, k=1)), np.eye(3, 4, k=1))
    np.testing.assert_array_equal(np.array(mx.tri(3)), np.tri(3))
    np.testing.assert_array_equal(np.array(mx.identity(2)), np.identity(2))
    x, y = mx.meshgrid(mx.arange(3), mx.arange(2))
    ex, ey = np.meshgrid(np.arange(3), np.arange(2))
    assert np.array_equal(np.array(x), ex) and np.array_equal(np.array(y), ey)
    assert mx.zeros_like(mx.ones((2,), mx.int16)).dtype == mx.int16


def test_products_and_conv():
    x = rng.normal(size=(3, 4)).astype(np.float32)
    y = rng.normal(size=(4, 5)).astype(np.float32)
    np.testing.assert_allclose(np.array(mx.matmul(mx.array(x), mx.array(y))), x @ y, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(mx.tensordot(mx.array(x), mx.array(y), axes=1)), np.tensordot(x, y, 1),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(mx.einsum("ij,jk->ik", mx.array(x), mx.array(y))), x @ y, rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(np.array(mx.outer(mx.array(x[0]), mx.array(y[0]))), np.outer(x[0], y[0]), rtol=1e-5)
    c = rng.normal(size=(3, 5)).astype(np.float32)
    np.testing.assert_allclose(np.array(mx.addmm(mx.array(c), mx.array(x), mx.array(y), alpha=2.0, beta=0.5)),
                               2 * (x @ y) + 0.5 * c, rtol=1e-4, atol=1e-5)
    # conv1d against a direct correlation: input (N, W, C_in), weight (C_out, K, C_in), channels last as MLX.
    inp = rng.normal(size=(1, 8, 2)).astype(np.float32)
    w = rng.normal(size=(3, 3, 2)).astype(np.float32)
    expected = np.stack([np.einsum("kc,okc->o", inp[0, i:i + 3], w) for i in range(6)])[None]
    np.testing.assert_allclose(np.array(mx.conv1d(mx.array(inp), mx.array(w))), expected, rtol=1e-4, atol=1e-5)


def test_linalg_against_numpy():
    a = rng.normal(size=(4, 4)).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
    b = rng.normal(size=(4,)).astype(np.float32)
    m = mx.array(a)
    np.testing.assert_allclose(np.array(mx.linalg.inv(m)), np.linalg.inv(a), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(mx.linalg.solve(m, mx.array(b))), np.linalg.solve(a, b), rtol=1e-4)
    np.testing.assert_allclose(mx.linalg.norm(m).item(), np.linalg.norm(a), rtol=1e-5)
    np.testing.assert_allclose(mx.linalg.norm(m, ord="fro").item(), np.linalg.norm(a, "fro"), rtol=1e-5)
    np.testing.assert_allclose(np.array(mx.linalg.norm(m, ord=1, axis=1)), np.linalg.norm(a, 1, axis=1), rtol=1e-5)
    q, r = mx.linalg.qr(m)
    np.testing.assert_allclose(np.array(q @ r), a, rtol=1e-4, atol=1e-4)
    u, s, vt = mx.linalg.svd(m)
    np.testing.assert_allclose(np.array(s), np.linalg.svd(a, compute_uv=False), rtol=1e-4)
    spd = a @ a.T
    np.testing.assert_allclose(np.array(mx.linalg.cholesky(mx.array(spd))), np.linalg.cholesky(spd), rtol=1e-3,
                               atol=1e-3)
    w, _ = mx.linalg.eigh(mx.array(spd))
    np.testing.assert_allclose(np.array(w), np.linalg.eigvalsh(spd), rtol=1e-3)


def test_fft_against_numpy():
    x = rng.normal(size=(4, 8)).astype(np.float32)
    a = mx.array(x)
    np.testing.assert_allclose(np.array(mx.fft.fft(a)), np.fft.fft(x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.array(mx.fft.rfft(a, n=6, axis=0)), np.fft.rfft(x, n=6, axis=0), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(np.array(mx.fft.fft2(a, norm="ortho")), np.fft.fft2(x, norm="ortho"), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(np.array(mx.fft.irfftn(mx.fft.rfftn(a))), x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.array(mx.fft.fftshift(a)), np.fft.fftshift(x))


def test_random():
    key = mx.random.key(0)
    a = mx.random.uniform(shape=(3, 4), key=key)
    b = mx.random.uniform(shape=(3, 4), key=key)
    assert a.shape == (3, 4) and a.dtype == mx.float32 and mx.array_equal(a, b).item()
    assert mx.random.split(key).shape == (2, 2) and mx.random.split(key, 3).shape == (3, 2)
    n = mx.random.normal((10000,), key=key)
    assert abs(mx.mean(n).item()) < 0.05 and abs(mx.std(n).item() - 1) < 0.05
    r = mx.random.randint(0, 5, (100,), key=key)
    assert r.dtype == mx.int32 and mx.min(r).item() >= 0 and mx.max(r).item() < 5
    assert mx.random.bernoulli(0.5, (8,)).dtype == mx.bool_
    assert mx.random.categorical(mx.zeros((2, 5)), num_samples=3).shape == (2, 3)
    assert sorted(mx.random.permutation(5).tolist()) == [0, 1, 2, 3, 4]
    assert mx.random.normal((2,), loc=3.0, scale=0.0).tolist() == [3.0, 3.0]


def test_fast_ops_match_compositions():
    x = rng.normal(size=(2, 3, 8)).astype(np.float32)
    w = rng.normal(size=(8,)).astype(np.float32)
    expected = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(np.array(mx.fast.rms_norm(mx.array(x), mx.array(w), 1e-5)), expected, rtol=1e-4,
                               atol=1e-5)
    mean = x.mean(-1, keepdims=True)
    expected = (x - mean) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np.array(mx.fast.layer_norm(mx.array(x), None, None, 1e-5)), expected, rtol=1e-4,
                               atol=1e-4)
    q = rng.normal(size=(1, 2, 4, 8)).astype(np.float32)
    scores = q @ q.transpose(0, 1, 3, 2) * 0.5
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    out = mx.fast.scaled_dot_product_attention(mx.array(q), mx.array(q), mx.array(q), scale=0.5)
    np.testing.assert_allclose(np.array(out), probs @ q, rtol=1e-4, atol=1e-5)
    assert mx.fast.rope(mx.array(q), 8, traditional=False, base=10000.0, scale=1.0, offset=0).shape == q.shape


def test_io_round_trips(tmp_path):
    a = mx.arange(12, dtype=mx.float32).reshape(3, 4)
    mx.save(str(tmp_path / "a"), a)
    assert np.array_equal(np.load(tmp_path / "a.npy"), np.array(a))
    np.save(tmp_path / "b.npy", np.arange(5, dtype=np.int16))
    assert mx.load(str(tmp_path / "b.npy")).tolist() == [0, 1, 2, 3, 4]
    mx.savez(tmp_path / "c.npz", a, weights=a * 2)
    loaded = mx.load(str(tmp_path / "c.npz"))
    assert sorted(loaded) == ["arr_0", "weights"]
    assert mx.array_equal(loaded["weights"], a * 2).item()
    with np.load(tmp_path / "c.npz") as npz:
        assert np.array_equal(npz["weights"], np.array(a) * 2)
    mx.savez_compressed(tmp_path / "d.npz", x=a)
    assert mx.array_equal(mx.load(str(tmp_path / "d.npz"))["x"], a).item()
    mx.save_safetensors(str(tmp_path / "e.safetensors"), {"w": a}, {"note": "hi"})
    arrays, meta = mx.load(str(tmp_path / "e.safetensors"), return_metadata=True)
    assert mx.array_equal(arrays["w"], a).item() and meta == {"note": "hi"}
    mx.save_gguf(str(tmp_path / "f.gguf"), {"w": a}, {"general.name": "test"})
    arrays, meta = mx.load(str(tmp_path / "f.gguf"), return_metadata=True)
    assert mx.array_equal(arrays["w"], a).item() and meta["general.name"] == "test"


def test_stream_keyword_and_context():
    a = mx.array([1.0, 2.0])
    assert mx.add(a, a, stream=mx.cpu).tolist() == [2.0, 4.0]
    assert mx.sum(a, stream=mx.default_stream(mx.default_device())).item() == 3.0
    s = mx.new_stream(mx.Device(mx.cpu))
    with mx.stream(s):
        assert mx.multiply(a, 3).tolist() == [3.0, 6.0]
    assert mx.default_device() == mx.cpu or mx.default_device() == mx.gpu
    mx.eval(a, [a * 2, {"x": a}])
    mx.async_eval(a + 1)
    mx.synchronize()


def test_errors_become_python_exceptions():
    with pytest.raises(ValueError, match=r"\[reshape\]"):
        mx.reshape(mx.zeros((2, 3)), (4,))
    with pytest.raises(ValueError, match=r"broadcast"):
        mx.add(mx.zeros((2, 3)), mx.zeros((4,)))
    with pytest.raises(TypeError):
        mx.array(object())
    with pytest.raises(RuntimeError):
        mx.load("/nonexistent/file.npy")
    previous = mx.set_memory_limit(1 << 20)
    try:
        with pytest.raises(MemoryError):
            mx.eval(mx.zeros((64 << 20,)))
    finally:
        mx.set_memory_limit(previous)


def test_dynamic_slices_quantization_and_fp8():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    a = mx.array(x)
    out = mx.slice(a, mx.array([1, 2]), [0, 1], [2, 2])
    assert np.array_equal(np.array(out), x[1:3, 2:4])
    updated = mx.slice_update(a, mx.zeros((2, 2)), mx.array([2]), [0])
    expected = x.copy()
    expected[2:4, 0:2] = 0
    assert np.array_equal(np.array(updated), expected)
    w = mx.array(rng.normal(size=(8, 64)).astype(np.float32))
    wq, scales, biases = mx.quantize(w, group_size=64, bits=8)
    back = mx.dequantize(wq, scales, biases, group_size=64, bits=8)
    assert mx.max(mx.abs(back - w)).item() < 0.05
    v = mx.array(rng.normal(size=(2, 64)).astype(np.float32))
    np.testing.assert_allclose(np.array(mx.quantized_matmul(v, wq, scales, biases, group_size=64, bits=8)),
                               np.array(v @ back.T), rtol=1e-3, atol=1e-3)
    codes = mx.to_fp8(mx.array([1.0, -2.0, 0.5]))
    assert codes.dtype == mx.uint8
    assert mx.from_fp8(codes, mx.float32).tolist() == [1.0, -2.0, 0.5]


def test_float32_matmul_precision():
    assert mx.get_float32_matmul_precision() == "highest"
    w = mx.array(rng.normal(size=(16, 256)).astype(np.float32))
    wq, scales, biases = mx.quantize(w, group_size=64, bits=4)
    v = mx.array(rng.normal(size=(1, 256)).astype(np.float32))
    highest = np.array(mx.quantized_matmul(v, wq, scales, biases, group_size=64, bits=4))
    try:
        mx.set_float32_matmul_precision("high")
        assert mx.get_float32_matmul_precision() == "high"
        high = np.array(mx.quantized_matmul(v, wq, scales, biases, group_size=64, bits=4))
    finally:
        mx.set_float32_matmul_precision("highest")
    np.testing.assert_allclose(high, highest, rtol=0, atol=1e-3 * np.abs(highest).max())
    with pytest.raises(ValueError, match="expected \"highest\", \"high\" or \"medium\"; got \"fast\""):
        mx.set_float32_matmul_precision("fast")


def test_nvfp4_global_scale():
    # Hand-computed as tests/cpu/quantized_microscaled_test.cpp: a group of 16 whose largest value is 6 has scale 1
    # (E4M3 code 0x38) and codes 7 (6) and 2 (1); the global scale 6 turns its scale code into 448's (0x7E).
    w = np.zeros((1, 16), np.float32)
    w[0, :2] = [6.0, 1.0]
    q, scales = mx.quantize(mx.array(w), mode="nvfp4")
    assert (q[0, 0].item() & 0xFF, scales[0, 0].item()) == (7 | 2 << 4, 0x38)
    g = mx.array(6.0)
    q, scales = mx.quantize(mx.array(w), mode="nvfp4", global_scale=g)
    assert (q[0, 0].item() & 0xFF, scales[0, 0].item()) == (7 | 2 << 4, 0x7E)
    # MLX's dequantize takes global_scale and dtype by position or keyword.
    for back in [mx.dequantize(q, scales, None, None, None, "nvfp4", g, mx.float32),
                 mx.dequantize(q, scales, mode="nvfp4", global_scale=g, dtype=mx.float32)]:
        assert back.dtype == mx.float32
        np.testing.assert_allclose(np.array(back), w, atol=1e-6)
    with pytest.raises(TypeError):
        mx.quantize(mx.array(w), None, None, "nvfp4", g)  # keyword-only in quantize, as MLX's
    with pytest.raises(ValueError, match=r"\[quantize\] Global scale is only supported for 'nvfp4'"):
        mx.quantize(mx.array(np.zeros((1, 64), np.float32)), global_scale=g)
    with pytest.raises(ValueError, match=r"\[dequantize\] Global scale must be a scalar"):
        mx.dequantize(q, scales, mode="nvfp4", global_scale=mx.array([6.0, 6.0]))
