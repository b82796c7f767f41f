"""export_function, exporter and import_function as MLX's Python API spells them: round trips against the original
function and NumPy, keyword arguments, several shapes in one file, shapeless, errors, and export_to_dot."""

import io

import numpy as np
import pytest

import nuvec.core as mx

rng = np.random.default_rng(11)


def test_round_trip_matches_numpy(tmp_path):
    path = tmp_path / "f.nuvecfn"
    w = rng.normal(size=(3, 2)).astype(np.float32)

    def fun(x, y):
        return mx.tanh(x @ mx.array(w)) + y

    x = rng.normal(size=(4, 3)).astype(np.float32)
    y = rng.normal(size=(2,)).astype(np.float32)
    mx.export_function(path, fun, mx.array(x), mx.array(y))
    imported = mx.import_function(path)
    (out,) = imported(mx.array(x), mx.array(y))
    np.testing.assert_allclose(np.array(out), np.tanh(x @ w) + y, rtol=1e-5, atol=1e-6)


def test_keyword_arguments_and_several_outputs(tmp_path):
    path = str(tmp_path / "kw.nuvecfn")

    def fun(x, *, scale):
        return x * scale, mx.sum(x)

    mx.export_function(path, fun, mx.ones((2, 2)), scale=mx.array(3.0))
    imported = mx.import_function(path)
    a, b = imported(mx.array([[1.0, 2.0], [3.0, 4.0]]), scale=mx.array(0.5))
    np.testing.assert_allclose(np.array(a), [[0.5, 1.0], [1.5, 2.0]])
    assert b.item() == 10.0
    with pytest.raises(ValueError, match="No exported trace matches"):
        imported(mx.ones((2, 2)))


def test_exporter_several_shapes(tmp_path):
    path = tmp_path / "shapes.nuvecfn"
    with mx.exporter(path, lambda x: mx.cumsum(x, axis=0)) as ex:
        ex(mx.ones((2,)))
        ex(mx.ones((3, 2)))
    with pytest.raises(RuntimeError, match="closed"):
        ex(mx.ones((4,)))
    imported = mx.import_function(path)
    np.testing.assert_array_equal(np.array(imported(mx.array([1.0, 2.0]))[0]), [1.0, 3.0])
    np.testing.assert_array_equal(np.array(imported(mx.ones((3, 2)))[0]), [[1, 1], [2, 2], [3, 3]])
    with pytest.raises(ValueError, match=r"inputs of shapes \(5,\) float32"):
        imported(mx.ones((5,)))


def test_shapeless(tmp_path):
    path = tmp_path / "shapeless.nuvecfn"
    mx.export_function(path, lambda x: mx.exp(x) * 2, mx.ones((2, 2)), shapeless=True)
    x = rng.normal(size=(3, 5)).astype(np.float32)
    (out,) = mx.import_function(path)(mx.array(x))
    np.testing.assert_allclose(np.array(out), np.exp(x) * 2, rtol=1e-6)


def test_damaged_file_raises(tmp_path):
    path = tmp_path / "bad.nuvecfn"
    mx.export_function(path, lambda x: x + 1, mx.ones((2,)))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="truncated or corrupt"):
        mx.import_function(path)
    path.write_bytes(b"not an exported function")
    with pytest.raises(RuntimeError, match="Not a nuvec exported function"):
        mx.import_function(path)


def test_export_to_dot():
    a = mx.array([1.0, 2.0])
    out = io.StringIO()
    mx.export_to_dot(out, mx.exp(a) + a)
    text = out.getvalue()
    assert text.startswith("digraph {")
    assert 'label="Exp"' in text and 'label="Add"' in text
