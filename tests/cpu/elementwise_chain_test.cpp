// Element-wise chains evaluated in one pass (core/eval_chain.h, cpu/chain.cpp): every chain must equal, bit for bit,
// the same nodes evaluated one at a time, with intermediates the user holds still materialized and donation kept.

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

/// Elements past the chain threshold (1 MiB), and not a whole number of tiles.
int64_t length(Dtype dtype) { return (int64_t{1} << 20) / size_of(dtype) + 37; }

/// Values of `dtype` with, for floating dtypes, NaN, ±Inf and -0 among them.
array make_input(Dtype dtype, uint32_t seed, Shape shape = {}) {
  if (shape.empty()) {
    shape = {static_cast<int32_t>(length(dtype))};
  }
  std::mt19937 gen(seed);
  const bool is_float = dtype == float32 || dtype == float64 || dtype == float16 || dtype == bfloat16;
  const bool is_unsigned = dtype == uint8 || dtype == uint16 || dtype == uint32 || dtype == uint64;
  std::uniform_real_distribution<float> real(-4.0F, 4.0F);
  std::uniform_int_distribution<int> integer(is_unsigned ? 0 : -60, 60);
  int64_t size = 1;
  for (auto d : shape) {
    size *= d;
  }
  std::vector<float> values(static_cast<size_t>(size));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = is_float ? real(gen) : static_cast<float>(integer(gen));
  }
  if (is_float) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, -0.0F, 0.0F};
    for (size_t i = 0; i < values.size(); i += 997) {
      values[i] = specials[(i / 997) % 5];
    }
  }
  auto out = astype(array(values.begin(), shape, float32), dtype);
  out.eval();
  return out;
}

/// The profile report of evaluating f's result (by primitive name): a chain is recorded under its last node only.
std::string profiled(const std::function<array()>& f) {
  profile::reset();
  profile::enable(false);
  auto r = f();
  r.eval();
  profile::disable();
  return profile::report();
}

void expect_same_bits(const array& fused, const array& reference) {
  ASSERT_EQ(fused.dtype(), reference.dtype());
  ASSERT_EQ(fused.shape(), reference.shape());
  ASSERT_TRUE(fused.flags().row_contiguous && reference.flags().row_contiguous);
  EXPECT_EQ(std::memcmp(fused.raw_data(), reference.raw_data(), fused.nbytes()), 0);
}

/// One chain: its result evaluated in one eval, and node by node (each intermediate evaluated on its own first).
struct Chain {
  std::string name;
  std::vector<Dtype> dtypes;
  std::function<array(const array&, const array&, bool)> build;  // `stepwise`: evaluate each step as built
};

/// Evaluates `a` now when stepwise.
array step(array a, bool stepwise) {
  if (stepwise) {
    a.eval();
  }
  return a;
}

const std::vector<Dtype> floats = {float32, float64, float16, bfloat16};
const std::vector<Dtype> numeric = {float32, float64, float16, bfloat16, int32, int64, uint8, int16};

const std::vector<Chain> chains = {
    {"mul_add", numeric, [](const array& x, const array& y, bool s) { return step(x * y, s) + x; }},
    {"unary_binary_mix", floats,
     [](const array& x, const array& y, bool s) {
       auto t = step(tanh(x), s);
       auto u = step(t * y, s);
       auto e = step(exp(step(negative(x), s)), s);
       return u - e;
     }},
    {"to_bool", numeric,
     [](const array& x, const array& y, bool s) { return greater(step(x * y, s), step(x + y, s)); }},
    {"scalar_operands", numeric,
     [](const array& x, const array& y, bool s) {
       auto m = step(maximum(step(x - y, s), array(3, x.dtype())), s);
       return m * array(2, x.dtype());
     }},
    {"constant_power", floats,
     [](const array& x, const array& y, bool s) {
       auto p = step(power(x, array(2.0F, x.dtype())), s);
       auto q = step(power(step(abs(y), s), array(0.5F, x.dtype())), s);
       return step(p + q, s) / array(3.0F, x.dtype());
     }},
    {"same_input_twice", numeric,
     [](const array& x, const array&, bool s) {
       auto m = step(x - array(1, x.dtype()), s);
       return m * m;
     }},
};

TEST(ElementwiseChain, EqualsNodeByNodeBitForBit) {
  for (const auto& chain : chains) {
    for (Dtype dtype : chain.dtypes) {
      SCOPED_TRACE(chain.name + " " + std::string(dtype_name(dtype)));
      const auto x = make_input(dtype, 1);
      const auto y = make_input(dtype, 2);
      auto reference = chain.build(x, y, true);
      reference.eval();
      auto fused = chain.build(x, y, false);
      fused.eval();
      expect_same_bits(fused, reference);
    }
  }
}

TEST(ElementwiseChain, RunsAsOneNode) {
  const auto x = make_input(float32, 1);
  const auto y = make_input(float32, 2);
  const auto report = profiled([&] { return exp(x * y) + x; });
  EXPECT_NE(report.find("Add"), std::string::npos) << report;
  EXPECT_EQ(report.find("Multiply"), std::string::npos) << report;
  EXPECT_EQ(report.find("Exp"), std::string::npos) << report;
}

TEST(ElementwiseChain, SmallArraysRunNodeByNode) {
  const auto x = make_input(float32, 1, {1000});
  const auto report = profiled([&] { return exp(x * x) + x; });
  EXPECT_NE(report.find("Multiply"), std::string::npos) << report;
}

TEST(ElementwiseChain, HeldIntermediateStaysMaterialized) {
  const auto x = make_input(float32, 1);
  const auto y = make_input(float32, 2);
  auto held = x * y;
  auto r = exp(held) + x;
  r.eval();
  ASSERT_TRUE(held.is_available());
  auto held_ref = x * y;
  held_ref.eval();
  expect_same_bits(held, held_ref);
  auto r_ref = step(exp(held_ref), true) + x;
  r_ref.eval();
  expect_same_bits(r, r_ref);
}

TEST(ElementwiseChain, BroadcastAndStridedInputs) {
  const Shape shape{1024, 1031};
  const auto x = make_input(float32, 1, shape);
  const auto row = make_input(float32, 3, {1031});
  const auto column = make_input(float32, 4, {1024, 1});
  const auto square = make_input(float32, 5, {1031, 1024});
  const std::vector<std::function<array(bool)>> cases = {
      [&](bool s) { return step(x * row, s) + column; },            // partial broadcasts
      [&](bool s) { return step(exp(transpose(square)), s) * x; },  // a transposed input
      [&](bool s) {
        return step(tanh(slice(square, {0, 0}, {1024, 1024}, {1, 1})), s) - array(1.0F);
      },
      [&](bool s) { return step(x - array(0.5F), s) * step(sqrt(abs(x)), s); },  // a scalar operand
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    auto reference = contiguous(cases[i](true));
    reference.eval();
    auto fused = contiguous(cases[i](false));
    fused.eval();
    expect_same_bits(fused, reference);
  }
}

TEST(ElementwiseChain, DonatesAnInputOnlyTheChainHolds) {
  const auto y = make_input(float32, 2);
  auto t = make_input(float32, 1);
  const void* buffer = t.raw_data();
  auto expected = step(exp(step(t * y, true)), true) + array(1.0F);
  expected.eval();
  auto r = exp(t * y) + array(1.0F);
  t = array(0.0F);  // the chain's tape holds the only handle now
  r.eval();
  EXPECT_EQ(r.raw_data(), buffer);
  expect_same_bits(r, expected);
}

TEST(ElementwiseChain, LongChainsSplit) {
  const auto x = make_input(float32, 1);
  auto fused = x;
  auto reference = x;
  for (int i = 0; i < 40; ++i) {
    fused = (i % 2 == 0 ? fused * x : fused - array(0.25F));
    reference = step(i % 2 == 0 ? reference * x : reference - array(0.25F), true);
  }
  fused.eval();
  expect_same_bits(fused, reference);
}

}  // namespace
}  // namespace nuvec
