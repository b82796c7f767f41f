"""Module: a dict of parameters and child modules, as mlx.nn.Module."""

from typing import Any, Callable, List, Optional, Tuple

import nuvec.core as mx
from nuvec.utils import tree_flatten, tree_unflatten


def _is_module_container(value):
    return isinstance(value, (Module, dict, list, tuple))


class Module(dict):
    """The base of layers: attributes that are arrays are parameters, attributes that are modules are children.

    Parameters and children live in the dict itself, so ``parameters()`` and ``update()`` see nested lists and dicts
    of them as one tree.
    """

    def __init__(self):
        super().__init__()
        object.__setattr__(self, "_no_grad", set())
        object.__setattr__(self, "_training", True)

    @property
    def training(self) -> bool:
        return self._training

    @property
    def state(self) -> "Module":
        """The module itself, as a tree of its arrays (what compile's inputs= and outputs= take)."""
        return self

    def __getattr__(self, key: str):
        if key in self:
            return self[key]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __setattr__(self, key: str, value: Any):
        if isinstance(value, (mx.array, dict, list, tuple)) or isinstance(value, Module):
            if key in self.__dict__:
                object.__delattr__(self, key)
            self[key] = value
        else:
            object.__setattr__(self, key, value)

    def __delattr__(self, key: str):
        if key in self:
            del self[key]
        else:
            object.__delattr__(self, key)

    def _tree(self, keep: Callable[["Module", str, Any], bool]):
        def walk(value, module, key):
            if isinstance(value, Module):
                return {k: walk(v, value, k) for k, v in value.items()}
            if isinstance(value, dict):
                return {k: walk(v, module, key) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [walk(v, module, key) for v in value]
            if isinstance(value, mx.array) and keep(module, key, value):
                return value
            return {}

        return {k: walk(v, self, k) for k, v in self.items()}

    def parameters(self) -> dict:
        """Every array of the module tree, nested as the modules hold them."""
        return _prune(self._tree(lambda m, k, v: True))

    def trainable_parameters(self) -> dict:
        """The parameters not frozen."""
        return _prune(self._tree(lambda m, k, v: k not in m._no_grad))

    def children(self) -> dict:
        return {k: v for k, v in self.items() if isinstance(v, Module) or (
            isinstance(v, (list, tuple, dict)) and any(isinstance(x, Module) for x in _values(v)))}

    def modules(self) -> List["Module"]:
        """This module and every module below it."""
        found = []

        def walk(value):
            if isinstance(value, Module):
                found.append(value)
            if isinstance(value, (Module, dict)):
                for v in value.values():
                    walk(v)
            elif isinstance(value, (list, tuple)):
                for v in value:
                    walk(v)

        walk(self)
        return found

    def update(self, parameters: dict) -> "Module":
        """Replaces the parameters named in ``parameters`` (a tree as parameters() gives) in place."""

        def apply(target, new):
            items = new.items() if isinstance(new, dict) else enumerate(new)
            for key, value in items:
                if isinstance(value, mx.array):
                    target[key] = value
                elif isinstance(value, (dict, list)) and _is_module_container(target[key]):
                    apply(target[key], value)

        apply(self, parameters)
        return self

    def apply(self, map_fn: Callable[[mx.array], mx.array]) -> "Module":
        """Maps every parameter through ``map_fn`` (casting a model, for example)."""
        from nuvec.utils import tree_map

        return self.update(tree_map(map_fn, self.parameters()))

    def freeze(self, keys: Optional[List[str]] = None) -> "Module":
        """Excludes parameters (all of every module, or the named ones) from trainable_parameters()."""
        for m in self.modules():
            names = keys if keys is not None else [k for k, v in m.items() if isinstance(v, mx.array)]
            m._no_grad.update(names)
        return self

    def unfreeze(self, keys: Optional[List[str]] = None) -> "Module":
        for m in self.modules():
            if keys is None:
                m._no_grad.clear()
            else:
                m._no_grad.difference_update(keys)
        return self

    def train(self, mode: bool = True) -> "Module":
        for m in self.modules():
            object.__setattr__(m, "_training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def save_weights(self, file: str):
        """The parameters to a .safetensors or .npz file, by dotted name."""
        flat = dict(tree_flatten(self.parameters()))
        if file.endswith(".npz"):
            mx.savez(file, **flat)
        else:
            mx.save_safetensors(file, flat)

    def load_weights(self, file_or_weights, strict: bool = True) -> "Module":
        """Parameters from a file or a list of (name, array) pairs; strict checks names and shapes."""
        weights = file_or_weights
        if isinstance(weights, str):
            weights = list(mx.load(weights).items())
        if strict:
            current = dict(tree_flatten(self.parameters()))
            given = dict(weights)
            missing = sorted(set(current) - set(given))
            extra = sorted(set(given) - set(current))
            if missing or extra:
                raise ValueError(f"[load_weights] Missing parameters {missing}; unexpected parameters {extra}.")
            for name, value in given.items():
                if value.shape != current[name].shape:
                    raise ValueError(
                        f"[load_weights] Expected shape {current[name].shape} for {name}; got {value.shape}.")
        return self.update(tree_unflatten(list(weights)))

    def __repr__(self):
        return f"{type(self).__name__}()"


def _values(container):
    return container.values() if isinstance(container, dict) else container


def _prune(tree):
    """Drops empty dicts and lists left by non-parameter leaves, keeping list positions."""
    if isinstance(tree, dict):
        out = {k: _prune(v) for k, v in tree.items()}
        return {k: v for k, v in out.items() if not (isinstance(v, (dict, list)) and not _has_arrays(v))}
    if isinstance(tree, list):
        return [_prune(v) for v in tree]
    return tree


def _has_arrays(tree) -> bool:
    if isinstance(tree, mx.array):
        return True
    if isinstance(tree, dict):
        return any(_has_arrays(v) for v in tree.values())
    if isinstance(tree, (list, tuple)):
        return any(_has_arrays(v) for v in tree)
    return False


def value_and_grad(model: Module, fn: Callable) -> Callable[..., Tuple[Any, dict]]:
    """fn(*args)'s value and its gradient with respect to model's trainable parameters (mlx.nn.value_and_grad)."""

    def inner(params, *args, **kwargs):
        model.update(params)
        return fn(*args, **kwargs)

    grad_fn = mx.value_and_grad(inner)

    def wrapped(*args, **kwargs):
        return grad_fn(model.trainable_parameters(), *args, **kwargs)

    return wrapped
