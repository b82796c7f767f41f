"""nuvec.core.array against NumPy: construction, properties, scalar promotion, operators and indexing.

Every expected value comes from NumPy on the same inputs (or, for MLX's own rules, from MLX's documented behaviour).
"""

import math

import numpy as np
import pytest

import nuvec.core as mx

NP_DTYPES = {
    mx.bool_: np.bool_,
    mx.uint8: np.uint8,
    mx.uint16: np.uint16,
    mx.uint32: np.uint32,
    mx.uint64: np.uint64,
    mx.int8: np.int8,
    mx.int16: np.int16,
    mx.int32: np.int32,
    mx.int64: np.int64,
    mx.float16: np.float16,
    mx.float32: np.float32,
    mx.float64: np.float64,
    mx.complex64: np.complex64,
}


def test_scalars_take_mlx_default_dtypes():
    assert mx.array(True).dtype == mx.bool_
    assert mx.array(3).dtype == mx.int32
    assert mx.array(2**40).dtype == mx.int64
    assert mx.array(1.5).dtype == mx.float32
    assert mx.array(1 + 2j).dtype == mx.complex64
    assert mx.array(3, mx.float16).dtype == mx.float16
    assert mx.array(1.5).item() == 1.5
    assert mx.array(1 + 2j).item() == 1 + 2j


def test_nested_lists():
    a = mx.array([[1, 2, 3], [4, 5, 6]])
    assert a.shape == (2, 3) and a.dtype == mx.int32
    assert a.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert mx.array([[1, 2.5], [3, 4]]).dtype == mx.float32
    assert mx.array([True, False]).dtype == mx.bool_
    assert mx.array([1, 2j]).dtype == mx.complex64
    assert mx.array(((1, 2), (3, 4))).shape == (2, 2)
    assert mx.array([mx.array([1, 2]), mx.array([3, 4])]).tolist() == [[1, 2], [3, 4]]
    assert mx.array([]).shape == (0,)
    with pytest.raises(ValueError, match="non-uniform"):
        mx.array([[1, 2], [3]])


@pytest.mark.parametrize("dtype", list(NP_DTYPES))
def test_numpy_round_trip(dtype):
    np_type = NP_DTYPES[dtype]
    values = np.arange(-3, 9).reshape(3, 4) % 5
    source = values.astype(np_type)
    a = mx.array(source)
    expected = mx.float32 if dtype == mx.float64 else dtype  # MLX turns float64 NumPy arrays into float32
    assert a.dtype == expected
    assert a.shape == (3, 4)
    assert np.array_equal(np.array(a), source.astype(np.array(a).dtype))


def test_numpy_float64_with_explicit_dtype_and_strided_source():
    source = np.arange(12.0).reshape(3, 4)
    assert mx.array(source, mx.float64).dtype == mx.float64
    strided = source[::2, ::-1]
    assert np.array_equal(np.array(mx.array(strided)), strided.astype(np.float32))


def test_buffer_objects():
    import array as pyarray

    a = mx.array(pyarray.array("f", [1.0, 2.0, 3.0]))
    assert a.dtype == mx.float32 and a.tolist() == [1.0, 2.0, 3.0]
    b = mx.array(memoryview(np.array([1, 2, 3], dtype=np.int16)))
    assert b.dtype == mx.int16 and b.tolist() == [1, 2, 3]


def test_properties():
    a = mx.zeros((2, 3, 4), mx.float16)
    assert (a.shape, a.ndim, a.size, a.itemsize, a.nbytes) == ((2, 3, 4), 3, 24, 2, 48)
    assert a.T.shape == (4, 3, 2)
    assert a.astype(mx.int8).dtype == mx.int8
    assert len(a) == 2
    assert [x.shape for x in a] == [(3, 4), (3, 4)]
    with pytest.raises(TypeError):
        len(mx.array(1))
    assert repr(mx.array([1, 2, 3])) == "array([1, 2, 3], dtype=int32)"
    assert repr(mx.float32) == "nuvec.core.float32"
    assert mx.float16.size == 2


def test_python_conversions():
    assert bool(mx.array(1)) is True
    assert float(mx.array(2.5)) == 2.5
    assert int(mx.array(7)) == 7
    assert [1, 2, 3][mx.array(1)] == 2
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.array([1, 2]))
    with pytest.raises(ValueError):
        mx.array([1, 2]).item()


def test_scalar_promotion_follows_mlx():
    # MLX's weak scalars: a Python scalar takes the array's dtype when its kind allows.
    assert (mx.array([1, 2], mx.float16) + 1.5).dtype == mx.float16
    assert (mx.array([1, 2], mx.int8) + 3).dtype == mx.int8
    assert (mx.array([1, 2], mx.uint8) * 2).dtype == mx.uint8
    assert (mx.array([1, 2], mx.int32) + 1.5).dtype == mx.float32
    assert (mx.array([1, 2], mx.bfloat16) * 2).dtype == mx.bfloat16
    assert (2 - mx.array([1, 2], mx.int16)).dtype == mx.int16
    assert (mx.array([True, False]) + 1).dtype == mx.int32


BINARY = [
    ("add", lambda a, b: a + b),
    ("subtract", lambda a, b: a - b),
    ("multiply", lambda a, b: a * b),
    ("divide", lambda a, b: a / b),
    ("floor_divide", lambda a, b: a // b),
    ("remainder", lambda a, b: a % b),
    ("power", lambda a, b: a**b),
    ("less", lambda a, b: a < b),
    ("less_equal", lambda a, b: a <= b),
    ("greater", lambda a, b: a > b),
    ("greater_equal", lambda a, b: a >= b),
    ("equal", lambda a, b: a == b),
    ("not_equal", lambda a, b: a != b),
]


@pytest.mark.parametrize("name,op", BINARY)
@pytest.mark.parametrize("dtype", [mx.float32, mx.int32, mx.float64])
def test_binary_operators_against_numpy(name, op, dtype):
    rng = np.random.default_rng(0)
    x = rng.integers(1, 6, size=(3, 4)).astype(NP_DTYPES[dtype])
    y = rng.integers(1, 4, size=(4,)).astype(NP_DTYPES[dtype])
    a, b = mx.array(x), mx.array(y)
    out = np.array(op(a, b))
    expected = op(x, y)
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    # Reflected operators with a Python scalar.
    np.testing.assert_allclose(np.array(op(3, a)), op(NP_DTYPES[dtype](3), x), rtol=1e-5)
    np.testing.assert_allclose(np.array(op(a, 2)), op(x, NP_DTYPES[dtype](2)), rtol=1e-5)


@pytest.mark.parametrize(
    "op",
    [lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b, lambda a, b: a << b, lambda a, b: a >> b],
)
def test_bitwise_operators(op):
    x = np.array([1, 6, 12, 255], dtype=np.int32)
    y = np.array([3, 1, 2, 4], dtype=np.int32)
    assert np.array_equal(np.array(op(mx.array(x), mx.array(y))), op(x, y))
    assert np.array_equal(np.array(op(mx.array(x), 2)), op(x, np.int32(2)))


def test_unary_operators_matmul_and_inplace():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    a = mx.array(x)
    assert np.array_equal(np.array(-a), -x)
    assert np.array_equal(np.array(abs(a)), np.abs(x))
    assert np.array_equal(np.array(~mx.array([1, 2], mx.int8)), ~np.array([1, 2], np.int8))
    np.testing.assert_allclose(np.array(a @ a.T), x @ x.T)
    np.testing.assert_allclose(np.array(x.T @ a), x.T @ x)
    b = a
    b += 1
    assert np.array_equal(np.array(b), x + 1)
    assert np.array_equal(np.array(a), x + 1)  # the same Python object, rebound in place as in MLX
    q, r = divmod(mx.array([7, -7]), 3)
    assert q.tolist() == [2, -3] and r.tolist() == [1, 2]


def test_equality_with_other_types_and_hash():
    a = mx.array([1, 2])
    assert (a == None) is False  # noqa: E711
    assert {a: 1}[a] == 1


INDICES = [
    (1,),
    (-1,),
    (slice(1, 3),),
    (slice(None, None, -1),),
    (slice(None, None, 2), slice(4, 0, -2)),
    (slice(-2, None), 0, slice(None, None, 3)),
    (Ellipsis, 1),
    (None, 1, Ellipsis, None),
    (1, None, slice(1, 3)),
    ([0, 2],),
    ([[0, 1], [2, 3]], slice(None)),
    (slice(None), [0, 3, 4]),
    (slice(None), [0, 1], [2, 3]),
    ([0, 1], slice(None), [2, 3]),
    (1, slice(None), [2, 3]),
    ([0, 2], 1),
    (Ellipsis, [1, -1]),
    (slice(None), None, [1, 2]),
    (np.array([3, 0]), slice(1, 4)),
    (slice(10, 20),),
    (slice(None, None, -3), slice(None), slice(5, None, -2)),
]


@pytest.mark.parametrize("index", INDICES, ids=[repr(i) for i in INDICES])
def test_getitem_matches_numpy(index):
    x = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    a = mx.array(x)
    idx = tuple(mx.array(i) if isinstance(i, np.ndarray) else i for i in index)
    expected = x[index]
    out = a[idx]
    assert out.shape == expected.shape
    assert np.array_equal(np.array(out), expected)


@pytest.mark.parametrize("index", INDICES, ids=[repr(i) for i in INDICES])
def test_setitem_matches_numpy(index):
    x = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    a = mx.array(x)
    target = x[index]
    update = np.arange(target.size, dtype=np.float32).reshape(target.shape) * -1 - 1
    x[index] = update
    a[index] = mx.array(update)
    assert np.array_equal(np.array(a), x)
    # A scalar broadcasts.
    x[index] = 7
    a[index] = 7
    assert np.array_equal(np.array(a), x)


def test_integer_index_errors():
    a = mx.zeros((2, 3))
    with pytest.raises(IndexError, match="out of bounds"):
        a[2]
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 0, 0]
    with pytest.raises(IndexError):
        a[mx.array([True, False])]


@pytest.mark.parametrize("index", [3, -4, 10, np.int64(3), (0, 3), (slice(None), -4), (Ellipsis, 3), (None, 3),
                                   (mx.array([0, 1]), 3)])
def test_out_of_bounds_integers_raise_as_numpy(index):
    entries = index if isinstance(index, tuple) else (index,)
    with pytest.raises(IndexError):  # NumPy's behaviour, the reference
        np.zeros((3, 3), np.float32)[tuple(np.array(e) if isinstance(e, mx.array) else e for e in entries)]
    a = mx.zeros((3, 3))
    with pytest.raises(IndexError, match="out of bounds"):
        a[index]
    with pytest.raises(IndexError, match="out of bounds"):
        a[index] = 1
    with pytest.raises(IndexError, match="out of bounds"):
        a.at[index].add(1)


@pytest.mark.parametrize("index", [-3, 2, (-1, -3), (slice(None), 2)])
def test_in_bounds_negative_integers_count_from_the_end(index):
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    assert np.array_equal(np.array(mx.array(x)[index]), x[index])


@pytest.mark.parametrize("index", [slice(1, 10), slice(-10, 2), slice(5, 10), slice(10, -10, -1), slice(-10, None, 2),
                                   (slice(None), slice(2, 100))])
def test_slices_clamp_as_python_does(index):
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    out = mx.array(x)[index]
    assert out.shape == x[index].shape
    assert np.array_equal(np.array(out), x[index])


@pytest.mark.parametrize(
    "method,ufunc",
    [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("maximum", np.maximum),
     ("minimum", np.minimum)],
)
def test_at_updates_apply_every_repeated_index(method, ufunc):
    x = np.arange(5, dtype=np.float32) + 1
    idx = np.array([0, 1, 1, 3, 0])
    v = np.array([2, 3, 4, 5, 6], dtype=np.float32)
    expected = x.copy()
    ufunc.at(expected, idx, v)
    out = getattr(mx.array(x).at[mx.array(idx)], method)(mx.array(v))
    np.testing.assert_allclose(np.array(out), expected)


def test_at_divide_and_basic_index():
    x = np.ones((3, 4), dtype=np.float32) * 8
    out = mx.array(x).at[1:, ::2].divide(2)
    x[1:, ::2] /= 2
    np.testing.assert_allclose(np.array(out), x)
    out = mx.array(x).at[0].add(1)
    x[0] += 1
    np.testing.assert_allclose(np.array(out), x)


def test_dtypes_and_categories():
    assert mx.issubdtype(mx.float32, mx.floating)
    assert mx.issubdtype(mx.int8, mx.signedinteger)
    assert not mx.issubdtype(mx.uint8, mx.signedinteger)
    assert mx.issubdtype(mx.complex64, mx.inexact)
    assert mx.issubdtype(mx.floating, mx.number)
    assert mx.issubdtype(mx.float16, mx.float16)
    assert isinstance(mx.float32, mx.Dtype)
    assert mx.DtypeCategory.floating == mx.floating
    assert mx.finfo(mx.float32).eps == pytest.approx(np.finfo(np.float32).eps)
    assert mx.finfo(mx.float16).max == pytest.approx(float(np.finfo(np.float16).max))
    assert mx.iinfo(mx.int8).min == -128 and mx.iinfo(mx.uint16).max == 65535


def test_tolist_for_every_dtype():
    for dtype, np_type in NP_DTYPES.items():
        x = (np.arange(6).reshape(2, 3) % 3).astype(np_type)
        assert mx.array(x).tolist() == x.tolist(), dtype
    assert mx.array([1.5, 2.5], mx.bfloat16).tolist() == [1.5, 2.5]
    assert math.isnan(mx.array(float("nan")).item())
