"""Optimizers (mlx.optimizers): SGD, Adam, AdamW, RMSprop, Adagrad over trees of parameters, and the learning-rate
schedules (exponential_decay, step_decay, cosine_decay, linear_schedule, join_schedules).

Names, arguments, defaults and update rules are MLX's, as nuvec::optimizers' in C++: Adam's bias_correction is off
unless asked for, and SGD's momentum buffer starts at zero.
"""

from typing import Callable, List, Union

import math

import nuvec.core as mx
from nuvec.utils import tree_map

LearningRate = Union[float, Callable[[mx.array], mx.array]]


class Optimizer:
    """Keeps the step count and one state dict per parameter; update() applies one step to a model."""

    def __init__(self, learning_rate: LearningRate):
        self._schedule = learning_rate if callable(learning_rate) else None
        self.state = {"step": mx.array(0, mx.uint64)}
        self.state["learning_rate"] = self._scheduled_rate() if self._schedule else mx.array(learning_rate)

    def _scheduled_rate(self) -> mx.array:
        """The schedule at the steps taken so far: the rate of the next step (MLX's order, as nuvec::optimizers')."""
        return mx.array(self._schedule(self.state["step"]), mx.float32)

    @property
    def step(self) -> mx.array:
        return self.state["step"]

    @property
    def learning_rate(self) -> mx.array:
        return self.state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, value):
        self.state["learning_rate"] = mx.array(value)

    def init(self, parameters: dict):
        """Creates the per-parameter state ahead of the first step."""
        def make(p):
            s = {}
            self.init_single(p, s)
            return s

        if "params" not in self.state:
            self.state["params"] = tree_map(make, parameters)

    def update(self, model, gradients: dict):
        """One step on model's trainable parameters."""
        model.update(self.apply_gradients(gradients, model.trainable_parameters()))

    def apply_gradients(self, gradients: dict, parameters: dict) -> dict:
        """The new value of every parameter that has a gradient."""
        self.init(parameters)
        if self._schedule is not None:
            self.state["learning_rate"] = self._scheduled_rate()
        lr = self.state["learning_rate"]
        step = self.state["step"] + 1
        self.state["step"] = step
        return tree_map(lambda g, p, s: self.apply_single(g.astype(p.dtype), p, s, lr, step), gradients, parameters,
                        self.state["params"], is_leaf=lambda x: isinstance(x, mx.array))

    def init_single(self, parameter: mx.array, state: dict):
        raise NotImplementedError

    def apply_single(self, gradient, parameter, state, lr, step):
        raise NotImplementedError


class SGD(Optimizer):
    def __init__(self, learning_rate: LearningRate, momentum: float = 0.0, weight_decay: float = 0.0,
                 dampening: float = 0.0, nesterov: bool = False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("[SGD] Nesterov momentum needs a positive momentum and zero dampening.")
        super().__init__(learning_rate)
        self.momentum, self.weight_decay, self.dampening, self.nesterov = momentum, weight_decay, dampening, nesterov

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state, lr, step):
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        if self.momentum <= 0:
            return parameter - lr.astype(gradient.dtype) * gradient
        v = state["v"] * self.momentum
        v = v + (1 - self.dampening) * gradient if self.dampening > 0 else v + gradient
        state["v"] = v
        update = gradient + self.momentum * v if self.nesterov else v
        return parameter - lr.astype(gradient.dtype) * update


class Adam(Optimizer):
    def __init__(self, learning_rate: LearningRate, betas=(0.9, 0.999), eps: float = 1e-8,
                 bias_correction: bool = False):
        super().__init__(learning_rate)
        self.betas, self.eps, self.bias_correction = betas, eps, bias_correction

    def init_single(self, parameter, state):
        state["m"] = mx.zeros_like(parameter)
        state["v"] = mx.zeros_like(parameter)

    def _moments(self, gradient, state):
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = b2 * state["v"] + (1 - b2) * mx.square(gradient)
        state["m"], state["v"] = m, v
        return m, v

    def apply_single(self, gradient, parameter, state, lr, step):
        m, v = self._moments(gradient, state)
        lr = lr.astype(gradient.dtype)
        if self.bias_correction:
            b1, b2 = self.betas
            t = step.astype(mx.float32)
            m_hat = m / (1 - mx.power(b1, t)).astype(gradient.dtype)
            v_hat = v / (1 - mx.power(b2, t)).astype(gradient.dtype)
            return parameter - lr * m_hat / (mx.sqrt(v_hat) + self.eps)
        return parameter - lr * m / (mx.sqrt(v) + self.eps)


class AdamW(Adam):
    def __init__(self, learning_rate: LearningRate, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01, bias_correction: bool = False):
        super().__init__(learning_rate, betas, eps, bias_correction)
        self.weight_decay = weight_decay

    def apply_single(self, gradient, parameter, state, lr, step):
        decayed = parameter * (1 - lr.astype(parameter.dtype) * self.weight_decay)
        return super().apply_single(gradient, decayed, state, lr, step)


class RMSprop(Optimizer):
    def __init__(self, learning_rate: LearningRate, alpha: float = 0.99, eps: float = 1e-8):
        super().__init__(learning_rate)
        self.alpha, self.eps = alpha, eps

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state, lr, step):
        v = self.alpha * state["v"] + (1 - self.alpha) * mx.square(gradient)
        state["v"] = v
        return parameter - lr.astype(gradient.dtype) * gradient / (mx.sqrt(v) + self.eps)


class Adagrad(Optimizer):
    def __init__(self, learning_rate: LearningRate, eps: float = 1e-8):
        super().__init__(learning_rate)
        self.eps = eps

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state, lr, step):
        v = state["v"] + mx.square(gradient)
        state["v"] = v
        return parameter - lr.astype(gradient.dtype) * gradient / (mx.sqrt(v) + self.eps)


def exponential_decay(init: float, decay_rate: float) -> Callable:
    """init * decay_rate ** step."""
    def schedule(step):
        return init * decay_rate ** step
    return schedule


def step_decay(init: float, decay_rate: float, step_size: int) -> Callable:
    """init * decay_rate ** (step // step_size)."""
    def schedule(step):
        return init * decay_rate ** (step // step_size)
    return schedule


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Callable:
    """end + (init - end) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2."""
    def schedule(step):
        s = mx.minimum(step, decay_steps)
        decay = 0.5 * (1.0 + mx.cos((math.pi / decay_steps) * s))
        return end + decay * (init - end)
    return schedule


def linear_schedule(init: float, end: float, steps: int) -> Callable:
    """From init to end over `steps` steps, then end."""
    if steps < 1:
        raise ValueError(f"steps must be greater than 0, but got {steps}.")

    def schedule(step):
        step = mx.minimum(step, steps)
        return step * ((end - init) / steps) + init
    return schedule


def join_schedules(schedules: List[Callable], boundaries: List[int]) -> Callable:
    """schedules[0] until boundaries[0], then schedules[i + 1] counted from boundaries[i] (e.g. warm-up, then decay)."""
    if len(schedules) == 0:
        raise ValueError("Must provide at least 1 schedule to join.")
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"Received {len(boundaries)} boundaries but expected {len(schedules) - 1}.")

    def schedule(step):
        output = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            output = mx.where(step < boundary, output, later(step - boundary))
        return output
    return schedule
