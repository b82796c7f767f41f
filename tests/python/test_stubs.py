"""The type stubs the build writes next to the extension (python/tools/stubs.py): they parse, and they name every
public function and class of nuvec.core and its submodules, and every public method of array."""

import ast
import pathlib
import types

import pytest

import nuvec.core as mx

STUB_DIR = pathlib.Path(mx.__file__).parent / "core"
SUBMODULES = sorted(name for name in dir(mx) if isinstance(getattr(mx, name), types.ModuleType))


def parsed(stub):
    path = STUB_DIR / stub
    assert path.is_file(), f"missing stub {path}"
    return ast.parse(path.read_text(), filename=str(path))


def defined(tree):
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def public_callables(module):
    return {
        name for name in dir(module)
        if not name.startswith("_") and callable(getattr(module, name))
        and not isinstance(getattr(module, name), types.ModuleType)
    }


def test_the_package_is_marked_typed():
    assert (STUB_DIR.parent / "py.typed").is_file()


def test_core_stub_names_every_public_callable():
    missing = public_callables(mx) - defined(parsed("__init__.pyi"))
    assert not missing, sorted(missing)


@pytest.mark.parametrize("name", SUBMODULES)
def test_submodule_stub_names_every_public_callable(name):
    missing = public_callables(getattr(mx, name)) - defined(parsed(f"{name}.pyi"))
    assert not missing, sorted(missing)


def test_array_stub_names_every_public_method_and_property():
    (array,) = [n for n in parsed("__init__.pyi").body if isinstance(n, ast.ClassDef) and n.name == "array"]
    members = {n.name for n in array.body if isinstance(n, ast.FunctionDef)}
    missing = {name for name in dir(mx.array) if not name.startswith("_")} - members
    assert not missing, sorted(missing)


def test_overloads_and_keywords_come_from_the_signatures():
    tree = parsed("__init__.pyi")
    overloads = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "issubdtype"]
    assert len(overloads) == 4
    (add,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "add"]
    assert [a.arg for a in add.args.args] == ["a", "b"]
    assert [a.arg for a in add.args.kwonlyargs] == ["stream"]
    assert ast.unparse(add.returns) == "array"


def test_nn_stubs_name_every_layer_and_function():
    import nuvec._nn as cpp
    import nuvec.nn as nn
    import nuvec.nn.layers as layers

    nn_dir = STUB_DIR.parent / "nn"
    tree = ast.parse((nn_dir / "layers.pyi").read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    cpp_layers = {n for n, c in vars(layers).items() if isinstance(c, type) and issubclass(c, nn.CppModule)}
    bound = {n for n, c in vars(cpp).items() if isinstance(c, type) and issubclass(c, cpp.Module)}
    assert cpp_layers - {"CppModule"} == bound - {"Module", "UnaryModule"}  # every C++ layer has its class
    assert cpp_layers - {"CppModule"} | {"Sequential"} <= set(classes)
    (init,) = [n for n in classes["Conv2d"].body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    assert [a.arg for a in init.args.args][:4] == ["self", "in_channels", "out_channels", "kernel_size"]
    assert isinstance(nn.Conv2d(1, 1, 1), nn.CppModule)
    for stub, module in [("__init__.pyi", cpp), ("losses.pyi", cpp.losses), ("init.pyi", cpp.init)]:
        path = STUB_DIR.parent / "_nn" / stub
        missing = public_callables(module) - defined(ast.parse(path.read_text()))
        assert not missing, (stub, sorted(missing))
