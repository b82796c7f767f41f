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


def test_metadata_round_trips(tmp_path):
    # MLX's Python API: metadata is a string kept in the file; import_function(..., return_metadata=True) gives it.
    path = tmp_path / "meta.nuvecfn"
    mx.export_function(path, lambda x: x * 2, mx.ones((2,)), metadata='{"version": 3}')
    fn, metadata = mx.import_function(path, return_metadata=True)
    assert metadata == '{"version": 3}'
    assert fn(mx.array([1.0, 2.0]))[0].tolist() == [2.0, 4.0]
    mx.export_function(path, lambda x: x * 2, mx.ones((2,)))
    assert mx.import_function(str(path), return_metadata=True)[1] == ""
    with mx.exporter(path, lambda x: x + 1, metadata="several shapes") as ex:
        ex(mx.ones((2,)))
        ex(mx.ones((3,)))
    fn, metadata = mx.import_function(path, True)
    assert metadata == "several shapes" and fn(mx.zeros((3,)))[0].tolist() == [1.0, 1.0, 1.0]


def test_callback_export_events():
    # The events of tests/core/export_callback_test.cpp, as dicts: inputs, keyword inputs, outputs, constants, then
    # one per primitive with its inputs, outputs and parameters.
    c = mx.array([[1.0, 2.0], [3.0, 4.0]])
    events = []

    def fun(x, y, *, bias):
        return mx.exp(x @ y.T) + c + bias

    mx.export_function(events.append, fun, mx.zeros((2, 3)), mx.zeros((2, 3)), bias=mx.zeros((2, 2)))
    assert [e["type"] for e in events] == ["inputs", "keyword_inputs", "outputs", "constants"] + ["primitive"] * 5
    assert events[0]["inputs"] == [("A", [2, 3], mx.float32), ("B", [2, 3], mx.float32), ("C", [2, 2], mx.float32)]
    assert events[1]["keywords"] == [("bias", "C")]
    assert events[2]["outputs"] == [("D", [2, 2], mx.float32)]
    (name, constant), = events[3]["constants"]
    assert name == "E" and constant.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert [e["name"] for e in events[4:]] == ["Transpose", "Matmul", "Exp", "Add", "Add"]
    assert events[4]["inputs"] == [("B", [2, 3], mx.float32)]
    assert events[4]["arguments"] == [[1, 0]]  # Transpose's axes
    assert events[5]["arguments"] == []


def test_callback_export_rejects_metadata_and_packed_inputs():
    with pytest.raises(ValueError, match="metadata argument is only supported when exporting to a file"):
        mx.export_function(lambda event: None, lambda x: x, mx.ones((2,)), metadata="m")
    # MLX's packed form: one tuple of positional arrays and one dict of keyword arrays.
    events = []
    mx.export_function(events.append, lambda x, *, y: x + y, (mx.ones((2,)),), {"y": mx.ones((2,))})
    assert events[1]["keywords"] == [("y", "B")]
    with pytest.raises(ValueError, match="a single tuple and/or dictionary of arrays"):
        mx.export_function(events.append, lambda x: x, (mx.ones((2,)),), mx.ones((2,)))
