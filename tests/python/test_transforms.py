"""Transforms over pytrees: gradients against central finite differences (float64), vjp/jvp against each other,
vmap against a Python loop, compile against the plain function, custom_function and checkpoint."""

import gc
import weakref

import numpy as np
import pytest

import nuvec.core as mx

rng = np.random.default_rng(7)


def finite_difference(f, x, eps=1e-6):
    """Central differences of a scalar function of one float64 NumPy array."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


def loss(w, x):
    return mx.sum(mx.tanh(x @ w) ** 2) + mx.sum(mx.exp(-w * w))


def test_grad_matches_finite_differences():
    w = rng.normal(size=(3, 2))
    x = rng.normal(size=(4, 3))
    g = mx.grad(loss)(mx.array(w, mx.float64), mx.array(x, mx.float64))
    expected = finite_difference(lambda v: loss(mx.array(v, mx.float64), mx.array(x, mx.float64)).item(), w)
    np.testing.assert_allclose(np.array(g), expected, rtol=1e-6, atol=1e-8)


def test_value_and_grad_over_pytrees_and_argnums():
    params = {"w": mx.array(rng.normal(size=(3,)), mx.float64), "b": [mx.array(0.5, mx.float64)]}
    x = mx.array(rng.normal(size=(5, 3)), mx.float64)

    def f(p, x, scale=1.0):
        return scale * mx.mean((x @ p["w"] + p["b"][0]) ** 2), x.shape[0]

    (value, aux), grads = mx.value_and_grad(f)(params, x)
    assert aux == 5
    assert set(grads) == {"w", "b"} and isinstance(grads["b"], list)

    def as_function_of_w(w):
        return f({"w": mx.array(w, mx.float64), "b": params["b"]}, x)[0].item()

    np.testing.assert_allclose(np.array(grads["w"]), finite_difference(as_function_of_w, np.array(params["w"])),
                               rtol=1e-6)
    assert value.item() == pytest.approx(as_function_of_w(np.array(params["w"])))
    gp, gx = mx.grad(lambda p, x: f(p, x)[0], argnums=(0, 1))(params, x)
    assert gx.shape == (5, 3) and set(gp) == {"w", "b"}
    fx = lambda x, scale: f(params, x, scale)[0]  # noqa: E731
    positional, named = mx.grad(fx, argnames="scale")(x, scale=mx.array(2.0))
    assert positional is None  # as MLX: only keywords were differentiated
    assert named["scale"].item() == pytest.approx(f(params, x)[0].item(), rel=1e-5)
    positional, named = mx.grad(fx, argnums=0, argnames=["scale"])(x, scale=mx.array(2.0))
    assert positional.shape == (5, 3) and set(named) == {"scale"}


def test_grad_errors():
    with pytest.raises(ValueError, match="scalar"):
        mx.grad(lambda x: "not an array")(mx.array(1.0))
    with pytest.raises(ValueError, match="argument index"):
        mx.grad(lambda x: x, argnums=3)(mx.array(1.0))


def test_vjp_and_jvp():
    x = mx.array(rng.normal(size=(3,)).astype(np.float32))
    fun = lambda a: [mx.sin(a) * a]  # noqa: E731
    outs, vjps = mx.vjp(fun, [x], [mx.ones((3,))])
    outs2, jvps = mx.jvp(fun, [x], [mx.ones((3,))])
    expected = np.cos(np.array(x)) * np.array(x) + np.sin(np.array(x))
    np.testing.assert_allclose(np.array(vjps[0]), expected, rtol=1e-5)
    np.testing.assert_allclose(np.array(jvps[0]), expected, rtol=1e-5)
    assert mx.allclose(outs[0], outs2[0]).item()


def test_vmap_matches_a_loop():
    x = mx.array(rng.normal(size=(4, 3)).astype(np.float32))
    w = mx.array(rng.normal(size=(3, 2)).astype(np.float32))
    mapped = mx.vmap(lambda row, w: row @ w, in_axes=(0, None))(x, w)
    loop = mx.stack([x[i] @ w for i in range(4)])
    np.testing.assert_allclose(np.array(mapped), np.array(loop), rtol=1e-5)
    moved = mx.vmap(lambda col: col * 2, in_axes=1, out_axes=1)(x)
    np.testing.assert_allclose(np.array(moved), np.array(x) * 2)
    pair = mx.vmap(lambda d: (d["a"] + 1, d["a"].sum()))({"a": x})
    assert pair[0].shape == (4, 3) and pair[1].shape == (4,)


def test_vmap_in_axes_nested_like_the_arguments():
    # in_axes is a prefix tree of the arguments as in MLX's vmap: tuples, lists and dicts descend, None leaves an
    # array unmapped, an int covers a whole subtree. The reference is a Python loop.
    own = np.random.default_rng(10)
    x = own.normal(size=(4, 3)).astype(np.float32)
    y = own.normal(size=(3, 4)).astype(np.float32)
    w = own.normal(size=(3,)).astype(np.float32)
    b = own.normal(size=(4, 2)).astype(np.float32)

    def f(pair, params):
        return pair[0] * params["w"] + pair[1] + params["b"][0]

    mapped = mx.vmap(f, in_axes=((0, 1), {"w": None, "b": 0}))(
        (mx.array(x), mx.array(y)), {"w": mx.array(w), "b": mx.array(b)})
    loop = np.stack([x[i] * w + y[:, i] + b[i, 0] for i in range(4)])
    np.testing.assert_allclose(np.array(mapped), loop, rtol=1e-6)
    # Lists match lists, and an int covers a subtree.
    mapped = mx.vmap(lambda xs, v: xs[0] + xs[1] * v, in_axes=[0, None])([mx.array(x), mx.array(x)], mx.array(w))
    np.testing.assert_allclose(np.array(mapped), x + x * w, rtol=1e-6)


def test_vmap_one_argument_takes_its_own_structure():
    # MLX matches in_axes against the only argument itself; a one-entry tuple still means that argument.
    own = np.random.default_rng(11)
    x = own.normal(size=(2, 3)).astype(np.float32)
    s = own.normal(size=(2,)).astype(np.float32)
    for in_axes in [(1, None), ((1, None),), [(1, None)]]:
        mapped = mx.vmap(lambda t: t[0] * t[1], in_axes=in_axes)((mx.array(x), mx.array(s)))
        np.testing.assert_allclose(np.array(mapped), np.stack([x[:, i] * s for i in range(3)]), rtol=1e-6)
    for in_axes in [{"a": 1}, ({"a": 1},)]:
        mapped = mx.vmap(lambda d: d["a"] * 2, in_axes=in_axes)({"a": mx.array(x)})
        np.testing.assert_allclose(np.array(mapped), x.T * 2, rtol=1e-6)
    np.testing.assert_allclose(np.array(mx.vmap(lambda v: v.sum(), in_axes=(1,))(mx.array(x))), x.sum(0), rtol=1e-6)


def test_vmap_negative_axes_count_from_the_end():
    x = np.random.default_rng(12).normal(size=(2, 3, 4)).astype(np.float32)
    mapped = mx.vmap(lambda v: v.sum(0), in_axes=-1)(mx.array(x))
    np.testing.assert_allclose(np.array(mapped), x.sum(0).T, rtol=1e-5)  # the mapped axis (size 4) first
    moved = mx.vmap(lambda v: v * 2, in_axes=0, out_axes=-1)(mx.array(x))
    np.testing.assert_allclose(np.array(moved), np.moveaxis(x * 2, 0, -1), rtol=1e-6)


def test_vmap_out_axes_nested_like_the_outputs():
    x = np.random.default_rng(13).normal(size=(4, 3)).astype(np.float32)
    out = mx.vmap(lambda v: {"same": v, "moved": (v * 2, v.sum())}, out_axes={"same": 0, "moved": (1, 0)})(mx.array(x))
    np.testing.assert_allclose(np.array(out["same"]), x)
    np.testing.assert_allclose(np.array(out["moved"][0]), (x * 2).T)
    np.testing.assert_allclose(np.array(out["moved"][1]), x.sum(1), rtol=1e-6)


@pytest.mark.parametrize(
    "in_axes,match",
    [((0, 0, 0), r"in_axes does not match the structure it maps: a tuple of 3 for a tuple of 2"),
     (({"w": 0}, 0), r"in_axes does not match the structure it maps: a dict for a tuple of 2"),
     (((0, 0), {"v": 0}), r"in_axes has no entry for the key 'w' of the dict it maps"),
     (((0, "x"), 0), r"Each axis in in_axes must be an int or None; got a str for an array"),
     (((0, 2), 0), r"Invalid vectorization axis 2 in in_axes for array with shape \(3\)")],
)
def test_vmap_axes_that_do_not_fit_raise(in_axes, match):
    pair = (mx.zeros((3,)), mx.zeros((3,)))
    with pytest.raises(ValueError, match=match):
        mx.vmap(lambda p, d: p[0] + p[1] + d["w"], in_axes=in_axes)(pair, {"w": mx.zeros((3,))})


def test_compile_matches_the_function():
    def f(x, y, n):
        return mx.exp(x) * y + n

    compiled = mx.compile(f)
    x = mx.array(rng.normal(size=(8,)).astype(np.float32))
    y = mx.array(rng.normal(size=(8,)).astype(np.float32))
    for n in (1, 2, 1):  # a new constant retraces; a known one replays
        np.testing.assert_allclose(np.array(compiled(x, y, n)), np.array(f(x, y, n)), rtol=1e-6)
    np.testing.assert_allclose(np.array(compiled(x * 2, y, 1)), np.array(f(x * 2, y, 1)), rtol=1e-6)


def test_custom_function_vjp_and_checkpoint():
    @mx.custom_function
    def f(x):
        return mx.sin(x)

    @f.vjp
    def f_vjp(primals, cotangent, output):
        return cotangent * 10.0

    x = mx.array([0.5, 1.0])
    assert np.allclose(np.array(f(x)), np.sin([0.5, 1.0]))
    assert mx.grad(lambda x: mx.sum(f(x)))(x).tolist() == [10.0, 10.0]

    g = mx.checkpoint(lambda a: mx.sum(mx.exp(a) * a))
    np.testing.assert_allclose(np.array(mx.grad(g)(x)), np.exp([0.5, 1.0]) * (1 + np.array([0.5, 1.0])),
                               rtol=1e-5)
    assert mx.grad(lambda a: mx.sum(mx.stop_gradient(a) * a))(x).tolist() == [0.5, 1.0]


def test_custom_vmap_rule_gets_axes_shaped_as_its_inputs():
    # MLX's convention: one argument comes alone with its axis; several come as a tuple with a tuple of axes (None for
    # an unmapped array), nested as the arguments are.
    seen = []

    @mx.custom_function
    def scale(x):
        return x * 2

    @scale.vmap
    def scale_vmap(x, axis):
        seen.append(axis)
        return x * 3, axis  # a rule that differs from the function, to show it ran

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(np.array(mx.vmap(scale, in_axes=1)(mx.array(x))), x.T * 3)
    assert seen == [1]

    @mx.custom_function
    def combine(pair, w):
        return pair[0] + pair[1] * w

    @combine.vmap
    def combine_vmap(args, axes):
        seen.append(axes)
        (a, b), w = args
        return mx.moveaxis(a, axes[0][0], 0) + b * w + 1, 0  # + 1: the rule's mark

    b, w = x[:, 0], np.float32(2.0)
    out = mx.vmap(combine, in_axes=((1, None), None))((mx.array(x), mx.array(b)), mx.array(w))
    np.testing.assert_allclose(np.array(out), x.T + b * w + 1)
    assert seen[1] == ((1, None), None)


def test_custom_vmap_rule_must_return_outputs_and_axes():
    @mx.custom_function
    def f(x):
        return x

    f.vmap(lambda x, axis: x)
    with pytest.raises(ValueError, match=r"\[custom vmap\] The vmap function should return a tuple of 2 items"):
        mx.vmap(f)(mx.ones((2, 3)))


def test_compile_keeps_no_call_arrays_alive():
    # The trace cache keeps the structure of a call, not its arrays: a call's inputs and outputs are freed with the
    # caller's references (the allocator's counters and weak references both show it).
    compiled = mx.compile(lambda x, y: {"out": mx.exp(x) * y + 1})
    base = mx.get_active_memory()
    for _ in range(2):  # the first call traces, the second replays
        x, y = mx.ones((1 << 20,)), mx.ones((1 << 20,))
        out = compiled(x, y)["out"]
        mx.eval(out)
        refs = [weakref.ref(a) for a in (x, y, out)]
        del x, y, out
        gc.collect()
        assert all(r() is None for r in refs)
        assert mx.get_active_memory() - base < (1 << 20)  # the three 4 MiB arrays are gone


def test_compile_retraces_on_what_mlx_keys():
    traces = []

    def f(x, n, flag, name):
        traces.append(name)
        return x * n if flag else x - n

    compiled = mx.compile(f)
    x = mx.ones((2,))
    calls = [(2, True, "a"), (2, True, "a"), (2.0, True, "a"), (2, False, "a"), (2, True, None), (2, True, "a")]
    expected = [f(x, *c) for c in calls]
    traces.clear()
    for c, want in zip(calls, expected):
        assert compiled(x, *c).tolist() == want.tolist()
    assert len(traces) == 4  # each new constant (2.0 is not 2, False, None) traces once; repeats replay
    compiled(mx.ones((3,)), 2, True, "a")  # a new shape
    compiled(mx.ones((2,), mx.int32), 2, True, "a")  # a new dtype
    assert len(traces) == 6
    with pytest.raises(ValueError, match=r"\[compile\] Function arguments must be trees of arrays or constants "
                                         r"\(floats, ints, strings, or None\), but received type Dtype"):
        compiled(x, mx.float32, True, "a")


def test_compile_state_changes_retrace_or_replay_as_in_mlx():
    traces = []
    state = {"w": mx.ones((3,))}

    def f(x):
        traces.append(1)
        return sum(x * w for w in state.values())

    compiled = mx.compile(f, inputs=state, outputs=state)
    x = mx.ones((3,))
    assert compiled(x).tolist() == [1.0] * 3 and len(traces) == 1
    state["w"] = mx.full((3,), 2.0)  # a new value of the same shape: an input, replayed
    assert compiled(x).tolist() == [2.0] * 3 and len(traces) == 1
    state["w"] = mx.full((1,), 3.0)  # a new shape retraces
    assert compiled(x).tolist() == [3.0] * 3 and len(traces) == 2
    state["b"] = mx.full((3,), 0.5)  # a new state array retraces
    assert compiled(x).tolist() == [3.5] * 3 and len(traces) == 3


def test_compile_shapeless_replays_across_shapes():
    traces = []
    compiled = mx.compile(lambda x: (traces.append(1), x * 2 + 1)[1], shapeless=True)
    assert compiled(mx.ones((3,))).tolist() == [3.0] * 3
    assert compiled(mx.ones((5,))).tolist() == [3.0] * 5
    assert len(traces) == 1


def test_compile_with_implicit_state():
    state = {"w": mx.array(1.0), "history": [mx.array(0.0)]}

    def step(x):
        state["w"] = state["w"] + x
        state["history"][0] = state["history"][0] + 1
        return state["w"] * 2

    compiled = mx.compile(step, inputs=state, outputs=state)
    assert compiled(mx.array(1.0)).item() == 4.0
    assert state["w"].item() == 2.0
    assert compiled(mx.array(0.5)).item() == 5.0  # replayed: the state is an input, not a traced constant
    assert state["w"].item() == 2.5 and state["history"][0].item() == 2.0
