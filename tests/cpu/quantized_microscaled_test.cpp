// The microscaled quantization modes (mxfp4, mxfp8, nvfp4) against NumPy. The reference below re-implements the
// formats from their definitions (OCP MX: E2M1 and E4M3 element codes found by a nearest-value search over every
// code, ties to the even code, saturating; E8M0 power-of-two scales, E4M3 scales for nvfp4) with MLX's choice of
// scale (the group's largest magnitude over the largest code value; for mx, 2^round(log2(.)) in the weight's dtype),
// so codes and scales are compared bit for bit. Products against float64 x @ W with W decoded by the reference;
// hand-computed codes for one group of each mode; gradients, vmap and MLX's error messages.

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec::test {
namespace {

using V = std::vector<array>;

const std::string prelude = R"(
F4 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6])
def e4m3_table():
    c = np.arange(127)
    e = c >> 3
    m = c & 7
    return np.where(e == 0, m * 2.0 ** -9, (1 + m / 8) * 2.0 ** (e - 7))
E4M3 = e4m3_table()
def encode(v, table, sign_bit):
    a = np.abs(v.astype(np.float64))
    d = np.abs(a[..., None] - table)
    cand = d == d.min(-1, keepdims=True)
    even = cand & (np.arange(table.size) % 2 == 0)
    idx = np.where(cand.sum(-1) > 1, np.argmax(even, -1), np.argmax(cand, -1))
    return idx | (np.signbit(v).astype(np.int64) << sign_bit)
def group(mode):
    return 16 if mode == 'nvfp4' else 32
def mx_quantize(w, mode, g=None):
    dt = w.dtype.type
    fp8 = mode == 'mxfp8'
    lead = w.shape[:-1]
    v = w.reshape(-1, group(mode))
    s = (np.abs(v).max(-1, keepdims=True) / dt(448 if fp8 else 6)).astype(dt)
    if mode == 'nvfp4':
        enc = None if g is None else np.float32(448 * 6) / np.float32(g)
        sc = encode(s.astype(np.float32) if enc is None else s.astype(np.float32) * enc, E4M3, 7)
        dec = E4M3[sc].astype(dt)
        q = np.where(dec == 0, dt(0), (v / np.where(dec == 0, dt(1), dec)).astype(dt))
        if enc is not None:
            q = q.astype(np.float32) * enc
    else:
        safe = np.where(s == 0, dt(1), s)
        e = np.where(s == 0, 0, np.round(np.log2(safe).astype(dt)))
        e = np.clip(e, -127, 127).astype(np.int64)
        sc = e + 127
        q = (v / np.exp2(e).astype(dt)).astype(dt)
    if fp8:
        packed = encode(q, E4M3, 7).astype(np.uint8)
    else:
        c = encode(q, F4, 3).reshape(-1, 2)
        packed = (c[:, 0] | (c[:, 1] << 4)).astype(np.uint8)
    return (np.ascontiguousarray(packed).view(np.uint32).reshape(lead + (-1,)),
            sc.astype(np.uint8).reshape(lead + (-1,)))
def mx_values(wq, sc, mode, g=None):
    fp8 = mode == 'mxfp8'
    b = np.ascontiguousarray(wq).view(np.uint8).astype(np.int64)
    codes = b if fp8 else np.stack([b & 15, b >> 4], -1).reshape(b.shape[:-1] + (-1,))
    mag = np.append(E4M3, np.nan)[codes & 0x7f] if fp8 else F4[codes & 7]  # 0x7f: NaN
    val = np.where((codes >> (7 if fp8 else 3)) & 1, -mag, mag)
    scale = E4M3[sc] if mode == 'nvfp4' else np.exp2(sc.astype(np.float64) - 127)
    if g is not None:
        scale = scale * (np.float64(g) / 2688)
    val = val.reshape(val.shape[:-1] + (-1, group(mode))) * scale[..., None]
    return val.reshape(val.shape[:-2] + (-1,))
)";

std::vector<HostArray> reference(const std::string& code, const std::vector<array>& inputs) {
  std::vector<HostArray> hosts;
  for (const auto& in : inputs) {
    hosts.push_back(to_host(in));
  }
  return numpy(prelude + code, hosts);
}

constexpr const char* modes[] = {"mxfp4", "mxfp8", "nvfp4"};

int group_of(const std::string& mode) { return mode == "nvfp4" ? 16 : 32; }
int bits_of(const std::string& mode) { return mode == "mxfp8" ? 8 : 4; }
std::string py_string(const std::string& s) { return "'" + s + "'"; }

class MicroscaledTest : public ::testing::Test {
 protected:
  std::mt19937 rng_{19};
  array rand(const Shape& shape, Dtype dtype = float32, double lo = -3.0, double hi = 3.0) {
    return random_array(shape, dtype, rng_, lo, hi);
  }
};

TEST_F(MicroscaledTest, QuantizeMatchesTheFormatDefinitions) {
  for (Dtype dtype : {float32, float16}) {
    for (std::string mode : modes) {
      SCOPED_TRACE(mode + " " + std::string(dtype_name(dtype)));
      const int gs = group_of(mode);
      // Ordinary rows, a zero row, and rows far from 1 (scales away from 2^0).
      auto w = concatenate({rand({5, gs * 3}, dtype), zeros({1, gs * 3}, dtype), rand({1, gs * 3}, dtype, 100.0, 400.0),
                            rand({1, gs * 3}, dtype, -1e-3, 1e-3)},
                           0);
      auto q = quantize(w, std::nullopt, std::nullopt, mode);
      ASSERT_EQ(q.size(), 2U);
      EXPECT_EQ(q[0].dtype(), uint32);
      EXPECT_EQ(q[1].dtype(), uint8);
      EXPECT_EQ(q[0].shape(), (Shape{8, gs * 3 * bits_of(mode) / 32}));
      EXPECT_EQ(q[1].shape(), (Shape{8, 3}));
      auto expected = reference("out = mx_quantize(a, " + py_string(mode) + ")", {w});
      EXPECT_TRUE(matches(q[0], expected[0], 0, 0));
      EXPECT_TRUE(matches(q[1], expected[1], 0, 0));
    }
  }
  // nvfp4 with a global scale (the tensor's largest magnitude, as MLX's callers pass it), and leading axes.
  auto w = rand({2, 3, 48});
  auto g = max(abs(w));
  auto q = quantize(w, std::nullopt, std::nullopt, "nvfp4", g);
  EXPECT_EQ(q[1].shape(), (Shape{2, 3, 3}));
  auto expected = reference("out = mx_quantize(a, 'nvfp4', b.reshape(()))", {w, g});
  EXPECT_TRUE(matches(q[0], expected[0], 0, 0));
  EXPECT_TRUE(matches(q[1], expected[1], 0, 0));
}

TEST_F(MicroscaledTest, HandComputedGroups) {
  auto first_word_and_scale = [](const std::vector<array>& q) {
    auto w0 = slice(reshape(q[0], {-1}), {0}, {1});
    auto s0 = slice(reshape(q[1], {-1}), {0}, {1});
    return std::pair{w0.item<uint32_t>(), s0.item<uint8_t>()};
  };
  // mxfp4: max 12 -> scale 12 / 6 = 2 = 2^1 (E8M0 128); 12/2 = 6 -> 7, -3/2 = -1.5 -> 8|3, 0.6/2 = 0.3 -> 0.5 (1),
  // 0.5/2 = 0.25, halfway between 0 and 0.5 -> the even code 0. First word 7 | 11 << 4 | 1 << 8 = 439.
  std::vector<float> v(32, 0.F);
  v[0] = 12.F;
  v[1] = -3.F;
  v[2] = 0.6F;
  v[3] = 0.5F;
  auto w = array(v.data(), {1, 32}, float32);
  auto q = quantize(w, std::nullopt, std::nullopt, "mxfp4");
  EXPECT_EQ(first_word_and_scale(q), (std::pair<uint32_t, uint8_t>{439U, 128}));
  auto back = dequantize(q[0], q[1], std::nullopt, std::nullopt, std::nullopt, "mxfp4", std::nullopt, float32);
  EXPECT_EQ(slice(back, {0, 0}, {1, 4}).shape(), (Shape{1, 4}));
  EXPECT_TRUE(array_equal(slice(back, {0, 0}, {1, 4}), array({12.F, -3.F, 1.F, 0.F}, {1, 4})).item<bool>());
  // mxfp8: max 1792 = 448 * 4 -> 2^2 (E8M0 129); 1792/4 = 448 -> E4M3 0x7E, 1/4 = 2^-2 -> exponent 5, code 40.
  v.assign(32, 0.F);
  v[0] = 1792.F;
  v[1] = 1.F;
  q = quantize(array(v.data(), {1, 32}, float32), std::nullopt, std::nullopt, "mxfp8");
  EXPECT_EQ(first_word_and_scale(q), (std::pair<uint32_t, uint8_t>{126U | (40U << 8), 129}));
  // nvfp4: max 6 -> scale 1 (E4M3 0x38); 6 -> 7, 1 -> 2. With the global scale 6 the scale code is 448's (0x7E).
  v.assign(16, 0.F);
  v[0] = 6.F;
  v[1] = 1.F;
  w = array(v.data(), {1, 16}, float32);
  q = quantize(w, std::nullopt, std::nullopt, "nvfp4");
  EXPECT_EQ(first_word_and_scale(q), (std::pair<uint32_t, uint8_t>{7U | (2U << 4), 0x38}));
  q = quantize(w, std::nullopt, std::nullopt, "nvfp4", array(6.F));
  EXPECT_EQ(first_word_and_scale(q), (std::pair<uint32_t, uint8_t>{7U | (2U << 4), 0x7E}));
  back = dequantize(q[0], q[1], std::nullopt, std::nullopt, std::nullopt, "nvfp4", array(6.F), float32);
  EXPECT_NEAR(slice(back, {0, 0}, {1, 1}).item<float>(), 6.F, 1e-5);
  EXPECT_NEAR(slice(back, {0, 1}, {1, 2}).item<float>(), 1.F, 1e-6);
}

TEST_F(MicroscaledTest, DequantizeAndRoundTrip) {
  for (std::string mode : modes) {
    SCOPED_TRACE(mode);
    auto w = rand({4, 3, group_of(mode) * 4});
    auto q = quantize(w, std::nullopt, std::nullopt, mode);
    // MLX's default output dtype is bfloat16.
    auto narrow = dequantize(q[0], q[1], std::nullopt, std::nullopt, std::nullopt, mode);
    EXPECT_EQ(narrow.dtype(), bfloat16);
    auto back = dequantize(q[0], q[1], std::nullopt, std::nullopt, std::nullopt, mode, std::nullopt, float32);
    EXPECT_EQ(back.shape(), w.shape());
    auto expected = reference("out = mx_values(a, b, " + py_string(mode) + ").astype(np.float32)", {q[0], q[1]});
    EXPECT_TRUE(matches(back, expected[0], 1e-6, 0));
    // Each value is within half a step of the largest code of its group's scale.
    auto err = reference("out = (np.abs(a.astype(np.float64) - b).reshape(-1, " + std::to_string(group_of(mode)) +
                             ").max(-1) <= np.abs(a.astype(np.float64)).reshape(-1, " + std::to_string(group_of(mode)) +
                             ").max(-1) * 0.34)",
                         {w, back});
    EXPECT_TRUE(matches(full({48}, true), err[0], 0, 0));
  }
  auto w = rand({2, 64});
  auto g = max(abs(w));
  auto q = quantize(w, std::nullopt, std::nullopt, "nvfp4", g);
  auto back = dequantize(q[0], q[1], std::nullopt, std::nullopt, std::nullopt, "nvfp4", g, float32);
  EXPECT_TRUE(
      matches(back, reference("out = mx_values(a, b, 'nvfp4', c.reshape(()))", {q[0], q[1], g})[0], 1e-6, 0, false));
}

std::string product_code(const std::string& mode, bool transpose) {
  return "W = mx_values(b, c, " + py_string(mode) + ")\nout = (a.astype(np.float64) @ " + (transpose ? "W.T" : "W") +
         ").astype(np.float32)";
}

TEST_F(MicroscaledTest, QuantizedMatmulMatchesTheDecodedProduct) {
  for (std::string mode : modes) {
    const int gs = group_of(mode);
    for (bool transpose : {true, false}) {
      for (int m : {1, 37}) {
        SCOPED_TRACE(mode + " transpose=" + std::to_string(transpose) + " m=" + std::to_string(m));
        const int k = transpose ? gs * 3 : 20;
        const int n = transpose ? 7 : gs * 2;
        auto q = quantize(rand(transpose ? Shape{n, k} : Shape{k, n}), std::nullopt, std::nullopt, mode);
        auto x = rand({m, k});
        auto out = quantized_matmul(x, q[0], q[1], std::nullopt, transpose, std::nullopt, std::nullopt, mode);
        EXPECT_EQ(out.shape(), (Shape{m, n}));
        EXPECT_TRUE(matches(out, reference(product_code(mode, transpose), {x, q[0], q[1]})[0], 1e-5, 1e-4));
      }
    }
  }
  // x's dtype is the output's; a wide tile count (n > 512) and batched x.
  auto q = quantize(rand({600, 64}), std::nullopt, std::nullopt, "mxfp4");
  auto x = rand({2, 3, 64}, bfloat16);
  auto out = quantized_matmul(x, q[0], q[1], std::nullopt, true, std::nullopt, std::nullopt, "mxfp4");
  EXPECT_EQ(out.dtype(), bfloat16);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 600}));
  EXPECT_TRUE(matches(out, reference(product_code("mxfp4", true), {x, q[0], q[1]})[0], 2e-2, 5e-2, false));
}

TEST_F(MicroscaledTest, FewRowsDecodeTheWeightInRegisters) {
  // 1 to 8 rows of x meet w (N, K) decoded in registers; 9 take the tiles and the sgemm. K leaves a part of a block
  // for nvfp4 (7 groups of 16), and N splits across the pool's threads.
  for (std::string mode : modes) {
    const int gs = group_of(mode);
    const int k = mode == "nvfp4" ? gs * 7 : gs * 5;
    auto q = quantize(rand({1100, k}), std::nullopt, std::nullopt, mode);
    for (int m : {1, 2, 3, 5, 8, 9}) {
      SCOPED_TRACE(mode + " m=" + std::to_string(m));
      auto x = rand({m, k});
      auto out = quantized_matmul(x, q[0], q[1], std::nullopt, true, std::nullopt, std::nullopt, mode);
      EXPECT_TRUE(matches(out, reference(product_code(mode, true), {x, q[0], q[1]})[0], 1e-5, 1e-4));
    }
  }
}

TEST_F(MicroscaledTest, FewRowsDecodeEveryCode) {
  // Weight rows holding every element code once (256 fp8 codes, or 16 x 16 fp4 pairs) with unit scales, read back
  // through one-hot rows of x, eight at a time: each value exact, subnormal codes included. The first row has
  // E4M3's NaN codes replaced by their neighbours; in the second they make every product NaN.
  std::vector<uint8_t> bytes(512);
  for (int c = 0; c < 256; ++c) {
    bytes[c] = static_cast<uint8_t>((c & 0x7F) == 0x7F ? c - 1 : c);
    bytes[256 + c] = static_cast<uint8_t>(c);
  }
  auto codes = view(array(bytes.data(), {2, 256}, uint8), uint32);
  for (std::string mode : modes) {
    SCOPED_TRACE(mode);
    const int k = 256 * 8 / bits_of(mode);
    const uint8_t unit = mode == "nvfp4" ? 0x38 : 127;
    auto scales = full({2, k / group_of(mode)}, array(unit, uint8));
    auto identity = eye(k);
    for (int p = 0; p < k; p += 8) {
      auto x = slice(identity, {p, 0}, {p + 8, k});
      auto out = quantized_matmul(x, codes, scales, std::nullopt, true, std::nullopt, std::nullopt, mode);
      ASSERT_TRUE(matches(out, reference(product_code(mode, true), {x, codes, scales})[0], 0.0, 0.0))
          << "codes from " << p;
    }
    std::vector<float> xv(k, 0.5F);
    xv[3] = std::numeric_limits<float>::infinity();
    auto x = array(xv.data(), {1, k}, float32);
    auto out = quantized_matmul(x, codes, scales, std::nullopt, true, std::nullopt, std::nullopt, mode);
    EXPECT_TRUE(matches(out, reference(product_code(mode, true), {x, codes, scales})[0], 1e-6, 1e-5));
  }
}

TEST_F(MicroscaledTest, BatchedWeightsAndGatherQmm) {
  auto w = rand({4, 5, 64});
  auto q = quantize(w, std::nullopt, std::nullopt, "nvfp4");
  auto x = rand({3, 2, 64});
  auto lhs = array({0, 2, 1, 2});
  auto rhs = array({3, 3, 0, 1});
  auto out = gather_qmm(x, q[0], q[1], std::nullopt, lhs, rhs, true, std::nullopt, std::nullopt, "nvfp4");
  EXPECT_EQ(out.shape(), (Shape{4, 2, 5}));
  const std::string code = R"(
W = mx_values(b, c, 'nvfp4')
out = np.stack([a[l].astype(np.float64) @ W[r].T for l, r in zip(d.astype(int), e.astype(int))]).astype(np.float32)
)";
  EXPECT_TRUE(matches(out, reference(code, {x, q[0], q[1], lhs, rhs})[0], 1e-5, 1e-4));
  // A batched weight in quantized_matmul pairs the batches as matmul does.
  auto paired = quantized_matmul(slice(x, {0, 0, 0}, {1, 2, 64}), q[0], q[1], std::nullopt, true, std::nullopt,
                                 std::nullopt, "nvfp4");
  EXPECT_EQ(paired.shape(), (Shape{4, 2, 5}));
  EXPECT_TRUE(matches(paired,
                      reference("W = mx_values(b, c, 'nvfp4')\nout = (a.astype(np.float64) @ np.swapaxes(W, -1, -2))"
                                ".astype(np.float32)",
                                {slice(x, {0, 0, 0}, {1, 2, 64}), q[0], q[1]})[0],
                      1e-5, 1e-4));
}

TEST_F(MicroscaledTest, GradientsAndVmap) {
  for (bool transpose : {true, false}) {
    SCOPED_TRACE("transpose=" + std::to_string(transpose));
    auto q = quantize(rand(transpose ? Shape{6, 64} : Shape{64, 64}), std::nullopt, std::nullopt, "mxfp8");
    const int n = transpose ? 6 : 64;
    auto x = rand({3, 64});
    auto ct = rand({3, n});
    auto dx = grad([&](const V& in) {
      return sum(quantized_matmul(in[0], q[0], q[1], std::nullopt, transpose, std::nullopt, std::nullopt, "mxfp8") *
                 ct);
    })({x})[0];
    auto expected = reference("W = mx_values(b, c, 'mxfp8')\nout = (a.astype(np.float64) @ " +
                                  std::string(transpose ? "W" : "W.T") + ").astype(np.float32)",
                              {ct, q[0], q[1]});
    EXPECT_TRUE(matches(dx, expected[0], 1e-5, 1e-4));
  }
  // x's gradient through gather_qmm sums each product's share into the x it read.
  auto q = quantize(rand({3, 4, 32}), std::nullopt, std::nullopt, "mxfp4");
  auto x = rand({2, 1, 32});
  auto lhs = array({1, 1, 0});
  auto rhs = array({2, 0, 2});
  auto ct = rand({3, 1, 4});
  auto dx = grad([&](const V& in) {
    return sum(gather_qmm(in[0], q[0], q[1], std::nullopt, lhs, rhs, true, std::nullopt, std::nullopt, "mxfp4") * ct);
  })({x})[0];
  const std::string code = R"(
W = mx_values(b, c, 'mxfp4')
out = np.zeros((2, 1, 32))
for i, (l, r) in enumerate(zip(d.astype(int), e.astype(int))):
    out[l] += a[i].astype(np.float64) @ W[r]
out = out.astype(np.float32)
)";
  EXPECT_TRUE(matches(dx, reference(code, {ct, q[0], q[1], lhs, rhs})[0], 1e-5, 1e-4));
  // vmap over mapped weights: one product per slice.
  auto qs = quantize(rand({2, 5, 32}), std::nullopt, std::nullopt, "mxfp4");
  auto xs = rand({3, 32});
  auto mapped = vmap(
      [](const V& in) {
        return V{quantized_matmul(in[0], in[1], in[2], std::nullopt, true, std::nullopt, std::nullopt, "mxfp4")};
      },
      {-1, 0, 0})({xs, qs[0], qs[1]})[0];
  EXPECT_EQ(mapped.shape(), (Shape{2, 3, 5}));
  for (int b = 0; b < 2; ++b) {
    auto one = quantized_matmul(xs, take(qs[0], b, 0), take(qs[1], b, 0), std::nullopt, true, std::nullopt,
                                std::nullopt, "mxfp4");
    EXPECT_TRUE(allclose(take(mapped, b, 0), one).item<bool>());
  }
  // The nvfp4 values are linear in the global scale: d/dg sum(values) = sum(values at g = 448 * 6) / (448 * 6).
  auto w = rand({2, 32});
  auto g = array(2.5F);
  auto qn = quantize(w, std::nullopt, std::nullopt, "nvfp4", g);
  auto dg = grad([&](const V& in) {
    return sum(dequantize(qn[0], qn[1], std::nullopt, std::nullopt, std::nullopt, "nvfp4", in[0], float32));
  })({g})[0];
  auto unit = sum(dequantize(qn[0], qn[1], std::nullopt, std::nullopt, std::nullopt, "nvfp4", std::nullopt, float32)) /
              array(2688.F);
  EXPECT_NEAR(dg.item<float>(), unit.item<float>(), 1e-5 * std::abs(unit.item<float>()) + 1e-6);
}

TEST_F(MicroscaledTest, Errors) {
  auto w = rand({4, 64});
  auto q = quantize(w, std::nullopt, std::nullopt, "mxfp4");
  auto x = rand({2, 64});
  EXPECT_EQ(error_of([&] { quantize(w, 64, std::nullopt, "mxfp4"); }),
            "[quantize] mxfp4 quantization requires group size 32 but got 64.");
  EXPECT_EQ(error_of([&] { quantize(w, std::nullopt, 3, "mxfp4"); }),
            "[quantize] mxfp4 quantization requires bits to be 4 but got 3.");
  EXPECT_EQ(error_of([&] { quantize(w, 32, 4, "nvfp4"); }),
            "[quantize] nvfp4 quantization requires group size 16 but got 32.");
  EXPECT_EQ(error_of([&] { quantize(w, std::nullopt, 4, "mxfp8"); }),
            "[quantize] mxfp8 quantization requires bits to be 8 but got 4.");
  EXPECT_EQ(error_of([&] { quantize(w, std::nullopt, std::nullopt, "mxfp4", array(1.F)); }),
            "[quantize] Global scale is only supported for 'nvfp4' quantization mode.");
  EXPECT_EQ(error_of([&] {
              quantize(w, std::nullopt, std::nullopt, "nvfp4", array({1.F, 2.F}));
            }),
            "[quantize] Global scale must be a scalar but got shape (2).");
  EXPECT_EQ(error_of([&] { quantize(w, std::nullopt, std::nullopt, "nvfp4", array(1.F, float16)); }),
            "[quantize] Global scale must have dtype float32 but got float16.");
  EXPECT_EQ(error_of([&] { dequantize(q[0], q[1], q[1], std::nullopt, std::nullopt, "mxfp4"); }),
            "[dequantize] Biases must be null for quantization mode 'mxfp4'.");
  EXPECT_EQ(
      error_of([&] { dequantize(q[0], astype(q[1], float32), std::nullopt, std::nullopt, std::nullopt, "mxfp4"); }),
      "[dequantize] Scale type must be uint8 but received type float32.");
  EXPECT_EQ(error_of([&] { quantized_matmul(x, q[0], q[1], std::nullopt, true, std::nullopt, std::nullopt, "mxfp8"); }),
            "[quantized_matmul] The shapes of the weight and scales are incompatible based on bits and group_size; "
            "w.shape() == (4,8) and scales.shape() == (4,2) with group_size=32 and bits=8.");
  EXPECT_EQ(error_of([&] {
              quantized_matmul(astype(x, int32), q[0], q[1], std::nullopt, true, std::nullopt, std::nullopt, "mxfp4");
            }),
            "[quantized_matmul] Only real floating types are supported; got x of int32 and scales of uint8.");
  EXPECT_EQ(error_of([&] { quantized_matmul(x, q[0], q[1], std::nullopt); }),
            "[quantized_matmul] Biases must be provided for affine quantization.");
}

}  // namespace
}  // namespace nuvec::test
