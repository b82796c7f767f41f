"""load and save through file names and binary file-like objects (io.BytesIO), checked against NumPy's np.load and
np.save for .npy and .npz."""

import io

import numpy as np
import pytest

import nuvec.core as mx


def sample(dtype=np.float32):
    return (np.arange(24).reshape(2, 3, 4) % 7 - 3).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.bool_])
def test_save_npy_to_bytesio_reads_in_numpy(dtype):
    ref = sample(dtype)
    buf = io.BytesIO()
    mx.save(buf, mx.array(ref))
    buf.seek(0)
    np.testing.assert_array_equal(np.load(buf), ref)


def test_load_npy_from_numpys_bytes():
    ref = sample()
    buf = io.BytesIO()
    np.save(buf, ref)
    buf.seek(0)
    got = mx.load(buf, format="npy")
    np.testing.assert_array_equal(np.array(got), ref)


@pytest.mark.parametrize("saver", ["savez", "savez_compressed"])
def test_savez_to_bytesio_reads_in_numpy(saver):
    a, b = sample(), sample(np.int32)[0]
    buf = io.BytesIO()
    getattr(mx, saver)(buf, mx.array(a), weights=mx.array(b))
    buf.seek(0)
    with np.load(buf) as got:
        assert sorted(got.files) == ["arr_0", "weights"]
        np.testing.assert_array_equal(got["arr_0"], a)
        np.testing.assert_array_equal(got["weights"], b)


@pytest.mark.parametrize("numpy_saver", [np.savez, np.savez_compressed])
def test_load_npz_from_numpys_bytes(numpy_saver):
    a, b = sample(), sample(np.float16)
    buf = io.BytesIO()
    numpy_saver(buf, a=a, b=b)
    buf.seek(0)
    got = mx.load(buf, format="npz")
    assert set(got) == {"a", "b"}
    np.testing.assert_array_equal(np.array(got["a"]), a)
    np.testing.assert_array_equal(np.array(got["b"]), b)


def test_safetensors_round_trip_through_bytesio():
    arrays = {"w": mx.array(sample()), "b": mx.array(sample(np.int8)[1])}
    buf = io.BytesIO()
    mx.save_safetensors(buf, arrays, metadata={"format": "mlx"})
    buf.seek(0)
    got, meta = mx.load(buf, format="safetensors", return_metadata=True)
    assert meta == {"format": "mlx"}
    assert set(got) == {"w", "b"}
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype
        np.testing.assert_array_equal(np.array(got[k]), np.array(v))


def test_gguf_file_loads_through_an_open_file(tmp_path):
    path = tmp_path / "t.gguf"
    mx.save_gguf(str(path), {"w": mx.array(sample())})
    with open(path, "rb") as f:
        got = mx.load(f)  # the format comes from the open file's name
    np.testing.assert_array_equal(np.array(got["w"]), sample())


def test_gguf_round_trip_through_bytesio_matches_the_file(tmp_path):
    arrays = {"w": mx.array(sample()), "b": mx.array(sample(np.int8)[1]), "h": mx.array(sample(np.float16))}
    metadata = {"general.name": "tiny", "tokens": ["a", "b"], "n": mx.array(3, mx.uint32)}
    buf = io.BytesIO()
    mx.save_gguf(buf, arrays, metadata)
    # The bytes are those written to a path (the extension appended there as always).
    mx.save_gguf(str(tmp_path / "t"), arrays, metadata)
    assert buf.getvalue() == (tmp_path / "t.gguf").read_bytes()
    buf.seek(0)
    got, meta = mx.load(buf, format="gguf", return_metadata=True)
    assert set(got) == set(arrays)
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype
        np.testing.assert_array_equal(np.array(got[k]), np.array(v))
    assert meta["general.name"] == "tiny" and meta["tokens"] == ["a", "b"] and meta["n"].item() == 3


def test_gguf_to_an_open_file(tmp_path):
    path = tmp_path / "open.gguf"
    with open(path, "wb") as f:
        mx.save_gguf(f, {"w": mx.array(sample())})
    np.testing.assert_array_equal(np.array(mx.load(str(path))["w"]), sample())


def test_gguf_to_a_file_object_checks_dtypes_before_writing():
    buf = io.BytesIO()
    with pytest.raises(RuntimeError, match="file-like object: tensor \"w\": dtype float64 is not supported"):
        mx.save_gguf(buf, {"w": mx.array(sample(np.float64), mx.float64)})
    assert buf.getvalue() == b""


def test_save_to_an_open_file_keeps_its_name(tmp_path):
    path = tmp_path / "plain"
    with open(path, "wb") as f:
        mx.save(f, mx.array(sample()))
    np.testing.assert_array_equal(np.load(path), sample())


def test_paths_get_the_extension_appended(tmp_path):
    mx.savez(tmp_path / "archive", x=mx.array(sample()))
    np.testing.assert_array_equal(np.load(tmp_path / "archive.npz")["x"], sample())


def test_file_like_without_a_name_needs_a_format():
    buf = io.BytesIO()
    mx.save(buf, mx.array(sample()))
    buf.seek(0)
    with pytest.raises(ValueError, match=r"\[load\] Could not infer the format"):
        mx.load(buf)


def test_text_mode_file_is_rejected():
    with pytest.raises(ValueError, match="binary mode"):
        mx.load(io.StringIO("not bytes"), format="npy")
