// power with a known exponent (a C++ scalar, a 0-d array constant, a broadcast 0-d array): the eager kernel and the
// generated code compute it as products or square roots where they can; both are checked against std::pow in
// float64 (the reference), against each other bit for bit, and on pow's special values.

#include <cmath>
#include <numbers>
#include <random>

#include "nuvec/core/fused.h"
#include "nuvec/core/power_form.h"
#include "tests/compile/compile_support.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using V = std::vector<array>;
using test::count_primitives;
using test::same_values;

const double exponents[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -8, 0.5, -0.5, 9, 2.5, -1.5, 1.0 / 3};

/// pow's special values and ordinary ones of both signs.
array float_inputs(Dtype d) {
  std::vector<float> values = {0.0F, -0.0F, 1.0F, -1.0F, NAN, INFINITY, -INFINITY, 0.25F, -0.25F, 3.5F, -3.5F, 1e-3F};
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> dist(-4.0F, 4.0F);
  for (int i = 0; i < 100; ++i) {
    values.push_back(dist(rng));
  }
  return astype(array(values.begin(), Shape{static_cast<int>(values.size())}), d);
}

/// The generated code of the Compiled node behind `y` (unevaluated), past the prelude (which declares pow).
std::string body_of(const array& y) {
  const auto& source = std::get<Compiled>(y.primitive()).kernel->source;
  return source.substr(source.find("nv_body"));
}

/// How many times `word` occurs in `text`.
size_t occurrences(const std::string& text, const std::string& word) {
  size_t count = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    ++count;
  }
  return count;
}

/// The exponent as a 0-d array (what a C++ scalar operand becomes) and as a broadcast view of one.
V exponent_forms(double e, Dtype d, const Shape& shape) {
  return {array(e, d), broadcast_to(array(e, d), shape)};
}

class ConstantPower : public ::testing::Test {
 protected:
  void SetUp() override { test::test_kernel_cache(); }
};

TEST_F(ConstantPower, EagerMatchesStdPowInFloat64) {
  for (Dtype d : {float32, float64}) {
    const auto x = float_inputs(d);
    auto xs = astype(x, float64);
    xs.eval();
    for (double e : exponents) {
      auto y = astype(power(x, array(e, d)), float64);
      y.eval();
      const auto* got = y.data<double>();
      const auto* in = xs.data<double>();
      for (size_t i = 0; i < static_cast<size_t>(x.size()); ++i) {
        const double want = std::pow(in[i], e);
        const double tol = (d == float32 ? 6e-7 : 3e-15) * std::fabs(want);
        if (std::isnan(want) || std::isinf(want) || want == 0) {
          // Special values exactly, the sign of zero included.
          EXPECT_TRUE((std::isnan(want) && std::isnan(got[i])) ||
                      (want == got[i] && std::signbit(want) == std::signbit(got[i])))
              << dtype_name(d) << " " << in[i] << " ** " << e << ": " << got[i] << " against " << want;
        } else {
          EXPECT_NEAR(got[i], want, tol) << dtype_name(d) << " " << in[i] << " ** " << e;
        }
      }
    }
  }
}

TEST_F(ConstantPower, GeneratedFormsEqualEagerOnEveryFloatDtype) {
  for (Dtype d : {float16, bfloat16, float32, float64}) {
    const auto x = float_inputs(d);
    for (size_t form = 0; form < 2; ++form) {
      // Every exponent in one compiled function: one kernel with an output per exponent.
      V exponent;
      size_t by_pow = 0;
      for (double e : exponents) {
        exponent.push_back(exponent_forms(e, d, x.shape())[form]);
        by_pow += nuvec::detail::power_form(e).kind == nuvec::detail::PowerForm::Kind::pow ? 1 : 0;
      }
      eval(exponent);
      auto f = [&](const V& xs) {
        V outs;
        // A step after the power puts it inside a fused chain; negation, as an addition could be contracted into
        // a fused multiply-add with the product's last multiplication, which eager kernels never do.
        for (const auto& e : exponent) outs.push_back(negative(power(xs[0], e)));
        return outs;
      };
      const auto eager = f({x});
      const auto compiled = compile(f)({x});
      ASSERT_EQ(count_primitives(compiled, "Compiled"), 1);
      // The exponents are literals of the source: pow is called for those whose form needs it and no other.
      EXPECT_EQ(occurrences(body_of(compiled[0]), "pow"), by_pow) << dtype_name(d);
      for (size_t k = 0; k < exponent.size(); ++k) {
        // Products and square roots are the same operations in both; pow is libmvec's in one, SLEEF's in the other.
        const bool pow_form = nuvec::detail::power_form(exponents[k]).kind == nuvec::detail::PowerForm::Kind::pow;
        const double rtol = pow_form ? (d == float64 ? 1e-13 : d == float32 ? 2e-6 : 1e-2) : 0.0;
        EXPECT_TRUE(same_values(compiled[k], eager[k], rtol)) << dtype_name(d) << " ** " << exponents[k];
      }
    }
  }
}

TEST_F(ConstantPower, ScalarExponentsFoldAsLiterals) {
  // x ** 3 written with a C++ float and with array(3.0f): the same source.
  const auto x = float_inputs(float32);
  auto with_scalar = compile([](const V& xs) { return V{power(xs[0], array(3.0F)) * 0.5F}; })({x})[0];
  auto with_array = compile([](const V& xs) { return V{power(xs[0], broadcast_to(array(3.0F), xs[0].shape())) *
                                                       broadcast_to(array(0.5F), xs[0].shape())}; })({x})[0];
  EXPECT_EQ(occurrences(body_of(with_scalar), "pow"), 0U);
  EXPECT_NE(body_of(with_scalar).find("0x1p-1f"), std::string::npos);
  EXPECT_NE(body_of(with_array).find("0x1p-1f"), std::string::npos);
  EXPECT_TRUE(same_values(with_scalar, with_array));
}

TEST_F(ConstantPower, IntegerPowersStayIntegers) {
  std::mt19937 rng(23);
  for (Dtype d : {uint8, int8, int16, int32, int64, uint64}) {
    const auto x = test::random_array({64}, d, rng, -9.0, 9.0);
    auto x64 = astype(x, int64);
    x64.eval();
    std::vector<int> powers = {0, 1, 2, 3, 5, 8, 9, 13};
    if (is_signed_integer(d)) {
      powers.push_back(-1);
    }
    auto f = [&](const V& xs) {
      V outs;
      for (int e : powers) outs.push_back(negative(power(xs[0], array(e, d))));
      return outs;
    };
    const auto eager = f({x});
    const auto compiled = compile(f)({x});
    ASSERT_EQ(count_primitives(compiled, "Compiled"), 1);
    for (size_t k = 0; k < powers.size(); ++k) {
      const int e = powers[k];
      ASSERT_EQ(compiled[k].dtype(), d);
      EXPECT_TRUE(same_values(compiled[k], eager[k])) << dtype_name(d) << " ** " << e;
      // The reference: repeated wrapping multiplication in uint64, cut to the dtype; a negative exponent gives 0.
      std::vector<int64_t> want;
      for (size_t i = 0; i < 64; ++i) {
        uint64_t p = e < 0 ? 0 : 1;
        for (int j = 0; j < e; ++j) {
          p *= static_cast<uint64_t>(x64.data<int64_t>()[i]);
        }
        want.push_back(static_cast<int64_t>(p));
      }
      const auto reference = astype(array(want.begin(), Shape{64}), d);
      EXPECT_TRUE(array_equal(power(x, array(e, d)), reference).item<bool>()) << dtype_name(d) << " ** " << e;
    }
  }
}

TEST_F(ConstantPower, GeluWrittenAsMlxFuses) {
  // nn.gelu_approx: 0-d array constants and power(x, 3) become one kernel without pow.
  const auto x = random::uniform(-4.0F, 4.0F, {4, 999}, float32, random::key(1));
  auto gelu = [](const V& xs) {
    const auto& x = xs[0];
    const array c(std::sqrt(2.0F / std::numbers::pi_v<float>));
    return V{array(0.5F) * x * (array(1.0F) + tanh(c * (x + array(0.044715F) * power(x, array(3.0F)))))};
  };
  const auto compiled = compile(gelu)({x})[0];
  EXPECT_EQ(count_primitives({compiled}, "Compiled"), 1);
  EXPECT_EQ(occurrences(body_of(compiled), "pow"), 0U);
  EXPECT_TRUE(same_values(compiled, gelu({x})[0], 2e-6));
}

}  // namespace
}  // namespace nuvec
