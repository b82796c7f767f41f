"""nuvec.nn's C++ layers and nuvec.optimizers' C++ rules from Python: every layer's forward against PyTorch (or NumPy
transcriptions of mlx.nn's definitions where PyTorch 1.13 has no such layer), parameter names against mlx.nn's, the
optimizers against torch.optim where the rules agree, gradients through nn.value_and_grad against finite
differences, and an MLP trained with nuvec.nn and every optimizer against the same MLP trained in C++
(tests/python/mlp_reference.cpp)."""

import math
import os
import subprocess

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import nuvec.core as mx
import nuvec.nn as nn
import nuvec.optimizers as optim
from nuvec.utils import tree_flatten, tree_map

RNG = np.random.default_rng(0)


def normal(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def T(a):
    return torch.from_numpy(np.array(a, dtype=np.float32))


def close(ours, reference, tol=1e-4):
    np.testing.assert_allclose(np.array(ours.astype(mx.float32)), np.asarray(reference, dtype=np.float32), rtol=tol,
                               atol=tol)


def cl(x):
    """Channels last (MLX) to channels first (PyTorch), and back with cf."""
    return x.permute(0, x.ndim - 1, *range(1, x.ndim - 1))


def cf(x):
    return x.permute(0, *range(2, x.ndim), 1)


# ---- activations: the function and the module, against torch.nn.functional -----------------------------------------

ACTIVATIONS = [
    ("relu", nn.relu, nn.ReLU(), F.relu),
    ("relu6", nn.relu6, nn.ReLU6(), F.relu6),
    ("leaky_relu", lambda x: nn.leaky_relu(x, 0.2), nn.LeakyReLU(0.2), lambda x: F.leaky_relu(x, 0.2)),
    ("elu", lambda x: nn.elu(x, 0.5), nn.ELU(0.5), lambda x: F.elu(x, 0.5)),
    ("selu", nn.selu, nn.SELU(), F.selu),
    ("celu", lambda x: nn.celu(x, 1.5), nn.CELU(1.5), lambda x: F.celu(x, 1.5)),
    ("gelu", nn.gelu, nn.GELU(), F.gelu),
    ("gelu_approx", nn.gelu_approx, nn.GELU(approx="precise"), lambda x: F.gelu(x, approximate="tanh")),
    ("gelu_fast_approx", nn.gelu_fast_approx, nn.GELU(approx="fast"), lambda x: x * torch.sigmoid(1.702 * x)),
    ("silu", nn.silu, nn.SiLU(), F.silu),
    ("mish", nn.mish, nn.Mish(), F.mish),
    ("softplus", nn.softplus, nn.Softplus(), F.softplus),
    ("softsign", nn.softsign, nn.Softsign(), F.softsign),
    ("hardswish", nn.hardswish, nn.Hardswish(), F.hardswish),
    ("hard_sigmoid", nn.hard_sigmoid, nn.HardSigmoid(), F.hardsigmoid),
    ("hard_tanh", lambda x: nn.hard_tanh(x, -0.5, 2.0), nn.HardTanh(-0.5, 2.0), lambda x: F.hardtanh(x, -0.5, 2.0)),
    ("glu", nn.glu, nn.GLU(), F.glu),
    ("log_sigmoid", nn.log_sigmoid, nn.LogSigmoid(), F.logsigmoid),
    ("log_softmax", nn.log_softmax, nn.LogSoftmax(), lambda x: F.log_softmax(x, -1)),
    ("softmax", nn.softmax, nn.Softmax(), lambda x: F.softmax(x, -1)),
    ("softmin", nn.softmin, nn.Softmin(), lambda x: F.softmin(x, -1)),
    ("softmin_axis0", lambda x: nn.softmin(x, 0), nn.Softmin(0), lambda x: F.softmin(x, 0)),
    ("softshrink", lambda x: nn.softshrink(x, 0.7), nn.Softshrink(0.7), lambda x: F.softshrink(x, 0.7)),
    ("hard_shrink", nn.hard_shrink, nn.HardShrink(), F.hardshrink),
    ("sigmoid", nn.sigmoid, nn.Sigmoid(), torch.sigmoid),
    ("tanh", nn.tanh, nn.Tanh(), torch.tanh),
    ("step", lambda x: nn.step(x, 0.1), nn.Step(0.1), lambda x: (x > 0.1).float()),
]


@pytest.mark.parametrize("name, fn, module, reference", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
@pytest.mark.parametrize("shape", [(8,), (3, 4, 6)])
def test_activations_against_pytorch(name, fn, module, reference, shape):
    x = normal(*shape) * 3
    expected = reference(T(x)).numpy()
    close(fn(mx.array(x)), expected)
    close(module(mx.array(x)), expected)
    close(module(mx.array(x).astype(mx.float16)), expected, tol=2e-2)


def test_batch_norm_lists_mlx_parameters_and_loads_an_mlx_checkpoint(tmp_path):
    layer = nn.BatchNorm(3)
    names = ["weight", "bias", "running_mean", "running_var"]
    assert [k for k, _ in tree_flatten(layer.parameters())] == names
    assert [k for k, _ in tree_flatten(layer.trainable_parameters())] == ["weight", "bias"]
    x = normal(6, 3)
    layer(mx.array(x))  # a training step moves the running statistics
    checkpoint = {k: mx.array(normal(3)) for k in names}
    mx.save_safetensors(str(tmp_path / "bn.safetensors"), checkpoint)  # as mlx.nn saves a BatchNorm
    loaded = nn.BatchNorm(3).load_weights(str(tmp_path / "bn.safetensors")).eval()
    var = np.abs(np.array(checkpoint["running_var"]))
    loaded.update({"running_var": mx.array(var)})
    expected = (x - np.array(checkpoint["running_mean"])) / np.sqrt(var + 1e-5) * np.array(checkpoint["weight"]) + \
        np.array(checkpoint["bias"])
    close(loaded(mx.array(x)), expected)


class TwoLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm(4)
        self.blocks = [nn.TransformerEncoder(1, 4, 2)]

    def __call__(self, x):
        return self.blocks[0](self.bn(self.fc(x))[:, None, :], None)


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_layers_copy_and_pickle_with_parameters_and_modes(how):
    import copy
    import pickle

    mx.random.seed(5)
    model = TwoLayers() if how == "deepcopy" else nn.Linear(3, 4)
    x = mx.array(normal(5, 3))
    model(x)  # moves BatchNorm's running statistics away from their start
    model.freeze(keys=["bias"])
    model.eval()
    twin = copy.deepcopy(model) if how == "deepcopy" else pickle.loads(pickle.dumps(model))
    assert type(twin) is type(model)
    for (name, a), (other, b) in zip(tree_flatten(model.state), tree_flatten(twin.state)):
        assert name == other
        np.testing.assert_array_equal(np.array(a), np.array(b), err_msg=name)
    assert [k for k, _ in tree_flatten(twin.trainable_parameters())] == \
        [k for k, _ in tree_flatten(model.trainable_parameters())]
    assert all(not m.training for _, m in twin.named_modules())
    np.testing.assert_array_equal(np.array(twin(x)), np.array(model(x)))
    # The copy is independent: training it leaves the original as it was.
    before = np.array(model(x))
    twin.update(tree_map(lambda v: v + 1, twin.trainable_parameters()))
    assert not np.array_equal(np.array(twin(x)), before)
    np.testing.assert_array_equal(np.array(model(x)), before)
    if how == "deepcopy":
        with pytest.raises(TypeError, match="C\\+\\+ parent"):
            copy.deepcopy(model.blocks[0].layers[0])


def test_prelu_has_mlx_weight():
    layer = nn.PReLU(4, init=0.1)
    assert [(k, v.shape) for k, v in tree_flatten(layer.parameters())] == [("weight", (4,))]
    x = normal(2, 4)
    close(layer(mx.array(x)), F.prelu(T(x), torch.full((4,), 0.1)).numpy())
    close(nn.prelu(mx.array(x), mx.array(0.3)), F.prelu(T(x), torch.tensor([0.3])).numpy())


# ---- layers against PyTorch with the same weights -------------------------------------------------------------------


@pytest.mark.parametrize("dtype, tol", [(mx.float32, 1e-4), (mx.float16, 2e-2)])
@pytest.mark.parametrize("shape", [(5, 6), (2, 3, 6)])
def test_linear_bilinear_embedding(dtype, tol, shape):
    layer = nn.Linear(6, 4).apply(lambda p: p.astype(dtype))
    x = normal(*shape)
    close(layer(mx.array(x).astype(dtype)), F.linear(T(x), T(layer.weight), T(layer.bias)).numpy(), tol)
    assert nn.Linear(6, 4, bias=False).parameters().keys() == {"weight"}
    bi = nn.Bilinear(6, 3, 2)
    x2 = normal(*shape[:-1], 3)
    expected = F.bilinear(T(x), T(x2), T(bi.weight).transpose(1, 2), T(bi.bias))  # PyTorch's is (out, in1, in2)
    close(bi(mx.array(x), mx.array(x2)), expected.numpy())
    emb = nn.Embedding(10, 4)
    ids = np.array([[1, 7, 7], [0, 9, 3]])
    close(emb(mx.array(ids)), F.embedding(torch.from_numpy(ids), T(emb.weight)).numpy())
    close(emb.as_linear(mx.array(x[..., :4])), (T(x[..., :4]) @ T(emb.weight).T).numpy())
    assert nn.Identity()(mx.array(x)).shape == shape


CONVS = [
    (nn.Conv1d, F.conv1d, dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1, groups=2), (2, 9, 4)),
    (nn.Conv2d, F.conv2d, dict(in_channels=3, out_channels=4, kernel_size=(3, 2), padding=(1, 0), dilation=2),
     (2, 7, 6, 3)),
    (nn.Conv3d, F.conv3d, dict(in_channels=2, out_channels=3, kernel_size=2, stride=(1, 2, 1)), (1, 4, 5, 3, 2)),
]


@pytest.mark.parametrize("layer_type, reference, args, shape", CONVS, ids=["1d", "2d", "3d"])
def test_convolutions(layer_type, reference, args, shape):
    layer = layer_type(**args)
    x = normal(*shape)
    w = cl(T(layer.weight))  # (out, k..., in / groups) -> (out, in / groups, k...)
    expected = reference(cl(T(x)), w, T(layer.bias), stride=args.get("stride", 1), padding=args.get("padding", 0),
                         dilation=args.get("dilation", 1), groups=args.get("groups", 1))
    close(layer(mx.array(x)), cf(expected).numpy())
    assert layer.weight.shape[0] == args["out_channels"] and layer.weight.shape[-1] * args.get("groups", 1) == \
        args["in_channels"]


TRANSPOSED = [
    (nn.ConvTranspose1d, F.conv_transpose1d, dict(kernel_size=3, stride=2, padding=1, output_padding=1), (2, 5, 3)),
    (nn.ConvTranspose2d, F.conv_transpose2d, dict(kernel_size=(2, 3), stride=2), (1, 4, 3, 3)),
    (nn.ConvTranspose3d, F.conv_transpose3d, dict(kernel_size=2, padding=1, stride=(2, 1, 1)), (1, 3, 3, 4, 3)),
]


@pytest.mark.parametrize("layer_type, reference, args, shape", TRANSPOSED, ids=["1d", "2d", "3d"])
def test_transposed_convolutions(layer_type, reference, args, shape):
    layer = layer_type(3, 5, **args)
    x = normal(*shape)
    w = T(layer.weight)  # (out, k..., in) -> PyTorch's (in, out, k...)
    w = w.permute(w.ndim - 1, 0, *range(1, w.ndim - 1))
    expected = reference(cl(T(x)), w, T(layer.bias), stride=args.get("stride", 1), padding=args.get("padding", 0),
                         output_padding=args.get("output_padding", 0))
    close(layer(mx.array(x)), cf(expected).numpy())


POOLS = [
    (nn.MaxPool1d(3, stride=2, padding=1), lambda x: F.max_pool1d(x, 3, 2, 1), (2, 9, 3)),
    (nn.AvgPool1d(2), lambda x: F.avg_pool1d(x, 2), (2, 8, 3)),
    (nn.MaxPool2d((2, 3), stride=(1, 2)), lambda x: F.max_pool2d(x, (2, 3), (1, 2)), (2, 5, 7, 3)),
    (nn.AvgPool2d(2, padding=1), lambda x: F.avg_pool2d(x, 2, 2, 1), (1, 5, 6, 2)),
    (nn.MaxPool3d(2), lambda x: F.max_pool3d(x, 2), (1, 4, 4, 6, 2)),
    (nn.AvgPool3d(2, stride=1), lambda x: F.avg_pool3d(x, 2, 1), (1, 3, 4, 3, 2)),
]


@pytest.mark.parametrize("layer, reference, shape", POOLS, ids=[type(p[0]).__name__ + str(i) for i, p in
                                                                  enumerate(POOLS)])
def test_pooling(layer, reference, shape):
    x = normal(*shape)
    close(layer(mx.array(x)), cf(reference(cl(T(x)))).numpy())


@pytest.mark.parametrize("mode, align, torch_mode", [("nearest", False, "nearest"), ("linear", False, "bilinear"),
                                                     ("linear", True, "bilinear"), ("cubic", True, "bicubic")])
def test_upsample(mode, align, torch_mode):
    x = normal(2, 4, 5, 3)
    layer = nn.Upsample(scale_factor=(2, 3), mode=mode, align_corners=align)
    kwargs = {} if torch_mode == "nearest" else {"align_corners": align}
    expected = F.interpolate(cl(T(x)), scale_factor=(2, 3), mode=torch_mode, **kwargs)
    close(layer(mx.array(x)), cf(expected).numpy())
    assert nn.Upsample(2.0)(mx.array(x)).shape == (2, 8, 10, 3)


@pytest.mark.parametrize("dtype, tol", [(mx.float32, 1e-4), (mx.float16, 2e-2)])
def test_norms(dtype, tol):
    x = normal(2, 5, 8) * 2 + 1
    xs = mx.array(x).astype(dtype)

    def randomized(layer):  # non-trivial affine parameters
        return layer.update({k: mx.array(normal(*v.shape)) for k, v in layer.items() if isinstance(v, mx.array)})

    ln = randomized(nn.LayerNorm(8))
    close(ln(xs), F.layer_norm(T(x), (8,), T(ln.weight), T(ln.bias), 1e-5).numpy(), tol)
    rms = randomized(nn.RMSNorm(8, eps=1e-6))
    expected = T(x) * torch.rsqrt(T(x).pow(2).mean(-1, keepdim=True) + 1e-6) * T(rms.weight)
    close(rms(xs), expected.numpy(), tol)
    gn = randomized(nn.GroupNorm(4, 8, pytorch_compatible=True))
    expected = cf(F.group_norm(cl(T(x)), 4, T(gn.weight), T(gn.bias), 1e-5))
    close(gn(xs), expected.numpy(), tol)
    inorm = nn.InstanceNorm(8)
    close(inorm(xs), cf(F.instance_norm(cl(T(x)), eps=1e-5)).numpy(), tol)


def test_batch_norm_train_and_eval():
    x = normal(6, 4) * 3 + 2
    bn = nn.BatchNorm(4, momentum=0.2)
    mean, var = torch.zeros(4), torch.ones(4)
    expected = F.batch_norm(T(x), mean, var, T(bn.weight), T(bn.bias), training=True, momentum=0.2)
    close(bn(mx.array(x)), expected.numpy())
    # The running statistics the C++ forward updated are back in the Python tree, and are not trained.
    close(bn.running_mean, mean.numpy())
    close(bn.running_var, var.numpy())
    assert "running_mean" not in bn.trainable_parameters() and "running_mean" in bn.parameters()
    bn.eval()
    close(bn(mx.array(x)), F.batch_norm(T(x), mean, var, T(bn.weight), T(bn.bias), training=False).numpy())


@pytest.mark.parametrize("layer, shape, channel_axes", [
    (nn.Dropout(0.25), (4000,), None), (nn.Dropout2d(0.5), (4, 5, 5, 60), (1, 2)),
    (nn.Dropout3d(0.5), (4, 3, 5, 2, 30), (1, 2, 3))], ids=["Dropout", "Dropout2d", "Dropout3d"])
def test_dropout_follows_the_python_training_flag(layer, shape, channel_axes):
    x = mx.ones(shape)
    assert mx.array_equal(layer.eval()(x), x).item()
    y = np.array(layer.train()(x))
    kept = 1 / (1 - (0.25 if channel_axes is None else 0.5))
    assert set(np.unique(y)) <= {0.0, np.float32(kept)} and 0.1 < (y == 0).mean() < 0.75
    if channel_axes:  # whole channels drop together
        assert (y.min(axis=channel_axes) == y.max(axis=channel_axes)).all()


# ---- positions, attention, transformers --------------------------------------------------------------------------


@pytest.mark.parametrize("traditional", [False, True])
def test_rope(traditional):
    x = normal(2, 3, 5, 8)
    layer = nn.RoPE(6, traditional=traditional, base=100.0, scale=0.5)
    positions = (np.arange(5) + 2) * 0.5
    theta = 100.0 ** (-np.arange(0, 6, 2) / 6)
    angle = positions[:, None] * theta[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    rotated = x[..., :6]
    a, b = (rotated[..., 0::2], rotated[..., 1::2]) if traditional else (rotated[..., :3], rotated[..., 3:])
    ra, rb = a * cos - b * sin, a * sin + b * cos
    out = np.stack([ra, rb], -1).reshape(*ra.shape[:-1], 6) if traditional else np.concatenate([ra, rb], -1)
    close(layer(mx.array(x), offset=2), np.concatenate([out, x[..., 6:]], -1))


def test_alibi_and_sinusoidal():
    scores = normal(1, 4, 3, 5)
    slopes = 2.0 ** (-8.0 / 4 * np.arange(1, 5))
    distance = -np.abs((np.arange(3) + 2)[:, None] - np.arange(5)[None, :])
    close(nn.ALiBi()(mx.array(scores), offset=2), scores + slopes[None, :, None, None] * distance)
    pe = nn.SinusoidalPositionalEncoding(8, min_freq=0.01, max_freq=1.0)
    x = np.arange(5, dtype=np.float32)
    sigmas = np.exp(np.linspace(math.log(1.0), math.log(0.01), 4))  # mlx.nn's: max_freq down to min_freq
    y = x[:, None] * sigmas
    close(pe(mx.array(x)), np.concatenate([np.sin(y), np.cos(y)], -1) * math.sqrt(2 / 8))


def torch_attention(mha, net):
    with torch.no_grad():
        net.in_proj_weight.copy_(torch.cat([T(mha.query_proj.weight), T(mha.key_proj.weight),
                                            T(mha.value_proj.weight)]))
        net.in_proj_bias.zero_()
        net.out_proj.weight.copy_(T(mha.out_proj.weight))
        net.out_proj.bias.zero_()


def test_multi_head_attention():
    mha = nn.MultiHeadAttention(8, 2)
    assert [(k, v.shape) for k, v in tree_flatten(mha.parameters())] == [
        ("query_proj.weight", (8, 8)), ("key_proj.weight", (8, 8)), ("value_proj.weight", (8, 8)),
        ("out_proj.weight", (8, 8))]
    net = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    torch_attention(mha, net)
    q, kv = normal(2, 3, 8), normal(2, 5, 8)
    mask = nn.MultiHeadAttention.create_additive_causal_mask(3)
    expected, _ = net(T(q), T(kv), T(kv))
    close(mha(mx.array(q), mx.array(kv), mx.array(kv)), expected.detach().numpy())
    expected, _ = net(T(q), T(q), T(q), attn_mask=T(mask))
    close(mha(mx.array(q), mx.array(q), mx.array(q), mask=mask), expected.detach().numpy())
    biased = nn.MultiHeadAttention(8, 2, key_input_dims=4, value_dims=6, value_output_dims=5, bias=True)
    assert [(k, v.shape) for k, v in tree_flatten(biased.parameters())] == [
        ("query_proj.weight", (8, 8)), ("query_proj.bias", (8,)), ("key_proj.weight", (8, 4)),
        ("key_proj.bias", (8,)), ("value_proj.weight", (6, 4)), ("value_proj.bias", (6,)),
        ("out_proj.weight", (5, 6)), ("out_proj.bias", (5,))]


def load_torch_encoder_layer(ours, theirs):
    torch_attention(ours.attention, theirs.self_attn)
    with torch.no_grad():
        for mine, other in [(ours.linear1, theirs.linear1), (ours.linear2, theirs.linear2), (ours.ln1, theirs.norm1),
                            (ours.ln2, theirs.norm2)]:
            other.weight.copy_(T(mine.weight))
            other.bias.copy_(T(mine.bias))


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_encoder(norm_first):
    x = normal(2, 4, 8)
    layer = nn.TransformerEncoderLayer(8, 2, mlp_dims=16, norm_first=norm_first)
    names = [k for k, _ in tree_flatten(layer.parameters())]
    assert names[:5] == ["attention.query_proj.weight", "attention.key_proj.weight", "attention.value_proj.weight",
                         "attention.out_proj.weight", "ln1.weight"] and "linear2.bias" in names
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first)
    load_torch_encoder_layer(layer, theirs)
    close(layer(mx.array(x)), theirs(T(x)).detach().numpy())
    encoder = nn.TransformerEncoder(2, 8, 2, mlp_dims=16, activation=nn.gelu)
    assert [k for k, _ in tree_flatten(encoder.parameters())][-2:] == ["ln.weight", "ln.bias"]
    assert isinstance(encoder.layers, list) and len(encoder.layers) == 2
    stack = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True, norm_first=True),
        2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False)
    for mine, other in zip(encoder.layers, stack.layers):
        load_torch_encoder_layer(mine, other)
    mask = nn.MultiHeadAttention.create_additive_causal_mask(4)
    close(encoder(mx.array(x), mask), stack(T(x), mask=T(mask)).detach().numpy())


def test_transformer_decoder_shapes_and_names():
    decoder = nn.TransformerDecoder(2, 8, 2, mlp_dims=16)
    names = [k for k, _ in tree_flatten(decoder.parameters())]
    assert "layers.1.cross_attention.out_proj.weight" in names and names[-1] == "ln.bias"
    y = decoder(mx.array(normal(2, 3, 8)), mx.array(normal(2, 5, 8)))
    assert y.shape == (2, 3, 8)


def test_quantized_layers_and_quantize():
    linear = nn.Linear(64, 8)
    q = nn.QuantizedLinear.from_linear(linear, group_size=32, bits=8)
    assert [k for k, _ in tree_flatten(q.parameters())] == ["weight", "bias", "scales", "biases"]
    assert tree_flatten(q.trainable_parameters()) == []  # mlx.nn's quantized layers start frozen
    dequantized = mx.dequantize(q.weight, q.scales, q.biases, 32, 8)
    x = normal(3, 64)
    close(q(mx.array(x)), x @ np.array(dequantized).T + np.array(q.bias), 1e-3)
    close(q(mx.array(x)), linear(mx.array(x)), 2e-2)
    model = nn.Sequential(nn.Embedding(16, 64), nn.Linear(64, 32), nn.Linear(32, 4))
    nn.quantize(model, group_size=32, bits=4, class_predicate=lambda path, m: path != "layers.2")
    assert [type(m).__name__ for m in model.layers] == ["QuantizedEmbedding", "QuantizedLinear", "Linear"]
    assert model(mx.array([1, 2])).shape == (2, 4)
    # A C++ layer's child swapped in Python is swapped in C++ too.
    mha = nn.MultiHeadAttention(64, 2)
    nn.quantize(mha, group_size=32)
    assert type(mha.query_proj).__name__ == "QuantizedLinear"
    x = mx.array(normal(1, 2, 64))
    reference = mha.out_proj(mx.fast.scaled_dot_product_attention(
        *(p(x).reshape(1, 2, 2, 32).transpose(0, 2, 1, 3) for p in (mha.query_proj, mha.key_proj, mha.value_proj)),
        scale=32 ** -0.5).transpose(0, 2, 1, 3).reshape(1, 2, 64))
    close(mha(x, x, x), reference, 1e-3)
    with pytest.raises(TypeError, match="runs in C\\+\\+"):
        mha.out_proj = nn.Sequential()


# ---- Module semantics over C++ layers -------------------------------------------------------------------------------


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 4, 3, padding=1)
        self.norm = nn.LayerNorm(4)
        self.attention = nn.MultiHeadAttention(4, 2, bias=True)
        self.head = nn.Linear(4, 2)
        self.scale = mx.array([1.5])

    def __call__(self, x):
        h = self.norm(nn.gelu(self.conv(x)))
        return self.head(self.attention(h, h, h) + h) * self.scale


def test_module_api_over_cpp_layers(tmp_path):
    net = Net()
    names = [k for k, _ in tree_flatten(net.parameters())]
    assert names[:4] == ["conv.weight", "conv.bias", "norm.weight", "norm.bias"]
    assert "attention.query_proj.bias" in names and names[-1] == "scale"
    x = mx.array(normal(2, 5, 3))
    before = net(x)
    # update() in Python is what the C++ forward sees.
    net.update({"head": {"bias": net.head.bias + 1}})
    close(net(x), before + 1.5)
    net.attention.freeze()
    assert not any(k.startswith("attention") for k, _ in tree_flatten(net.trainable_parameters()))
    net.unfreeze()
    assert [k for k, _ in net.named_modules()][-1] == "" and len(net.modules()) == 9
    seen = []
    net.apply_to_modules(lambda path, m: seen.append(path))
    assert "attention.query_proj" in seen
    net.save_weights(str(tmp_path / "net.safetensors"))
    other = Net().load_weights(str(tmp_path / "net.safetensors"))
    close(other(x), net(x))
    half = Net().update(net.parameters()).apply(lambda p: p.astype(mx.float16))
    close(half(x.astype(mx.float16)), net(x), 5e-2)


def test_value_and_grad_against_finite_differences():
    mx.random.seed(4)
    net = Net()
    x = mx.array(normal(2, 5, 3))
    target = mx.array(normal(2, 5, 2))

    def loss_fn(inputs):
        return nn.losses.mse_loss(net(inputs), target)

    loss, grads = nn.value_and_grad(net, loss_fn)(x)
    assert loss.item() == pytest.approx(loss_fn(x).item(), rel=1e-6)
    flat_grads = dict(tree_flatten(grads))
    assert set(flat_grads) == {k for k, _ in tree_flatten(net.trainable_parameters())}
    h = 1e-2
    for name, value in tree_flatten(net.parameters()):
        base = np.array(value)
        for index in list(np.ndindex(base.shape))[:: max(1, base.size // 3)]:
            def shifted(delta):
                moved = base.copy()
                moved[index] += delta
                net.update(_nested(name, mx.array(moved)))
                result = loss_fn(x).item()
                net.update(_nested(name, mx.array(base)))
                return result

            numeric = (shifted(h) - shifted(-h)) / (2 * h)
            assert np.array(flat_grads[name])[index] == pytest.approx(numeric, rel=2e-2, abs=2e-3), (name, index)


def _nested(name, value):
    tree = value
    for part in reversed(name.split(".")):
        tree = {part: tree}
    return tree


def test_compiled_step_over_cpp_layers_matches_eager():
    x, y = mx.array(normal(4, 5, 3)), mx.array(normal(4, 5, 2))
    losses = {}
    for compiled in (False, True):
        mx.random.seed(7)
        net = Net()
        optimizer = optim.Lion(optim.cosine_decay(1e-3, 10))
        loss_and_grad = nn.value_and_grad(net, lambda a, b: nn.losses.mse_loss(net(a), b))

        def step(a, b):
            loss, grads = loss_and_grad(a, b)
            optimizer.update(net, grads)
            return loss

        state = [net.state, optimizer.state]
        run = mx.compile(step, inputs=state, outputs=state) if compiled else step
        losses[compiled] = [run(x, y).item() for _ in range(4)]
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-5)


# ---- optimizers ---------------------------------------------------------------------------------------------------

TORCH_OPTIMIZERS = [  # (name, ours, PyTorch's, the C++ rule's slots)
    ("sgd", lambda: optim.SGD(0.1, momentum=0.9, weight_decay=0.01, nesterov=True),
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True), {"v"}),
    ("adam", lambda: optim.Adam(0.01, betas=(0.8, 0.99), bias_correction=True),
     lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99)), {"m", "v"}),
    ("adamw", lambda: optim.AdamW(0.01, weight_decay=0.1, bias_correction=True),
     lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1), {"m", "v"}),
    ("adagrad", lambda: optim.Adagrad(0.1, eps=1e-10), lambda p: torch.optim.Adagrad(p, lr=0.1, eps=1e-10), {"v"}),
    ("adadelta", lambda: optim.AdaDelta(1.0, rho=0.8), lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.8),
     {"u", "v"}),
    ("rmsprop", lambda: optim.RMSprop(0.01, alpha=0.9, momentum=0.5, centered=True),
     lambda p: torch.optim.RMSprop(p, lr=0.01, alpha=0.9, momentum=0.5, centered=True),
     {"v", "grad_avg", "momentum_buffer"}),
]


@pytest.mark.parametrize("name, ours, theirs, slots", TORCH_OPTIMIZERS, ids=[o[0] for o in TORCH_OPTIMIZERS])
def test_optimizers_against_torch(name, ours, theirs, slots):
    params = {"w": normal(3, 4), "layers": [{"b": normal(4)}]}
    grads = [{"w": normal(3, 4), "layers": [{"b": normal(4)}]} for _ in range(4)]
    optimizer = ours()
    tree = {"w": mx.array(params["w"]), "layers": [{"b": mx.array(params["layers"][0]["b"])}]}
    torch_params = [torch.nn.Parameter(T(params["w"])), torch.nn.Parameter(T(params["layers"][0]["b"]))]
    torch_optimizer = theirs(torch_params)
    for g in grads:
        tree = optimizer.apply_gradients({"w": mx.array(g["w"]), "layers": [{"b": mx.array(g["layers"][0]["b"])}]},
                                         tree)
        torch_params[0].grad, torch_params[1].grad = T(g["w"]), T(g["layers"][0]["b"])
        torch_optimizer.step()
        close(tree["w"], torch_params[0].detach().numpy(), 1e-5)
        close(tree["layers"][0]["b"], torch_params[1].detach().numpy(), 1e-5)
    assert optimizer.step.item() == 4 and optimizer.state["step"].dtype == mx.uint64
    # Beside the step and the rate, the state is a tree of the parameters' shape holding each one's C++ slots.
    assert set(optimizer.state["layers"][0]["b"]) == slots


def test_learning_rate_is_settable_and_optimizer_arguments_are_mlx():
    optimizer = optim.Adam(0.1)
    optimizer.learning_rate = 0.01
    p = {"w": mx.array([1.0])}
    optimizer.apply_gradients({"w": mx.array([1.0])}, p)
    assert optimizer.learning_rate.item() == pytest.approx(0.01)
    optim.Adafactor(beta_1=0.9, relative_step=False, learning_rate=0.01)
    with pytest.raises(TypeError):
        optim.Adam(0.1, momentum=0.9)
    grads = {"a": mx.array([3.0, 4.0]), "b": [mx.array([12.0])]}
    clipped, norm = optim.clip_grad_norm(grads, 1.0)
    assert norm.item() == pytest.approx(13.0)
    close(clipped["b"][0], [12.0 / 13.0], 1e-5)


# ---- an MLP trained with nuvec.nn and nuvec.optimizers against the same MLP trained in C++ ---------------------------

OPTIMIZERS = {
    "sgd": lambda: optim.SGD(0.1, momentum=0.9, weight_decay=1e-3, nesterov=True),
    "adam": lambda: optim.Adam(0.01),
    "adamw": lambda: optim.AdamW(0.01, weight_decay=0.1),
    "adamax": lambda: optim.Adamax(0.01),
    "adagrad": lambda: optim.Adagrad(0.1),
    "adadelta": lambda: optim.AdaDelta(1.0),
    "rmsprop": lambda: optim.RMSprop(0.01, momentum=0.5, centered=True),
    "lion": lambda: optim.Lion(optim.cosine_decay(0.01, 10)),
    "adafactor": lambda: optim.Adafactor(),
    "muon": lambda: optim.Muon(0.02),
}


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(4, 16)
        self.fc1 = nn.Linear(16, 3)

    def __call__(self, x):
        return self.fc1(nn.relu(self.fc0(x)))


@pytest.mark.skipif("NUVEC_MLP_REFERENCE" not in os.environ, reason="needs the C++ reference (run through ctest)")
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_mlp_training_matches_cpp(name, tmp_path):
    mx.random.seed(11)
    model = MLP()
    x = mx.array(normal(32, 4))
    y = mx.array(RNG.integers(0, 3, size=(32,)).astype(np.int32))
    inputs = {"w0": model.fc0.weight, "b0": model.fc0.bias, "w1": model.fc1.weight, "b1": model.fc1.bias, "x": x,
              "y": y}
    mx.save_safetensors(str(tmp_path / "in.safetensors"), inputs)
    steps = 15
    subprocess.run([os.environ["NUVEC_MLP_REFERENCE"], str(tmp_path / "in.safetensors"),
                    str(tmp_path / "out.safetensors"), name, str(steps)], check=True)
    reference = mx.load(str(tmp_path / "out.safetensors"))
    optimizer = OPTIMIZERS[name]()
    step = nn.value_and_grad(model, lambda a, b: nn.losses.cross_entropy(model(a), b, reduction="mean"))
    losses = []
    for _ in range(steps):
        loss, grads = step(x, y)
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state)
        losses.append(loss.item())
    np.testing.assert_allclose(losses, np.array(reference["losses"]), rtol=1e-5, atol=1e-6)
    for ours, theirs in [("fc0.weight", "fc0.weight"), ("fc1.bias", "fc1.bias")]:
        np.testing.assert_allclose(np.array(dict(tree_flatten(model.parameters()))[ours]), np.array(reference[theirs]),
                                   rtol=1e-5, atol=1e-6)
    assert losses[-1] < losses[0]
