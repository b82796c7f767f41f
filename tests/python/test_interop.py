"""Zero-copy exchange with NumPy (buffer protocol, __array__) and PyTorch (DLPack), and pickling.

Sharing is checked by writing through one view and reading through the other.
"""

import copy
import gc
import pickle

import numpy as np
import pytest
import torch

import nuvec.core as mx

SHARED_DTYPES = [
    (mx.bool_, np.bool_),
    (mx.uint8, np.uint8),
    (mx.uint16, np.uint16),
    (mx.uint32, np.uint32),
    (mx.uint64, np.uint64),
    (mx.int8, np.int8),
    (mx.int16, np.int16),
    (mx.int32, np.int32),
    (mx.int64, np.int64),
    (mx.float16, np.float16),
    (mx.float32, np.float32),
    (mx.float64, np.float64),
    (mx.complex64, np.complex64),
]


@pytest.mark.parametrize("dtype,np_type", SHARED_DTYPES)
def test_numpy_view_shares_memory(dtype, np_type):
    a = mx.arange(6).astype(dtype).reshape(2, 3)
    view = np.asarray(a)
    assert view.dtype == np_type and view.shape == (2, 3)
    view[1, 2] = 1
    view[0, 0] = 0
    assert a[1, 2].item() == 1 and a[0, 0].item() == 0
    assert np.shares_memory(view, np.asarray(a))


def test_numpy_view_of_a_strided_array():
    a = mx.arange(12, dtype=mx.float32).reshape(3, 4).T  # a transposed view: strided, no copy
    view = np.asarray(a)
    assert view.shape == (4, 3)
    assert np.array_equal(view, np.arange(12, dtype=np.float32).reshape(3, 4).T)


def test_numpy_view_keeps_memory_alive():
    a = mx.arange(1000, dtype=mx.float32) * 2
    view = np.asarray(a)
    a[0] = 5  # rebinds a to a new array; the view keeps the old one
    del a
    gc.collect()
    assert view[10] == 20.0 and view[0] == 0.0
    m = memoryview(mx.array([1, 2, 3], mx.int16))
    assert m.tolist() == [1, 2, 3] and m.format == "h"


def test_array_protocol_with_a_dtype():
    assert mx.array([1, 2]).__array__(np.float64).dtype == np.float64


def test_bfloat16_to_numpy_raises_as_mlx_does():
    # MLX's Python raises TypeError ("bfloat16 arrays cannot be converted to NumPy"): NumPy has no bfloat16.
    a = mx.array([1.5, -2.5], mx.bfloat16)
    for convert in (np.array, np.asarray, a.__array__):
        with pytest.raises(TypeError, match="bfloat16 arrays cannot be converted to NumPy; convert them first"):
            convert(a)
    with pytest.raises(BufferError, match="bfloat16 arrays have no buffer format"):
        memoryview(a)
    # The ways out the messages name: a float32 copy, or the raw bits (1.5 is 0x3FC0 in bfloat16, -2.5 is 0xC020).
    assert np.array(a.astype(mx.float32)).tolist() == [1.5, -2.5]
    assert np.array(a.view(mx.uint16)).tolist() == [0x3FC0, 0xC020]
    assert a.tolist() == [1.5, -2.5]


def test_to_torch_without_copy():
    a = mx.arange(6, dtype=mx.float32).reshape(2, 3)
    t = torch.from_dlpack(a)
    assert t.shape == (2, 3) and t.dtype == torch.float32
    t[0, 1] = 100.0
    assert a[0, 1].item() == 100.0
    t2 = torch.utils.dlpack.from_dlpack(mx.arange(4, dtype=mx.int64))
    assert t2.tolist() == [0, 1, 2, 3]


def test_from_torch_without_copy():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    a = mx.from_dlpack(t)
    assert a.shape == (3, 4) and a.dtype == mx.float32
    t[2, 3] = -1.0
    assert a[2, 3].item() == -1.0
    # A transposed tensor arrives as a strided view.
    b = mx.from_dlpack(t.t())
    assert np.array_equal(np.array(b), t.t().numpy())
    for torch_type, dtype in [(torch.int32, mx.int32), (torch.float16, mx.float16), (torch.bfloat16, mx.bfloat16),
                              (torch.uint8, mx.uint8), (torch.float64, mx.float64)]:
        assert mx.from_dlpack(torch.ones(2, dtype=torch_type)).dtype == dtype


def test_from_numpy_dlpack_and_array_copy():
    x = np.arange(5, dtype=np.int32)
    shared = mx.from_dlpack(x)
    x[0] = 42
    assert shared[0].item() == 42
    copied = mx.array(torch.arange(3, dtype=torch.float32))  # array() copies, as MLX's
    assert copied.tolist() == [0.0, 1.0, 2.0]
    y = np.from_dlpack(mx.array([1.0, 2.0]))
    assert y.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16, mx.int8, mx.complex64, mx.bool_])
def test_pickle_and_copy(dtype):
    a = (mx.arange(6) % 3).astype(dtype).reshape(3, 2)
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == a.dtype and b.shape == a.shape
    assert mx.array_equal(a, b).item()
    c = copy.deepcopy(a)
    assert mx.array_equal(a, c).item()
    assert pickle.loads(pickle.dumps(mx.float16)) == mx.float16
