"""nuvec.optimizers as mlx.optimizers' users write against it: the state's layout (step, learning_rate and the
parameters' slots side by side), saving and restoring it, init on a growing model, subclasses written MLX's way,
MultiOptimizer, scheduled rates in the state and required learning rates. The rules themselves are checked against
torch.optim and the C++ library in test_nn_bindings.py."""

import numpy as np
import pytest

import nuvec.core as mx
import nuvec.nn as nn
import nuvec.optimizers as optim
from nuvec.utils import tree_flatten, tree_unflatten

RNG = np.random.default_rng(3)


def normal(*shape):
    return mx.array(RNG.normal(size=shape).astype(np.float32))


def grads_like(tree):
    return tree_unflatten([(k, normal(*v.shape)) for k, v in tree_flatten(tree)])


def test_state_holds_step_rate_and_slots_side_by_side():
    optimizer = optim.SGD(learning_rate=1e-1, momentum=0.9)
    model = nn.Linear(2, 2)
    optimizer.init(model.trainable_parameters())
    assert list(optimizer.state.keys()) == ["step", "learning_rate", "weight", "bias"]
    assert list(optimizer.state["weight"]) == ["v"] and optimizer.state["weight"]["v"].shape == (2, 2)
    assert optimizer.step.item() == 0 and optimizer.state["step"].dtype == mx.uint64
    optimizer.update(model, grads_like(model.trainable_parameters()))
    assert optimizer.step.item() == 1


def test_saved_state_resumes_training_exactly(tmp_path):
    params = {"w": normal(3, 4), "layers": [{"b": normal(4)}, {"b": normal(2)}]}
    grads = [grads_like(params) for _ in range(5)]

    def run(optimizer, tree, steps):
        for g in steps:
            tree = optimizer.apply_gradients(g, tree)
            mx.eval(tree, optimizer.state)
        return tree

    whole = run(optim.Adam(1e-2, bias_correction=True), params, grads)

    first = optim.Adam(1e-2, bias_correction=True)
    half = run(first, params, grads[:3])
    mx.save_safetensors(str(tmp_path / "state.safetensors"), dict(tree_flatten(first.state)))
    resumed = optim.Adam(1e-2, bias_correction=True)
    resumed.state = tree_unflatten(list(mx.load(str(tmp_path / "state.safetensors")).items()))
    assert resumed.step.item() == 3
    rest = run(resumed, half, grads[3:])
    for (name, a), (_, b) in zip(tree_flatten(rest), tree_flatten(whole)):
        np.testing.assert_array_equal(np.array(a), np.array(b), err_msg=name)


def test_init_keeps_known_slots_and_adds_new_parameters():
    optimizer = optim.Adam(1e-2)
    params = {"a": normal(3)}
    params = optimizer.apply_gradients({"a": normal(3)}, params)
    m_before = np.array(optimizer.state["a"]["m"])
    assert np.any(m_before != 0)
    optimizer.init({"a": params["a"], "b": [normal(2), normal(5)]})
    np.testing.assert_array_equal(np.array(optimizer.state["a"]["m"]), m_before)
    assert [s["m"].shape for s in optimizer.state["b"]] == [(2,), (5,)]
    assert not np.any(np.array(optimizer.state["b"][1]["v"]))


def test_subclass_written_as_for_mlx():
    class CountingSGD(optim.Optimizer):
        def __init__(self, learning_rate):
            super().__init__()
            self._maybe_schedule("learning_rate", learning_rate)

        def init_single(self, parameter, state):
            state["count"] = mx.zeros_like(parameter)

        def apply_single(self, gradient, parameter, state):
            state["count"] = state["count"] + 1
            return parameter - self.learning_rate.astype(gradient.dtype) * gradient

    optimizer = CountingSGD(0.5)
    w, g = normal(4), normal(4)
    tree = {"w": w}
    for _ in range(3):
        tree = optimizer.apply_gradients({"w": g}, tree)
    np.testing.assert_allclose(np.array(tree["w"]), np.array(w) - 1.5 * np.array(g), rtol=1e-6)
    np.testing.assert_array_equal(np.array(optimizer.state["w"]["count"]), np.full(4, 3.0, np.float32))
    with pytest.raises(NotImplementedError):
        optim.Optimizer().init({"w": w})


def test_multi_optimizer_routes_each_parameter():
    model = nn.Linear(3, 2)
    weight, bias = np.array(model.weight), np.array(model.bias)
    optimizer = optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.01)], [lambda path, p: path.endswith("bias")])
    reference = optim.Adam(0.01)
    reference_tree = {"weight": model.weight}
    for _ in range(3):
        grads = grads_like(model.trainable_parameters())
        bias = bias - 0.1 * np.array(grads["bias"])
        reference_tree = reference.apply_gradients({"weight": grads["weight"]}, reference_tree)
        optimizer.update(model, grads)
    np.testing.assert_allclose(np.array(model.bias), bias, rtol=1e-6)
    np.testing.assert_array_equal(np.array(model.weight), np.array(reference_tree["weight"]))
    states = optimizer.state["states"]
    assert len(states) == 2 and "bias" in states[0] and "weight" in states[1] and "weight" not in states[0]
    with pytest.raises(ValueError, match="filters"):
        optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.01)])
    optimizer.learning_rate = 0.5
    assert optimizer.learning_rate.item() == 0.5 and states[1]["learning_rate"].item() == 0.5


def test_scheduled_rate_is_the_schedule_at_the_step_before_each_update():
    schedule = optim.linear_schedule(0.0, 1.0, 10)
    optimizer = optim.SGD(learning_rate=schedule)
    assert optimizer.learning_rate.item() == 0.0
    tree = {"w": mx.zeros((2,))}
    for step in range(1, 4):
        tree = optimizer.apply_gradients({"w": mx.ones((2,))}, tree)
        assert optimizer.learning_rate.item() == pytest.approx(schedule(step - 1).item())
    # w = -(0.0 + 0.1 + 0.2) after three steps of gradient 1.
    np.testing.assert_allclose(np.array(tree["w"]), [-0.3, -0.3], rtol=1e-6)


def test_learning_rate_is_required_except_for_adafactor():
    for make in (optim.SGD, optim.Adam, optim.AdamW, optim.Adamax, optim.Adagrad, optim.AdaDelta, optim.RMSprop,
                 optim.Lion, optim.Muon):
        with pytest.raises(TypeError):
            make()
    adafactor = optim.Adafactor()
    assert "learning_rate" not in adafactor.state
    tree = adafactor.apply_gradients({"w": normal(4, 3)}, {"w": normal(4, 3)})
    assert np.all(np.isfinite(np.array(tree["w"])))
    with pytest.raises(TypeError):
        optim.Adam(0.1, momentum=0.9)
