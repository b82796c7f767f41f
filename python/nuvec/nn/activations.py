"""Activation functions (mlx.nn's names and arguments): nuvec::nn's, and the core ops mlx.nn re-exports."""

import nuvec.core as mx
from nuvec._nn import (  # noqa: F401 (re-exported)
    celu,
    elu,
    gelu,
    gelu_approx,
    gelu_fast_approx,
    glu,
    hard_shrink,
    hard_sigmoid,
    hard_tanh,
    hardswish,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    mish,
    prelu,
    relu,
    relu6,
    selu,
    silu,
    softmin,
    softplus,
    softshrink,
    softsign,
    step,
)

sigmoid = mx.sigmoid
tanh = mx.tanh


def softmax(x, axis: int = -1):
    return mx.softmax(x, axis=axis)
