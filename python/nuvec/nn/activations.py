"""Activation functions (mlx.nn's)."""

import math

import nuvec.core as mx


def relu(x):
    return mx.maximum(x, 0)


def leaky_relu(x, negative_slope: float = 0.01):
    return mx.maximum(negative_slope * x, x)


def gelu(x):
    return x * (1 + mx.erf(x / math.sqrt(2))) / 2


def gelu_approx(x):
    return 0.5 * x * (1 + mx.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def sigmoid(x):
    return mx.sigmoid(x)


def silu(x):
    return x * mx.sigmoid(x)


def tanh(x):
    return mx.tanh(x)


def softplus(x):
    return mx.logaddexp(x, 0)


def mish(x):
    return x * mx.tanh(softplus(x))


def softmax(x, axis: int = -1):
    return mx.softmax(x, axis=axis)


def log_softmax(x, axis: int = -1):
    return x - mx.logsumexp(x, axis=axis, keepdims=True)
