"""nuvec.utils' tree functions, against the structures written out by hand."""

import nuvec.core as mx
from nuvec.utils import tree_flatten, tree_map, tree_map_with_path, tree_merge, tree_reduce, tree_unflatten


def test_tree_map_and_flatten_round_trip():
    tree = {"layers": [{"w": mx.array(1.0), "b": mx.array(2.0)}, {"w": mx.array(3.0)}], "scale": mx.array(4.0)}
    doubled = tree_map(lambda x: x * 2, tree)
    assert doubled["layers"][1]["w"].item() == 6.0
    flat = tree_flatten(tree)
    assert [k for k, _ in flat] == ["layers.0.w", "layers.0.b", "layers.1.w", "scale"]
    rebuilt = tree_unflatten(flat)
    assert isinstance(rebuilt["layers"], list) and rebuilt["layers"][0]["b"].item() == 2.0
    assert tree_reduce(lambda acc, x: acc + x.item(), tree, 0.0) == 10.0
    paths = tree_map_with_path(lambda path, x: path, tree)
    assert paths["layers"][0]["w"] == "layers.0.w"
    summed = tree_map(lambda x, y: x + y, tree, doubled)
    assert summed["scale"].item() == 12.0
    merged = tree_merge({"a": 1}, {"b": 2})
    assert merged == {"a": 1, "b": 2}
