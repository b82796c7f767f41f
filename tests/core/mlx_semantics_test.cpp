// Behaviour that follows MLX where nuvec once differed (issue 19), each checked against NumPy or MLX's documented
// results.

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::matches;
using test::numpy_ref;

TEST(MlxSemantics, FilledArraysAreDenseAndDonatable) {
  const std::function<array()> makers[] = {
      [] { return zeros({3, 4}); },
      [] { return ones({3, 4}, int32); },
      [] { return full({3, 4}, 2.5F); },
      [] { return zeros_like(ones({2, 2})); },
      [] { return full_like(ones({3, 4}), 7, int64); },
  };
  for (const auto& make : makers) {
    auto a = make();
    a.eval();
    EXPECT_EQ(a.data_size(), a.size());
    EXPECT_TRUE(a.flags().row_contiguous);
    EXPECT_EQ(a.strides(), row_major_strides(a.shape()));
    // Only this handle and its own buffer: a consumer may write into it in place.
    EXPECT_TRUE(a.is_donatable());
  }
}

TEST(MlxSemantics, AsStridedDataSizeIsTheAddressedSpan) {
  // MLX: data_size is last - first + 1 over the elements addressed; overlapping windows address fewer than size().
  auto x = arange(10.0F);
  auto windows = as_strided(x, {3, 4}, {2, 1}, 1);
  windows.eval();
  EXPECT_EQ(windows.data_size(), 8U);  // elements 1 .. 8
  EXPECT_FALSE(windows.flags().contiguous);
  EXPECT_TRUE(matches(windows, numpy_ref("np.lib.stride_tricks.as_strided(a[1:], (3, 4), (8, 4))", {x})));
  auto broadcast_rows = as_strided(x, {3, 4}, {0, 1}, 0);
  broadcast_rows.eval();
  EXPECT_EQ(broadcast_rows.data_size(), 4U);
  auto dense = as_strided(x, {2, 5}, {5, 1}, 0);
  dense.eval();
  EXPECT_EQ(dense.data_size(), 10U);
  EXPECT_TRUE(dense.flags().row_contiguous);
}

TEST(MlxSemantics, ContiguousKeepsAColumnMajorLayoutWhenAllowed) {
  auto x = reshape(arange(6.0F), {2, 3});
  auto t = transpose(x);  // lazy: its layout is known only at evaluation
  auto kept = contiguous(t, true);
  kept.eval();
  EXPECT_TRUE(kept.flags().col_contiguous);
  EXPECT_FALSE(kept.flags().row_contiguous);
  EXPECT_EQ(kept.strides(), (Strides{1, 3}));
  auto row = contiguous(transpose(x), false);
  row.eval();
  EXPECT_TRUE(row.flags().row_contiguous);
  EXPECT_TRUE(matches(kept, numpy_ref("a.T", {x})));
  EXPECT_TRUE(matches(row, numpy_ref("a.T", {x})));
}

TEST(MlxSemantics, FlattenClampsItsAxes) {
  auto x = reshape(arange(24.0F), {2, 3, 4});
  EXPECT_EQ(flatten(x, 0, 10).shape(), Shape{24});
  EXPECT_EQ(flatten(x, -10, 1).shape(), (Shape{6, 4}));
  EXPECT_EQ(flatten(x, 1, 7).shape(), (Shape{2, 12}));
  EXPECT_THROW((void)flatten(x, 3, 5), std::invalid_argument);
  EXPECT_THROW((void)flatten(x, 2, 1), std::invalid_argument);
}

TEST(MlxSemantics, MaskedScatterWithAOneDimensionalMaskSelectsRows) {
  // numpy: a[mask] = src with a mask over the first axis replaces whole rows.
  auto a = reshape(arange(12.0F), {3, 4});
  auto mask = array({true, false, true});
  auto src = reshape(arange(100.0F, 108.0F), {2, 4});
  EXPECT_TRUE(matches(masked_scatter(a, mask, src), numpy_ref("out = a.copy()\nout[b] = c\n", {a, mask, src})));
  // One row broadcast to every selected row.
  auto row = array({-1.0F, -2.0F, -3.0F, -4.0F});
  EXPECT_TRUE(matches(masked_scatter(a, mask, row), numpy_ref("out = a.copy()\nout[b] = c\n", {a, mask, row})));
  EXPECT_THROW((void)masked_scatter(a, array({true, false, true, true}), src), std::invalid_argument);
}

TEST(MlxSemantics, CategoricalSamplesGoLastWhateverTheAxis) {
  // MLX: categorical(logits, axis, num_samples) has the logits' shape without `axis`, then num_samples.
  auto logits = zeros({3, 5, 4});
  EXPECT_EQ(random::categorical(logits, -2, 7).shape(), (Shape{3, 4, 7}));
  EXPECT_EQ(random::categorical(logits, 0, 2).shape(), (Shape{5, 4, 2}));
  EXPECT_EQ(random::categorical(logits, -1, 6).shape(), (Shape{3, 5, 6}));
  // Only class 2 along axis 1 is possible.
  auto certain = log(astype(equal(reshape(arange(5), {1, 5, 1}), array(2)), float32) + array(1e-30F));
  auto draws = random::categorical(broadcast_to(certain, {3, 5, 4}), -2, 7);
  EXPECT_TRUE(all(equal(draws, array(2u))).item<bool>());
}

TEST(MlxSemantics, RandintWithLowAboveHighGivesLow) {
  // MLX clips the draws into [low, high - 1] and then up to low, so every value is low.
  auto r = random::randint(5, 2, {8});
  EXPECT_EQ(r.dtype(), int32);
  EXPECT_TRUE(all(equal(r, array(5))).item<bool>());
}

TEST(MlxSemantics, BoolShiftsAreUint8Shifts) {
  auto a = array({true, false, true});
  auto b = array({true, true, false});
  auto left = left_shift(a, b);
  EXPECT_EQ(left.dtype(), uint8);
  EXPECT_TRUE(matches(left, numpy_ref("np.left_shift(a.astype(np.uint8), b.astype(np.uint8))", {a, b})));
  EXPECT_TRUE(matches(a >> b, numpy_ref("np.right_shift(a.astype(np.uint8), b.astype(np.uint8))", {a, b})));
}

TEST(MlxSemantics, RfftOfASmallIntegerSignalIsExact) {
  // numpy (pocketfft, as MLX uses) gives these exactly: their roots of unity are 1, -i, -1 and i, exact in any
  // precision, where cos(pi / 2) computed as a double is 6e-17 and left nonzero imaginary parts.
  for (auto x : {array({1.0F, 2.0F, 3.0F, 4.0F}), array({3.0F, -5.0F}), reshape(arange(16.0F), {4, 4}),
                 array({1.0F, 0.0F, -1.0F, 7.0F})}) {
    auto ours = fft::rfft(x);
    EXPECT_TRUE(matches(ours, numpy_ref("np.fft.rfft(a).astype(np.complex64)", {x}), 0.0, 0.0)) << x;
    EXPECT_TRUE(matches(fft::fft(x), numpy_ref("np.fft.fft(a).astype(np.complex64)", {x}), 0.0, 0.0)) << x;
  }
}

TEST(MlxSemantics, JvpThroughAnIntegerCastCarriesTheCastTangent) {
  // MLX's AsType::jvp casts the tangent: d astype(x, int32) along t is astype(t, int32).
  auto f = [](const array& x) { return astype(x, int32); };
  auto [out, tangent] = jvp(f, array({1.5F, 2.5F}), array({3.7F, -2.2F}));
  EXPECT_EQ(tangent.dtype(), int32);
  EXPECT_TRUE(array_equal(tangent, array({3, -2})).item<bool>());
}

TEST(MlxSemantics, VjpOfIntegerArraysFlowsAsMlxs) {
  // MLX differentiates integer arrays like any other: the cotangent of 3 * x is 3 * ct.
  Function f = [](const std::vector<array>& xs) { return std::vector<array>{xs[0] * array(3)}; };
  auto [outs, grads] = vjp(f, {array({1, 2})}, {array({1, 5})});
  EXPECT_TRUE(array_equal(grads[0], array({3, 15})).item<bool>());
  // Through a float -> int -> float round trip the cotangent passes, cast each way.
  Function g = [](const std::vector<array>& xs) {
    return std::vector<array>{astype(astype(xs[0], int32), float32) * array(2.0F)};
  };
  auto [gouts, ggrads] = vjp(g, {array({1.5F})}, {array({1.0F})});
  EXPECT_TRUE(array_equal(ggrads[0], array({2.0F})).item<bool>());
}

TEST(MlxSemantics, PadReflectAndSymmetricMatchNumpy) {
  auto x = reshape(arange(12.0F), {3, 4});
  for (const std::string mode : {"reflect", "symmetric"}) {
    for (auto [lo, hi] : {std::pair{1, 2}, std::pair{3, 0}, std::pair{7, 9}}) {
      auto ours = pad(x, {0, 1}, {lo, 1}, {hi, lo}, array(0.0F), mode);
      auto ref = numpy_ref("np.pad(a, ((" + std::to_string(lo) + ", " + std::to_string(hi) + "), (1, " +
                               std::to_string(lo) + ")), mode='" + mode + "')",
                           {x});
      EXPECT_TRUE(matches(ours, ref, 0.0, 0.0)) << mode << " " << lo << " " << hi;
    }
  }
  EXPECT_TRUE(matches(pad(array({7.0F}), {{2, 3}}, array(0.0F), "reflect"),
                      numpy_ref("np.pad(a, (2, 3), mode='reflect')", {array({7.0F})}), 0.0, 0.0));
}

TEST(MlxSemantics, FftNormsMatchNumpy) {
  std::mt19937 rng(3);
  auto x = test::random_array({4, 6}, float32, rng);
  const std::pair<fft::FFTNorm, const char*> norms[] = {
      {fft::FFTNorm::Backward, "backward"}, {fft::FFTNorm::Ortho, "ortho"}, {fft::FFTNorm::Forward, "forward"}};
  for (auto [norm, name] : norms) {
    const std::string n = std::string("norm='") + name + "'";
    EXPECT_TRUE(
        matches(fft::fftn(x, norm), numpy_ref("np.fft.fftn(a, " + n + ").astype(np.complex64)", {x}), 1e-5, 1e-5))
        << name;
    EXPECT_TRUE(matches(fft::ifft(x, 5, 0, norm),
                        numpy_ref("np.fft.ifft(a, 5, 0, " + n + ").astype(np.complex64)", {x}), 1e-5, 1e-5))
        << name;
    EXPECT_TRUE(matches(fft::rfft2(x, {-2, -1}, norm),
                        numpy_ref("np.fft.rfft2(a, " + n + ").astype(np.complex64)", {x}), 1e-5, 1e-5))
        << name;
    EXPECT_TRUE(matches(fft::irfft(x, 8, -1, norm),
                        numpy_ref("np.fft.irfft(a, 8, -1, " + n + ").astype(np.float32)", {x}), 1e-5, 1e-5))
        << name;
  }
}

TEST(MlxSemantics, LinspaceWithoutEndpointMatchesNumpy) {
  EXPECT_TRUE(
      matches(linspace(0.0, 1.0, 5, false), numpy_ref("np.linspace(0, 1, 5, endpoint=False, dtype=np.float32)", {})));
  EXPECT_TRUE(matches(linspace(-3.0, 7.0, 4, false, int32),
                      numpy_ref("np.linspace(-3, 7, 4, endpoint=False).astype(np.int32)", {})));
  EXPECT_TRUE(matches(linspace(0.0, 2.0, 3, float64), numpy_ref("np.linspace(0, 2, 3)", {})));
}

}  // namespace
}  // namespace nuvec
