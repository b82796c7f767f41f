"""Optimizers (mlx.optimizers): SGD, Adam, AdamW, Adamax, Adagrad, AdaDelta, RMSprop, Lion, Adafactor and Muon
over trees of parameters, clip_grad_norm, and the learning-rate schedules (exponential_decay, step_decay,
cosine_decay, linear_schedule, join_schedules).

Names, arguments and defaults are MLX's; each optimizer's per-parameter rule (init_single, apply_single) and every
schedule is nuvec::optimizers' in C++. The state is kept as MLX's Python keeps it: a tree (step, learning_rate, and
each parameter's slots under "params") that a compiled step takes as inputs and gives back as outputs.
"""

from typing import Callable, List, Union

import nuvec._nn as _nn
import nuvec.core as mx
from nuvec.utils import tree_flatten, tree_map, tree_unflatten

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
        """Creates the parameter's slots in ``state``."""
        self._rule.init_single(parameter, state)

    def apply_single(self, gradient, parameter, state, lr, step):
        """The parameter's new value; its slots in ``state`` are updated."""
        return self._rule.apply_single(gradient, parameter, state, lr.astype(mx.float32), step)


def _optimizer(rule) -> type:
    """The Optimizer subclass running a C++ rule of nuvec._nn: mlx.optimizers' constructor, learning_rate first
    (then the rule's arguments, with their names and defaults)."""

    def __init__(self, learning_rate: LearningRate = None, *args, **kwargs):
        self._rule = rule(*args, **kwargs)
        Optimizer.__init__(self, 0.0 if learning_rate is None else learning_rate)

    __init__.__doc__ = rule.__init__.__doc__
    return type(rule.__name__, (Optimizer,), {"__init__": __init__, "__module__": __name__})


SGD = _optimizer(_nn.SGD)
Adam = _optimizer(_nn.Adam)
AdamW = _optimizer(_nn.AdamW)
Adamax = _optimizer(_nn.Adamax)
Adagrad = _optimizer(_nn.Adagrad)
AdaDelta = _optimizer(_nn.AdaDelta)
RMSprop = _optimizer(_nn.RMSprop)
Lion = _optimizer(_nn.Lion)
Adafactor = _optimizer(_nn.Adafactor)
Muon = _optimizer(_nn.Muon)


def clip_grad_norm(grads: dict, max_norm: float):
    """The gradients scaled so their global L2 norm is at most max_norm, and the norm before (nuvec::optimizers')."""
    clipped, norm = _nn.clip_grad_norm(tree_flatten(grads), max_norm)
    return tree_unflatten(clipped), norm


def _schedule(cpp_schedule: Callable) -> Callable:
    """A C++ schedule that also takes a Python int step, as MLX's do."""

    def schedule(step):
        return cpp_schedule(step if isinstance(step, mx.array) else mx.array(step, mx.uint64))

    return schedule


def exponential_decay(init: float, decay_rate: float) -> Callable:
    """init * decay_rate ** step."""
    return _schedule(_nn.exponential_decay(init, decay_rate))


def step_decay(init: float, decay_rate: float, step_size: int) -> Callable:
    """init * decay_rate ** (step // step_size)."""
    return _schedule(_nn.step_decay(init, decay_rate, step_size))


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Callable:
    """end + (init - end) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2."""
    return _schedule(_nn.cosine_decay(init, decay_steps, end))


def linear_schedule(init: float, end: float, steps: int) -> Callable:
    """From init to end over `steps` steps, then end."""
    return _schedule(_nn.linear_schedule(init, end, steps))


def join_schedules(schedules: List[Callable], boundaries: List[int]) -> Callable:
    """schedules[0] until boundaries[0], then schedules[i + 1] counted from boundaries[i] (e.g. warm-up, then decay)."""
    return _schedule(_nn.join_schedules(schedules, boundaries))


