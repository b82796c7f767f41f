"""Initializers (mlx.nn.init's names and arguments): each returns a function of the array to initialize that gives a
new array of its shape, drawn by nuvec::nn::init."""

import nuvec.core as mx
from nuvec._nn import init as _init
from nuvec._nn.init import constant, identity, normal, uniform  # noqa: F401 (re-exported)


def glorot_normal(dtype=mx.float32):
    fn = _init.glorot_normal(dtype)
    return lambda a, gain=1.0: fn(a, gain)


def glorot_uniform(dtype=mx.float32):
    fn = _init.glorot_uniform(dtype)
    return lambda a, gain=1.0: fn(a, gain)


def he_normal(dtype=mx.float32):
    fn = _init.he_normal(dtype)
    return lambda a, mode="fan_in", gain=1.0: fn(a, mode, gain)


def he_uniform(dtype=mx.float32):
    fn = _init.he_uniform(dtype)
    return lambda a, mode="fan_in", gain=1.0: fn(a, mode, gain)
