"""The scatters, scatter_add_axis, static slice/slice_update, result_type, number_of_elements and depends against
NumPy."""

import numpy as np
import pytest

import nuvec.core as mx

rng = np.random.default_rng(7)


@pytest.mark.parametrize("name,ufunc", [("scatter_add", np.add), ("scatter_prod", np.multiply),
                                        ("scatter_max", np.maximum), ("scatter_min", np.minimum)])
def test_reducing_scatters_against_numpy_at(name, ufunc):
    a = rng.uniform(0.5, 1.5, size=(5, 3)).astype(np.float32)
    idx = np.array([0, 2, 2, 4], dtype=np.int32)
    upd = rng.uniform(0.5, 1.5, size=(4, 1, 3)).astype(np.float32)
    expected = a.copy()
    ufunc.at(expected, idx, upd[:, 0, :])
    out = getattr(mx, name)(mx.array(a), mx.array(idx), mx.array(upd), 0)
    np.testing.assert_allclose(np.array(out), expected, rtol=1e-6)


def test_scatter_over_several_axes_writes_the_slices():
    a = np.zeros((3, 4), dtype=np.float32)
    rows, cols = np.array([0, 2]), np.array([1, 3])
    upd = np.array([5, 7], dtype=np.float32).reshape(2, 1, 1)
    out = mx.scatter(mx.array(a), [mx.array(rows), mx.array(cols)], mx.array(upd), axes=[0, 1])
    a[rows, cols] = upd.ravel()
    np.testing.assert_array_equal(np.array(out), a)


def test_scatter_add_axis_and_put_along_axis_against_numpy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 0, 3], [1, 2, 2], [3, 3, 3]])
    vals = np.ones((3, 3), dtype=np.float32)
    expected = a.copy()
    for r in range(3):
        np.add.at(expected[r], idx[r], vals[r])
    np.testing.assert_array_equal(np.array(mx.scatter_add_axis(a, idx, vals, axis=1)), expected)
    put = a.copy()
    np.put_along_axis(put, idx[:, :1], 9, axis=1)
    np.testing.assert_array_equal(np.array(mx.put_along_axis(a, idx[:, :1], mx.array(9.0), axis=1)), put)


def test_static_slice_and_slice_update():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    out = mx.slice(a, start=[1, 0], stop=[4, 6], strides=[2, 3])
    np.testing.assert_array_equal(np.array(out), a[1:4:2, 0:6:3])
    np.testing.assert_array_equal(np.array(mx.slice(a, start=[0, 2], stop=[2, 5])), a[0:2, 2:5])
    expected = a.copy()
    expected[1:3, ::2] = -1
    out = mx.slice_update(a, mx.full((2, 3), -1.0), start=[1, 0], stop=[3, 6], strides=[1, 2])
    np.testing.assert_array_equal(np.array(out), expected)
    # The positional form stays MLX's: the start read from an array.
    np.testing.assert_array_equal(np.array(mx.slice(a, mx.array([2]), [0], [2, 6])), a[2:4])


def test_result_type_number_of_elements_and_depends():
    assert mx.result_type(mx.array([1], mx.int8), mx.array([1.0], mx.float16)) == mx.float16
    assert mx.result_type(mx.array([1], mx.int32), mx.array([1], mx.uint32)) == mx.int64  # np.result_type agrees
    x = mx.zeros((2, 3, 5))
    assert mx.number_of_elements(x, [0, 2]).item() == 10
    n = mx.number_of_elements(x, [1], inverted=True, dtype=mx.float32)
    assert n.dtype == mx.float32 and n.item() == pytest.approx(1 / 3)
    a, b = mx.array([1.0, 2.0]), mx.array([3.0])
    (out,) = mx.depends([a], [b])
    np.testing.assert_array_equal(np.array(out), [1.0, 2.0])
