"""nuvec.optimizers' learning-rate schedules against their definitions (MLX's formulas, computed here in float64 with
Python's math), and the optimizer's use of them: the rate of step t is the schedule at t, the steps taken before it
(MLX's order, and nuvec::optimizers')."""

import math

import numpy as np
import pytest

import nuvec.core as mx
import nuvec.optimizers as optim

STEPS = [0, 1, 2, 5, 9, 10, 11, 30]


def values(schedule):
    """The schedule at each of STEPS, called with the uint64 step array an optimizer keeps."""
    return [schedule(mx.array(t, mx.uint64)).item() for t in STEPS]


def cosine(init, decay_steps, end, t):
    return end + (init - end) * 0.5 * (1 + math.cos(math.pi * min(t, decay_steps) / decay_steps))


def linear(init, end, steps, t):
    return init + (end - init) * min(t, steps) / steps


@pytest.mark.parametrize("name, schedule, reference", [
    ("exponential_decay", optim.exponential_decay(0.1, 0.9), lambda t: 0.1 * 0.9 ** t),
    ("step_decay", optim.step_decay(0.1, 0.5, 4), lambda t: 0.1 * 0.5 ** (t // 4)),
    ("cosine_decay", optim.cosine_decay(0.1, 10), lambda t: cosine(0.1, 10, 0.0, t)),
    ("cosine_decay to end", optim.cosine_decay(0.1, 10, 0.01), lambda t: cosine(0.1, 10, 0.01, t)),
    ("linear_schedule", optim.linear_schedule(0.0, 0.1, 10), lambda t: linear(0.0, 0.1, 10, t)),
    ("linear_schedule down", optim.linear_schedule(0.1, 0.02, 4), lambda t: linear(0.1, 0.02, 4, t)),
])
def test_schedule_against_its_definition(name, schedule, reference):
    np.testing.assert_allclose(values(schedule), [reference(t) for t in STEPS], rtol=1e-5, atol=1e-8, err_msg=name)


def test_join_schedules_counts_each_from_its_boundary():
    warmup = optim.linear_schedule(0.0, 0.1, 10)
    decay = optim.cosine_decay(0.1, 20, 0.001)
    joined = optim.join_schedules([warmup, decay], [10])
    expected = [linear(0.0, 0.1, 10, t) if t < 10 else cosine(0.1, 20, 0.001, t - 10) for t in STEPS]
    np.testing.assert_allclose(values(joined), expected, rtol=1e-5, atol=1e-8)
    three = optim.join_schedules([lambda t: mx.array(1.0), lambda t: mx.array(2.0), lambda t: mx.array(3.0)], [2, 5])
    assert values(three) == [1.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 3.0]


def test_schedule_arguments_are_checked():
    # nuvec::optimizers' checks and messages (the schedules are the C++ ones).
    with pytest.raises(ValueError, match=r"\[linear_schedule\] steps must be >= 1; given 0"):
        optim.linear_schedule(0.0, 1.0, 0)
    with pytest.raises(ValueError, match="given 0 schedules and 0 boundaries"):
        optim.join_schedules([], [])
    with pytest.raises(ValueError, match="given 2 schedules and 2 boundaries"):
        optim.join_schedules([optim.exponential_decay(1.0, 0.5)] * 2, [1, 2])


def test_optimizer_uses_the_schedule_at_the_steps_taken():
    # SGD without momentum: p -= lr * g with g = 1, so each step's decrease is that step's rate.
    optimizer = optim.SGD(optim.exponential_decay(0.5, 0.5))
    assert optimizer.learning_rate.item() == 0.5
    p = {"w": mx.array([0.0])}
    decreases = []
    for _ in range(4):
        updated = optimizer.apply_gradients({"w": mx.array([1.0])}, p)
        decreases.append(p["w"].item() - updated["w"].item())
        p = updated
    assert decreases == [0.5, 0.25, 0.125, 0.0625]
    assert optimizer.step.item() == 4
    assert optimizer.learning_rate.item() == 0.0625  # the rate of the last step taken, as MLX's state holds
