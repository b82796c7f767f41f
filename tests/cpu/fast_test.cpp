// nuvec::fast against NumPy references written by hand in float64 (rms_norm, layer_norm, rope, and attention with
// its mask, causal and sink rules as MLX defines them), and each fused op against its composition
// (nuvec::fast::detail::*_composed): float32, float16, bfloat16 and float64, odd sizes, size-1 and empty axes,
// non-contiguous inputs (transposed heads, strided slices), the decode (L_q = 1) and tiled (many rows) attention
// paths, and the error messages.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::matches;
using test::numpy_ref;
using test::random_array;
using test::to_host;

using test::error_of;

/// NumPy's name for the dtype a result is compared in (bfloat16 travels as float32).
std::string np_type(Dtype d) { return "np." + std::string(d == bfloat16 ? "float32" : dtype_name(d)); }

/// Tolerance for a result rounded to `d` after float32 arithmetic.
double tol(Dtype d) {
  if (d == float16) {
    return 4e-3;
  }
  if (d == bfloat16) {
    return 3e-2;
  }
  return d == float64 ? 1e-6 : 2e-5;
}

std::string py_float(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

/// Fused against the reference and against the composition.
void expect_close(const array& fused, const array& composed, const test::HostArray& expected, Dtype dtype) {
  EXPECT_EQ(fused.dtype(), dtype);
  EXPECT_EQ(fused.shape(), composed.shape());
  EXPECT_TRUE(matches(fused, expected, tol(dtype), tol(dtype), dtype != bfloat16));
  EXPECT_TRUE(matches(fused, to_host(astype(composed, float64)), tol(dtype), tol(dtype), false));
}

// ---------------------------------------------------------------- norms

/// Inputs of several layouts: dense, transposed (last axis strided), a strided slice, empty and size-1 axes.
std::vector<array> norm_inputs(Dtype dtype, std::mt19937& rng) {
  return {
      random_array({7}, dtype, rng),
      random_array({3, 5, 33}, dtype, rng),
      random_array({2, 1}, dtype, rng),
      random_array({0, 6}, dtype, rng),
      random_array({4, 300}, dtype, rng, 3.0, 5.0),  // a large mean: layer_norm must stay accurate
      transpose(random_array({40, 3}, dtype, rng)),
      slice(random_array({5, 50}, dtype, rng), {0, 1}, {5, 50}, {2, 3}),
  };
}

TEST(FastNorm, RmsNormMatchesNumpyAndComposition) {
  std::mt19937 rng(1);
  for (auto dtype : {float32, float16, bfloat16, float64}) {
    for (const auto& x : norm_inputs(dtype, rng)) {
      for (bool with_weight : {false, true}) {
        SCOPED_TRACE("rms_norm " + std::string(dtype_name(dtype)) + shape_string(x.shape()) +
                     (with_weight ? " weight" : ""));
        const float eps = with_weight ? 1e-5F : 0.1F;
        std::optional<array> w;
        if (with_weight) {
          w = random_array({x.shape(-1)}, dtype, rng);
        }
        auto fused = fast::rms_norm(x, w, eps);
        auto composed = fast::detail::rms_norm_composed(x, w, eps);
        std::vector<array> inputs{x};
        std::string code = "x = a.astype(np.float64)\ny = x / np.sqrt(np.mean(x * x, -1, keepdims=True) + " +
                           py_float(eps) + ")\n";
        if (w) {
          inputs.push_back(*w);
          code += "y = y * b.astype(np.float64)\n";
        }
        code += "out = y.astype(" + np_type(dtype) + ")";
        expect_close(fused, composed, numpy_ref(code, inputs), dtype);
      }
    }
  }
}

TEST(FastNorm, LayerNormMatchesNumpyAndComposition) {
  std::mt19937 rng(2);
  for (auto dtype : {float32, float16, bfloat16, float64}) {
    for (const auto& x : norm_inputs(dtype, rng)) {
      for (int flags = 0; flags < 4; ++flags) {
        const bool with_weight = (flags & 1) != 0;
        const bool with_bias = (flags & 2) != 0;
        SCOPED_TRACE("layer_norm " + std::string(dtype_name(dtype)) + shape_string(x.shape()) + " flags " +
                     std::to_string(flags));
        std::optional<array> w;
        std::optional<array> b;
        std::vector<array> inputs{x};
        std::string code =
            "x = a.astype(np.float64)\nxc = x - x.mean(-1, keepdims=True)\n"
            "y = xc / np.sqrt((xc * xc).mean(-1, keepdims=True) + 1e-5)\n";
        if (with_weight) {
          w = random_array({x.shape(-1)}, dtype, rng);
          inputs.push_back(*w);
          code += "y = y * b.astype(np.float64)\n";
        }
        if (with_bias) {
          b = random_array({x.shape(-1)}, dtype, rng);
          inputs.push_back(*b);
          code += std::string("y = y + ") + (with_weight ? "c" : "b") + ".astype(np.float64)\n";
        }
        code += "out = y.astype(" + np_type(dtype) + ")";
        auto fused = fast::layer_norm(x, w, b, 1e-5F);
        auto composed = fast::detail::layer_norm_composed(x, w, b, 1e-5F);
        expect_close(fused, composed, numpy_ref(code, inputs), dtype);
      }
    }
  }
}

TEST(FastNorm, DtypePromotionAndLongRows) {
  std::mt19937 rng(3);
  // float16 input with a float32 weight gives float32, as MLX.
  auto x = random_array({3, 8}, float16, rng);
  auto w = random_array({8}, float32, rng);
  EXPECT_EQ(fast::rms_norm(x, w, 1e-5F).dtype(), float32);
  EXPECT_EQ(fast::layer_norm(x, std::nullopt, w, 1e-5F).dtype(), float32);
  EXPECT_EQ(fast::layer_norm(x, std::nullopt, std::nullopt, 1e-5F).dtype(), float16);
  // Rows long and many enough for the threaded path.
  auto big = random_array({64, 4099}, float32, rng);
  auto ref = numpy_ref("x = a.astype(np.float64)\nout = (x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6))"
                       ".astype(np.float32)",
                       {big});
  EXPECT_TRUE(matches(fast::rms_norm(big, std::nullopt, 1e-6F), ref, 1e-5, 1e-5));
}

TEST(FastNorm, Errors) {
  auto x = zeros({2, 4});
  EXPECT_EQ(error_of([&] { fast::rms_norm(array(1.0F), std::nullopt, 1e-5F); }),
            "[rms_norm] Input must have at least 1 dimension but got input with 0 dimensions.");
  EXPECT_EQ(error_of([&] { fast::rms_norm(x, zeros({2, 2}), 1e-5F); }),
            "[rms_norm] weight must have 1 dimension but has 2 dimensions (shape (2,2)).");
  EXPECT_EQ(error_of([&] { fast::rms_norm(x, zeros({3}), 1e-5F); }),
            "[rms_norm] weight must have the same size as the last dimension of x (4) but has 3 elements.");
  EXPECT_EQ(error_of([&] { fast::layer_norm(x, std::nullopt, zeros({5}), 1e-5F); }),
            "[layer_norm] bias must have the same size as the last dimension of x (4) but has 5 elements.");
  EXPECT_EQ(error_of([&] { fast::layer_norm(zeros({2, 4}, int32), std::nullopt, std::nullopt, 1e-5F); }),
            "[layer_norm] Expected a floating point type; received int32.");
  EXPECT_EQ(error_of([&] { fast::detail::rms_norm_composed(zeros({2, 4}, int32), std::nullopt, 1e-5F); }),
            "[rms_norm] Expected a floating point type; received int32.");
}

// ---------------------------------------------------------------- rope

/// NumPy rope of a (B, ..., L, D) array `a` with offsets `b` (one or B), in float64.
std::string rope_code(int dims, bool traditional, double base, double scale, bool freqs, Dtype dtype) {
  std::string code = "x = a.astype(np.float64)\nB, L, D = x.shape[0], x.shape[-2], x.shape[-1]\nh = " +
                     std::to_string(dims / 2) + "\n";
  code += freqs ? "inv = 1.0 / c.astype(np.float64)\n"
                : "inv = " + py_float(base) + " ** (-np.arange(h) / h)\n";
  code += "off = np.broadcast_to(b.reshape(-1).astype(np.float64), (B,))\n"
          "pos = (off[:, None] + np.arange(L)[None, :]) * " +
          py_float(scale) +
          "\n"
          "th = pos[..., None] * inv\n"
          "th = th.reshape((B,) + (1,) * (x.ndim - 3) + (L, h))\n"
          "cs, sn = np.cos(th), np.sin(th)\n"
          "y = x.copy()\n";
  code += traditional ? "x1, x2 = x[..., 0:2*h:2], x[..., 1:2*h:2]\n"
                        "y[..., 0:2*h:2] = x1 * cs - x2 * sn\ny[..., 1:2*h:2] = x1 * sn + x2 * cs\n"
                      : "x1, x2 = x[..., :h], x[..., h:2*h]\n"
                        "y[..., :h] = x1 * cs - x2 * sn\ny[..., h:2*h] = x1 * sn + x2 * cs\n";
  return code + "out = y.astype(" + np_type(dtype) + ")";
}

TEST(FastRope, MatchesNumpyAndComposition) {
  std::mt19937 rng(4);
  struct Case {
    Shape shape;
    int dims;
    bool transposed;  // built as (B, L, N, D) and viewed as (B, N, L, D)
  };
  const std::vector<Case> cases = {
      {{2, 3, 7, 16}, 16, false}, {{2, 3, 7, 16}, 8, false}, {{3, 5, 10}, 6, false},  {{1, 2, 3, 4, 34}, 34, false},
      {{2, 4, 5, 64}, 64, true},  {{1, 32, 1, 128}, 128, false}, {{0, 2, 3, 8}, 8, false}, {{2, 1, 1, 2}, 2, false},
  };
  for (auto dtype : {float32, float16, bfloat16, float64}) {
    for (const auto& c : cases) {
      for (bool traditional : {false, true}) {
        SCOPED_TRACE("rope " + std::string(dtype_name(dtype)) + shape_string(c.shape) + " dims " +
                     std::to_string(c.dims) + (traditional ? " traditional" : "") + (c.transposed ? " transposed" : ""));
        array x = c.transposed ? transpose(random_array({c.shape[0], c.shape[2], c.shape[1], c.shape[3]}, dtype, rng),
                                           {0, 2, 1, 3})
                               : random_array(c.shape, dtype, rng);
        // An int offset.
        auto fused = fast::rope(x, c.dims, traditional, 10000.0F, 1.0F, 5);
        auto composed = fast::detail::rope_composed(x, c.dims, traditional, 10000.0F, 1.0F, 5);
        expect_close(fused, composed,
                     numpy_ref(rope_code(c.dims, traditional, 10000.0, 1.0, false, dtype), {x, array(5)}), dtype);
        // Per-batch offsets, another base and a scale.
        std::vector<int32_t> offs(static_cast<size_t>(c.shape[0]));
        for (size_t i = 0; i < offs.size(); ++i) {
          offs[i] = static_cast<int32_t>(3 * i + 1);
        }
        array offset(offs.begin(), {c.shape[0]}, int32);
        fused = fast::rope(x, c.dims, traditional, 500.0F, 0.5F, offset);
        composed = fast::detail::rope_composed(x, c.dims, traditional, 500.0F, 0.5F, offset);
        expect_close(fused, composed, numpy_ref(rope_code(c.dims, traditional, 500.0, 0.5, false, dtype), {x, offset}),
                     dtype);
        // Custom frequencies.
        auto freqs = random_array({c.dims / 2}, float32, rng, 0.5, 3.0);
        fused = fast::rope(x, c.dims, traditional, std::nullopt, 1.0F, array(2, int64), freqs);
        composed = fast::detail::rope_composed(x, c.dims, traditional, std::nullopt, 1.0F, 2, freqs);
        expect_close(fused, composed,
                     numpy_ref(rope_code(c.dims, traditional, 0.0, 1.0, true, dtype), {x, array(2), freqs}), dtype);
      }
    }
  }
}

TEST(FastRope, LargeOffsets) {
  std::mt19937 rng(5);
  auto x = random_array({1, 4, 33, 64}, float32, rng);
  auto ref = numpy_ref(rope_code(64, false, 10000.0, 1.0, false, float32), {x, array(4000)});
  // Angles near 4000 carry float32 rounding of about 4000 * 2^-24 into cos and sin.
  EXPECT_TRUE(matches(fast::rope(x, 64, false, 10000.0F, 1.0F, 4000), ref, 1e-3, 1e-3));
  EXPECT_TRUE(matches(fast::rope(x, 64, false, 10000.0F, 1.0F, 4000),
                      to_host(fast::detail::rope_composed(x, 64, false, 10000.0F, 1.0F, 4000)), 1e-3, 1e-3));
}

TEST(FastRope, Errors) {
  auto x = zeros({1, 2, 3, 8});
  EXPECT_EQ(error_of([&] { fast::rope(zeros({3, 8}), 8, false, 1e4F, 1.0F, 0); }),
            "[rope] Input must have at least 3 dimensions but got input with 2 dimensions (shape (3,8)).");
  EXPECT_EQ(error_of([&] { fast::rope(zeros({1, 3, 8}, int32), 8, false, 1e4F, 1.0F, 0); }),
            "[rope] Input must be a floating type but got int32.");
  EXPECT_EQ(error_of([&] { fast::rope(x, 7, false, 1e4F, 1.0F, 0); }),
            "[rope] dims must be positive and even but got 7.");
  EXPECT_EQ(error_of([&] { fast::rope(x, 10, false, 1e4F, 1.0F, 0); }),
            "[rope] dims must not exceed the input's last dimension (8) but got 10.");
  EXPECT_EQ(error_of([&] { fast::rope(x, 8, false, 1e4F, 1.0F, 0, zeros({4})); }),
            "[rope] Only one of base or freqs can have a value.");
  EXPECT_EQ(error_of([&] { fast::rope(x, 8, false, std::nullopt, 1.0F, 0); }),
            "[rope] Neither base nor freqs has a value.");
  EXPECT_EQ(error_of([&] { fast::rope(x, 8, false, std::nullopt, 1.0F, 0, zeros({3})); }),
            "[rope] freqs must be one dimensional with size 4 but got shape (3).");
  EXPECT_EQ(error_of([&] { fast::rope(x, 8, false, 1e4F, 1.0F, zeros({2}, int32)); }),
            "[rope] offset must be a scalar or vector with 1 elements but has shape (2).");
  EXPECT_EQ(error_of([&] { fast::rope(x, 8, false, 1e4F, 1.0F, array(1.5F)); }),
            "[rope] offset must be an integer but got type float32.");
}

// ---------------------------------------------------------------- attention

struct Attn {
  Shape q;  // (B, N_q, L_q, D)
  int n_kv;
  int l_kv;
  int dv;
  std::string mode;  // "", "causal", "bool" (array mask), "add" (array mask)
  bool sinks;
  bool transposed;  // inputs built as (B, L, N, D) and viewed as (B, N, L, D)
};

std::string attention_code(const Attn& c, float scale, Dtype dtype) {
  std::string code =
      "q, k, v = a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)\n"
      "r = q.shape[1] // k.shape[1]\n"
      "k, v = np.repeat(k, r, axis=1), np.repeat(v, r, axis=1)\n"
      "s = (q * " +
      py_float(scale) + ") @ np.swapaxes(k, -1, -2)\nlo = np.finfo(np.float64).min\n";
  if (c.mode == "causal") {
    code += "Lq, Lk = s.shape[-2], s.shape[-1]\n"
            "s = np.where(np.arange(Lk - Lq, Lk)[:, None] >= np.arange(Lk)[None, :], s, lo)\n";
  } else if (c.mode == "bool") {
    code += "s = np.where(d, s, lo)\n";
  } else if (c.mode == "add") {
    code += "s = s + d.astype(np.float64)\n";
  }
  if (c.sinks) {
    code += std::string("z = ") + (c.mode == "bool" || c.mode == "add" ? "e" : "d") +
            ".astype(np.float64)[None, :, None, None]\n"
            "s = np.concatenate([np.broadcast_to(z, s.shape[:-1] + (1,)), s], -1)\n";
  }
  code += "s = np.exp(s - s.max(-1, keepdims=True, initial=-np.inf))\ns = s / s.sum(-1, keepdims=True)\n";
  if (c.sinks) {
    code += "s = s[..., 1:]\n";
  }
  return code + "out = (s @ v).astype(" + np_type(dtype) + ")";
}

void check_attention(const Attn& c, Dtype dtype, std::mt19937& rng) {
  const int B = c.q[0];
  const int N = c.q[1];
  const int Lq = c.q[2];
  const int D = c.q[3];
  SCOPED_TRACE("sdpa " + std::string(dtype_name(dtype)) + " q" + shape_string(c.q) + " n_kv " +
               std::to_string(c.n_kv) + " l_kv " + std::to_string(c.l_kv) + " dv " + std::to_string(c.dv) + " mode '" +
               c.mode + "'" + (c.sinks ? " sinks" : "") + (c.transposed ? " transposed" : ""));
  auto make = [&](int n, int l, int d) {
    return c.transposed ? transpose(random_array({B, l, n, d}, dtype, rng), {0, 2, 1, 3})
                        : random_array({B, n, l, d}, dtype, rng);
  };
  auto q = make(N, Lq, D);
  auto k = make(c.n_kv, c.l_kv, D);
  auto v = make(c.n_kv, c.l_kv, c.dv);
  const float scale = 1.0F / std::sqrt(static_cast<float>(D));
  std::vector<array> inputs{q, k, v};
  std::optional<array> mask;
  std::string mode = c.mode == "causal" ? "causal" : "";
  if (c.mode == "bool") {
    mask = random_array({B, 1, Lq, c.l_kv}, bool_, rng);
    inputs.push_back(*mask);
    mode = "array";
  } else if (c.mode == "add") {
    mask = random_array({Lq, c.l_kv}, dtype, rng, -3.0, 1.0);
    inputs.push_back(*mask);
  }
  std::optional<array> sinks;
  if (c.sinks) {
    sinks = random_array({N}, dtype, rng);
    inputs.push_back(*sinks);
  }
  auto fused = fast::scaled_dot_product_attention(q, k, v, scale, mode, mask, sinks);
  auto composed = fast::detail::scaled_dot_product_attention_composed(q, k, v, scale, mode, mask, sinks);
  EXPECT_EQ(fused.shape(), (Shape{B, N, Lq, c.dv}));
  expect_close(fused, composed, numpy_ref(attention_code(c, scale, dtype), inputs), dtype);
}

TEST(FastAttention, MatchesNumpyAndComposition) {
  std::mt19937 rng(6);
  const std::vector<Attn> cases = {
      {{2, 4, 5, 16}, 4, 7, 16, "", false, false},
      {{1, 8, 3, 32}, 2, 9, 32, "", false, false},         // grouped heads
      {{2, 4, 1, 64}, 4, 150, 64, "", false, true},        // decode over several key blocks, transposed heads
      {{1, 6, 1, 24}, 2, 70, 24, "causal", false, false},  // decode, grouped, causal
      {{1, 2, 5, 16}, 1, 70, 16, "causal", false, false},  // L_q < L_kv
      {{1, 2, 6, 8}, 2, 3, 8, "causal", false, false},     // L_q > L_kv: early queries see no key
      {{1, 2, 4, 16}, 2, 9, 12, "bool", false, false},     // D_v != D
      {{2, 4, 3, 16}, 2, 9, 16, "add", false, false},
      {{1, 4, 3, 16}, 2, 9, 16, "", true, false},          // sinks
      {{1, 4, 3, 16}, 4, 80, 16, "causal", true, false},
      {{0, 2, 3, 8}, 2, 4, 8, "", false, false},           // empty batch
      {{1, 2, 3, 8}, 2, 0, 8, "", false, false},           // no keys
  };
  for (auto dtype : {float32, float16, bfloat16}) {
    for (const auto& c : cases) {
      check_attention(c, dtype, rng);
    }
  }
  check_attention({{1, 2, 3, 8}, 1, 5, 8, "bool", true, false}, float64, rng);
}

TEST(FastAttention, TiledPath) {
  std::mt19937 rng(7);
  // Many rows per item (the register-tiled products), odd sizes, causal prefill over several key blocks.
  check_attention({{1, 3, 130, 40}, 3, 130, 40, "causal", false, true}, float32, rng);
  check_attention({{2, 4, 67, 33}, 2, 100, 17, "add", false, false}, float32, rng);
  check_attention({{1, 8, 19, 64}, 2, 77, 64, "bool", true, false}, bfloat16, rng);
  check_attention({{1, 2, 70, 16}, 2, 65, 16, "", false, false}, float64, rng);
  // Decoding with grouped heads, the values read where they are (float32 rows as wide as the tile), from heads laid
  // out (B, L, N, D) and (B, N, L, D), over several key blocks.
  check_attention({{1, 8, 1, 64}, 2, 150, 64, "causal", false, true}, float32, rng);
  check_attention({{2, 8, 2, 32}, 2, 129, 32, "", false, false}, float32, rng);
}

TEST(FastAttention, Errors) {
  auto q = zeros({1, 4, 3, 8});
  auto k = zeros({1, 2, 5, 8});
  auto v = zeros({1, 2, 5, 8});
  const std::string tag = "[scaled_dot_product_attention] ";
  EXPECT_EQ(error_of([&] { fast::scaled_dot_product_attention(zeros({4, 3, 8}), k, v, 1.0F); }),
            tag + "queries, keys and values must have 4 dimensions (B, N, L, D); got shapes (4,3,8), (1,2,5,8) and "
                  "(1,2,5,8).");
  EXPECT_EQ(error_of([&] { fast::scaled_dot_product_attention(q, zeros({1, 2, 5, 6}), v, 1.0F); }),
            tag + "queries and keys must have the same last dimension; got queries (1,4,3,8) and keys (1,2,5,6).");
  EXPECT_EQ(error_of([&] { fast::scaled_dot_product_attention(zeros({1, 3, 3, 8}), k, v, 1.0F); }),
            tag + "n_heads must be a multiple of n_kv_heads, found n_heads 3 for n_kv_heads 2.");
  EXPECT_EQ(error_of([&] { fast::scaled_dot_product_attention(q, k, zeros({1, 2, 4, 8}), 1.0F); }),
            tag + "keys and values must have the same number of heads and sequence length; got keys (1,2,5,8) and "
                  "values (1,2,4,8).");
  EXPECT_EQ(error_of([&] { fast::scaled_dot_product_attention(q, zeros({2, 2, 5, 8}), v, 1.0F); }),
            tag + "queries, keys and values must have the same batch size; got shapes (1,4,3,8), (2,2,5,8) and "
                  "(1,2,5,8).");
  EXPECT_EQ(error_of([&] { fast::scaled_dot_product_attention(q, k, v, 1.0F, "sliding"); }),
            tag + "Invalid mask_mode 'sliding'. mask_mode must be 'causal', 'array' or ''.");
  EXPECT_EQ(error_of([&] { fast::scaled_dot_product_attention(q, k, v, 1.0F, "causal", zeros({3, 5})); }),
            tag + "mask_mode 'causal' takes no mask array; got one of shape (3,5).");
  EXPECT_EQ(error_of([&] { fast::scaled_dot_product_attention(q, k, v, 1.0F, "array", zeros({3, 4})); }),
            tag + "mask of shape (3,4) does not broadcast to (B, N_q, L_q, L_kv) = (1,4,3,5).");
  EXPECT_EQ(error_of([&] {
              fast::scaled_dot_product_attention(astype(q, float16), astype(k, float16), astype(v, float16), 1.0F,
                                                 "", zeros({3, 5}, float32));
            }),
            tag + "Mask type must be bool or promote to the output type float16; got float32.");
  EXPECT_EQ(error_of([&] { fast::scaled_dot_product_attention(q, k, v, 1.0F, "", std::nullopt, zeros({2})); }),
            tag + "sinks must have shape (4,), one per query head; got (2).");
  EXPECT_EQ(error_of([&] {
              fast::scaled_dot_product_attention(zeros({1, 4, 3, 8}, int32), zeros({1, 2, 5, 8}, int32),
                                                 zeros({1, 2, 5, 8}, int32), 1.0F);
            }),
            tag + "Expected floating point queries, keys and values; they promote to int32.");
}

}  // namespace
}  // namespace nuvec
