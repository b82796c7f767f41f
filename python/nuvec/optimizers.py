"""Optimizers (mlx.optimizers): SGD, Adam, AdamW, Adamax, Adagrad, AdaDelta, RMSprop, Lion, Adafactor, Muon and
MultiOptimizer over trees of parameters, clip_grad_norm, and the learning-rate schedules (exponential_decay,
step_decay, cosine_decay, linear_schedule, join_schedules).

Names, arguments, defaults and the state's layout are MLX's: ``state`` holds ``step``, ``learning_rate`` (and any other
scheduled value) and, beside them, a tree of the parameters' shape whose leaves are each parameter's dict of slots,
so ``tree_flatten(optimizer.state)`` saves and a compiled step takes it as inputs and outputs. Subclasses implement
``init_single(parameter, state)`` and ``apply_single(gradient, parameter, state)`` as in MLX; the built-in optimizers'
rules and the schedules are nuvec::optimizers' in C++.
"""

from typing import Callable, List, Optional, Tuple, Union

import nuvec._nn as _nn
import nuvec.core as mx
from nuvec.utils import tree_flatten, tree_map, tree_merge, tree_unflatten

LearningRate = Union[float, mx.array, Callable[[mx.array], mx.array]]


class Optimizer:
    """Applies a per-parameter rule (``init_single``, ``apply_single``) to trees of parameters and gradients."""

    def __init__(self, schedulers: Optional[dict] = None):
        self._initialized = False
        self._state = {"step": mx.array(0, mx.uint64)}
        self._schedulers = dict(schedulers or {})

    def update(self, model, gradients: dict):
        """Applies the gradients to the model's parameters and updates the model with the new values."""
        model.update(self.apply_gradients(gradients, model))

    def init(self, parameters: dict):
        """Creates the slots of every parameter that has none yet (the first step does it when this is not called),
        keeping the state of parameters already known."""

        def merge(params, state):
            if isinstance(params, (list, tuple)):
                state = list(state)
                for i in range(len(state)):
                    state[i] = merge(params[i], state[i])
                state.extend(tree_map(lambda _: {}, p) for p in params[len(state):])
                return type(params)(state)
            if isinstance(params, dict):
                for key, value in params.items():
                    state[key] = merge(value, state[key]) if key in state else tree_map(lambda _: {}, value)
                return state
            return state

        merge(parameters, self._state)
        tree_map(lambda p, s: s or self.init_single(p, s), parameters, self._state)
        self._initialized = True

    def init_single(self, parameter: mx.array, state: dict):
        """Creates the parameter's slots in ``state`` (subclasses)."""
        raise NotImplementedError

    def apply_gradients(self, gradients: dict, parameters: dict) -> dict:
        """The new value of every parameter that has a gradient (``parameters`` may hold more)."""
        if not self._initialized:
            self.init(gradients)
        for name, schedule in self._schedulers.items():
            self._state[name] = schedule(self.step)
        self._state["step"] = self.step + 1
        return tree_map(self.apply_single, gradients, parameters, self._state)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """The parameter's new value, its slots in ``state`` updated (subclasses)."""
        raise NotImplementedError

    @property
    def state(self) -> dict:
        return self._state

    @state.setter
    def state(self, state: dict):
        self._initialized = False
        self._state = state

    @property
    def step(self) -> mx.array:
        return self._state["step"]

    @property
    def learning_rate(self) -> mx.array:
        return self._state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]):
        self._state["learning_rate"] = mx.array(learning_rate)

    def _maybe_schedule(self, name: str, value: LearningRate):
        """Keeps ``value`` in the state under ``name``; a callable is a schedule, evaluated at the step before each
        update."""
        if callable(value):
            self._schedulers[name] = value
            value = value(self.step)
        self._state[name] = mx.array(value)


class MultiOptimizer(Optimizer):
    """Several optimizers, each for the parameters its filter accepts: ``filters[i](path, parameter)`` picks
    ``optimizers[i]``; the last optimizer takes the rest (one filter fewer than optimizers)."""

    def __init__(self, optimizers: List[Optimizer], filters: List[Callable[[str, mx.array], bool]] = ()):
        super().__init__()
        self._state = {}
        if len(filters) != len(optimizers) - 1:
            raise ValueError(f"[MultiOptimizer] expected {len(optimizers) - 1} filters for {len(optimizers)} "
                             f"optimizers; given {len(filters)}.")
        self.optimizers = list(optimizers)
        self.filters = list(filters) + [lambda path, parameter: True]

    def _split(self, tree: dict) -> list:
        if len(self.optimizers) == 1:
            return [tree]
        parts = [[] for _ in self.optimizers]
        for path, leaf in tree_flatten(tree):
            index = next(i for i, accepts in enumerate(self.filters) if accepts(path, leaf))
            parts[index].append((path, leaf))
        return [tree_unflatten(part) if part else {} for part in parts]

    def init(self, parameters: dict):
        for optimizer, part in zip(self.optimizers, self._split(parameters)):
            optimizer.init(part)

    def apply_gradients(self, gradients: dict, parameters: dict) -> dict:
        tree = {}
        for optimizer, part in zip(self.optimizers, self._split(gradients)):
            tree = tree_merge(tree, optimizer.apply_gradients(part, parameters))
        return tree if tree is not None else {}

    @property
    def state(self) -> dict:
        return {"states": [optimizer.state for optimizer in self.optimizers]}

    @state.setter
    def state(self, state: dict):
        if "states" not in state or len(state["states"]) != len(self.optimizers):
            raise ValueError(f"[MultiOptimizer] expected a state with 'states' for {len(self.optimizers)} optimizers.")
        for optimizer, part in zip(self.optimizers, state["states"]):
            optimizer.state = part

    @property
    def learning_rate(self) -> mx.array:
        return self.optimizers[0].learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]):
        for optimizer in self.optimizers:
            optimizer.learning_rate = learning_rate


class _Rule(Optimizer):
    """An optimizer whose per-parameter rule is a C++ one of nuvec._nn (``self._rule``), given the rate and the step
    of each update."""

    def __init__(self, rule, learning_rate: Optional[LearningRate]):
        super().__init__()
        self._rule = rule
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)

    def init_single(self, parameter: mx.array, state: dict):
        self._rule.init_single(parameter, state)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        rate = self._state.get("learning_rate")
        rate = mx.array(0.0) if rate is None else rate
        return self._rule.apply_single(gradient.astype(parameter.dtype), parameter, state, rate.astype(mx.float32),
                                       self.step)


class SGD(_Rule):
    """Stochastic gradient descent: v = momentum * v + (1 - dampening) * g (g plus weight_decay * w), then w -= lr * v
    (Nesterov: w -= lr * (g + momentum * v))."""

    def __init__(self, learning_rate: LearningRate, momentum: float = 0.0, weight_decay: float = 0.0,
                 dampening: float = 0.0, nesterov: bool = False):
        super().__init__(_nn.SGD(momentum, weight_decay, dampening, nesterov), learning_rate)


class RMSprop(_Rule):
    """RMSprop: v = alpha * v + (1 - alpha) * g^2, w -= lr * g / (sqrt(v) + eps); with momentum and centered as
    PyTorch's."""

    def __init__(self, learning_rate: LearningRate, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0.0,
                 momentum: float = 0.0, centered: bool = False):
        super().__init__(_nn.RMSprop(alpha, eps, weight_decay, momentum, centered), learning_rate)


class Adagrad(_Rule):
    """Adagrad: v += g^2, w -= lr * g / (sqrt(v) + eps)."""

    def __init__(self, learning_rate: LearningRate, eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(_nn.Adagrad(eps, weight_decay), learning_rate)


class AdaDelta(_Rule):
    """AdaDelta with a learning rate: v = rho * v + (1 - rho) * g^2, d = sqrt(u + eps) / sqrt(v + eps) * g,
    u = rho * u + (1 - rho) * d^2, w -= lr * d."""

    def __init__(self, learning_rate: LearningRate, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0.0):
        super().__init__(_nn.AdaDelta(rho, eps, weight_decay), learning_rate)


class Adam(_Rule):
    """Adam: m and v running averages of g and g^2, w -= lr * m / (sqrt(v) + eps) (bias-corrected if asked)."""

    def __init__(self, learning_rate: LearningRate, betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 bias_correction: bool = False, weight_decay: float = 0.0):
        super().__init__(_nn.Adam(tuple(betas), eps, bias_correction, weight_decay), learning_rate)


class AdamW(_Rule):
    """Adam with decoupled weight decay: w *= 1 - lr * weight_decay before the Adam step."""

    def __init__(self, learning_rate: LearningRate, betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01, bias_correction: bool = False):
        super().__init__(_nn.AdamW(tuple(betas), eps, weight_decay, bias_correction), learning_rate)


class Adamax(_Rule):
    """Adamax: m = b1 * m + (1 - b1) * g, v = max(b2 * v, |g|), w -= lr * m / (v + eps)."""

    def __init__(self, learning_rate: LearningRate, betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        super().__init__(_nn.Adamax(tuple(betas), eps, weight_decay), learning_rate)


class Lion(_Rule):
    """Lion: w -= lr * (sign(b1 * m + (1 - b1) * g) + weight_decay * w), m = b2 * m + (1 - b2) * g."""

    def __init__(self, learning_rate: LearningRate, betas: Tuple[float, float] = (0.9, 0.99),
                 weight_decay: float = 0.0):
        super().__init__(_nn.Lion(tuple(betas), weight_decay), learning_rate)


class Adafactor(_Rule):
    """Adafactor (factored second moments for matrices); with relative_step (the default) the rate is computed from
    the step and ``learning_rate`` may be left out."""

    def __init__(self, learning_rate: Optional[LearningRate] = None, eps: Tuple[float, float] = (1e-30, 1e-3),
                 clip_threshold: float = 1.0, decay_rate: float = -0.8, beta_1: Optional[float] = None,
                 weight_decay: float = 0.0, scale_parameter: bool = True, relative_step: bool = True,
                 warmup_init: bool = False):
        super().__init__(_nn.Adafactor(tuple(eps), clip_threshold, decay_rate, beta_1, weight_decay, scale_parameter,
                                       relative_step, warmup_init), learning_rate)


class Muon(_Rule):
    """Muon: momentum, then the update of each matrix orthogonalized by ns_steps Newton-Schulz iterations."""

    def __init__(self, learning_rate: LearningRate, momentum: float = 0.95, weight_decay: float = 0.01,
                 nesterov: bool = True, ns_steps: int = 5):
        super().__init__(_nn.Muon(momentum, weight_decay, nesterov, ns_steps), learning_rate)


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


