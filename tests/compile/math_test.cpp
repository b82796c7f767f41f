// The generated kernels' own math against the eager kernels: tanh (a rational approximation in the generated code),
// exp (glibc's vector function there, exp_nonpositive.h's eagerly) and sigmoid (on an exp written out there) over a
// sweep of every 4096th float bit pattern and the special values, in ulps; erfinv; products and minima over rows, and
// the LayerNorm, RMSNorm and LogSumExp primitives, fused into row kernels.

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>

#include <unistd.h>

#include "tests/compile/compile_support.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using V = std::vector<array>;
using test::count_primitives;
using test::same_values;

class GeneratedMath : public ::testing::Test {
 protected:
  void SetUp() override { test::test_kernel_cache(); }
};

/// A float's position on a line where neighbouring floats differ by one (-0 and +0 both at 0).
int64_t ordinal(float f) {
  int32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return bits < 0 ? -static_cast<int64_t>(bits & 0x7fffffff) : bits;
}

/// Every 4096th float bit pattern (NaNs and infinities among them), then special values.
array float_sweep() {
  std::vector<float> values;
  for (uint64_t u = 1234; u < (uint64_t{1} << 32); u += 4096) {
    const auto bits = static_cast<uint32_t>(u);
    float f = 0;
    std::memcpy(&f, &bits, sizeof f);
    values.push_back(f);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0F,    -0.0F,   inf,    -inf,    std::numeric_limits<float>::quiet_NaN(),
                  1e-45F,  -1e-45F, 1e-40F, 1e-30F,  0.9F,
                  -0.9F,   9.0F,    9.011F, 9.02F,   -9.02F,
                  88.72F,  88.73F,  -87.3F, -100.0F, -103.9F,
                  -104.0F, 3e38F,   -3e38F}) {
    values.push_back(f);
  }
  return array(values.begin(), {static_cast<int>(values.size())}, float32);
}

struct UlpReport {
  int64_t worst = 0;
  float at = 0;
  std::string mismatch;  // a NaN, infinity or zero sign that differs
};

UlpReport compare_ulps(const array& x, const array& compiled, const array& eager) {
  UlpReport r;
  const float* xs = x.data<float>();
  const float* c = compiled.data<float>();
  const float* e = eager.data<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    const bool special = std::isnan(e[i]) || std::isinf(e[i]) || e[i] == 0;
    if (special) {
      // NaN for NaN, the same infinity, the same signed zero.
      const bool same = std::isnan(e[i]) ? std::isnan(c[i]) : c[i] == e[i] && std::signbit(c[i]) == std::signbit(e[i]);
      if (!same && r.mismatch.empty()) {
        r.mismatch =
            "x " + std::to_string(xs[i]) + ": compiled " + std::to_string(c[i]) + ", eager " + std::to_string(e[i]);
      }
      continue;
    }
    if (std::isnan(c[i]) || std::isinf(c[i])) {
      if (r.mismatch.empty()) r.mismatch = "x " + std::to_string(xs[i]) + ": compiled " + std::to_string(c[i]);
      continue;
    }
    const int64_t d = std::llabs(ordinal(c[i]) - ordinal(e[i]));
    if (d > r.worst) {
      r.worst = d;
      r.at = xs[i];
    }
  }
  return r;
}

TEST_F(GeneratedMath, TanhExpAndSigmoidWithinUlpsOfEager) {
  // Stated tolerances: the generated tanh is within 5 ulp of the correctly rounded result and the eager one within
  // 1.1, so they differ by at most 6; exp is glibc's vector expf (2.4 ulp from e^x at x = 1.7335455: 5.66068745
  // against 5.66068858) against the eager exp (within 1 ulp): 3; sigmoid runs on an exp on each side, with one
  // division and one product more: 4. NaN, infinities, zeros and the overflow and
  // underflow edges (denormal results included) give the same value.
  using Op = array (*)(const array&, StreamOrDevice);
  struct Case {
    const char* name;
    Op op;
    int64_t ulps;
  };
  const Case cases[] = {{"tanh", tanh, 6}, {"exp", exp, 3}, {"sigmoid", sigmoid, 4}};
  auto x = float_sweep();
  eval(x);
  for (const auto& c : cases) {
    auto eager = c.op(x, {});
    auto compiled = compile([op = c.op](const V& xs) { return V{op(xs[0], {}) * 1.0F}; })({x});
    EXPECT_EQ(count_primitives(compiled, "Compiled"), 1) << c.name;
    eval(eager, compiled[0]);
    const auto r = compare_ulps(x, compiled[0], eager);
    EXPECT_LE(r.worst, c.ulps) << c.name << " at x = " << r.at;
    EXPECT_TRUE(r.mismatch.empty()) << c.name << ": " << r.mismatch;
  }
}

/// The generated sources in `dir` that contain `text`.
int sources_containing(const std::filesystem::path& dir, const std::string& text) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    count += source.find(text) != std::string::npos ? 1 : 0;
  }
  return count;
}

TEST_F(GeneratedMath, SiluIsOneCallWithinUlpsOfEager) {
  // x * sigmoid(x), either order, is one generated call (a kernel cache of its own shows the source). Stated
  // tolerance: (x >= 0 ? x : x e) / (1 + e) on an exp of 1 ulp rounds twice, the eager product of the sigmoid (4 ulp
  // from the generated one, above) and x once more: 6. NaN, infinities (-inf * 0 is NaN both ways), signed zeros and
  // the denormal results of the far negative side as eager gives them.
  const auto dir = std::filesystem::temp_directory_path() / ("nuvec-silu-test-" + std::to_string(::getpid()));
  ::setenv("NUVEC_KERNEL_CACHE", dir.c_str(), 1);
  auto x = float_sweep();
  eval(x);
  auto eager = x * sigmoid(x);
  eval(eager);
  for (bool sigmoid_first : {false, true}) {
    auto compiled = compile([sigmoid_first](const V& xs) {
      return V{sigmoid_first ? sigmoid(xs[0]) * xs[0] : xs[0] * sigmoid(xs[0])};
    })({x});
    EXPECT_EQ(count_primitives(compiled, "Compiled"), 1);
    eval(compiled);
    const auto r = compare_ulps(x, compiled[0], eager);
    EXPECT_LE(r.worst, 6) << "at x = " << r.at;
    EXPECT_TRUE(r.mismatch.empty()) << r.mismatch;
  }
  EXPECT_EQ(sources_containing(dir, "= nv::silu(v0);"), 1);  // the trace orders a product's arguments: one source
  // float64 through the library's exp; an output of the sigmoid itself keeps its own step.
  auto xd = random::uniform(-750.0, 40.0, {4096}, float64, random::key(3));
  auto both = compile([](const V& xs) { return V{xs[0] * sigmoid(xs[0]), sigmoid(xs[0])}; })({xd});
  EXPECT_TRUE(same_values(both[0], xd * sigmoid(xd), 1e-15));
  EXPECT_TRUE(same_values(both[1], sigmoid(xd), 1e-15));
  EXPECT_EQ(sources_containing(dir, "= nv::silu(v0);"), 2);
  std::filesystem::remove_all(dir);
  ::setenv("NUVEC_KERNEL_CACHE", test::test_kernel_cache().c_str(), 1);
}

TEST_F(GeneratedMath, TanhOfSignedZerosDenormalsAndLimits) {
  const float inf = std::numeric_limits<float>::infinity();
  auto x = array({0.0F, -0.0F, 1e-45F, -1e-40F, 9.02F, -20.0F, inf, -inf}, {8});
  auto y = compile([](const V& xs) { return V{tanh(xs[0]) * 1.0F}; })({x})[0];
  eval(y);
  const float expected[] = {0.0F, -0.0F, 1e-45F, -1e-40F, 1.0F, -1.0F, 1.0F, -1.0F};
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(y.data<float>()[i], expected[i]) << i;
    EXPECT_EQ(std::signbit(y.data<float>()[i]), std::signbit(expected[i])) << i;
  }
  auto nan = compile([](const V& xs) { return V{tanh(xs[0]) * 1.0F}; })({array({NAN, -NAN})})[0];
  EXPECT_TRUE(all(isnan(nan)).item<bool>());
}

TEST_F(GeneratedMath, ErfInvFusesAndMatchesEager) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> values{0.0,          -0.0,       1.0,
                             -1.0,         1.5,        -2.0,
                             inf,          -inf,       std::numeric_limits<double>::quiet_NaN(),
                             0.5,          -0.5,       1e-30,
                             0.99999994,   -0.9999999, 1 - 1e-10,
                             -(1 - 1e-15), 1e-300};
  for (int i = 0; i < 2000; ++i) values.push_back(-1.0 + 2.0 * (i + 0.5) / 2000.0);
  auto base = array(values.begin(), {static_cast<int>(values.size())}, float64);
  auto f = [](const V& xs) { return V{erfinv(xs[0]) * 2.0F}; };
  for (Dtype d : {float32, float64, float16, bfloat16}) {
    auto x = astype(base, d);
    eval(x);
    auto compiled = compile(f)({x});
    EXPECT_EQ(count_primitives(compiled, "Compiled"), 1) << dtype_name(d);
    EXPECT_EQ(count_primitives(compiled, "ErfInv"), 0) << dtype_name(d);
    auto eager = f({x})[0];
    if (d == float32) {
      // The same Halley step in double from glibc's scalar (eager) or vector (generated) erf, erfc, exp and log.
      eval(compiled[0], eager);
      const auto r = compare_ulps(astype(x, float32), compiled[0], eager);
      EXPECT_LE(r.worst, 1) << "at x = " << r.at;
      EXPECT_TRUE(r.mismatch.empty()) << r.mismatch;
    } else {
      EXPECT_TRUE(same_values(compiled[0], eager, d == float64 ? 1e-13 : 0.0)) << dtype_name(d);
    }
  }
  // Signed zeros keep their sign.
  auto zeros = compile(f)({array({0.0F, -0.0F})})[0];
  eval(zeros);
  EXPECT_FALSE(std::signbit(zeros.data<float>()[0]));
  EXPECT_TRUE(std::signbit(zeros.data<float>()[1]));
  // Integer inputs are converted to float first, as eagerly.
  auto ints = array({-1, 0, 1, 2}, {4});
  EXPECT_TRUE(same_values(compile(f)({ints})[0], f({ints})[0]));
}

TEST_F(GeneratedMath, RowProductsAndMinimaFuse) {
  std::mt19937 rng(23);
  auto chain = [](const V& xs) {
    auto y = xs[0] * 0.5F + 1.0F;
    auto p = prod(y, -1, true);
    auto m = min(xs[0], -1, true);
    return V{(xs[0] - m) * p, prod(square(xs[0]) + 0.5F, -1, true), min(exp(xs[0]), -1, false)};
  };
  for (Dtype d : {float32, float64}) {
    for (const Shape& shape : {Shape{8, 33}, Shape{2, 3, 17}, Shape{5, 2}, Shape{1, 300}}) {
      auto x = test::random_array(shape, d, rng, -1.5, 1.5);
      eval(x);
      auto compiled = compile(chain)({x});
      EXPECT_EQ(count_primitives(compiled, "Reduce"), 0) << shape_string(shape);
      EXPECT_GE(count_primitives(compiled, "Compiled"), 1) << shape_string(shape);
      auto eager = chain({x});
      // Products are reassociated by the vectorized loop: a few ulps over a row.
      const double tol = d == float64 ? 1e-12 : 1e-5;
      for (size_t i = 0; i < eager.size(); ++i) {
        EXPECT_TRUE(same_values(compiled[i], eager[i], tol)) << i << " " << dtype_name(d) << " " << shape_string(shape);
      }
    }
  }
  // NaN in a row propagates through the minimum and the product; -inf is a minimum like any other; a transposed
  // input takes the strided walk.
  const float inf = std::numeric_limits<float>::infinity();
  auto special = array({1.0F, NAN, 3.0F, 4.0F, -inf, 6.0F, 0.5F, 2.0F, -1.0F}, {3, 3});
  auto g = [](const V& xs) { return V{min(xs[0], -1, true) * 2.0F, prod(xs[0] * 2.0F, -1, true)}; };
  for (const auto& x : {special, transpose(special), transpose(reshape(arange(12.0F) - 5.0F, {3, 4}))}) {
    auto compiled = compile(g)({x});
    EXPECT_EQ(count_primitives(compiled, "Reduce"), 0);
    auto eager = g({x});
    EXPECT_TRUE(same_values(compiled[0], eager[0]));
    EXPECT_TRUE(same_values(compiled[1], eager[1], 1e-6));
  }
}

TEST_F(GeneratedMath, HalfNormsJoinTheirChainInFloat32) {
  // float16 and bfloat16 LayerNorm and RMSNorm compute in float32 and round once, as eagerly: within one ulp of the
  // 16-bit dtype of the eager result (the row sums add in another order). Rows with a mean of 1000 would be far off
  // in 16-bit arithmetic (an ulp of 1000 is 0.5 in float16, 8 in bfloat16).
  std::mt19937 rng(31);
  for (Dtype d : {float16, bfloat16}) {
    const double ulp = d == float16 ? 1.0 / 1024 : 1.0 / 128;
    for (const Shape& shape : {Shape{8, 33}, Shape{2, 3, 16}, Shape{4, 2}}) {
      const int n = shape.back();
      for (double mean : {0.0, 1000.0}) {
        auto x = test::random_array(shape, d, rng, mean - 3.0, mean + 3.0);
        auto w = test::random_array({n}, d, rng);
        auto b = test::random_array({n}, d, rng);
        eval(x, w, b);
        const std::vector<std::pair<std::string, std::function<V(const V&)>>> chains = {
            {"layer_norm", [](const V& xs) { return V{fast::layer_norm(xs[0], xs[1], xs[2], 1e-5F) * 0.5F}; }},
            {"layer_norm, no weight",
             [](const V& xs) { return V{fast::layer_norm(xs[0], std::nullopt, xs[2], 1e-3F) - 1.0F}; }},
            {"layer_norm, no affine",
             [](const V& xs) { return V{fast::layer_norm(xs[0], std::nullopt, std::nullopt, 1e-5F) + 1.0F}; }},
            {"rms_norm", [](const V& xs) { return V{fast::rms_norm(xs[0], xs[1], 1e-6F) * 2.0F}; }},
            {"rms_norm, no weight", [](const V& xs) { return V{-fast::rms_norm(xs[0], std::nullopt, 1e-2F)}; }},
        };
        for (const auto& [name, f] : chains) {
          auto compiled = compile(f)({x, w, b});
          const std::string what = name + " " + std::string(dtype_name(d)) + " " + shape_string(shape) + " mean " +
                                   std::to_string(mean);
          EXPECT_EQ(count_primitives(compiled, "Compiled"), 1) << what;
          EXPECT_EQ(count_primitives(compiled, "LayerNorm") + count_primitives(compiled, "RMSNorm"), 0) << what;
          auto eager = f({x, w, b})[0];
          ASSERT_EQ(compiled[0].dtype(), eager.dtype()) << what;
          // One ulp of the result's magnitude (at least of 1, so that values near 0 compare absolutely).
          auto off = abs(astype(compiled[0], float32) - astype(eager, float32));
          auto allowed = maximum(abs(astype(eager, float32)), array(1.0F)) * static_cast<float>(ulp) * 1.01F;
          EXPECT_TRUE(all(off <= allowed).item<bool>()) << what << ": off by " << max(off).item<float>();
        }
      }
    }
    // The gradient goes through the tape (its conversions included) where eagerly LayerNorm's fused vjp runs: both
    // in float32, rounded to the 16-bit dtype at the end.
    auto x = test::random_array({6, 40}, d, rng, -3.0, 3.0);
    auto w = test::random_array({40}, d, rng);
    auto b = test::random_array({40}, d, rng);
    auto loss = [](const V& xs) {
      return V{sum(astype(fast::layer_norm(xs[0], xs[1], xs[2], 1e-5F), float32) * xs[0])};
    };
    auto compiled = compile(loss);
    auto got = grad([&](const V& xs) { return compiled(xs)[0]; }, std::vector<int>{0, 1, 2})({x, w, b});
    auto want = grad([&](const V& xs) { return loss(xs)[0]; }, std::vector<int>{0, 1, 2})({x, w, b});
    for (size_t i = 0; i < 3; ++i) {
      ASSERT_EQ(got[i].dtype(), d);
      auto off = abs(astype(got[i], float32) - astype(want[i], float32));
      auto allowed = maximum(abs(astype(want[i], float32)), array(1.0F)) * static_cast<float>(4 * ulp);
      EXPECT_TRUE(all(off <= allowed).item<bool>()) << dtype_name(d) << " gradient " << i << " off by "
                                                    << max(off).item<float>();
    }
  }
}

TEST_F(GeneratedMath, NormAndLogSumExpPrimitivesJoinTheirChain) {
  std::mt19937 rng(29);
  for (Dtype d : {float32, float64}) {
    for (const Shape& shape : {Shape{8, 33}, Shape{2, 3, 16}, Shape{4, 2}}) {
      const int n = shape.back();
      auto x = test::random_array(shape, d, rng, -3.0, 3.0);
      auto w = test::random_array({n}, d, rng);
      auto b = test::random_array({n}, d, rng);
      eval(x, w, b);
      const std::vector<std::pair<std::string, std::function<V(const V&)>>> chains = {
          {"layer_norm",
           [](const V& xs) { return V{fast::layer_norm(xs[0] * 2.0F + 1.0F, xs[1], xs[2], 1e-5F) * 0.5F}; }},
          {"layer_norm, no weight",
           [](const V& xs) { return V{fast::layer_norm(exp(xs[0]), std::nullopt, xs[2], 1e-3F) - 1.0F}; }},
          {"layer_norm, no affine",
           [](const V& xs) { return V{fast::layer_norm(xs[0] - 2.0F, std::nullopt, std::nullopt, 1e-5F) + 1.0F}; }},
          {"rms_norm", [](const V& xs) { return V{fast::rms_norm(xs[0] + 0.5F, xs[1], 1e-6F) * xs[0]}; }},
          {"rms_norm, no weight", [](const V& xs) { return V{square(fast::rms_norm(xs[0], std::nullopt, 1e-2F))}; }},
          {"logsumexp", [](const V& xs) { return V{logsumexp(xs[0] * 3.0F, -1, true) - xs[0]}; }},
      };
      for (const auto& [name, f] : chains) {
        auto compiled = compile(f)({x, w, b});
        const std::string what = name + " " + std::string(dtype_name(d)) + " " + shape_string(shape);
        EXPECT_EQ(count_primitives(compiled, "Compiled"), 1) << what;
        for (const char* primitive : {"LayerNorm", "RMSNorm", "LogSumExp", "Reduce"}) {
          EXPECT_EQ(count_primitives(compiled, primitive), 0) << primitive << " in " << what;
        }
        EXPECT_TRUE(same_values(compiled[0], f({x, w, b})[0], d == float64 ? 1e-12 : 2e-5)) << what;
      }
    }
  }
  // The norms' constants are added to a graph that has its own (a folded one, one read by a node) and returns an
  // input, a constant and node values: all keep their numbers straight.
  auto mixed = [](const V& xs) {
    auto c = array(3.0F) * 2.0F;
    auto y = fast::rms_norm(xs[0] * c, xs[1], 1e-5F);
    return V{xs[0], c, fast::layer_norm(y + 1.0F, std::nullopt, xs[2], 1e-4F), y * 0.5F, xs[1] + 1.0F};
  };
  auto x = test::random_array({5, 12}, float32, rng);
  auto w = test::random_array({12}, float32, rng);
  auto b = test::random_array({12}, float32, rng);
  auto got_mixed = compile(mixed)({x, w, b});
  auto want_mixed = mixed({x, w, b});
  ASSERT_EQ(got_mixed.size(), want_mixed.size());
  EXPECT_EQ(count_primitives(got_mixed, "RMSNorm") + count_primitives(got_mixed, "LayerNorm"), 0);
  for (size_t i = 0; i < want_mixed.size(); ++i) {
    EXPECT_TRUE(same_values(got_mixed[i], want_mixed[i], 2e-5)) << i;
  }
  // LogSumExp of rows whose maximum is NaN, +inf or -inf (all -inf) is NaN or that maximum, as eagerly.
  const float inf = std::numeric_limits<float>::infinity();
  auto special = array({1.0F, NAN, 2.0F, 1.0F, inf, 2.0F, -inf, -inf, -inf, -inf, 0.0F, 1.0F}, {4, 3});
  auto lse = [](const V& xs) { return V{logsumexp(xs[0], -1, false) * 1.0F}; };
  auto got = compile(lse)({special})[0];
  EXPECT_EQ(count_primitives({got}, "LogSumExp"), 0);
  EXPECT_TRUE(same_values(got, lse({special})[0], 1e-6));
  // Shapeless: the expansions of softmax and logsumexp take their shapes from the new inputs (the norms are not
  // expanded there: their row length is a constant of the trace).
  auto rows = compile([](const V& xs) { return V{softmax(xs[0], -1), logsumexp(xs[0], -1, true) * 2.0F}; }, true);
  for (int n : {7, 9}) {
    for (int r : {3, 5}) {
      auto x = test::random_array({r, n}, float32, rng);
      auto out = rows({x});
      EXPECT_EQ(count_primitives(out, "Softmax") + count_primitives(out, "LogSumExp"), 0);
      EXPECT_TRUE(same_values(out[0], softmax(x, -1), 2e-6)) << r << "x" << n;
      EXPECT_TRUE(same_values(out[1], logsumexp(x, -1, true) * 2.0F, 2e-6)) << r << "x" << n;
    }
  }
  // A shapeless layer norm stays a LayerNorm node (unexpanded), whose output-shape rule follows new shapes.
  auto shapeless_norm =
      compile([](const V& xs) { return V{fast::layer_norm(xs[0] * 2.0F, std::nullopt, std::nullopt, 1e-5F)}; }, true);
  for (const Shape& shape : {Shape{3, 7}, Shape{5, 9}}) {
    auto x = test::random_array(shape, float32, rng);
    EXPECT_TRUE(same_values(shapeless_norm({x})[0], fast::layer_norm(x * 2.0F, std::nullopt, std::nullopt, 1e-5F), 2e-5))
        << shape_string(shape);
  }
}

}  // namespace
}  // namespace nuvec
