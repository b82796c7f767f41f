"""The per-call paths without pybind11's dispatcher: reductions, layout functions and astype as functions and as array
methods (python/src/fast_function.cpp), a.T, and eval's small-node path that keeps the GIL. Results against NumPy in
positional and keyword forms; argument errors as Python's (TypeError); nuvec's errors unchanged (ValueError)."""

import threading

import numpy as np
import pytest

import nuvec.core as mx

rng = np.random.default_rng(7)
X = rng.uniform(0.5, 1.5, size=(2, 3, 4)).astype(np.float32)

REDUCTIONS = ["sum", "prod", "max", "min", "mean", "all", "any", "logsumexp", "median"]


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_positional_keyword_and_method_forms_agree(name):
    a = mx.array(X)
    fn = getattr(mx, name)
    reference = fn(a, axis=[0, 2], keepdims=True)
    for out in [fn(a, [0, 2], True), fn(a=a, keepdims=True, axis=(0, 2)), getattr(a, name)([0, 2], True),
                getattr(a, name)(keepdims=True, axis=[0, 2]), fn(a, np.array([0, 2]).tolist(), np.bool_(True))]:
        assert out.shape == reference.shape == (1, 3, 1)
        np.testing.assert_allclose(np.array(out), np.array(reference))
    assert fn(a).shape == ()
    assert fn(a, np.int64(1)).shape == (2, 4)  # NumPy's ints are axes too


def test_reductions_against_numpy_with_axis_lists():
    a = mx.array(X)
    np.testing.assert_allclose(np.array(a.sum(axis=(1, 2))), X.sum(axis=(1, 2)), rtol=1e-5)
    np.testing.assert_allclose(np.array(mx.mean(a, -1, True)), X.mean(-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(np.array(a.max(0)), X.max(0))
    np.testing.assert_allclose(np.array(mx.var(a, 1, False, 1)), X.var(1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(np.array(a.std(axis=[0, 1], ddof=1)), X.std((0, 1), ddof=1), rtol=1e-5)
    assert mx.sum(X.tolist()).item() == pytest.approx(float(X.sum()), rel=1e-5)  # any array-like
    assert np.array_equal(np.array(a.argmax(axis=2)), X.argmax(2))
    assert np.array_equal(np.array(mx.argmin(a, 1, True)), X.argmin(1)[:, None, :])
    assert a.argmax().item() == X.argmax()
    assert mx.count_nonzero(mx.array([0, 1, 2, 0]), axis=0).item() == 2


def test_layout_functions_and_methods_against_numpy():
    a = mx.array(X)
    checks = [
        (mx.reshape(a, [4, 6]), X.reshape(4, 6)),
        (mx.reshape(a, shape=(24,)), X.reshape(24)),
        (a.reshape(4, -1), X.reshape(4, -1)),
        (a.reshape((6, 4)), X.reshape(6, 4)),
        (a.reshape([3, 8], stream=mx.cpu), X.reshape(3, 8)),
        (mx.transpose(a), X.transpose()),
        (mx.transpose(a, axes=[1, 2, 0]), X.transpose(1, 2, 0)),
        (mx.permute_dims(a, (2, 1, 0)), X.transpose(2, 1, 0)),
        (a.transpose(), X.transpose()),
        (a.transpose(None), X.transpose()),
        (a.transpose(2, 0, 1), X.transpose(2, 0, 1)),
        (a.transpose((2, 0, 1)), X.transpose(2, 0, 1)),
        (a.T, X.T),
        (mx.swapaxes(a, 0, axis2=2), X.swapaxes(0, 2)),
        (a.swapaxes(axis1=1, axis2=-1), X.swapaxes(1, -1)),
        (mx.moveaxis(a, source=0, destination=-1), np.moveaxis(X, 0, -1)),
        (a.moveaxis(2, 0), np.moveaxis(X, 2, 0)),
        (mx.expand_dims(a, axis=[0, 4]), np.expand_dims(X, (0, 4))),
        (mx.expand_dims(a, 1), np.expand_dims(X, 1)),
        (mx.squeeze(mx.array(X[:1, :, :1])), np.squeeze(X[:1, :, :1])),
        (mx.array(X[:1, :, :1]).squeeze(axis=(0, 2)), np.squeeze(X[:1, :, :1], axis=(0, 2))),
        (mx.flatten(a, start_axis=1), X.reshape(2, 12)),
        (a.flatten(0, 1), X.reshape(6, 4)),
        (mx.broadcast_to(mx.array(X[0]), shape=(5, 3, 4)), np.broadcast_to(X[0], (5, 3, 4))),
    ]
    for out, expected in checks:
        assert out.shape == expected.shape
        np.testing.assert_array_equal(np.array(out), expected)


def test_astype_function_and_method():
    a = mx.array(X)
    assert mx.astype(a, mx.float16).dtype == mx.float16
    assert mx.astype(a, dtype=mx.int32, stream=mx.cpu).dtype == mx.int32
    assert a.astype(mx.bfloat16).dtype == mx.bfloat16
    assert a.astype(mx.int8, mx.cpu).dtype == mx.int8  # the method takes the stream by position, as MLX's
    np.testing.assert_array_equal(np.array(a.astype(dtype=mx.int32)), X.astype(np.int32))


def test_argument_errors_are_type_errors_worded_as_python():
    a = mx.array(X)
    with pytest.raises(TypeError, match=r"sum\(\) got an unexpected keyword argument 'axes'"):
        mx.sum(a, axes=0)
    with pytest.raises(TypeError, match=r"sum\(\) missing required argument 'a'"):
        mx.sum()
    with pytest.raises(TypeError, match=r"sum\(\) takes at most 3 positional arguments \(4 given\)"):
        mx.sum(a, 0, False, mx.cpu)
    with pytest.raises(TypeError, match=r"got multiple values for argument 'axis'"):
        mx.sum(a, 0, axis=1)
    with pytest.raises(TypeError, match=r"sum\(\) takes at most 2 positional arguments"):
        a.sum(0, False, mx.cpu)
    with pytest.raises(TypeError, match=r"argument 'axis' must be"):
        mx.sum(a, axis=1.5)
    with pytest.raises(TypeError, match=r"argument 'keepdims' must be bool"):
        mx.sum(a, keepdims="yes")
    with pytest.raises(TypeError, match=r"argument 'shape' must be a sequence of ints"):
        mx.reshape(a, "24")
    with pytest.raises(TypeError, match=r"argument 'shape' must be a sequence of ints"):
        a.reshape(2.0, 12)
    with pytest.raises(TypeError, match=r"argument 'dtype'"):
        a.astype("float32")
    with pytest.raises(TypeError, match=r"argument 'stream'"):
        mx.sum(a, stream="cpu")
    with pytest.raises(TypeError):
        mx.swapaxes(a, 0)


def test_nuvec_errors_are_unchanged():
    # The exception types and messages of the pybind11 bindings these paths replaced.
    a = mx.array(X)
    cases = [
        (lambda: a.reshape(5, 5), ValueError, r"\[reshape\] Cannot reshape array of size 24 into shape \(5,5\)"),
        (lambda: mx.sum(a, axis=3), IndexError, r"\[sum\] Axis 3 is out of bounds for array with 3 dimensions"),
        (lambda: a.transpose(0, 1), ValueError, r"\[transpose\] Received 2 axes \(0,1\)"),
        (lambda: a.squeeze(0), ValueError, r"\[squeeze\] Cannot squeeze axis 0 of size 2"),
        (lambda: a.argmax(axis=5), ValueError, r"\[argmax\] Axis 5 is out of bounds"),
        (lambda: mx.swapaxes(a, 0, 7), IndexError, r"\[swapaxes\] Axis 7 is out of bounds"),
        (lambda: mx.expand_dims(a, 9), ValueError, r"\[expand_dims\] Axis 9 is out of bounds"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()


def test_fast_functions_carry_signatures_for_the_stubs():
    assert mx.sum.__doc__.startswith("sum(a: object, axis: Optional[Union[int, List[int]]] = None, keepdims: bool")
    assert mx.array.sum.__doc__.startswith("sum(self: nuvec.core.array, axis:")
    assert mx.array.reshape.__doc__.startswith("reshape(self: nuvec.core.array, *shape: int, stream:")
    assert mx.array.T.__doc__.startswith("(self: nuvec.core.array) -> nuvec.core.array")
    assert mx.sum.__name__ == "sum" and mx.sum.__module__ == "nuvec.core"


def test_a_failed_small_node_raises_as_eval_does():
    a, b = mx.array([1.0, 2.0]), mx.array([3.0, 4.0])
    mx.eval(a, b)
    previous = mx.set_memory_limit(1)
    try:
        c = a + b
        with pytest.raises(MemoryError):
            mx.eval(c)
        with pytest.raises(MemoryError):
            c.item() if c.size == 1 else c.tolist()
    finally:
        mx.set_memory_limit(previous)
    assert (a + b).tolist() == [4.0, 6.0]


def test_eval_inside_vmap_still_raises():
    def f(x):
        y = x + 1
        mx.eval(y)
        return y

    with pytest.raises(ValueError, match="Attempting to eval"):
        mx.vmap(f)(mx.zeros((2, 3)))


def test_small_evals_beside_a_long_evaluation_in_another_thread():
    big = mx.random.uniform(shape=(512, 512))
    mx.eval(big)
    done = threading.Event()
    results = []

    def long_work():
        x = big
        for _ in range(10):
            x = mx.tanh(x @ big / 512)
        mx.eval(x)
        results.append(mx.sum(x).item())
        done.set()

    worker = threading.Thread(target=long_work)
    worker.start()
    a = mx.array([1.0, 2.0, 3.0])
    small = 0
    while not done.is_set() or small < 100:
        c = a * 2 + 1
        mx.eval(c)
        assert np.array_equal(np.asarray(c), [3.0, 5.0, 7.0])
        small += 1
    worker.join()
    assert len(results) == 1 and np.isfinite(results[0])
