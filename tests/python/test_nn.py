"""nuvec.nn and nuvec.optimizers: Module trees, and a small MLP trained step for step against the same model in
PyTorch (same initial weights, data and optimizer), whose losses are the reference."""

import numpy as np
import pytest
import torch

import nuvec.core as mx
import nuvec.nn as nn
import nuvec.optimizers as optim
from nuvec.utils import tree_flatten


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 16), nn.Linear(16, 3)]

    def __call__(self, x):
        return self.layers[1](nn.relu(self.layers[0](x)))


def torch_mlp(model):
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for mine, theirs in zip(model.layers, [net[0], net[2]]):
            theirs.weight.copy_(torch.from_numpy(np.array(mine.weight)))
            theirs.bias.copy_(torch.from_numpy(np.array(mine.bias)))
    return net


def test_module_tree():
    model = MLP()
    names = [k for k, _ in tree_flatten(model.parameters())]
    assert names == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"]
    model.layers[0].freeze()
    assert [k for k, _ in tree_flatten(model.trainable_parameters())] == ["layers.1.weight", "layers.1.bias"]
    model.unfreeze()
    model.update({"layers": [{"bias": mx.zeros((16,))}, {}]})
    assert mx.sum(model.layers[0].bias).item() == 0.0
    assert len(model.modules()) == 3


@pytest.mark.parametrize("make", [
    (lambda: optim.SGD(0.1, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
    (lambda: optim.Adam(0.01, bias_correction=True), lambda p: torch.optim.Adam(p, lr=0.01)),
    (lambda: optim.AdamW(0.01, weight_decay=0.1, bias_correction=True),
     lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1)),
], ids=["sgd", "adam", "adamw"])
def test_mlp_training_matches_pytorch(make, tmp_path):
    mx.random.seed(3)
    model = MLP()
    net = torch_mlp(model)
    optimizer, torch_optimizer = make[0](), make[1](net.parameters())
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=(32,))

    def loss_fn(inputs, targets):
        return nn.losses.cross_entropy(model(inputs), targets, reduction="mean")

    step = nn.value_and_grad(model, loss_fn)
    ours, theirs = [], []
    for _ in range(20):
        loss, grads = step(mx.array(x), mx.array(y))
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state)
        ours.append(loss.item())
        torch_optimizer.zero_grad()
        reference = torch.nn.functional.cross_entropy(net(torch.from_numpy(x)), torch.from_numpy(y))
        reference.backward()
        torch_optimizer.step()
        theirs.append(reference.item())
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    assert ours[-1] < ours[0]
    model.save_weights(str(tmp_path / "mlp.safetensors"))
    restored = MLP().load_weights(str(tmp_path / "mlp.safetensors"))
    assert mx.allclose(restored(mx.array(x)), model(mx.array(x))).item()


def test_compiled_training_step_matches_eager():
    rng = np.random.default_rng(1)
    x = mx.array(rng.normal(size=(16, 4)).astype(np.float32))
    y = mx.array(rng.integers(0, 3, size=(16,)))
    losses = {}
    for compiled in (False, True):
        mx.random.seed(5)
        model = MLP()
        optimizer = optim.Adam(0.01)
        loss_and_grad = nn.value_and_grad(
            model, lambda a, b: nn.losses.cross_entropy(model(a), b, reduction="mean"))

        def step(a, b):
            loss, grads = loss_and_grad(a, b)
            optimizer.update(model, grads)
            return loss

        state = [model.state, optimizer.state]
        run = mx.compile(step, inputs=state, outputs=state) if compiled else step
        losses[compiled] = [run(x, y).item() for _ in range(5)]
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-5)
