"""The element-wise functions, cumulative ops, sorts, softmax, concatenate and stack on the fast-call path
(python/src/fast_function.cpp), as functions and, where MLX has them, array methods; the array's properties as C
getters and item()/tolist() as fast methods. Results against NumPy (float64 references where rounding matters) in
positional and keyword forms, MLX's dtype promotion with Python scalars, argument errors as TypeError and nuvec's
errors unchanged, reference counts over a loop, and threads."""

import sys
import threading

import numpy as np
import pytest

import nuvec.core as mx
from leaks import assert_flat

rng = np.random.default_rng(11)
X = rng.uniform(0.5, 1.5, size=(2, 3, 4)).astype(np.float32)
Y = rng.uniform(0.5, 1.5, size=(2, 3, 4)).astype(np.float32)

UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "tanh": np.tanh, "abs": np.abs,
         "square": np.square, "reciprocal": np.reciprocal, "negative": np.negative, "floor": np.floor}
BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
          "maximum": np.maximum, "minimum": np.minimum, "power": np.power, "less": np.less, "equal": np.equal}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_functions_against_numpy(name):
    expected = UNARY[name](X.astype(np.float64))
    a = mx.array(X)
    fn = getattr(mx, name)
    for out in [fn(a), fn(a=a), fn(a, stream=mx.cpu), fn(X)]:
        assert out.dtype == mx.float32 and out.shape == X.shape
        np.testing.assert_allclose(np.array(out), expected, rtol=2e-6, atol=1e-7)
    if hasattr(mx.array, name):
        np.testing.assert_allclose(np.array(getattr(a, name)()), expected, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_functions_against_numpy(name):
    expected = BINARY[name](X.astype(np.float64), Y.astype(np.float64))
    a, b = mx.array(X), mx.array(Y)
    fn = getattr(mx, name)
    for out in [fn(a, b), fn(a=a, b=b), fn(b=b, a=a, stream=mx.cpu), fn(X, b), fn(a, Y.tolist())]:
        np.testing.assert_allclose(np.array(out), expected, rtol=2e-6)


def test_binary_functions_promote_python_scalars_as_mlx():
    f16, i32, u8 = mx.array([1.0], mx.float16), mx.array([1]), mx.array([1], mx.uint8)
    assert mx.add(f16, 2.0).dtype == mx.float16  # a float takes a float array's dtype
    assert mx.multiply(2, f16).dtype == mx.float16
    assert mx.add(i32, 2).dtype == mx.int32
    assert mx.add(u8, 2).dtype == mx.uint8  # an int takes an integer array's dtype
    assert mx.add(i32, 2.5).dtype == mx.float32  # a float beside an integer array is float32
    assert mx.add(2, 3).dtype == mx.int32 and mx.add(2, 3).item() == 5
    assert mx.maximum(f16, 3).tolist() == [3.0]
    assert mx.array(X).maximum(1.0).dtype == mx.float32


def test_cumulative_ops_against_numpy():
    a = mx.array(X)
    x = X.astype(np.float64)
    np.testing.assert_allclose(np.array(mx.cumsum(a)), np.cumsum(x), rtol=1e-5)  # axis None: flattened
    np.testing.assert_allclose(np.array(mx.cumsum(a, 1)), np.cumsum(x, 1), rtol=1e-5)
    np.testing.assert_allclose(np.array(a.cumsum(axis=-1)), np.cumsum(x, -1), rtol=1e-5)
    np.testing.assert_allclose(np.array(a.cumprod(axis=2, reverse=True)), np.flip(np.cumprod(np.flip(x, 2), 2), 2),
                               rtol=1e-5)
    exclusive = np.concatenate([np.zeros((2, 1, 4)), np.cumsum(x, 1)[:, :-1]], axis=1)
    np.testing.assert_allclose(np.array(mx.cumsum(a, axis=1, inclusive=False)), exclusive, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.array(mx.cummax(a, 0)), np.maximum.accumulate(x, 0))
    np.testing.assert_allclose(np.array(a.cummin(1)), np.minimum.accumulate(x, 1))
    np.testing.assert_allclose(np.array(mx.logcumsumexp(a, axis=2)), np.logaddexp.accumulate(x, 2), rtol=1e-5)
    with pytest.raises(TypeError, match=r"cumsum\(\) takes at most 2 positional arguments"):
        mx.cumsum(a, 0, True)
    with pytest.raises(TypeError, match=r"argument 'reverse' must be bool"):
        a.cumsum(0, reverse="no")


def test_sorts_softmax_concatenate_and_stack_against_numpy():
    a = mx.array(X)
    x = X.astype(np.float64)
    np.testing.assert_array_equal(np.array(mx.sort(a)), np.sort(X, -1))
    np.testing.assert_array_equal(np.array(mx.sort(a, axis=0)), np.sort(X, 0))
    np.testing.assert_array_equal(np.array(mx.sort(a, None)), np.sort(X, None))  # None: flattened
    np.testing.assert_array_equal(np.array(mx.argsort(a, 1)), np.argsort(X, 1, kind="stable"))
    softmax = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(np.array(mx.softmax(a, axis=-1)), softmax / softmax.sum(-1, keepdims=True), rtol=1e-5)
    whole = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    np.testing.assert_allclose(np.array(mx.softmax(a)), whole, rtol=1e-5)  # axis None: every axis
    np.testing.assert_allclose(np.array(mx.softmax(a, [1, 2], precise=True)),
                               np.exp(x) / np.exp(x).sum((1, 2), keepdims=True), rtol=1e-5)
    b = mx.array(Y)
    np.testing.assert_array_equal(np.array(mx.concatenate([a, b])), np.concatenate([X, Y]))
    np.testing.assert_array_equal(np.array(mx.concatenate((a, Y), axis=2)), np.concatenate([X, Y], 2))
    np.testing.assert_array_equal(np.array(mx.concat([a, b], axis=None)), np.concatenate([X, Y], None))
    np.testing.assert_array_equal(np.array(mx.stack([a, b])), np.stack([X, Y]))
    np.testing.assert_array_equal(np.array(mx.stack([a, b], axis=-1, stream=mx.cpu)), np.stack([X, Y], -1))
    with pytest.raises(TypeError, match=r"argument 'axis' must be int"):
        mx.stack([a, b], axis=None)
    with pytest.raises(ValueError, match=r"\[concatenate\]"):
        mx.concatenate([a, mx.zeros((2, 2))], axis=0)


def test_properties_item_and_tolist():
    a = mx.array(X)
    assert a.shape == (2, 3, 4) and isinstance(a.shape, tuple)
    assert a.ndim == 3 and a.size == 24 and a.itemsize == 4 and a.nbytes == 96
    assert a.dtype == mx.float32 and a.dtype is mx.float32
    assert mx.array(1, mx.int16).dtype == mx.int16 and mx.array(True).dtype == mx.bool_
    assert mx.array(2.5).shape == () and mx.array(2.5).ndim == 0
    assert mx.array(2.5).item() == 2.5 and mx.array(3).item() == 3 and mx.array(True).item() is True
    assert (a + 1).tolist() == (X + 1).tolist()
    with pytest.raises(ValueError, match=r"\[item\] item can only be called on arrays of size 1"):
        a.item()
    with pytest.raises(TypeError, match=r"item\(\) takes at most 0 positional arguments"):
        a.item(0)
    with pytest.raises(AttributeError):
        a.shape = (24,)
    assert mx.array.shape.__doc__.startswith("(self: nuvec.core.array) -> tuple")
    assert mx.exp.__doc__.startswith("exp(a: object, *, stream:")
    assert mx.array.exp.__doc__.startswith("exp(self: nuvec.core.array, *, stream:")


def test_fast_ops_hold_no_references():
    a, b = mx.array(X), mx.array(Y)
    before = sys.getrefcount(a), sys.getrefcount(b)
    for _ in range(1000):
        mx.eval(mx.add(a, b), mx.exp(a), a.cumsum(1), mx.stack([a, b]), mx.softmax(a))
        a.shape, a.dtype, (a + b).sum().item()
    assert (sys.getrefcount(a), sys.getrefcount(b)) == before

    def run(n):
        for _ in range(n):
            c = mx.multiply(mx.exp(a), 2.0)
            mx.eval(c)
            c.shape, c.dtype, c[0, 0, 0].item()

    assert_flat(run, 1000, 20_000)


def test_fast_ops_from_threads():
    a = mx.array(X)
    expected = np.cumsum(np.exp(X.astype(np.float64)), 2).sum()
    results, errors = [], []

    def work():
        try:
            for _ in range(300):
                results.append(mx.cumsum(mx.exp(a), axis=2).sum().item())
        except Exception as e:  # noqa: BLE001: reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 1200
    np.testing.assert_allclose(results, expected, rtol=1e-5)


def test_partition_argpartition_and_topk_against_numpy():
    x = rng.permutation(24).astype(np.float32).reshape(2, 3, 4)  # distinct values: the partitions are unambiguous
    a = mx.array(x)
    for out in [mx.partition(a, 1), mx.partition(a, kth=1, axis=-1), mx.partition(a=a, kth=1, stream=mx.cpu)]:
        np.testing.assert_array_equal(np.sort(np.array(out)[..., :2], -1), np.sort(np.partition(x, 1)[..., :2], -1))
        np.testing.assert_array_equal(np.array(out)[..., 1], np.partition(x, 1)[..., 1])
    out = mx.partition(a, 5, None)  # None: the flattened array
    assert out.shape == (24,) and np.array(out)[5] == 5.0 and np.all(np.array(out)[:5] < 5)
    idx = np.array(mx.argpartition(a, 2, axis=1))
    np.testing.assert_array_equal(np.take_along_axis(x, idx, 1)[:, 2], np.partition(x, 2, 1)[:, 2])
    assert mx.argpartition(a, kth=3, axis=None).shape == (24,)
    top = mx.topk(a, 2)
    np.testing.assert_array_equal(np.sort(np.array(top), -1), np.sort(x, -1)[..., -2:])
    np.testing.assert_array_equal(np.sort(np.array(mx.topk(a, k=3, axis=None))), np.arange(21, 24))
    np.testing.assert_array_equal(np.sort(np.array(mx.topk(a, 1, axis=0)), 0), x.max(0, keepdims=True))
    with pytest.raises(TypeError, match=r"topk\(\) missing required argument 'k'"):
        mx.topk(a)
    with pytest.raises(TypeError, match=r"partition\(\) got an unexpected keyword argument 'k'"):
        mx.partition(a, k=1)
    with pytest.raises(TypeError, match=r"argument 'kth' must be int"):
        mx.argpartition(a, 1.5)
    with pytest.raises(ValueError, match=r"\[topk\]"):
        mx.topk(a, 9)


def test_where_clip_and_round_against_numpy():
    a, b = mx.array(X), mx.array(Y)
    condition = X > Y
    for out in [mx.where(a > b, a, b), mx.where(condition=a > b, x=a, y=b), mx.where(condition, X, b, stream=mx.cpu)]:
        np.testing.assert_array_equal(np.array(out), np.where(condition, X, Y))
    half = mx.array(X, mx.float16)
    assert mx.where(half > 1, half, 0.0).dtype == mx.float16  # a Python scalar takes the array's dtype, as MLX's
    assert mx.where(True, 1, 2.0).dtype == mx.float32
    np.testing.assert_array_equal(np.array(mx.clip(a, 0.8, 1.2)), np.clip(X, 0.8, 1.2))
    np.testing.assert_array_equal(np.array(mx.clip(a, a_min=None, a_max=1.0)), np.minimum(X, 1.0))
    np.testing.assert_array_equal(np.array(mx.clip(a, b, None)), np.maximum(X, Y))
    assert mx.clip(half, 0.9, 1.1).dtype == mx.float16
    assert mx.clip(mx.array([1, 5, 9]), 2, 6).tolist() == [2, 5, 6]
    z = (X * 100).astype(np.float32)
    for out in [mx.round(mx.array(z)), mx.round(mx.array(z), 0), mx.array(z).round()]:
        np.testing.assert_array_equal(np.array(out), np.round(z))
    for out in [mx.round(mx.array(X), 2), mx.round(a=mx.array(X), decimals=2), mx.array(X).round(decimals=2)]:
        np.testing.assert_allclose(np.array(out), np.round(X.astype(np.float64), 2), atol=1e-6)
    with pytest.raises(TypeError, match=r"clip\(\) missing required argument 'a_max'"):
        mx.clip(a, 0.0)
    with pytest.raises(TypeError, match=r"where\(\) takes at most 3 positional arguments \(4 given\)"):
        mx.where(a > b, a, b, mx.cpu)
    with pytest.raises(TypeError, match=r"argument 'decimals' must be int"):
        a.round(1.5)
    with pytest.raises(ValueError, match=r"\[broadcast_shapes\] Shapes \(3\) and \(2\) cannot be broadcast"):
        mx.where(mx.ones((3,)) > 0, mx.ones((2,)), 0.0)


def test_diag_split_and_view_functions_and_methods_against_numpy():
    m = rng.uniform(size=(4, 4)).astype(np.float32)
    a, v = mx.array(m), mx.array(m[0])
    for out, expected in [(mx.diag(a), np.diag(m)), (a.diag(1), np.diag(m, 1)), (a.diag(k=-2), np.diag(m, -2)),
                          (mx.diag(v), np.diag(m[0])), (mx.diag(a=v, k=1, stream=mx.cpu), np.diag(m[0], 1))]:
        np.testing.assert_array_equal(np.array(out), expected)
    x = mx.array(X)
    for parts, expected in [(mx.split(x, 2), np.split(X, 2)), (x.split(3, axis=1), np.split(X, 3, 1)),
                            (x.split([1, 3], 2), np.split(X, [1, 3], 2)),
                            (mx.split(a=x, indices_or_sections=(1,), axis=-1), np.split(X, [1], -1))]:
        assert isinstance(parts, list) and len(parts) == len(expected)
        for part, e in zip(parts, expected):
            np.testing.assert_array_equal(np.array(part), e)
    bits = np.array(mx.view(v, mx.uint32))
    np.testing.assert_array_equal(bits, m[0].view(np.uint32))
    np.testing.assert_array_equal(np.array(v.view(mx.int16)), m[0].view(np.int16))
    np.testing.assert_array_equal(np.array(v.view(dtype=mx.uint8, stream=mx.cpu)), m[0].view(np.uint8))
    with pytest.raises(TypeError, match=r"argument 'dtype' must be a nuvec.core.Dtype"):
        v.view("uint32")
    with pytest.raises(TypeError, match=r"split\(\) missing required argument 'indices_or_sections'"):
        x.split()
    with pytest.raises(TypeError, match=r"argument 'indices_or_sections' must be a sequence of ints"):
        mx.split(x, "2")
    with pytest.raises(ValueError, match=r"\[split\]"):
        mx.split(x, 5)
    with pytest.raises(TypeError, match=r"diag\(\) got an unexpected keyword argument 'offset'"):
        a.diag(offset=1)
    assert mx.diag.__doc__.startswith("diag(a: object, k: int = 0, *, stream:")
    assert mx.array.split.__doc__.startswith("split(self: nuvec.core.array, indices_or_sections: Union[int, List[int]]")
    assert mx.topk.__doc__.startswith("topk(a: object, k: int, axis: Optional[int] = -1, *, stream:")
