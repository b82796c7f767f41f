// Fourier transforms against NumPy: every function of nuvec::fft, compared with numpy.fft computed in float64 /
// complex128 (the oracle rounds complex results to complex64). An FFT's rounding error grows with log2(n) and is
// relative to the signal as a whole, so results are compared with an absolute tolerance of eps (1 + log2 n) times
// the largest magnitude of the reference. Lengths cover every path of the plans: 1, powers of two (radix 4 and a
// radix-2 stage), products of 3, 5 and 7, and primes (Bluestein), for even and odd real transforms.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
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

const std::vector<int> lengths = {1, 2, 3, 5, 7, 8, 12, 17, 97, 128, 360, 1000, 1024, 4099};

using test::error_of;

/// NumPy code binding `w` to the input `a` in float64 or complex128, followed by `code`.
std::string wide(const std::string& code) {
  return "w = a.astype(np.complex128) if np.iscomplexobj(a) else a.astype(np.float64)\nout = " + code;
}

/// |out - expected| <= eps (1 + log2 n) max|expected|, element by element (real and imaginary parts apart).
::testing::AssertionResult close_to(const array& out, const test::HostArray& expected, size_t n, double eps = 2e-6) {
  double scale = 0.0;
  for (auto v : test::as_complex(expected)) {
    scale = std::max(scale, std::abs(v));
  }
  const double atol = eps * (1.0 + std::log2(static_cast<double>(std::max<size_t>(n, 1)))) * std::max(scale, 1e-30);
  return matches(out, expected, 0.0, atol, false);
}

std::string str(int v) { return std::to_string(v); }

TEST(FftOneDimensional, EveryLengthAndFunction) {
  std::mt19937 rng(1);
  for (int n : lengths) {
    SCOPED_TRACE("n = " + str(n));
    auto c = random_array({3, n}, complex64, rng);
    auto r = random_array({3, n}, float32, rng);
    auto fc = fft::fft(c);
    EXPECT_EQ(fc.dtype(), complex64);
    EXPECT_TRUE(close_to(fc, numpy_ref(wide("np.fft.fft(w)"), {c}), n));
    EXPECT_TRUE(close_to(fft::ifft(c), numpy_ref(wide("np.fft.ifft(w)"), {c}), n));
    EXPECT_TRUE(close_to(fft::fft(r), numpy_ref(wide("np.fft.fft(w)"), {r}), n));
    auto fr = fft::rfft(r);
    EXPECT_EQ(fr.shape(), Shape({3, n / 2 + 1}));
    EXPECT_EQ(fr.dtype(), complex64);
    EXPECT_TRUE(close_to(fr, numpy_ref(wide("np.fft.rfft(w)"), {r}), n));
    // irfft of length n reads n/2 + 1 frequencies; the imaginary parts NumPy ignores are random here too.
    auto h = random_array({3, n / 2 + 1}, complex64, rng);
    auto ir = fft::irfft(h, n, -1);
    EXPECT_EQ(ir.shape(), Shape({3, n}));
    EXPECT_EQ(ir.dtype(), float32);
    EXPECT_TRUE(close_to(ir, numpy_ref(wide("np.fft.irfft(w, n=" + str(n) + ")"), {h}), n));
  }
}

TEST(FftOneDimensional, RoundTripsOfLongLengths) {
  std::mt19937 rng(2);
  for (int n : {65536, 30030, 65537, 100003}) {
    SCOPED_TRACE("n = " + str(n));
    auto c = random_array({n}, complex64, rng);
    EXPECT_TRUE(close_to(fft::fft(c), numpy_ref(wide("np.fft.fft(w)"), {c}), n));
    EXPECT_TRUE(close_to(fft::ifft(fft::fft(c)), test::to_host(c), n, 4e-6));
    auto r = random_array({n}, float32, rng);
    EXPECT_TRUE(close_to(fft::irfft(fft::rfft(r), n, 0), test::to_host(r), n, 4e-6));
  }
}

TEST(FftOneDimensional, CropAndPad) {
  std::mt19937 rng(3);
  auto c = random_array({4, 12}, complex64, rng);
  auto r = random_array({4, 12}, float32, rng);
  for (int n : {1, 5, 8, 12, 17, 30}) {
    SCOPED_TRACE("n = " + str(n));
    const auto sn = str(n);
    EXPECT_TRUE(close_to(fft::fft(c, n, -1), numpy_ref(wide("np.fft.fft(w, n=" + sn + ")"), {c}), n));
    EXPECT_TRUE(close_to(fft::ifft(c, n, 1), numpy_ref(wide("np.fft.ifft(w, n=" + sn + ", axis=1)"), {c}), n));
    EXPECT_TRUE(close_to(fft::fft(c, n, 0), numpy_ref(wide("np.fft.fft(w, n=" + sn + ", axis=0)"), {c}), n));
    EXPECT_TRUE(close_to(fft::rfft(r, n, -1), numpy_ref(wide("np.fft.rfft(w, n=" + sn + ")"), {r}), n));
    EXPECT_TRUE(close_to(fft::rfft(r, n, 0), numpy_ref(wide("np.fft.rfft(w, n=" + sn + ", axis=0)"), {r}), n));
    EXPECT_TRUE(close_to(fft::irfft(c, n, -1), numpy_ref(wide("np.fft.irfft(w, n=" + sn + ")"), {c}), n));
    EXPECT_TRUE(close_to(fft::irfft(c, n, 0), numpy_ref(wide("np.fft.irfft(w, n=" + sn + ", axis=0)"), {c}), n));
  }
  // irfft's default length is 2 (m - 1).
  auto ir = fft::irfft(c);
  EXPECT_EQ(ir.shape(), Shape({4, 22}));
  EXPECT_TRUE(close_to(ir, numpy_ref(wide("np.fft.irfft(w)"), {c}), 22));
  EXPECT_TRUE(close_to(fft::irfft(c, 0), numpy_ref(wide("np.fft.irfft(w, axis=0)"), {c}), 6));
}

TEST(FftMultiDimensional, TwoAndNDimensionalFunctions) {
  std::mt19937 rng(4);
  auto c = random_array({4, 6, 5}, complex64, rng);
  auto r = random_array({4, 6, 5}, float32, rng);
  const size_t total = 120;
  EXPECT_TRUE(close_to(fft::fft2(c), numpy_ref(wide("np.fft.fft2(w)"), {c}), total));
  EXPECT_TRUE(close_to(fft::ifft2(c), numpy_ref(wide("np.fft.ifft2(w)"), {c}), total));
  EXPECT_TRUE(close_to(fft::fftn(c), numpy_ref(wide("np.fft.fftn(w)"), {c}), total));
  EXPECT_TRUE(close_to(fft::ifftn(c), numpy_ref(wide("np.fft.ifftn(w)"), {c}), total));
  EXPECT_TRUE(close_to(fft::rfft2(r), numpy_ref(wide("np.fft.rfft2(w)"), {r}), total));
  EXPECT_TRUE(close_to(fft::rfftn(r), numpy_ref(wide("np.fft.rfftn(w)"), {r}), total));
  EXPECT_TRUE(close_to(fft::irfft2(c), numpy_ref(wide("np.fft.irfft2(w)"), {c}), total));
  EXPECT_TRUE(close_to(fft::irfftn(c), numpy_ref(wide("np.fft.irfftn(w)"), {c}), total));

  // Axes in any order, negative ones included: the last one given is the real axis.
  struct Case {
    std::vector<int> axes;
    std::string py;
  };
  for (const auto& [axes, py] : std::vector<Case>{
           {{0, 2}, "(0,2)"}, {{-1, 0}, "(-1,0)"}, {{1, -3}, "(1,-3)"}, {{2, 0, 1}, "(2,0,1)"}, {{-2}, "(-2,)"}}) {
    SCOPED_TRACE("axes " + py);
    EXPECT_TRUE(close_to(fft::fftn(c, axes), numpy_ref(wide("np.fft.fftn(w, axes=" + py + ")"), {c}), total));
    EXPECT_TRUE(close_to(fft::ifftn(c, axes), numpy_ref(wide("np.fft.ifftn(w, axes=" + py + ")"), {c}), total));
    EXPECT_TRUE(close_to(fft::rfftn(r, axes), numpy_ref(wide("np.fft.rfftn(w, axes=" + py + ")"), {r}), total));
    EXPECT_TRUE(close_to(fft::irfftn(c, axes), numpy_ref(wide("np.fft.irfftn(w, axes=" + py + ")"), {c}), total));
  }
  // Lengths per axis, cropping one axis and padding the other.
  EXPECT_TRUE(
      close_to(fft::fft2(c, {3, 9}, {0, 2}), numpy_ref(wide("np.fft.fft2(w, s=(3,9), axes=(0,2))"), {c}), total));
  EXPECT_TRUE(
      close_to(fft::ifft2(c, {7, 2}, {-1, -2}), numpy_ref(wide("np.fft.ifft2(w, s=(7,2), axes=(-1,-2))"), {c}), total));
  EXPECT_TRUE(
      close_to(fft::rfft2(r, {3, 9}, {0, 2}), numpy_ref(wide("np.fft.rfft2(w, s=(3,9), axes=(0,2))"), {r}), total));
  EXPECT_TRUE(
      close_to(fft::irfft2(c, {5, 7}, {1, 2}), numpy_ref(wide("np.fft.irfft2(w, s=(5,7), axes=(1,2))"), {c}), total));
  EXPECT_TRUE(close_to(fft::irfftn(c, {2, 8, 3}, {0, 1, 2}),
                       numpy_ref(wide("np.fft.irfftn(w, s=(2,8,3), axes=(0,1,2))"), {c}), total));
  EXPECT_TRUE(
      close_to(fft::fftn(c, {4, 4}, {2, 1}), numpy_ref(wide("np.fft.fftn(w, s=(4,4), axes=(2,1))"), {c}), total));
}

TEST(FftLayout, BatchedAndNonContiguousInputs) {
  std::mt19937 rng(5);
  auto base_c = random_array({6, 8, 10}, complex64, rng);
  auto base_r = random_array({6, 8, 10}, float32, rng);
  const std::vector<std::pair<std::function<array(const array&)>, std::string>> views = {
      {[](const array& a) {
         return transpose(a, {2, 0, 1});
       },
       "a.transpose(2,0,1)"},
      {[](const array& a) {
         return slice(a, {1, 0, 9}, {6, 8, 0}, {2, 1, -3});
       },
       "a[1:6:2, :, 9:0:-3]"},
      {[](const array& a) {
         return slice(a, {0, 1, 0}, {6, 7, 10}, {1, 2, 2});
       },
       "a[:, 1:7:2, ::2]"},
      {[](const array& a) {
         return broadcast_to(slice(a, {0, 0, 0}, {1, 8, 10}), {5, 8, 10});
       },
       "np.broadcast_to(a[:1], (5,8,10))"},
  };
  for (const auto& [make, py] : views) {
    SCOPED_TRACE(py);
    auto c = make(base_c);
    auto r = make(base_r);
    const auto ref = [&](const std::string& fn, const array& x) {
      return numpy_ref("a = " + py + "\n" + wide(fn), {x});
    };
    EXPECT_TRUE(close_to(fft::fft(c), ref("np.fft.fft(w)", base_c), 10));
    EXPECT_TRUE(close_to(fft::fft(c, 0), ref("np.fft.fft(w, axis=0)", base_c), 10));
    EXPECT_TRUE(close_to(fft::ifft2(c), ref("np.fft.ifft2(w)", base_c), 100));
    EXPECT_TRUE(close_to(fft::rfft(r, 1), ref("np.fft.rfft(w, axis=1)", base_r), 10));
    EXPECT_TRUE(close_to(fft::rfftn(r), ref("np.fft.rfftn(w)", base_r), 1000));
    EXPECT_TRUE(close_to(fft::irfft(c, 0), ref("np.fft.irfft(w, axis=0)", base_c), 10));
    EXPECT_TRUE(close_to(fft::irfftn(c), ref("np.fft.irfftn(w)", base_c), 1000));
  }
  // Many short lines (the batched path splits them across threads) and a column transform of a tall array.
  auto many = random_array({4096, 24}, complex64, rng);
  EXPECT_TRUE(close_to(fft::fft(many), numpy_ref(wide("np.fft.fft(w)"), {many}), 24));
  EXPECT_TRUE(close_to(fft::fft(many, 0), numpy_ref(wide("np.fft.fft(w, axis=0)"), {many}), 4096));
  auto many_r = random_array({2000, 3, 17}, float32, rng);
  EXPECT_TRUE(close_to(fft::rfftn(many_r, {0, 2}), numpy_ref(wide("np.fft.rfftn(w, axes=(0,2))"), {many_r}), 34000));
}

TEST(FftDtypes, Float64InputsComputeInDouble) {
  std::mt19937 rng(6);
  for (int n : {12, 97, 1000, 4099}) {
    SCOPED_TRACE("n = " + str(n));
    auto x = random_array({2, n}, float64, rng);
    // The reference is rounded to complex64 once, as nuvec rounds its double result: each element is within
    // complex64's rounding of the exact value, however small it is next to the largest.
    auto check = [&](const array& out, const std::string& code) {
      auto expected = numpy_ref(wide(code), {x});
      double scale = 0.0;
      for (auto v : test::as_complex(expected)) {
        scale = std::max(scale, std::abs(v));
      }
      EXPECT_TRUE(matches(out, expected, 1.2e-7, 1e-12 * scale, false));
    };
    auto f = fft::fft(x);
    EXPECT_EQ(f.dtype(), complex64);
    check(f, "np.fft.fft(w)");
    check(fft::rfft(x), "np.fft.rfft(w)");
    check(fft::fftn(x), "np.fft.fftn(w)");
    check(fft::rfftn(x), "np.fft.rfftn(w)");
    check(fft::ifft2(x), "np.fft.ifft2(w)");
  }
}

TEST(FftDtypes, OtherInputDtypes) {
  std::mt19937 rng(7);
  for (auto dtype : {int32, uint8, bool_, float16, bfloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto x = random_array({3, 12}, dtype, rng);
    EXPECT_TRUE(close_to(fft::fft(x), numpy_ref(wide("np.fft.fft(w)"), {x}), 12));
    EXPECT_TRUE(close_to(fft::rfft(x), numpy_ref(wide("np.fft.rfft(w)"), {x}), 12));
    auto ir = fft::irfft(x);
    EXPECT_EQ(ir.dtype(), float32);
    EXPECT_TRUE(close_to(ir, numpy_ref(wide("np.fft.irfft(w)"), {x}), 22));
  }
  // rfft of complex64 transforms the real part (MLX's rule; NumPy refuses complex input).
  auto c = random_array({3, 12}, complex64, rng);
  EXPECT_TRUE(close_to(fft::rfft(c), numpy_ref(wide("np.fft.rfft(w.real)"), {c}), 12));
}

TEST(FftEdgeCases, EmptyAndSizeOneAxes) {
  std::mt19937 rng(8);
  auto empty = zeros({0, 8}, complex64);
  auto f = fft::fft(empty);
  f.eval();
  EXPECT_EQ(f.shape(), Shape({0, 8}));
  auto rf = fft::rfft(zeros({3, 0, 8}));
  rf.eval();
  EXPECT_EQ(rf.shape(), Shape({3, 0, 5}));
  EXPECT_EQ(rf.dtype(), complex64);
  auto irf = fft::irfft2(zeros({0, 4, 5}, complex64));
  irf.eval();
  EXPECT_EQ(irf.shape(), Shape({0, 4, 8}));
  // Padding an empty axis gives zeros; padding or cropping with an empty batch axis gives an empty result.
  auto padded = fft::fft(zeros({3, 0}), 4, -1);
  EXPECT_TRUE(matches(padded, numpy_ref("np.fft.fft(np.zeros((3,0)), n=4).astype(np.complex64)", {}), 0, 0));
  auto empty_padded = fft::rfft(zeros({0, 4}), 9, 1);
  empty_padded.eval();
  EXPECT_EQ(empty_padded.shape(), Shape({0, 5}));
  // Size-1 axes: a length-1 transform is the identity.
  auto x = random_array({1, 5, 1}, complex64, rng);
  EXPECT_TRUE(close_to(fft::fftn(x), numpy_ref(wide("np.fft.fftn(w)"), {x}), 5));
  EXPECT_TRUE(close_to(fft::ifft(x, 0), numpy_ref(wide("np.fft.ifft(w, axis=0)"), {x}), 1));
  auto r = random_array({5, 1}, float32, rng);
  EXPECT_TRUE(close_to(fft::rfftn(r), numpy_ref(wide("np.fft.rfftn(w)"), {r}), 5));
  // An empty axes list leaves the input alone (MLX).
  EXPECT_EQ(fft::fftn(r, std::vector<int>{}).dtype(), float32);
}

TEST(FftEdgeCases, NaNSpreadsAsInNumPy) {
  auto x = array({1.0F, 2.0F, std::numeric_limits<float>::quiet_NaN(), 4.0F, 5.0F, 6.0F, 7.0F, 8.0F});
  auto xc = astype(x, complex64);
  EXPECT_TRUE(matches(isnan(fft::fft(xc)), numpy_ref("np.isnan(np.fft.fft(a.astype(np.complex128)))", {xc}), 0, 0));
  EXPECT_TRUE(matches(isnan(fft::ifft(xc)), numpy_ref("np.isnan(np.fft.ifft(a.astype(np.complex128)))", {xc}), 0, 0));
  EXPECT_TRUE(matches(isnan(fft::irfft(xc)), numpy_ref("np.isnan(np.fft.irfft(a.astype(np.complex128)))", {xc}), 0, 0));
}

TEST(FftShift, ShiftsAndFrequencies) {
  std::mt19937 rng(9);
  for (const Shape& shape : {Shape{7}, Shape{8}, Shape{4, 5}, Shape{3, 6, 5}}) {
    SCOPED_TRACE(shape_string(shape));
    auto x = random_array(shape, float32, rng);
    EXPECT_TRUE(matches(fft::fftshift(x), numpy_ref("np.fft.fftshift(a)", {x}), 0, 0));
    EXPECT_TRUE(matches(fft::ifftshift(x), numpy_ref("np.fft.ifftshift(a)", {x}), 0, 0));
    EXPECT_TRUE(matches(fft::ifftshift(fft::fftshift(x)), test::to_host(x), 0, 0));
    EXPECT_TRUE(matches(fft::fftshift(x, {-1}), numpy_ref("np.fft.fftshift(a, axes=(-1,))", {x}), 0, 0));
    EXPECT_TRUE(matches(fft::ifftshift(x, {0}), numpy_ref("np.fft.ifftshift(a, axes=(0,))", {x}), 0, 0));
  }
  auto x = random_array({4, 5}, complex64, rng);
  EXPECT_TRUE(matches(fft::fftshift(x), numpy_ref("np.fft.fftshift(a)", {x}), 0, 0));
  for (int n : {1, 2, 5, 8, 11}) {
    for (double d : {1.0, 0.1, 2.5}) {
      SCOPED_TRACE("n = " + str(n) + " d = " + std::to_string(d));
      const auto args = str(n) + ", " + std::to_string(d);
      auto f = fft::fftfreq(n, d);
      EXPECT_EQ(f.dtype(), float32);
      EXPECT_TRUE(matches(f, numpy_ref("np.fft.fftfreq(" + args + ").astype(np.float32)", {}), 0, 0));
      EXPECT_TRUE(
          matches(fft::rfftfreq(n, d), numpy_ref("np.fft.rfftfreq(" + args + ").astype(np.float32)", {}), 0, 0));
    }
  }
}

TEST(FftErrors, Messages) {
  auto x = zeros({4, 6}, complex64);
  EXPECT_EQ(error_of([&] { fft::fft(array(1.0F)); }),
            "[fft] Expected an array with at least one dimension; got shape ().");
  EXPECT_EQ(error_of([&] { fft::fftn(array(1.0F)); }),
            "[fftn] Expected an array with at least one dimension; got shape ().");
  EXPECT_EQ(error_of([&] { fft::fft(x, 2); }), "[fft] Axis 2 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { fft::rfft2(x, {0, -3}); }), "[rfft2] Axis -3 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { fft::fft2(x, {1, -1}); }), "[fft2] Expected distinct axes; got (1,-1).");
  EXPECT_EQ(error_of([&] { fft::irfftn(x, {4, 4, 4}, {0, 1, 0}); }), "[irfftn] Expected distinct axes; got (0,1,0).");
  EXPECT_EQ(error_of([&] {
              fft::fftn(x, {4}, {0, 1});
            }),
            "[fftn] Expected one length per axis; got n = (4) and axes (0,1).");
  EXPECT_EQ(error_of([&] { fft::fft(x, 0, 1); }),
            "[fft] Expected positive transform lengths; got n = (0) for axes (1) of shape (4,6).");
  EXPECT_EQ(error_of([&] {
              fft::ifft2(x, {3, -2}, {0, 1});
            }),
            "[ifft2] Expected positive transform lengths; got n = (3,-2) for axes (0,1) of shape (4,6).");
  // Transforming an empty axis, and irfft of a single frequency (default length 0).
  EXPECT_EQ(error_of([&] {
              fft::fft(zeros({3, 0}));
            }),
            "[fft] Expected positive transform lengths; got n = (0) for axes (-1) of shape (3,0).");
  EXPECT_EQ(error_of([&] {
              fft::irfft(zeros({3, 1}, complex64));
            }),
            "[irfft] Expected positive transform lengths; got n = (0) for axes (-1) of shape (3,1).");
  EXPECT_EQ(error_of([&] { fft::fftshift(x, {2}); }),
            "[fftshift] Axis 2 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { fft::ifftshift(x, {-3}); }),
            "[ifftshift] Axis -3 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { fft::fftfreq(0); }), "[fftfreq] Expected a window length n >= 1; got 0.");
  EXPECT_EQ(error_of([&] { fft::rfftfreq(4, 0.0); }), "[rfftfreq] Expected a non-zero sample spacing d; got 0.");
}

}  // namespace
}  // namespace nuvec
