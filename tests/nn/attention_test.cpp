// Attention and position encodings against references written in PyTorch from the same weights: multi-head
// attention with and without masks, pre-norm and post-norm encoder and decoder layers, a stacked encoder's names,
// RoPE (both layouts) and ALiBi against their formulas, and the sinusoidal encoding.

#include <gtest/gtest.h>

#include "tests/nn/torch_reference.h"

namespace nuvec {
namespace {

using test::close;
using test::error_of;
using test::torch_ref;

/// PyTorch code for one MultiHeadAttention of the model parameters p (a dict of tensors) under `prefix`.
const char* kAttention =
    "def attn(p, pre, q, k, v, mask, heads):\n"
    "    lin = lambda x, n: F.linear(x, p[pre + n + '.weight'], p.get(pre + n + '.bias'))\n"
    "    B, L, _ = q.shape\n"
    "    S = k.shape[1]\n"
    "    Q = lin(q, 'query_proj').reshape(B, L, heads, -1).transpose(1, 2)\n"
    "    K = lin(k, 'key_proj').reshape(B, S, heads, -1).transpose(1, 2)\n"
    "    V = lin(v, 'value_proj').reshape(B, S, heads, -1).transpose(1, 2)\n"
    "    s = Q @ K.transpose(-1, -2) / (Q.shape[-1] ** 0.5)\n"
    "    if mask is not None: s = s + mask\n"
    "    o = (torch.softmax(s, -1) @ V).transpose(1, 2).reshape(B, L, -1)\n"
    "    return lin(o, 'out_proj')\n";

/// The parameters of a module as PyTorch code building `p`, taking them from inputs starting at letter `first`.
std::string params_code(const nn::Params& params, char first) {
  // One expression, so the inputs are read before `p` is bound (an input may be called p).
  std::string names;
  std::string values;
  for (size_t i = 0; i < params.size(); ++i) {
    names += "'" + params[i].first + "', ";
    values += "T(" + std::string(1, static_cast<char>(first + i)) + "), ";
  }
  return "p = dict(zip([" + names + "], [" + values + "]))\n";
}

std::vector<array> with_params(std::vector<array> inputs, const nn::Params& params) {
  for (const auto& [name, value] : params) {
    inputs.push_back(value);
  }
  return inputs;
}

TEST(MultiHeadAttention, MatchesTorch) {
  nn::MultiHeadAttention mha(8, 2, std::nullopt, 6, std::nullopt, 4, 5, true);
  auto q = random::normal({2, 3, 8});
  auto k = random::normal({2, 4, 6});
  auto v = random::normal({2, 4, 6});
  auto y = mha(q, k, v);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 5}));
  auto params = mha.parameters();
  auto ref =
      torch_ref(std::string(kAttention) + params_code(params, 'd') + "out = N(attn(p, '', T(a), T(b), T(c), None, 2))",
                with_params({q, k, v}, params));
  EXPECT_TRUE(close(y, ref, 1e-4));

  // Self-attention with an additive causal mask.
  nn::MultiHeadAttention self(8, 4);
  EXPECT_EQ(self.parameters().size(), 4U);  // no biases by default
  auto x = random::normal({2, 5, 8});
  auto mask = nn::MultiHeadAttention::create_additive_causal_mask(5);
  auto ys = self(x, x, x, mask);
  auto sp = self.parameters();
  auto ref_masked =
      torch_ref(std::string(kAttention) + params_code(sp, 'c') + "out = N(attn(p, '', T(a), T(a), T(a), T(b), 4))",
                with_params({x, mask}, sp));
  EXPECT_TRUE(close(ys, ref_masked, 1e-4));
  EXPECT_EQ(error_of([&] {
              self(random::normal({5, 8}), x, x);
            }),
            "[MultiHeadAttention] expected queries (B, L_q, D_q), keys (B, L_k, D_k) and values (B, L_k, D_v); given "
            "shapes (5,8), (2,5,8) and (2,5,8).");
}

TEST(Transformer, EncoderLayersMatchTorch) {
  for (bool norm_first : {true, false}) {
    SCOPED_TRACE(norm_first ? "pre-norm" : "post-norm");
    nn::TransformerEncoderLayer layer(8, 2, 16, 0.0F, {}, norm_first);
    auto x = random::normal({2, 4, 8});
    auto mask = nn::MultiHeadAttention::create_additive_causal_mask(4);
    auto params = layer.parameters();
    std::string code =
        std::string(kAttention) + params_code(params, 'c') +
        "ln = lambda x, n: F.layer_norm(x, (8,), p[n + '.weight'], p[n + '.bias'])\n"
        "mlp = lambda x: F.linear(F.relu(F.linear(x, p['linear1.weight'], p['linear1.bias'])), "
        "p['linear2.weight'], p['linear2.bias'])\n"
        "x = T(a)\n"
        "if " +
        std::string(norm_first ? "True" : "False") +
        ":\n"
        "    y = ln(x, 'ln1'); h = x + attn(p, 'attention.', y, y, y, T(b), 2); out = h + mlp(ln(h, 'ln2'))\n"
        "else:\n"
        "    h = ln(x + attn(p, 'attention.', x, x, x, T(b), 2), 'ln1'); out = ln(h + mlp(h), 'ln2')\n"
        "out = N(out)";
    EXPECT_TRUE(close(layer(x, mask), torch_ref(code, with_params({x, mask}, params)), 1e-4));
  }
}

TEST(Transformer, DecoderLayerMatchesTorch) {
  nn::TransformerDecoderLayer layer(8, 2, 12);
  auto x = random::normal({2, 3, 8});
  auto memory = random::normal({2, 5, 8});
  auto mask = nn::MultiHeadAttention::create_additive_causal_mask(3);
  auto params = layer.parameters();
  std::string code = std::string(kAttention) + params_code(params, 'd') +
                     "ln = lambda x, n: F.layer_norm(x, (8,), p[n + '.weight'], p[n + '.bias'])\n"
                     "mlp = lambda x: F.linear(F.relu(F.linear(x, p['linear1.weight'], p['linear1.bias'])), "
                     "p['linear2.weight'], p['linear2.bias'])\n"
                     "x = T(a); m = T(b)\n"
                     "y = ln(x, 'ln1'); h = x + attn(p, 'self_attention.', y, y, y, T(c), 2)\n"
                     "y = ln(h, 'ln2'); h = h + attn(p, 'cross_attention.', y, m, m, None, 2)\n"
                     "out = N(h + mlp(ln(h, 'ln3')))";
  EXPECT_TRUE(close(layer(x, memory, mask), torch_ref(code, with_params({x, memory, mask}, params)), 1e-4));
}

TEST(Transformer, EncoderStackNames) {
  nn::TransformerEncoder encoder(2, 8, 2);
  auto params = encoder.parameters();
  ASSERT_NE(nn::find_param(params, "layers.1.attention.query_proj.weight"), nullptr);
  ASSERT_NE(nn::find_param(params, "ln.bias"), nullptr);
  EXPECT_EQ(encoder.layers[1]->attention->query_proj->path(), "layers.1.attention.query_proj");
  EXPECT_EQ(encoder(random::normal({1, 3, 8})).shape(), (Shape{1, 3, 8}));
  nn::TransformerDecoder decoder(2, 8, 2);
  ASSERT_NE(nn::find_param(decoder.parameters(), "layers.1.cross_attention.out_proj.weight"), nullptr);
  // The stack is its layers in turn, then the final norm.
  auto x = random::normal({1, 3, 8});
  auto memory = random::normal({1, 4, 8});
  auto expected = decoder.ln->forward(decoder.layers[1]->forward(decoder.layers[0]->forward(x, memory), memory));
  EXPECT_TRUE(allclose(decoder(x, memory), expected).item<bool>());
}

TEST(PositionalEncoding, RoPE) {
  auto x = random::normal({2, 3, 5, 8});
  for (bool traditional : {false, true}) {
    nn::RoPE rope(6, traditional, 500.0F, 0.5F);
    auto y = rope.forward(x, 3);
    std::string code =
        "x = T(a); d = 6; L = x.shape[-2]\n"
        "pos = (torch.arange(L, dtype=torch.float64) + 3) * 0.5\n"
        "inv = 500.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)\n"
        "ang = pos[:, None] * inv[None, :]\n"
        "c, s = torch.cos(ang), torch.sin(ang)\n"
        "r = x[..., :d]\n"
        "if " +
        std::string(traditional ? "True" : "False") +
        ":\n"
        "    x1, x2 = r[..., 0::2], r[..., 1::2]\n"
        "    rot = torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], -1).reshape(r.shape)\n"
        "else:\n"
        "    x1, x2 = r[..., :d // 2], r[..., d // 2:]\n"
        "    rot = torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], -1)\n"
        "out = N(torch.cat([rot, x[..., d:]], -1))";
    EXPECT_TRUE(close(y, torch_ref(code, {x}), 1e-5));
  }
}

TEST(PositionalEncoding, ALiBi) {
  // MLX's slopes (Press et al.): 2^(-8 h / n) for a power of two n, else the power of two below n and every other
  // slope of twice it; 6 heads take the second path.
  for (int heads : {4, 6}) {
    SCOPED_TRACE(heads);
    auto scores = random::normal({1, heads, 3, 5});
    auto y = nn::ALiBi()(scores, 2);
    std::string code =
        "import math\n"
        "def slopes(n):\n"
        "    if math.log2(n).is_integer():\n"
        "        return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]\n"
        "    p = 2 ** math.floor(math.log2(n))\n"
        "    return slopes(p) + slopes(2 * p)[0::2][:n - p]\n"
        "s = torch.tensor(slopes(" +
        std::to_string(heads) +
        "), dtype=torch.float64)\n"
        "q = torch.arange(2, 5, dtype=torch.float64); k = torch.arange(5, dtype=torch.float64)\n"
        "bias = -(q[:, None] - k[None, :]).abs()[None] * s[:, None, None]\n"
        "out = N(T(a) + bias[None])";
    EXPECT_TRUE(close(y, torch_ref(code, {scores})));
    // MLX's create_alibi_matrix takes the end position of the queries, offset + L_q.
    EXPECT_TRUE(allclose(nn::ALiBi::create_alibi_matrix(5, 5, heads, 2), y - scores, 1e-5, 1e-6).item<bool>());
  }
}

TEST(PositionalEncoding, Sinusoidal) {
  nn::SinusoidalPositionalEncoding pe(8, 1e-4F, 1.0F, std::nullopt, true);
  auto positions = arange(0, 6, float32);
  std::string code =
      "d = 8; half = d // 2\n"
      "one_zero = 1 - torch.arange(half, dtype=torch.float64) / (half - 1)\n"
      "freqs = torch.exp(one_zero * (np.log(1.0) - np.log(1e-4)) + np.log(1e-4))\n"
      "y = T(a)[:, None] * freqs[None]\n"
      "out = N(torch.cat([torch.cos(y), torch.sin(y)], -1) * (2.0 / d) ** 0.5)";
  EXPECT_TRUE(close(pe(positions), torch_ref(code, {positions}), 1e-5));
}

}  // namespace
}  // namespace nuvec
