"""The array's operators as Python calls them through the type's C slots (the fast path of `a + b`), against the
methods of the same names and NumPy; and eval's argument handling."""

import numpy as np
import pytest

import nuvec.core as mx

ARITHMETIC = [
    ("__add__", "__radd__", "__iadd__", lambda a, b: a + b),
    ("__sub__", "__rsub__", "__isub__", lambda a, b: a - b),
    ("__mul__", "__rmul__", "__imul__", lambda a, b: a * b),
    ("__truediv__", "__rtruediv__", "__itruediv__", lambda a, b: a / b),
    ("__floordiv__", "__rfloordiv__", "__ifloordiv__", lambda a, b: a // b),
    ("__mod__", "__rmod__", "__imod__", lambda a, b: a % b),
    ("__pow__", "__rpow__", "__ipow__", lambda a, b: a**b),
    ("__and__", "__rand__", "__iand__", lambda a, b: a & b),
    ("__or__", "__ror__", "__ior__", lambda a, b: a | b),
    ("__xor__", "__rxor__", "__ixor__", lambda a, b: a ^ b),
    ("__lshift__", "__rlshift__", "__ilshift__", lambda a, b: a << b),
    ("__rshift__", "__rrshift__", "__irshift__", lambda a, b: a >> b),
]


@pytest.mark.parametrize("name,reflected,inplace,op", ARITHMETIC)
def test_operator_slots_match_methods_and_numpy(name, reflected, inplace, op):
    x = np.array([[1, 6], [12, 7]], dtype=np.int32)
    y = np.array([3, 2], dtype=np.int32)
    a, b = mx.array(x), mx.array(y)
    expected = op(x, y)
    np.testing.assert_allclose(np.array(op(a, b)), expected, rtol=1e-6)
    np.testing.assert_allclose(np.array(getattr(a, name)(b)), expected, rtol=1e-6)
    np.testing.assert_allclose(np.array(op(5, a)), op(np.int32(5), x), rtol=1e-6)
    np.testing.assert_allclose(np.array(getattr(a, reflected)(5)), op(np.int32(5), x), rtol=1e-6)
    assert op(a, b).dtype == op(a, 2).dtype == (mx.float32 if name == "__truediv__" else mx.int32)
    c = mx.array(x)
    alias = c
    c = getattr(c, inplace)(b)
    assert c is alias  # rebound in place, as MLX's
    np.testing.assert_allclose(np.array(alias), expected, rtol=1e-6)


def test_inplace_operator_statements_rebind_the_object():
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    a = mx.array(x)
    alias = a
    a += 1
    a *= mx.array([2.0, 2.0, 2.0])
    a -= 0.5
    a /= 2
    a **= 2
    a @= mx.eye(3)
    assert alias is a
    np.testing.assert_allclose(np.array(alias), (((x + 1) * 2 - 0.5) / 2) ** 2 @ np.eye(3), rtol=1e-6)
    with pytest.raises(TypeError, match="Cannot convert an object of type <class 'str'>"):
        a += "x"


def test_comparison_slots_and_swapped_forms():
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    a = mx.array(x)
    assert np.array_equal(np.array(a < 2), x < 2)
    assert np.array_equal(np.array(2 < a), 2 < x)  # Python swaps it into a > 2
    assert np.array_equal(np.array(a >= mx.array(x[::-1])), x >= x[::-1])
    assert np.array_equal(np.array(a.__le__(2)), x <= 2)
    assert (a == None) is False  # noqa: E711  (NotImplemented both ways: Python compares identities)
    assert (a != "x") is True
    with pytest.raises(TypeError):
        _ = a < "x"


def test_unary_slots():
    x = np.array([-2, 0, 3], dtype=np.int8)
    a = mx.array(x)
    assert np.array_equal(np.array(-a), -x)
    assert np.array_equal(np.array(+a), x) and (+a) is not a
    assert np.array_equal(np.array(abs(a)), np.abs(x))
    assert np.array_equal(np.array(~a), ~x)


def test_unsupported_operands_and_errors():
    a = mx.array([1.0, 2.0])
    assert a.__add__("x") is NotImplemented
    with pytest.raises(TypeError, match="unsupported operand"):
        _ = a + "x"
    with pytest.raises(TypeError, match="unsupported operand"):
        _ = object() * a
    with pytest.raises(TypeError):
        pow(a, 2, 3)
    # nuvec's errors keep their type and message through the slots.
    with pytest.raises(ValueError, match=r"\[broadcast_shapes\] Shapes \(3\) and \(2\) cannot be broadcast"):
        _ = mx.array([1, 2, 3]) + a
    with pytest.raises(ValueError, match=r"\[broadcast_shapes\]"):
        _ = mx.array([1, 2, 3]) < a
    with pytest.raises(ValueError, match=r"\[matmul\]"):
        _ = a @ mx.array([1.0, 2.0, 3.0])


def test_numpy_operands_on_either_side():
    x = np.array([1.0, 2.0], dtype=np.float32)
    a = mx.array(x)
    right = a + np.array([1.0, 1.0], dtype=np.float32)
    assert isinstance(right, mx.array) and np.array_equal(np.array(right), x + 1)
    left = np.array([1.0, 1.0], dtype=np.float32) + a  # NumPy's operator runs first and converts the array
    assert np.array_equal(np.asarray(left), x + 1)


def test_subclasses_keep_their_overrides():
    class Sub(mx.array):
        def __add__(self, other):
            return "sub"

    s = Sub([1.0])
    assert s + 1 == "sub"
    assert np.array_equal(np.array(1 + s), [2.0])  # the inherited slot
    assert np.array_equal(np.array(s * 3), [3.0])


def test_eval_arguments():
    a = mx.array([1.0, 2.0]) + 1
    b = mx.array([3.0]) * 2
    assert mx.eval() is None
    assert mx.eval([a, {"k": (b,)}], 1, "not an array") is None
    assert a.tolist() == [2.0, 3.0] and b.tolist() == [6.0]
    c = mx.exp(a)
    assert mx.eval(c) is None and np.allclose(np.array(c), np.exp([2.0, 3.0]))
    with pytest.raises(TypeError):
        mx.eval(a, x=1)
    assert mx.eval.__doc__.startswith("eval(*args) -> None")


def test_freed_results_leave_no_stale_instances():
    # pybind11 keeps a table of live instances by C++ address, looked up when a binding returns an array it holds;
    # a result made by the slots that stayed in it after being freed came back in place of a later array there.
    x = mx.array([1.0, 2.0])
    for _ in range(100):
        _ = x * 2
        assert mx.grad(lambda y: (y * y).sum())(x).tolist() == [2.0, 4.0]
        assert mx.vmap(lambda y: y + 1)(x).tolist() == [2.0, 3.0]
