"""Tree utilities (mlx.utils): maps, flattening and reductions over nested lists, tuples and dicts."""

from collections import defaultdict
from typing import Any, Callable, List, Optional, Tuple


def _is_node(tree, is_leaf):
    if is_leaf is not None and is_leaf(tree):
        return False
    return isinstance(tree, (list, tuple, dict))


def tree_map(fn: Callable, tree: Any, *rest: Any, is_leaf: Optional[Callable] = None) -> Any:
    """Applies ``fn`` to the leaves of ``tree`` (and the matching leaves of ``rest``), keeping the structure."""
    if not _is_node(tree, is_leaf):
        return fn(tree, *rest)
    if isinstance(tree, dict):
        return {k: tree_map(fn, v, *[r[k] for r in rest], is_leaf=is_leaf) for k, v in tree.items()}
    children = [tree_map(fn, child, *[r[i] for r in rest], is_leaf=is_leaf) for i, child in enumerate(tree)]
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*children)
    return type(tree)(children)


def tree_map_with_path(
    fn: Callable, tree: Any, *rest: Any, is_leaf: Optional[Callable] = None, path: Optional[str] = None
) -> Any:
    """As tree_map, passing each leaf's dotted path (``"layers.0.weight"``) as the first argument."""
    if not _is_node(tree, is_leaf):
        return fn(path, tree, *rest)

    def join(key):
        return str(key) if path is None else f"{path}.{key}"

    if isinstance(tree, dict):
        return {
            k: tree_map_with_path(fn, v, *[r[k] for r in rest], is_leaf=is_leaf, path=join(k)) for k, v in tree.items()
        }
    children = [
        tree_map_with_path(fn, child, *[r[i] for r in rest], is_leaf=is_leaf, path=join(i))
        for i, child in enumerate(tree)
    ]
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*children)
    return type(tree)(children)


def tree_flatten(tree: Any, prefix: str = "", is_leaf: Optional[Callable] = None) -> List[Tuple[str, Any]]:
    """The leaves of ``tree`` as (dotted path, leaf) pairs, depth first: ``[("a.0", x), ("b", y)]``."""
    if not _is_node(tree, is_leaf):
        return [(prefix[1:], tree)]
    items = tree.items() if isinstance(tree, dict) else enumerate(tree)
    flat = []
    for key, child in items:
        flat.extend(tree_flatten(child, f"{prefix}.{key}", is_leaf))
    return flat


def tree_unflatten(tree: List[Tuple[str, Any]]) -> Any:
    """The nested structure tree_flatten came from: integer keys make lists, others dicts."""
    if len(tree) == 1 and tree[0][0] == "":
        return tree[0][1]
    children = defaultdict(list)
    for key, value in tree:
        head, _, rest = key.partition(".")
        children[head].append((rest, value))
    if all(k.isdigit() for k in children):
        ordered = sorted(children.items(), key=lambda kv: int(kv[0]))
        out = []
        for k, v in ordered:
            out.extend([{}] * (int(k) - len(out)))
            out.append(tree_unflatten(v))
        return out
    return {k: tree_unflatten(v) for k, v in children.items()}


def tree_reduce(fn: Callable, tree: Any, initializer: Any = None, is_leaf: Optional[Callable] = None) -> Any:
    """Folds ``fn(accumulator, leaf)`` over the leaves of ``tree``."""
    if not _is_node(tree, is_leaf):
        return tree if initializer is None else fn(initializer, tree)
    accumulator = initializer
    children = tree.values() if isinstance(tree, dict) else tree
    for child in children:
        accumulator = tree_reduce(fn, child, accumulator, is_leaf)
    return accumulator


def tree_merge(tree_a: Any, tree_b: Any, merge_fn: Optional[Callable] = None) -> Any:
    """Merges two trees with disjoint leaves (a leaf present in both goes through ``merge_fn``)."""
    if isinstance(tree_a, (dict, list, tuple)) and len(tree_a) == 0:
        tree_a = None
    if isinstance(tree_b, (dict, list, tuple)) and len(tree_b) == 0:
        tree_b = None
    if tree_a is None:
        return tree_b
    if tree_b is None:
        return tree_a
    if isinstance(tree_a, dict) and isinstance(tree_b, dict):
        keys = list(tree_a.keys()) + [k for k in tree_b.keys() if k not in tree_a]
        return {k: tree_merge(tree_a.get(k), tree_b.get(k), merge_fn) for k in keys}
    if isinstance(tree_a, (list, tuple)) and isinstance(tree_b, (list, tuple)):
        n = max(len(tree_a), len(tree_b))
        pad_a = list(tree_a) + [None] * (n - len(tree_a))
        pad_b = list(tree_b) + [None] * (n - len(tree_b))
        return type(tree_a)(tree_merge(a, b, merge_fn) for a, b in zip(pad_a, pad_b))
    if merge_fn is None:
        raise ValueError("[tree_merge] Trees contain the same leaf; pass merge_fn to combine them.")
    return merge_fn(tree_a, tree_b)

