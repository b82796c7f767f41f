"""Layers (mlx.nn's names, constructor arguments and defaults): the C++ layers of nuvec::nn, each a CppModule whose
parameters live in the Python module, and Sequential, which chains any Python callables."""

import nuvec._nn as _nn
from nuvec.nn.module import CppModule, Module, cpp_layer

ReLU = cpp_layer(_nn.ReLU)
ReLU6 = cpp_layer(_nn.ReLU6)
SELU = cpp_layer(_nn.SELU)
SiLU = cpp_layer(_nn.SiLU)
Mish = cpp_layer(_nn.Mish)
Softplus = cpp_layer(_nn.Softplus)
Softsign = cpp_layer(_nn.Softsign)
Hardswish = cpp_layer(_nn.Hardswish)
HardSigmoid = cpp_layer(_nn.HardSigmoid)
Sigmoid = cpp_layer(_nn.Sigmoid)
Tanh = cpp_layer(_nn.Tanh)
LogSigmoid = cpp_layer(_nn.LogSigmoid)
LeakyReLU = cpp_layer(_nn.LeakyReLU)
ELU = cpp_layer(_nn.ELU)
CELU = cpp_layer(_nn.CELU)
GELU = cpp_layer(_nn.GELU)
HardTanh = cpp_layer(_nn.HardTanh)
PReLU = cpp_layer(_nn.PReLU)
GLU = cpp_layer(_nn.GLU)
LogSoftmax = cpp_layer(_nn.LogSoftmax)
Softmax = cpp_layer(_nn.Softmax)
Softmin = cpp_layer(_nn.Softmin)
Softshrink = cpp_layer(_nn.Softshrink)
HardShrink = cpp_layer(_nn.HardShrink)
Step = cpp_layer(_nn.Step)

Identity = cpp_layer(_nn.Identity)
Linear = cpp_layer(_nn.Linear)
Bilinear = cpp_layer(_nn.Bilinear)
Embedding = cpp_layer(_nn.Embedding)
QuantizedLinear = cpp_layer(_nn.QuantizedLinear)
QuantizedEmbedding = cpp_layer(_nn.QuantizedEmbedding)
Conv1d = cpp_layer(_nn.Conv1d)
Conv2d = cpp_layer(_nn.Conv2d)
Conv3d = cpp_layer(_nn.Conv3d)
ConvTranspose1d = cpp_layer(_nn.ConvTranspose1d)
ConvTranspose2d = cpp_layer(_nn.ConvTranspose2d)
ConvTranspose3d = cpp_layer(_nn.ConvTranspose3d)
MaxPool1d = cpp_layer(_nn.MaxPool1d)
MaxPool2d = cpp_layer(_nn.MaxPool2d)
MaxPool3d = cpp_layer(_nn.MaxPool3d)
AvgPool1d = cpp_layer(_nn.AvgPool1d)
AvgPool2d = cpp_layer(_nn.AvgPool2d)
AvgPool3d = cpp_layer(_nn.AvgPool3d)
Upsample = cpp_layer(_nn.Upsample)

LayerNorm = cpp_layer(_nn.LayerNorm)
RMSNorm = cpp_layer(_nn.RMSNorm)
GroupNorm = cpp_layer(_nn.GroupNorm)
# PyTorch's batch counter (the C++ layer's, for strict PyTorch state dicts) is not one of mlx.nn's parameters.
BatchNorm = cpp_layer(_nn.BatchNorm, unlisted={"num_batches_tracked"})
InstanceNorm = cpp_layer(_nn.InstanceNorm)
Dropout = cpp_layer(_nn.Dropout)
Dropout2d = cpp_layer(_nn.Dropout2d)
Dropout3d = cpp_layer(_nn.Dropout3d)

RoPE = cpp_layer(_nn.RoPE)
ALiBi = cpp_layer(_nn.ALiBi)
SinusoidalPositionalEncoding = cpp_layer(_nn.SinusoidalPositionalEncoding)
MultiHeadAttention = cpp_layer(_nn.MultiHeadAttention)
TransformerEncoderLayer = cpp_layer(_nn.TransformerEncoderLayer)
TransformerDecoderLayer = cpp_layer(_nn.TransformerDecoderLayer)
TransformerEncoder = cpp_layer(_nn.TransformerEncoder)
TransformerDecoder = cpp_layer(_nn.TransformerDecoder)


def _frozen_after_init(cls):
    """mlx.nn's quantized layers start frozen: their packed weights are not trained."""
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.freeze()

    cls.__init__ = __init__
    return cls


def _from_float(float_type):
    def from_float(cls, layer, group_size: int = 64, bits: int = 4, mode: str = "affine"):
        """The quantized copy of a float layer (its current parameters), by the C++ quantization."""
        if not isinstance(layer, float_type):
            raise TypeError(f"[{cls.__name__}] Expected a {float_type.__name__}; got {type(layer).__name__}.")
        module = CppModule._wrap(cls._cpp_type(layer._loaded(), group_size, bits, mode))
        return module.freeze()

    return classmethod(from_float)


_frozen_after_init(QuantizedLinear)
_frozen_after_init(QuantizedEmbedding)
QuantizedLinear.from_linear = _from_float(Linear)
QuantizedEmbedding.from_embedding = _from_float(Embedding)


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
    swaps = {Linear: QuantizedLinear.from_linear, Embedding: QuantizedEmbedding.from_embedding}

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
