"""Neural networks (mlx.nn): Module, layers, activations, losses and value_and_grad over nuvec.core."""

from nuvec.nn import losses
from nuvec.nn.activations import (
    gelu,
    gelu_approx,
    leaky_relu,
    log_softmax,
    mish,
    relu,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from nuvec.nn.layers import (
    GELU,
    Conv1d,
    Conv2d,
    Dropout,
    Embedding,
    LayerNorm,
    LeakyReLU,
    Linear,
    Mish,
    ReLU,
    RMSNorm,
    Sequential,
    SiLU,
    Sigmoid,
    Softplus,
    Tanh,
)
from nuvec.nn.module import Module, value_and_grad
