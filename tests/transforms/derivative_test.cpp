// Every differentiable primitive against numbers: vjp and jvp against central
// finite differences in float64, vmap against a loop over the mapped axis.
// A coverage test walks the cases' graphs and fails when a primitive of the
// closed set appears in no case and is not listed as underivable.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <variant>

#include "nuvec/core/transforms.h"
#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

struct Case {
  std::string name;
  std::vector<Shape> shapes;
  Function f;
  double low = -2.0;
  double high = 2.0;
  double step = 1e-6;       // finite-difference step
  double tolerance = 1e-5;  // relative and absolute
};

std::vector<double> values_of(const array& a) { return test::as_doubles(test::to_host(a)); }

array from_values(const std::vector<double>& v, const Shape& shape) { return array(v.begin(), shape, float64); }

std::vector<array> inputs_for(const Case& c, uint32_t salt = 0) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)) + salt);
  std::vector<array> inputs;
  for (const auto& s : c.shapes) {
    inputs.push_back(test::random_array(s, float64, rng, c.low, c.high));
  }
  return inputs;
}

/// Fixed random weights that turn the outputs into one scalar: sum_k sum(out_k * w_k).
std::vector<array> output_weights(const std::vector<array>& outputs) {
  std::mt19937 rng(7);
  std::vector<array> weights;
  for (const auto& o : outputs) {
    weights.push_back(test::random_array(o.shape(), float64, rng, -1.0, 1.0));
  }
  return weights;
}

array weighted_sum(const std::vector<array>& outputs, const std::vector<array>& weights) {
  array total = array(0.0, float64);
  for (size_t k = 0; k < outputs.size(); ++k) {
    total = total + sum(astype(outputs[k], float64) * weights[k]);
  }
  return total;
}

::testing::AssertionResult close(const std::vector<double>& actual, const std::vector<double>& expected,
                                 double tolerance, const std::string& what) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << what << ": " << actual.size() << " values, expected " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    bool same_infinity = std::isinf(expected[i]) && actual[i] == expected[i];
    if (!same_infinity && !(std::abs(actual[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])))) {
      return ::testing::AssertionFailure() << what << " [" << i << "]: " << actual[i] << " vs finite difference "
                                           << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Derivatives : public ::testing::TestWithParam<Case> {};

TEST_P(Derivatives, VjpMatchesFiniteDifferences) {
  const Case& c = GetParam();
  auto inputs = inputs_for(c);
  auto weights = output_weights(c.f(inputs));
  auto scalar = [&](const std::vector<array>& xs) { return weighted_sum(c.f(xs), weights); };
  std::vector<int> argnums(inputs.size());
  std::iota(argnums.begin(), argnums.end(), 0);
  auto [value, grads] = value_and_grad(scalar, argnums)(inputs);
  EXPECT_NEAR(value.item<double>(), scalar(inputs).item<double>(), 1e-9);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(grads[i].shape(), inputs[i].shape());
    auto base = values_of(inputs[i]);
    std::vector<double> numeric(base.size());
    for (size_t j = 0; j < base.size(); ++j) {
      auto at = [&](double delta) {
        auto moved = base;
        moved[j] += delta;
        auto xs = inputs;
        xs[i] = from_values(moved, inputs[i].shape());
        return scalar(xs).item<double>();
      };
      numeric[j] = (at(c.step) - at(-c.step)) / (2 * c.step);
    }
    EXPECT_TRUE(close(values_of(grads[i]), numeric, c.tolerance, "gradient of input " + std::to_string(i)));
  }
}

TEST_P(Derivatives, JvpMatchesFiniteDifferences) {
  const Case& c = GetParam();
  auto inputs = inputs_for(c);
  std::mt19937 rng(11);
  std::vector<array> tangents;
  for (const auto& x : inputs) {
    tangents.push_back(test::random_array(x.shape(), float64, rng, -1.0, 1.0));
  }
  auto [outs, out_tangents] = jvp(c.f, inputs, tangents);
  auto shifted = [&](double h) {
    std::vector<array> xs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      xs.push_back(inputs[i] + tangents[i] * h);
    }
    eval(xs);
    return c.f(xs);
  };
  auto plus = shifted(c.step);
  auto minus = shifted(-c.step);
  for (size_t k = 0; k < outs.size(); ++k) {
    auto numeric = values_of((astype(plus[k], float64) - astype(minus[k], float64)) / (2 * c.step));
    EXPECT_TRUE(close(values_of(astype(out_tangents[k], float64)), numeric, c.tolerance,
                      "tangent of output " + std::to_string(k)));
  }
}

TEST_P(Derivatives, VmapMatchesLoop) {
  const Case& c = GetParam();
  constexpr int batch = 3;
  // Map input 0 over its last axis and the others over axis 0, or leave the second input unmapped.
  for (bool share_second : {false, true}) {
    std::vector<std::vector<array>> per_batch;
    for (int b = 0; b < batch; ++b) {
      per_batch.push_back(inputs_for(c, static_cast<uint32_t>(b + 1)));
      if (share_second && per_batch[b].size() > 1) {
        per_batch[b][1] = per_batch[0][1];
      }
    }
    std::vector<array> stacked;
    std::vector<int> in_axes;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      if (share_second && i == 1) {
        stacked.push_back(per_batch[0][1]);
        in_axes.push_back(-1);
        continue;
      }
      std::vector<array> parts;
      for (int b = 0; b < batch; ++b) {
        parts.push_back(per_batch[b][i]);
      }
      int axis = i == 0 ? static_cast<int>(c.shapes[i].size()) : 0;
      stacked.push_back(stack(parts, axis));
      in_axes.push_back(axis);
    }
    auto mapped = vmap(c.f, in_axes)(stacked);
    for (int b = 0; b < batch; ++b) {
      auto expected = c.f(per_batch[b]);
      for (size_t k = 0; k < expected.size(); ++k) {
        auto got = take(mapped[k], b, 0);
        EXPECT_TRUE(close(values_of(astype(got, float64)), values_of(astype(expected[k], float64)), 1e-9,
                          "output " + std::to_string(k) + " of batch " + std::to_string(b)));
      }
    }
  }
}

array fft_features(const array& z) { return concatenate({real(z), imag(z)}, -1); }

/// Functions of an SVD that do not depend on the signs of the singular vectors: a reconstruction, squares of the
/// first K columns of U and rows of Vt, and U_K Vt_K.
std::vector<array> svd_features(const array& a) {
  auto usv = linalg::svd(a);
  int k = usv[1].shape(-1);
  auto u = slice(usv[0], {0, 0}, {a.shape(0), k});
  auto vt = slice(usv[2], {0, 0}, {k, a.shape(1)});
  return {matmul(u * usv[1], vt) * 0.5, square(u), square(vt), matmul(u, vt)};
}

std::vector<Case> cases() {
  using V = std::vector<array>;
  auto unary = [](std::string name, std::function<array(const array&)> op, double low = -2.0, double high = 2.0) {
    return Case{std::move(name), {{2, 3}}, [op](const V& x) { return V{op(x[0])}; }, low, high};
  };
  auto binary = [](std::string name, std::function<array(const array&, const array&)> op, Shape a = {2, 3},
                   Shape b = {3}, double low = -2.0, double high = 2.0) {
    return Case{std::move(name), {std::move(a), std::move(b)}, [op](const V& x) { return V{op(x[0], x[1])}; }, low,
                high};
  };
  std::vector<Case> all{
      unary("abs", [](const array& x) { return abs(x); }),
      unary("negative", [](const array& x) { return negative(x); }),
      unary("sign", [](const array& x) { return sign(x) * x; }),
      unary("floor_ceil_round", [](const array& x) { return floor(x) + ceil(x) + round(x) + x; }),
      unary("square", [](const array& x) { return square(x); }),
      unary("sqrt", [](const array& x) { return sqrt(x); }, 0.5, 2.0),
      unary("rsqrt", [](const array& x) { return rsqrt(x); }, 0.5, 2.0),
      unary("reciprocal", [](const array& x) { return reciprocal(x); }, 0.5, 2.0),
      unary("exp", [](const array& x) { return exp(x); }),
      unary("expm1", [](const array& x) { return expm1(x); }),
      unary("log", [](const array& x) { return log(x); }, 0.5, 2.0),
      unary("log2", [](const array& x) { return log2(x); }, 0.5, 2.0),
      unary("log10", [](const array& x) { return log10(x); }, 0.5, 2.0),
      unary("log1p", [](const array& x) { return log1p(x); }, 0.0, 2.0),
      unary("sin", [](const array& x) { return sin(x); }),
      unary("cos", [](const array& x) { return cos(x); }),
      unary("tan", [](const array& x) { return tan(x); }, -1.0, 1.0),
      unary("arcsin", [](const array& x) { return arcsin(x); }, -0.8, 0.8),
      unary("arccos", [](const array& x) { return arccos(x); }, -0.8, 0.8),
      unary("arctan", [](const array& x) { return arctan(x); }),
      unary("sinh", [](const array& x) { return sinh(x); }),
      unary("cosh", [](const array& x) { return cosh(x); }),
      unary("tanh", [](const array& x) { return tanh(x); }),
      unary("arcsinh", [](const array& x) { return arcsinh(x); }),
      unary("arccosh", [](const array& x) { return arccosh(x); }, 1.5, 3.0),
      unary("arctanh", [](const array& x) { return arctanh(x); }, -0.8, 0.8),
      unary("sigmoid", [](const array& x) { return sigmoid(x); }),
      unary("erf", [](const array& x) { return erf(x); }),
      unary("erfinv", [](const array& x) { return erfinv(x); }, -0.8, 0.8),
      unary("scalar_operand", [](const array& x) { return x * 0.5 + 2.0; }),
      binary("add", [](const array& a, const array& b) { return a + b; }),
      binary("subtract", [](const array& a, const array& b) { return a - b; }, {3}, {2, 3}),
      binary("multiply", [](const array& a, const array& b) { return a * b; }, {2, 1, 3}, {4, 1}),
      binary("divide", [](const array& a, const array& b) { return a / b; }, {2, 3}, {3}, 0.5, 2.0),
      binary("remainder", [](const array& a, const array& b) { return remainder(a, b); }, {2, 3}, {3}, 0.3, 0.9),
      binary("power", [](const array& a, const array& b) { return power(a, b); }, {2, 3}, {3}, 0.5, 2.0),
      binary("maximum", [](const array& a, const array& b) { return maximum(a, b); }),
      binary("minimum", [](const array& a, const array& b) { return minimum(a, b); }),
      binary("logaddexp", [](const array& a, const array& b) { return logaddexp(a, b); }),
      binary("arctan2", [](const array& a, const array& b) { return arctan2(a, b); }, {2, 3}, {2, 3}, 0.5, 2.0),
      binary("where", [](const array& a, const array& b) { return where(greater(a, b), a * 2.0, b); }),
      binary("comparisons_and_logic",
             [](const array& a, const array& b) {
               auto keep = logical_or(logical_and(less(a, b), not_equal(a, b)), greater_equal(a, array(1.5)));
               return where(logical_and(keep, less_equal(b, array(3.0))), a, b) * astype(equal(a, a), float64);
             }),
      // views and layout
      Case{"broadcast_reshape_transpose", {{3, 1}}, [](const V& x) {
             return V{transpose(reshape(broadcast_to(x[0], {2, 3, 4}), {6, 4}), {1, 0})};
           }},
      Case{"slices", {{4, 5}}, [](const V& x) {
             return V{slice(x[0], {3, 1}, {0, 5}, {-2, 2}), slice(x[0], {1, 0}, {3, 2})};
           }},
      Case{"as_strided", {{3, 4}}, [](const V& x) { return V{as_strided(x[0], {3, 3}, {2, 1}, 1)}; }},
      Case{"diagonal", {{3, 4, 2}}, [](const V& x) {
             return V{diagonal(x[0], 1, 0, 1), diagonal(x[0], -1, 2, 1)};
           }},
      Case{"copy_concatenate_pad", {{2, 3}, {2, 2}}, [](const V& x) {
             return V{pad(concatenate({copy(x[0]), x[1] * 3.0}, 1), {{1, 0}, {0, 2}}, array(0.5, float64))};
           }},
      Case{"pad_value", {{2, 3}, {}}, [](const V& x) { return V{pad(x[0], {{1, 1}, {2, 0}}, x[1])}; }, -2.0, 2.0,
           1e-6, 1e-5},
      Case{"depends", {{2, 3}, {3}}, [](const V& x) { return V{depends({x[0] * 2.0}, {x[1]})[0] + x[1]}; }},
      Case{"split_stack", {{4, 3}}, [](const V& x) {
             auto parts = split(x[0], 2, 0);
             return V{stack({parts[1], parts[0] * 2.0}, 1)};
           }},
      // reductions
      Case{"sum_mean_var", {{3, 4, 2}}, [](const V& x) {
             return V{sum(x[0], {0, 2}), mean(x[0], -1), var(x[0], {1}, true)};
           }},
      Case{"prod", {{2, 3}}, [](const V& x) { return V{prod(x[0], 1)}; }, 0.5, 2.0},
      Case{"max_min", {{3, 4}}, [](const V& x) { return V{max(x[0], 1), min(x[0], {0, 1})}; }},
      Case{"softmax_logsumexp", {{3, 5}}, [](const V& x) {
             return V{softmax(x[0], -1), logsumexp(x[0], 1), softmax(x[0], 0, true)};
           }},
      // Indices computed from the input carry no derivative: as in MLX, they go through stop_gradient.
      Case{"argmax_take", {{3, 4}}, [](const V& x) {
             return V{take_along_axis(x[0], stop_gradient(expand_dims(argmax(x[0], 1), 1)), 1)};
           }},
      // sorting and scans
      Case{"sort", {{3, 5}}, [](const V& x) { return V{sort(x[0], 1), sort(x[0], 0)}; }},
      Case{"topk_partition", {{2, 6}}, [](const V& x) { return V{topk(x[0], 2, 1), partition(x[0], 3, 1)}; }},
      Case{"argsort_take", {{2, 5}},
           [](const V& x) { return V{take_along_axis(x[0], stop_gradient(argsort(x[0], 1)), 1)}; }},
      Case{"cumsum", {{3, 4}}, [](const V& x) {
             return V{cumsum(x[0], 1), cumsum(x[0], 0, true, false), cumsum(x[0], 1, false, false)};
           }},
      Case{"cumprod", {{2, 4}}, [](const V& x) {
             return V{cumprod(x[0], 1), cumprod(x[0], 1, true), cumprod(x[0], 1, false, false)};
           }, 0.5, 2.0},
      Case{"cummax_cummin", {{3, 5}}, [](const V& x) {
             // Exclusive max scans start at -inf: clipped so finite differences stay finite.
             return V{cummax(x[0], 1), cummin(x[0], 1, true), maximum(cummax(x[0], 0, false, false), array(-10.0))};
           }},
      Case{"logcumsumexp", {{2, 5}}, [](const V& x) {
             return V{logcumsumexp(x[0], 1), maximum(logcumsumexp(x[0], 1, true, false), array(-10.0))};
           }},
      // products
      Case{"matmul", {{2, 3, 4}, {4, 2}}, [](const V& x) { return V{matmul(x[0], x[1])}; }},
      Case{"addmm", {{3, 4}, {4, 2}, {2}}, [](const V& x) { return V{addmm(x[2], x[0], x[1], 0.5F, 2.0F)}; }},
      Case{"einsum", {{2, 3}, {3, 4}, {4}}, [](const V& x) { return V{einsum("ij,jk,k->i", {x[0], x[1], x[2]})}; }},
      Case{"hadamard", {{3, 8}}, [](const V& x) { return V{hadamard_transform(x[0], 0.5F)}; }},
      Case{"hadamard_nonsymmetric", {{2, 40}}, [](const V& x) { return V{hadamard_transform(x[0])}; }},  // H_20
      Case{"gather_mm", {{3, 2, 4}, {2, 4, 3}}, [](const V& x) {
             return V{gather_mm(x[0], x[1], array({2, 0, 2}, uint32), array({1, 1, 0}, uint32))};
           }, -2.0, 2.0, 1e-6, 1e-5},
      Case{"block_masked_mm", {{32, 64}, {64, 32}}, [](const V& x) {
             return V{block_masked_mm(x[0], x[1], 32, std::nullopt, array({true, false}, {1, 2}),
                                      array({1.0, 0.5}, {2, 1}, float64))};
           }, -2.0, 2.0, 1e-6, 1e-5},
      Case{"segmented_mm", {{2, 6}, {6, 3}}, [](const V& x) {
             return V{segmented_mm(x[0], x[1], array({0, 2, 2, 6}, {2, 2}, uint32))};
           }, -2.0, 2.0, 1e-6, 1e-5},
      // indexing
      Case{"take_gather", {{5, 3}}, [](const V& x) {
             return V{take(x[0], array({4, 0, 4, 2}), 0), gather(x[0], {array({1, 3})}, {0}, {1, 2})};
           }},
      Case{"scatter", {{4, 3}, {2, 1, 3}}, [](const V& x) {
             return V{scatter(x[0], {array({3, 1})}, x[1], {0}), scatter_add(x[0], {array({2, 2})}, x[1], {0})};
           }},
      Case{"scatter_reduce", {{4, 3}, {3, 1, 3}}, [](const V& x) {
             auto idx = array({2, 0, 2});  // a duplicate: two updates meet at row 2
             return V{scatter_prod(x[0], {idx}, x[1], {0}), scatter_max(x[0], {idx}, x[1], {0}),
                      scatter_min(x[0], {idx}, x[1], {0})};
           }},
      Case{"scatter_axis_reduce", {{3, 4}, {3, 2}}, [](const V& x) {
             // No public op makes a reducing ScatterAxis; the primitive itself, with duplicates in rows 1 and 2.
             auto idx = array({0, 3, 1, 1, 2, 2}, {3, 2});
             auto make = [&](ScatterType type) {
               return array(x[0].shape(), x[0].dtype(), ScatterAxis{type, 1}, {x[0], idx, x[1]}, x[0].stream());
             };
             return V{make(ScatterType::prod), make(ScatterType::max), make(ScatterType::min)};
           }},
      Case{"slice_update_reduce", {{4, 5}, {2, 2}}, [](const V& x) {
             return V{slice_update_prod(x[0], x[1], {1, 0}, {3, 4}, {1, 2}),
                      slice_update_max(x[0], x[1], {0, 3}, {2, 5}), slice_update_min(x[0], x[1], {2, 1}, {4, 3})};
           }},
      Case{"put_along_axis", {{3, 4}, {3, 2}}, [](const V& x) {
             auto idx = array({0, 3, 1, 2, 3, 0}, {3, 2});
             return V{put_along_axis(x[0], idx, x[1], 1), scatter_add_axis(x[0], idx, x[1], 1)};
           }},
      Case{"slice_update", {{4, 5}, {2, 2}}, [](const V& x) {
             return V{slice_update(x[0], x[1], {1, 0}, {3, 4}, {1, 2}), slice_update_add(x[0], x[1], {0, 3}, {2, 5})};
           }},
      Case{"dynamic_slices", {{5, 4}, {2, 4}}, [](const V& x) {
             auto start = array({2});
             return V{slice(x[0], start, {0}, {2, 4}), slice_update(x[0], x[1], start, {0})};
           }},
      Case{"masked_scatter", {{3, 3}, {5}}, [](const V& x) {
             auto mask = array({true, false, true, false, true, true, false, false, true}, {3, 3});
             return V{masked_scatter(x[0], mask, x[1])};
           }, -2.0, 2.0, 1e-6, 1e-5},
      // fft (complex64 inside: float32 precision)
      Case{"fft", {{2, 6}}, [](const V& x) { return V{fft_features(fft::fft(x[0])), fft_features(fft::ifft(x[0]))}; },
           -2.0, 2.0, 1e-3, 2e-3},
      Case{"rfft_irfft", {{2, 8}}, [](const V& x) {
             auto spectrum = fft::rfft(x[0]);
             return V{fft_features(spectrum), fft::irfft(spectrum * array(complex64_t{0.5F, 1.0F}))};
           }, -2.0, 2.0, 1e-3, 2e-3},
      Case{"power_spectrum", {{2, 5}}, [](const V& x) {
             auto z = fft::fft(x[0]);
             return V{real(z * conjugate(z))};
           }, -2.0, 2.0, 1e-3, 2e-3},
      Case{"fft2", {{3, 5}}, [](const V& x) { return V{fft_features(fft::fft2(x[0]))}; }, -2.0, 2.0, 1e-3, 2e-3},
      // convolution
      Case{"conv1d_strided_padded", {{2, 7, 3}, {4, 3, 3}}, [](const V& x) {
             return V{conv1d(x[0], x[1], 2, 1, 1, 1)};
           }},
      Case{"conv2d_dilated_grouped", {{1, 5, 5, 4}, {4, 2, 2, 2}}, [](const V& x) {
             return V{conv2d(x[0], x[1], {1, 2}, {1, 0}, {2, 1}, 2)};
           }},
      Case{"conv_general_flipped", {{1, 4, 4, 2}, {3, 3, 2, 2}}, [](const V& x) {
             return V{conv_general(x[0], x[1], {1, 1}, {1, 0}, {0, 1}, {1, 1}, {2, 1}, 1, true)};
           }},
      Case{"conv_transpose", {{1, 4, 2}, {2, 3, 2}}, [](const V& x) {
             return V{conv_transpose1d(x[0], x[1], 2, 1)};
           }},
      // linear algebra
      Case{"inv_solve", {{3, 3}, {3, 2}}, [](const V& x) {
             auto a = x[0] + eye(3, float64) * 3.0;
             return V{linalg::inv(a), linalg::solve(a, x[1])};
           }},
      Case{"triangular", {{3, 3}, {3, 2}}, [](const V& x) {
             auto a = x[0] + eye(3, float64) * 3.0;
             return V{linalg::tri_inv(a, true), linalg::solve_triangular(a, x[1], false)};
           }},
      Case{"cholesky", {{3, 3}}, [](const V& x) {
             auto a = matmul(x[0], transpose(x[0])) + eye(3, float64) * 2.0;
             return V{linalg::cholesky(a), linalg::cholesky(a, true)};
           }},
      Case{"eigh", {{3, 3}}, [](const V& x) {
             auto a = x[0] + transpose(x[0]);
             auto [w, v] = linalg::eigh(a);
             return V{w, square(v), linalg::eigvalsh(a)};
           }},
      Case{"qr", {{4, 3}}, [](const V& x) {
             auto [q, r] = linalg::qr(x[0]);
             return V{q, r};
           }},
      Case{"qr_wide", {{3, 5}}, [](const V& x) {
             auto [q, r] = linalg::qr(x[0]);
             return V{q, r};
           }},
      Case{"svd_values", {{3, 4}}, [](const V& x) { return V{linalg::svd(x[0], false)[0]}; }},
      // Sign-invariant functions of the first K singular vectors (the rest of U or Vt is an arbitrary basis).
      Case{"svd_tall", {{4, 3}}, [](const V& x) { return svd_features(x[0]); }},
      Case{"svd_wide", {{2, 4}}, [](const V& x) { return svd_features(x[0]); }},
      Case{"svd_square", {{3, 3}}, [](const V& x) { return svd_features(x[0]); }},
      Case{"lu_square", {{4, 4}}, [](const V& x) {
             auto plu = linalg::lu(x[0]);
             return V{linalg::lu_factor(x[0]).first, plu[1], plu[2]};
           }},
      Case{"det_slogdet", {{3, 3}}, [](const V& x) {  // through lu_factor
             return V{linalg::det(x[0]), linalg::slogdet(x[0]).second};
           }},
      Case{"lu_tall", {{5, 3}}, [](const V& x) { return V{linalg::lu_factor(x[0]).first}; }},
      Case{"lu_wide", {{3, 5}}, [](const V& x) { return V{linalg::lu_factor(x[0]).first}; }},
      Case{"factorizations_batched", {{2, 3, 3}, {2, 2, 3}}, [](const V& x) {
             auto [q, r] = linalg::qr(x[1]);
             return V{linalg::lu_factor(x[0]).first, fft_features(linalg::eigvals(x[0])), q, r,
                      linalg::svd(x[1], false)[0]};
           }, -2.0, 2.0, 1e-3, 2e-3},
      // eig's outputs are complex64 (float32 precision); only phase-invariant functions of eigenvectors.
      Case{"eig", {{3, 3}}, [](const V& x) {
             auto [w, v] = linalg::eig(x[0]);
             return V{fft_features(w), real(v * conjugate(v)), fft_features(linalg::eigvals(x[0] * 2.0))};
           }, -2.0, 2.0, 1e-3, 2e-3},
      // fused ops
      Case{"rms_norm", {{2, 3, 4}, {4}}, [](const V& x) { return V{fast::rms_norm(x[0], x[1], 1e-5F)}; }},
      Case{"layer_norm", {{2, 5}, {5}, {5}}, [](const V& x) { return V{fast::layer_norm(x[0], x[1], x[2], 1e-5F)}; }},
      Case{"rope", {{1, 2, 3, 4}}, [](const V& x) {
             return V{fast::rope(x[0], 4, false, 10000.0F, 1.0F, 2), fast::rope(x[0], 2, true, 100.0F, 0.5F, 0)};
           }},
      Case{"attention", {{1, 2, 3, 4}, {1, 1, 3, 4}, {1, 1, 3, 4}}, [](const V& x) {
             return V{fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.5F, "causal")};
           }},
      Case{"attention_mask_sinks", {{1, 2, 2, 3}, {1, 2, 4, 3}, {1, 2, 4, 2}, {2}}, [](const V& x) {
             auto mask = array({true, false, true, true, false, true, true, true}, {2, 4});
             return V{fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.7F, "array", mask, x[3])};
           }},
      // the fused vjps of the fused ops, differentiated again (second derivatives)
      Case{"rms_norm_vjp", {{2, 3, 4}, {4}, {2, 3, 4}}, [](const V& x) {
             return vjp([](const V& v) { return V{fast::rms_norm(v[0], v[1], 1e-5F)}; }, {x[0], x[1]}, {x[2]}).second;
           }},
      Case{"layer_norm_vjp", {{2, 5}, {5}, {5}, {2, 5}}, [](const V& x) {
             auto f = [](const V& v) { return V{fast::layer_norm(v[0], v[1], v[2], 1e-5F)}; };
             return vjp(f, {x[0], x[1], x[2]}, {x[3]}).second;
           }},
      Case{"attention_vjp", {{1, 2, 3, 4}, {1, 1, 3, 4}, {1, 1, 3, 4}, {1, 2, 3, 4}}, [](const V& x) {
             auto f = [](const V& v) { return V{fast::scaled_dot_product_attention(v[0], v[1], v[2], 0.5F, "causal")}; };
             return vjp(f, {x[0], x[1], x[2]}, {x[3]}).second;
           }},
      Case{"dequantize_scales", {{2, 2}, {2, 2}}, [](const V& x) {
             auto w = array({0x12345678U, 0x9abcdef0U, 0x0f1e2d3cU, 0x4b5a6978U, 1U, 2U, 3U, 4U}, {2, 4}, uint32);
             return V{dequantize(w, x[0], x[1], 32, 2)};
           }, -2.0, 2.0, 1e-3, 2e-3},
  };
  return all;
}

INSTANTIATE_TEST_SUITE_P(Primitives, Derivatives, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

/// vmap of f over inputs mapped along in_axes (-1: shared) against f applied to each slice, compared exactly up to
/// `tolerance`.
void expect_vmap_like_loop(const Function& f, const std::vector<array>& inputs, const std::vector<int>& in_axes,
                           double tolerance = 1e-9) {
  auto mapped = vmap(f, in_axes)(inputs);
  int size = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (in_axes[i] >= 0) {
      size = inputs[i].shape(in_axes[i]);
    }
  }
  for (int b = 0; b < size; ++b) {
    std::vector<array> slice_inputs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      slice_inputs.push_back(in_axes[i] < 0 ? inputs[i] : take(inputs[i], b, in_axes[i]));
    }
    auto expected = f(slice_inputs);
    for (size_t k = 0; k < expected.size(); ++k) {
      EXPECT_TRUE(close(values_of(astype(take(mapped[k], b, 0), float64)), values_of(astype(expected[k], float64)),
                        tolerance, "output " + std::to_string(k) + " of slice " + std::to_string(b)));
    }
  }
}

TEST(BatchedRules, RandomBitsOverMappedKeys) {
  auto keys = random::split(random::key(3), 4);  // (4, 2)
  Function f = [](const std::vector<array>& in) {
    return std::vector<array>{random::bits({3, 5}, 4, in[0]), random::bits({2}, 1, in[0])};
  };
  expect_vmap_like_loop(f, {keys}, {0});
  expect_vmap_like_loop(f, {transpose(keys)}, {1});
}

TEST(BatchedRules, SearchSortedOverMappedRows) {
  double nan = std::nan("");
  auto rows = array({1.0, 2.0, 2.0, nan, -1.0, 0.0, 3.0, 3.0, 0.5, 0.5, 0.5, 0.5}, {3, 4});
  auto values = array({2.0, nan, -5.0, 3.0, 0.5, 9.0}, {3, 2});
  for (bool right : {false, true}) {
    Function f = [right](const std::vector<array>& in) { return std::vector<array>{searchsorted(in[0], in[1], right)}; };
    expect_vmap_like_loop(f, {rows, values}, {0, 0});
    expect_vmap_like_loop(f, {rows, values}, {0, -1});
    expect_vmap_like_loop(f, {transpose(rows), transpose(values)}, {1, 1});
  }
  // Longer rows with repeated values and NaN tails, values drawn from the same small set (ties on every side).
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> pick(-3, 4);  // 4 stands for NaN
  auto draw = [&](int count) {
    std::vector<double> out;
    for (int i = 0; i < count; ++i) {
      int k = pick(rng);
      out.push_back(k == 4 ? nan : k);
    }
    return out;
  };
  auto long_rows = sort(array(draw(5 * 37).begin(), Shape{5, 37}, float64), 1);
  auto long_values = array(draw(5 * 20).begin(), Shape{5, 20}, float64);
  for (bool right : {false, true}) {
    Function f = [right](const std::vector<array>& in) { return std::vector<array>{searchsorted(in[0], in[1], right)}; };
    expect_vmap_like_loop(f, {long_rows, long_values}, {0, 0});
  }
}

TEST(BatchedRules, MaskedScatterWithMappedMask) {
  std::mt19937 rng(5);
  // Each mapped mask (4) covers x's rows, as MLX's masked_scatter reads a mask of fewer dimensions.
  auto x = test::random_array({4, 3}, float64, rng);
  auto masks = array({true, false, true, true, false, false, false, false, true, true, true, true}, {3, 4});
  auto source = test::random_array({3, 3}, float64, rng);
  Function f = [](const std::vector<array>& in) { return std::vector<array>{masked_scatter(in[0], in[1], in[2])}; };
  expect_vmap_like_loop(f, {x, masks, source}, {-1, 0, 0});
  expect_vmap_like_loop(f, {x, masks, source}, {-1, 0, -1});
}

TEST(BatchedRules, DynamicSlicesWithMappedStarts) {
  std::mt19937 rng(8);
  auto x = test::random_array({4, 5, 4}, float64, rng);
  auto update = test::random_array({4, 2, 3}, float64, rng);
  // Negative starts count from the end once; starts past the end are clamped so the slice fits.
  auto starts = array({2, 1, -1, 0, 7, -9, -3, 3}, {4, 2});
  Function f = [](const std::vector<array>& in) {
    return std::vector<array>{slice(in[0], in[2], {0, 1}, {2, 3}), slice_update(in[0], in[1], in[2], {0, 1})};
  };
  expect_vmap_like_loop(f, {x, update, starts}, {0, 0, 0});
  expect_vmap_like_loop(f, {take(x, 1, 0), update, starts}, {-1, 0, 0});
  expect_vmap_like_loop(f, {take(x, 1, 0), take(update, 2, 0), transpose(starts)}, {-1, -1, 1});
}

TEST(BatchedRules, ViewOverEveryAxis) {
  auto x = reshape(arange(24.0F), {2, 3, 4});
  Function f = [](const std::vector<array>& in) {
    return std::vector<array>{view(in[0], uint8), view(in[0], int32), view(in[0], uint16)};
  };
  for (int axis = 0; axis < 3; ++axis) {
    expect_vmap_like_loop(f, {x}, {axis});
  }
}

TEST(BatchedRules, GatheredProductsWithMappedIndices) {
  std::mt19937 rng(6);
  auto a = test::random_array({3, 2, 4}, float64, rng);
  auto b = test::random_array({3, 2, 4, 3}, float64, rng);
  auto lhs = array({0, 2, 1, 1, 2, 2}, {3, 2}, uint32);
  auto rhs = array({1, 0, 0, 1, 1, 1}, {3, 2}, uint32);
  Function f = [](const std::vector<array>& in) { return std::vector<array>{gather_mm(in[0], in[1], in[2], in[3])}; };
  expect_vmap_like_loop(f, {a, b, lhs, rhs}, {-1, 0, 0, 0});
  expect_vmap_like_loop(f, {a, b, lhs, rhs}, {-1, -1, 0, -1});
  expect_vmap_like_loop(f, {a, b, lhs, rhs}, {-1, 0, -1, 0});
  // segmented_mm: only the segments mapped, or a mapped with shared segments.
  auto segments = array({0, 2, 1, 4, 0, 0, 3, 4, 2, 3, 0, 4}, {3, 2, 2}, uint32);
  Function g = [](const std::vector<array>& in) { return std::vector<array>{segmented_mm(in[0], in[1], in[2])}; };
  auto left = test::random_array({3, 2, 4}, float64, rng);
  auto right = test::random_array({4, 3}, float64, rng);
  expect_vmap_like_loop(g, {take(left, 0, 0), right, segments}, {-1, -1, 0});
  expect_vmap_like_loop(g, {left, right, take(segments, 1, 0)}, {0, -1, -1});
  // Convolution with a mapped weight and a shared input.
  auto x = test::random_array({2, 6, 4}, float64, rng);
  auto w = test::random_array({3, 6, 3, 2}, float64, rng);
  Function conv = [](const std::vector<array>& in) { return std::vector<array>{conv1d(in[0], in[1], 2, 1, 1, 2)}; };
  expect_vmap_like_loop(conv, {x, w}, {-1, 0});
}

TEST(BatchedRules, QuantizedProductsWithMappedWeights) {
  std::mt19937 rng(7);
  auto w = test::random_array({3, 8, 64}, float32, rng);
  auto q = quantize(w, 32, 4);
  auto x = test::random_array({3, 2, 64}, float32, rng);
  Function qmm = [](const std::vector<array>& in) {
    return std::vector<array>{quantized_matmul(in[0], in[1], in[2], in[3], true, 32, 4)};
  };
  expect_vmap_like_loop(qmm, {x, q[0], q[1], q[2]}, {0, 0, 0, 0}, 1e-5);
  expect_vmap_like_loop(qmm, {take(x, 0, 0), q[0], q[1], q[2]}, {-1, 0, 0, 0}, 1e-5);
  expect_vmap_like_loop(qmm, {x, take(q[0], 0, 0), q[1], take(q[2], 1, 0)}, {0, -1, 0, -1}, 1e-5);
  // gather_qmm over experts: x, the weights and the indices mapped in turn.
  auto experts = test::random_array({3, 2, 8, 64}, float32, rng);
  auto eq = quantize(experts, 32, 4);
  auto xs = test::random_array({3, 2, 1, 64}, float32, rng);
  auto lhs = array({0, 1, 1, 0, 0, 1}, {3, 2}, uint32);
  auto rhs = array({1, 0, 1, 1, 0, 0}, {3, 2}, uint32);
  Function gqmm = [](const std::vector<array>& in) {
    return std::vector<array>{gather_qmm(in[0], in[1], in[2], in[3], in[4], in[5], true, 32, 4)};
  };
  expect_vmap_like_loop(gqmm, {xs, eq[0], eq[1], eq[2], lhs, rhs}, {0, 0, 0, 0, 0, 0}, 1e-5);
  expect_vmap_like_loop(gqmm, {xs, take(eq[0], 0, 0), take(eq[1], 0, 0), take(eq[2], 0, 0), lhs, rhs},
                        {0, -1, -1, -1, -1, 0}, 1e-5);
  expect_vmap_like_loop(gqmm, {take(xs, 0, 0), eq[0], eq[1], eq[2], take(lhs, 0, 0), rhs}, {-1, 0, 0, 0, -1, -1},
                        1e-5);
}

template <size_t... I>
std::set<std::string> all_primitive_names(std::index_sequence<I...>) {
  return {std::string(std::variant_alternative_t<I, Primitive::Variant>::name)...};
}

TEST(DerivativeCoverage, EveryPrimitiveHasACaseOrAReason) {
  // Primitives without a derivative: no inputs, integer or bool results, or a clear error by design
  // (transforms_test.cpp checks the errors).
  const std::set<std::string> underivable{"Arange", "RandomBits", "ArgReduce", "ArgPartition", "SearchSorted",
                                          "IsNaN", "IsInf", "LogicalNot", "BitwiseInvert", "BitwiseAnd", "BitwiseOr",
                                          "BitwiseXor", "LeftShift", "RightShift", "Quantize", "Fp8Cast", "View"};
  // Checked by transforms_test.cpp: float32-only quantized products, and the primitives whose derivative is not
  // the function's (stop_gradient, custom rules); by tests/compile: the fused chains of compile; by tests/distributed:
  // the collectives, against finite differences taken across ranks.
  const std::set<std::string> elsewhere{"QuantizedMatmul", "GatherQMM", "StopGradient", "Custom", "Compiled",
                                        "Collective"};
  std::set<std::string> seen;
  for (const auto& c : cases()) {
    std::vector<array> stack = c.f(inputs_for(c));
    std::set<uintptr_t> visited;
    while (!stack.empty()) {
      auto a = stack.back();
      stack.pop_back();
      if (!a.has_primitive() || !visited.insert(a.node_id()).second) {
        continue;
      }
      seen.insert(std::string(name(a.primitive())));
      for (const auto& in : a.inputs()) {
        stack.push_back(in);
      }
    }
  }
  for (const auto& n : all_primitive_names(std::make_index_sequence<std::variant_size_v<Primitive::Variant>>{})) {
    EXPECT_TRUE(seen.contains(n) || underivable.contains(n) || elsewhere.contains(n)) << n << " has no derivative case";
  }
}

}  // namespace
}  // namespace nuvec
