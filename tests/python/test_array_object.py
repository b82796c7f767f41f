"""nuvec.core.array as a Python type of its own (python/src/array_object.cpp): the C++ array lives inside the object,
made by the type's tp_new and __init__ and freed by its tp_dealloc. What pybind11's class gave must still hold:
construction, isinstance and subclasses, weak references, pickling in the earlier format, arrays passed to and from
pybind11 bindings (here and in nuvec._lm), and no leaks of objects or memory."""

import copyreg
import gc
import pickle
import sys
import weakref

import numpy as np
import pytest

import nuvec.core as mx
from leaks import assert_flat


def test_the_type_and_its_construction():
    assert mx.array.__module__ == "nuvec.core" and mx.array.__name__ == "array"
    a = mx.array([1.0, 2.0])
    assert type(a) is mx.array and isinstance(a, mx.array) and isinstance(a + 1, mx.array)
    assert mx.array(3, dtype=mx.int16).dtype == mx.int16 and mx.array(val=2.5).item() == 2.5
    assert mx.array.__init__.__doc__.startswith(
        "__init__(self: nuvec.core.array, val: object, dtype: Optional[nuvec.core.Dtype] = None) -> None")
    fresh = mx.array.__new__(mx.array)  # before __init__: a valid array all the same (unpickling starts here)
    assert isinstance(fresh, mx.array) and fresh.shape == ()
    a.__init__([5, 6, 7])  # __init__ again rebinds the object, as pybind11's did
    assert a.tolist() == [5, 6, 7]
    with pytest.raises(TypeError, match=r"__init__\(\) missing required argument 'val'"):
        mx.array()
    with pytest.raises(AttributeError):
        a.anything = 1  # no __dict__, as before
    with pytest.raises(TypeError):
        mx.array.__init__(np.zeros(2), [1.0])  # __init__ of something that is no array


def test_subclasses_construct_through_their_own_init():
    class Tagged(mx.array):
        def __init__(self, values, tag):
            super().__init__(values)
            self.tag = tag

    t = Tagged([1.0, 2.0], "x")
    assert isinstance(t, mx.array) and t.tag == "x" and (t * 2).tolist() == [2.0, 4.0]
    assert type(t * 2) is mx.array  # results are plain arrays, as in MLX
    assert mx.sum(t).item() == 3.0 and np.array_equal(np.asarray(t), [1.0, 2.0])
    r = weakref.ref(t)
    del t
    gc.collect()
    assert r() is None


def test_weak_references_and_deallocation():
    a = mx.ones((1 << 18,))
    mx.eval(a)
    base = mx.get_active_memory()
    r = weakref.ref(a)
    assert r() is a
    del a
    assert r() is None  # freed at once: no cycle, no garbage collection needed
    assert mx.get_active_memory() <= base - (1 << 20)


def test_pickles_as_pybind11s_class_did():
    a = mx.array([[1.5, 2.5], [3.5, 4.5]])
    reduced = a.__reduce_ex__(2)
    assert reduced[0] is copyreg.__newobj__ and reduced[1] == (mx.array,)
    data, shape, dtype = reduced[2]
    assert shape == [2, 2] and dtype == mx.float32 and data == np.array(a).tobytes()
    b = pickle.loads(pickle.dumps(a, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(b) is mx.array and b.tolist() == a.tolist()
    c = mx.array.__new__(mx.array)
    c.__setstate__((np.arange(3, dtype=np.int32).tobytes(), [3], mx.int32))
    assert c.tolist() == [0, 1, 2] and c.dtype == mx.int32
    with pytest.raises(TypeError, match=r"the state must be a tuple"):
        c.__setstate__([b"", [0], mx.int32])


def test_arrays_pass_through_pybind11_bindings():
    a = mx.array([3.0, 1.0, 2.0])
    out = mx.grad(lambda x: (x * x).sum())(a)  # transforms: arrays in and out of pybind11 functions and Python
    assert out.tolist() == [6.0, 2.0, 4.0]
    assert mx.meshgrid(a, a)[0].tolist()[0] == [3.0, 1.0, 2.0]  # a list of arrays out
    assert mx.divmod(mx.array([7]), 2)[0].tolist() == [3]  # a pybind11 function returning a tuple of arrays
    assert mx.array_equal(a, [3.0, 1.0, 2.0]).item()
    with pytest.raises(TypeError):
        mx.linalg.norm("not an array")


def test_lm_extension_takes_and_returns_core_arrays():
    lm = pytest.importorskip("nuvec._lm")
    params = lm.SamplingParams(temperature=0.0)
    token = params.sample(mx.array([[0.1, 3.0, 0.2]]))
    assert isinstance(token, mx.array) and token.tolist() == [1]


def test_results_leak_neither_objects_nor_memory():
    a, b = mx.array([1.0, 2.0, 3.0, 4.0]), mx.array([4.0, 3.0, 2.0, 1.0])
    before = sys.getrefcount(a), sys.getrefcount(b)

    def run(n):
        for _ in range(n):
            mx.eval(a + b)
            (a * 2).T.reshape(2, 2).sum().item()
            np.asarray(a - b)

    assert_flat(run, 1000, 20_000)
    assert (sys.getrefcount(a), sys.getrefcount(b)) == before
