"""Layers (mlx.nn's names and arguments): Linear, Embedding, Conv1d, Conv2d, Dropout, norms, Sequential and the
activation modules. Weights are initialized as MLX does."""

import math
from typing import Optional

import nuvec.core as mx
from nuvec.nn import activations
from nuvec.nn.module import Module


class Linear(Module):
    """y = x @ weight.T + bias, weight (output_dims, input_dims) uniform in +-1/sqrt(input_dims)."""

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True):
        super().__init__()
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(-scale, scale, (output_dims, input_dims))
        if bias:
            self.bias = mx.random.uniform(-scale, scale, (output_dims,))

    def __call__(self, x):
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T


class Embedding(Module):
    def __init__(self, num_embeddings: int, dims: int):
        super().__init__()
        self.weight = mx.random.normal((num_embeddings, dims), scale=math.sqrt(1 / dims))

    def __call__(self, x):
        return self.weight[x]

    def as_linear(self, x):
        return x @ self.weight.T


class Conv1d(Module):
    """Channels-last 1-d convolution: input (N, L, C_in), weight (C_out, K, C_in / groups)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True):
        super().__init__()
        scale = math.sqrt(1 / (in_channels * kernel_size))
        self.weight = mx.random.uniform(-scale, scale, (out_channels, kernel_size, in_channels // groups))
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups

    def __call__(self, x):
        y = mx.conv1d(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        return y + self.bias if "bias" in self else y


class Conv2d(Module):
    """Channels-last 2-d convolution: input (N, H, W, C_in), weight (C_out, KH, KW, C_in / groups)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True):
        super().__init__()
        kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
        scale = math.sqrt(1 / (in_channels * kh * kw))
        self.weight = mx.random.uniform(-scale, scale, (out_channels, kh, kw, in_channels // groups))
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups

    def __call__(self, x):
        y = mx.conv2d(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        return y + self.bias if "bias" in self else y


class Dropout(Module):
    """Zeroes entries with probability p while training and scales the rest by 1 / (1 - p)."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"[Dropout] The probability should be in [0, 1); got {p}.")
        self._p_keep = 1 - p

    def __call__(self, x):
        if not self.training or self._p_keep == 1:
            return x
        mask = mx.random.bernoulli(self._p_keep, x.shape)
        return (1 / self._p_keep) * mask * x


class LayerNorm(Module):
    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = True, bias: bool = True):
        super().__init__()
        if affine:
            self.weight = mx.ones((dims,))
            if bias:
                self.bias = mx.zeros((dims,))
        self.eps = eps

    def __call__(self, x):
        return mx.fast.layer_norm(x, self.get("weight"), self.get("bias"), self.eps)


class RMSNorm(Module):
    def __init__(self, dims: int, eps: float = 1e-5):
        super().__init__()
        self.weight = mx.ones((dims,))
        self.eps = eps

    def __call__(self, x):
        return mx.fast.rms_norm(x, self.weight, self.eps)


class Sequential(Module):
    """Calls its modules (or callables) in order."""

    def __init__(self, *modules):
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _activation(name: str, fn):
    def call(self, x):
        return fn(x)

    return type(name, (Module,), {"__call__": call, "__doc__": f"The {fn.__name__} activation as a module."})


ReLU = _activation("ReLU", activations.relu)
GELU = _activation("GELU", activations.gelu)
SiLU = _activation("SiLU", activations.silu)
Sigmoid = _activation("Sigmoid", activations.sigmoid)
Tanh = _activation("Tanh", activations.tanh)
LeakyReLU = _activation("LeakyReLU", activations.leaky_relu)
Softplus = _activation("Softplus", activations.softplus)
Mish = _activation("Mish", activations.mish)
