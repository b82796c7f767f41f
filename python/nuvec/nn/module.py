"""Module: a dict of parameters and child modules, as mlx.nn.Module; CppModule: a C++ layer of nuvec._nn under it."""

from typing import Any, Callable, List, Optional, Tuple, Union

import nuvec.core as mx
from nuvec.utils import tree_flatten, tree_unflatten


def _is_module_container(value):
    return isinstance(value, (Module, dict, list, tuple))


class Module(dict):
    """The base of layers: attributes that are arrays are parameters, attributes that are modules are children.

    Parameters and children live in the dict itself, so ``parameters()`` and ``update()`` see nested lists and dicts
    of them as one tree.
    """

    # Arrays the tree carries (compile's state and copies take them) that parameters() does not list.
    _unlisted = frozenset()

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
        return _prune(self._tree(lambda m, k, v: k not in m._unlisted))

    def trainable_parameters(self) -> dict:
        """The parameters not frozen."""
        return _prune(self._tree(lambda m, k, v: k not in m._no_grad and k not in m._unlisted))

    def children(self) -> dict:
        return {k: v for k, v in self.items() if isinstance(v, Module) or (
            isinstance(v, (list, tuple, dict)) and any(isinstance(x, Module) for x in _values(v)))}

    def modules(self) -> List["Module"]:
        """This module and every module below it."""
        return [m for _, m in self.named_modules()]

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

    def freeze(self, *, recurse: bool = True, keys: Optional[Union[str, List[str]]] = None,
               strict: bool = False) -> "Module":
        """Excludes parameters (all, or those whose local name is in ``keys``) of this module, and of every module
        below it when ``recurse``, from trainable_parameters()."""
        keys = [keys] if isinstance(keys, str) else keys
        if strict and keys is not None:
            missing = [k for k in keys if not isinstance(self.get(k), mx.array)]
            if missing:
                raise ValueError(f"[freeze] {type(self).__name__} has no parameters called {missing}.")
        for m in self.modules() if recurse else [self]:
            names = keys if keys is not None else [k for k, v in m.items() if isinstance(v, mx.array)]
            m._no_grad.update(names)
        return self

    def unfreeze(self, *, recurse: bool = True, keys: Optional[Union[str, List[str]]] = None,
                 strict: bool = False) -> "Module":
        """Undoes freeze() for all parameters or the local names in ``keys``."""
        keys = [keys] if isinstance(keys, str) else keys
        for m in self.modules() if recurse else [self]:
            if keys is None:
                m._no_grad.clear()
            else:
                m._no_grad.difference_update(keys)
        return self

    def named_modules(self) -> List[Tuple[str, "Module"]]:
        """Every module with its dotted path ("" for this one), this one last as MLX lists them."""
        found = []

        def walk(value, path):
            if isinstance(value, (Module, dict)):
                for k, v in value.items():
                    walk(v, f"{path}.{k}" if path else k)
            elif isinstance(value, (list, tuple)):
                for i, v in enumerate(value):
                    walk(v, f"{path}.{i}" if path else str(i))
            if isinstance(value, Module):
                found.append((path, value))

        walk(self, "")
        return found

    def leaf_modules(self) -> List[Tuple[str, "Module"]]:
        """The modules without child modules, with their paths."""
        return [(k, m) for k, m in self.named_modules() if not m.children()]

    def apply_to_modules(self, apply_fn: Callable[[str, "Module"], Any]) -> "Module":
        """Calls apply_fn(path, module) on every module of the tree."""
        for path, m in self.named_modules():
            apply_fn(path, m)
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


class CppModule(Module):
    """A C++ layer (a class of nuvec._nn) as an mlx.nn Module: its parameters live in this dict under mlx.nn's names
    (its C++ children as CppModules, vectors of them as lists), so trees, gradients, compile and optimizers see plain
    arrays; __call__ loads them and the training mode into the C++ layer, a set of array handles, and runs its
    forward. Subclasses name the C++ class in ``_cpp_type``; their constructor arguments are its.
    """

    _cpp_type = None

    def __init__(self, *args, **kwargs):
        super().__init__()
        self._adopt(self._cpp_type(*args, **kwargs))
        object.__setattr__(self, "_arguments", (args, kwargs))

    def __reduce_ex__(self, protocol):
        """Pickling and copy.deepcopy: the layer is made again from its constructor arguments (a C++ layer holds no
        Python state to copy), then given this one's parameters, frozen names and modes."""
        arguments = self.__dict__.get("_arguments")
        if arguments is None:
            raise TypeError(f"[{type(self).__name__}] This layer was made by its C++ parent layer; copy or pickle "
                            f"the parent instead.")
        modes = {path: (m._training, sorted(m._no_grad)) for path, m in self.named_modules()}
        return _remade, (type(self), *arguments), (_prune(self._tree(lambda m, k, v: True)), modes)

    def __setstate__(self, state):
        parameters, modes = state
        self.update(parameters)
        for path, m in self.named_modules():
            training, frozen = modes[path]
            object.__setattr__(m, "_training", training)
            m._no_grad.clear()
            m._no_grad.update(frozen)

    @staticmethod
    def _wrap(cpp) -> "CppModule":
        """An existing C++ layer, under the class registered for its type (CppModule when there is none)."""
        wrapper = _cpp_classes.get(type(cpp), CppModule)
        module = wrapper.__new__(wrapper)
        Module.__init__(module)
        return module._adopt(cpp)

    def _adopt(self, cpp) -> "CppModule":
        object.__setattr__(self, "_cpp", cpp)
        object.__setattr__(self, "_training", cpp.training)
        for name, value, buffer in cpp._local_parameters():
            dict.__setitem__(self, name, value)
            if buffer:  # running statistics: saved and loaded, never trained (mlx.nn freezes them)
                self._no_grad.add(name)
        for name, child in cpp._children():
            head, _, index = name.partition(".")
            if index:
                self.setdefault(head, []).append(CppModule._wrap(child))
            else:
                dict.__setitem__(self, name, CppModule._wrap(child))
        object.__setattr__(self, "_has_buffers", bool(cpp._buffers()))
        return self

    def _loaded(self):
        """The C++ layer with this tree's parameters and mode."""
        self._cpp._load(self, self._training)
        return self._cpp

    def __call__(self, *args, **kwargs):
        out = self._loaded()(*args, **kwargs)
        if self._has_buffers:
            self._read_buffers()
        return out

    def _read_buffers(self):
        """Running statistics the forward updated, back into the tree."""
        for name, value in self._cpp._buffers():
            *path, last = name.split(".")
            node = self
            for part in path:
                node = node[int(part)] if isinstance(node, list) else node[part]
            node[last] = value

    def __getattr__(self, key: str):
        if key in self:
            return self[key]
        method = None if key.startswith("_") else getattr(self.__dict__.get("_cpp"), key, None)
        if callable(method):  # the C++ layer's other methods (Embedding.as_linear), on this tree's parameters
            def call(*args, **kwargs):
                self._loaded()
                return method(*args, **kwargs)

            return call
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __setattr__(self, key: str, value: Any):
        if isinstance(value, Module) and isinstance(self.get(key), CppModule):
            if not isinstance(value, CppModule):
                raise TypeError(f"[{type(self).__name__}] The child {key!r} runs in C++; it can only be replaced by "
                                f"a C++ layer (a nuvec.nn class), not a {type(value).__name__}.")
            self._cpp._set_child(key, value._cpp)
        super().__setattr__(key, value)

    def __repr__(self):
        return f"{type(self).__name__}()"


_cpp_classes = {}


def _remade(cls, args, kwargs):
    return cls(*args, **kwargs)


def cpp_layer(cpp_type, unlisted=()) -> type:
    """The CppModule subclass for a class of nuvec._nn, under its name (mlx.nn's), its static methods included;
    ``unlisted`` names the C++ layer's arrays that mlx.nn's layer does not have (kept, but not in parameters())."""
    attributes = {k: v for k, v in vars(cpp_type).items() if isinstance(v, staticmethod)}
    attributes.update(_cpp_type=cpp_type, _unlisted=frozenset(unlisted), __doc__=cpp_type.__init__.__doc__,
                      __module__="nuvec.nn")
    cls = type(cpp_type.__name__, (CppModule,), attributes)
    _cpp_classes[cpp_type] = cls
    return cls


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
