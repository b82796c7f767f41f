"""Layers (mlx.nn's names, constructor arguments and defaults): the C++ layers of nuvec::nn, each a CppModule whose
parameters live in the Python module, and Sequential, which chains any Python callables."""

import nuvec._nn as _nn
from nuvec.nn.module import CppModule, Module, cpp_layer

_LAYERS = [
    # activations
    "ReLU", "ReLU6", "SELU", "SiLU", "Mish", "Softplus", "Softsign", "Hardswish", "HardSigmoid", "Sigmoid", "Tanh",
    "LogSigmoid", "LeakyReLU", "ELU", "CELU", "GELU", "HardTanh", "PReLU", "GLU", "LogSoftmax", "Softmax", "Step",
    # dense, convolution, pooling
    "Identity", "Linear", "Bilinear", "Embedding", "QuantizedLinear", "QuantizedEmbedding",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "Upsample",
    # normalization, dropout, positions, attention
    "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm", "InstanceNorm", "Dropout", "Dropout2d", "Dropout3d",
    "RoPE", "ALiBi", "SinusoidalPositionalEncoding", "MultiHeadAttention", "TransformerEncoderLayer",
    "TransformerDecoderLayer", "TransformerEncoder", "TransformerDecoder",
]

globals().update({name: cpp_layer(getattr(_nn, name)) for name in _LAYERS})


def _frozen_after_init(cls):
    """mlx.nn's quantized layers start frozen: their packed weights are not trained."""
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.freeze()

    cls.__init__ = __init__
    return cls


def _from_float(quantized, float_type):
    def from_float(cls, layer, group_size: int = 64, bits: int = 4, mode: str = "affine"):
        """The quantized copy of a float layer (its current parameters), by the C++ quantization."""
        if not isinstance(layer, float_type):
            raise TypeError(f"[{cls.__name__}] Expected a {float_type.__name__}; got {type(layer).__name__}.")
        module = CppModule._wrap(cls._cpp_type(layer._loaded(), group_size, bits, mode))
        return module.freeze()

    return classmethod(from_float)


_frozen_after_init(QuantizedLinear)  # noqa: F821 (defined above)
_frozen_after_init(QuantizedEmbedding)  # noqa: F821
QuantizedLinear.from_linear = _from_float(QuantizedLinear, Linear)  # noqa: F821
QuantizedEmbedding.from_embedding = _from_float(QuantizedEmbedding, Embedding)  # noqa: F821


class Sequential(Module):
    """Calls its modules (or any callables) in order; they are kept in ``layers`` (mlx.nn's names: layers.0...)."""

    def __init__(self, *modules):
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def quantize(model: Module, group_size: int = 64, bits: int = 4, *, mode: str = "affine", class_predicate=None):
    """Replaces, in place, the Linear and Embedding layers of ``model`` (those ``class_predicate(path, module)``
    accepts, and whose input size divides by group_size) with their quantized versions (mlx.nn.quantize)."""
    swaps = {Linear: QuantizedLinear.from_linear, Embedding: QuantizedEmbedding.from_embedding}  # noqa: F821

    def accepts(path, module):
        if type(module) not in swaps or module["weight"].shape[-1] % group_size != 0:
            return False
        return class_predicate is None or class_predicate(path, module)

    for path, module in model.named_modules():
        for key, child in list(_child_slots(module)):
            child_path = f"{path}.{key}" if path else str(key)
            if isinstance(child, Module) and accepts(child_path, child):
                replacement = swaps[type(child)](child, group_size, bits, mode)
                _replace(module, key, replacement)
    return model


def _child_slots(module):
    for key, value in module.items():
        if isinstance(value, list):
            yield from ((f"{key}.{i}", v) for i, v in enumerate(value))
        else:
            yield key, value


def _replace(module, key, replacement):
    head, _, index = str(key).partition(".")
    if isinstance(module, CppModule):
        module._cpp._set_child(key, replacement._cpp)
    if index:
        module[head][int(index)] = replacement
    else:
        dict.__setitem__(module, head, replacement)
