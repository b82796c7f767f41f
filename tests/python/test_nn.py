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


def test_layers_against_pytorch():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 7, 6, 3)).astype(np.float32)  # NHWC, as MLX
    conv = nn.Conv2d(3, 4, kernel_size=3, stride=2, padding=1)
    reference = torch.nn.functional.conv2d(
        torch.from_numpy(x).permute(0, 3, 1, 2), torch.from_numpy(np.array(conv.weight)).permute(0, 3, 1, 2),
        torch.from_numpy(np.array(conv.bias)), stride=2, padding=1).permute(0, 2, 3, 1)
    np.testing.assert_allclose(np.array(conv(mx.array(x))), reference.numpy(), rtol=1e-4, atol=1e-5)
    norm = nn.LayerNorm(3)
    expected = torch.nn.functional.layer_norm(torch.from_numpy(x), (3,), eps=1e-5)
    np.testing.assert_allclose(np.array(norm(mx.array(x))), expected.numpy(), rtol=1e-4, atol=1e-5)
    emb = nn.Embedding(10, 4)
    assert np.array_equal(np.array(emb(mx.array([3, 3, 1]))), np.array(emb.weight)[[3, 3, 1]])
    drop = nn.Dropout(0.5)
    assert mx.array_equal(drop.eval()(mx.array(x)), mx.array(x)).item()
    kept = np.array(drop.train()(mx.ones((1000,))))
    assert set(np.unique(kept)) <= {0.0, 2.0} and 300 < (kept > 0).sum() < 700
    seq = nn.Sequential(nn.Linear(3, 5), nn.GELU(), nn.Linear(5, 2))
    assert seq(mx.array(x)).shape == (2, 7, 6, 2)
    assert [k for k, _ in tree_flatten(seq.parameters())][0] == "layers.0.weight"
    logits = rng.normal(size=(4, 5)).astype(np.float32)
    targets = np.array([0, 4, 2, 1])
    expected = torch.nn.functional.cross_entropy(torch.from_numpy(logits), torch.from_numpy(targets),
                                                 label_smoothing=0.1)
    ours = nn.losses.cross_entropy(mx.array(logits), mx.array(targets), label_smoothing=0.1, reduction="mean")
    assert ours.item() == pytest.approx(expected.item(), rel=1e-5)
