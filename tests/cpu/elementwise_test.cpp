// Element-wise kernels (cpu/unary.cpp, cpu/binary.cpp, cpu/select.cpp) through the ops API.
// Expected values come from the NumPy oracle unless a test says otherwise; for floating
// dtypes NumPy computes in float64 (complex128) and rounds to the dtype, so the reference
// is correctly rounded (bfloat16, which NumPy lacks, is compared as float32 values).

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
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

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

using UnaryFn = array (*)(const array&, StreamOrDevice);
using BinaryFn = array (*)(const array&, const array&, StreamOrDevice);

const std::vector<Dtype> float_dtypes = {float32, float64, float16, bfloat16};
const std::vector<Dtype> integer_dtypes = {uint8, uint16, uint32, uint64, int8, int16, int32, int64};

/// An evaluated array of `dtype` holding `values` (converted as astype converts).
array make(const std::vector<double>& values, const Shape& shape, Dtype dtype) {
  auto out = astype(array(values.begin(), shape, float64), dtype);
  out.eval();
  return out;
}

/// Random values of `dtype` in [lo, hi) (integers: whole numbers), with `specials` written
/// over the first elements.
array sample(const Shape& shape, Dtype dtype, std::mt19937& rng, double lo, double hi,
             const std::vector<double>& specials = {}) {
  std::vector<double> values(shape_size(shape));
  std::uniform_real_distribution<double> dist(lo, hi);
  for (auto& v : values) {
    v = is_integer(dtype) ? std::floor(dist(rng)) : dist(rng);
  }
  for (size_t i = 0; i < specials.size() && i < values.size(); ++i) {
    values[i] = specials[i];
  }
  if (dtype == complex64) {
    std::vector<complex64_t> c(values.size());
    for (size_t i = 0; i < c.size(); ++i) {
      c[i] = {static_cast<float>(values[i]), static_cast<float>(dist(rng))};
    }
    return array(c.begin(), shape, complex64);
  }
  return make(values, shape, dtype);
}

const std::vector<double> float_specials = {nan, inf, -inf, -0.0, 0.0, 1.0, -1.0, 0.5};

/// NumPy code that widens the inputs a, b, c to x, y, z (float64, or complex128 for complex
/// inputs), evaluates `expr` and rounds the result to `out` (float32 for bfloat16). `expr`
/// may call r(v), which rounds v to `out` (to nearest even, also for bfloat16).
std::string widened(const std::string& expr, Dtype out, int inputs = 1) {
  std::string code = out == bfloat16
                         ? "def r(v):\n"
                           "    u = np.asarray(v).astype(np.float32).view(np.uint32)\n"
                           "    return ((u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000).view(np.float32)\n"
                         : "def r(v):\n    return np.asarray(v).astype('" + std::string(dtype_name(out)) + "')\n";
  for (int i = 0; i < inputs; ++i) {
    std::string from(1, static_cast<char>('a' + i));
    std::string to(1, "xyz"[i]);
    code += to + " = " + from + ".astype(np.complex128 if " + from + ".dtype.kind == 'c' else np.float64)\n";
  }
  auto name = std::string(out == bfloat16 ? "float32" : dtype_name(out));
  return code + "out = np.asarray(" + expr + ").astype('" + name + "')";
}

double rtol_of(Dtype dtype) { return test::default_rtol(dtype); }
double atol_of(Dtype dtype) {
  if (dtype == float16) {
    return 1e-3;
  }
  if (dtype == bfloat16) {
    return 1e-2;
  }
  if (dtype == complex64) {
    return 1e-5;
  }
  return dtype == float64 ? 1e-12 : 1e-6;
}

::testing::AssertionResult agrees(const array& actual, const std::string& code, const std::vector<array>& inputs,
                                  double rtol, double atol) {
  auto expected = numpy_ref(code, inputs);
  return matches(actual, expected, rtol, atol, actual.dtype() != bfloat16);
}
::testing::AssertionResult agrees(const array& actual, const std::string& code, const std::vector<array>& inputs) {
  return agrees(actual, code, inputs, rtol_of(actual.dtype()), atol_of(actual.dtype()));
}

/// The input in a non-contiguous layout with the same shape: a transposed or a flipped view.
array non_contiguous(const array& dense, int variant) {
  if (dense.ndim() < 2) {
    return dense;
  }
  if (variant % 2 == 0) {
    return transpose(contiguous(transpose(dense)));  // a column-major copy viewed back
  }
  return flip(contiguous(flip(dense, 0)), 0);  // negative strides on axis 0
}

// ---------------------------------------------------------------- unary, floating

struct UnaryCase {
  const char* name;
  UnaryFn op;
  const char* numpy;  // of x, widened
  double lo;
  double hi;
};

const char* erf_numpy = "np.vectorize(__import__('math').erf, otypes=[np.float64])(x)";

// erfinv from the inverse normal CDF (Python's statistics: Wichura's AS241, about 1e-16),
// on 1 - |v| so that the tail keeps its precision, and a series near 0.
const char* erfinv_numpy =
    "np.vectorize(lambda v, m=__import__('math'), nd=__import__('statistics').NormalDist(): "
    "m.nan if m.isnan(v) or abs(v) > 1 else m.copysign(m.inf, v) if abs(v) == 1 else "
    "m.sqrt(m.pi) / 2 * (v + m.pi / 12 * v**3 + 7 * m.pi**2 / 480 * v**5) if abs(v) < 1e-3 else "
    "m.copysign(-nd.inv_cdf((1 - abs(v)) / 2), v) / m.sqrt(2), otypes=[np.float64])(x)";

const std::vector<UnaryCase> float_unary_cases = {
    {"abs", abs, "np.abs(x)", -5, 5},
    {"negative", negative, "-x", -5, 5},
    {"sign", sign, "np.sign(x)", -2, 2},
    {"floor", floor, "np.floor(x)", -5, 5},
    {"ceil", ceil, "np.ceil(x)", -5, 5},
    {"round", round, "np.round(x)", -5, 5},
    {"square", square, "x * x", -5, 5},
    {"sqrt", sqrt, "np.sqrt(x)", 0, 10},
    {"rsqrt", rsqrt, "1 / np.sqrt(x)", 0.01, 10},
    {"reciprocal", reciprocal, "1 / x", -5, 5},
    {"exp", exp, "np.exp(x)", -10, 10},
    {"expm1", expm1, "np.expm1(x)", -3, 3},
    {"log", log, "np.log(x)", 0.01, 10},
    {"log2", log2, "np.log2(x)", 0.01, 10},
    {"log10", log10, "np.log10(x)", 0.01, 10},
    {"log1p", log1p, "np.log1p(x)", -0.9, 5},
    {"sin", sin, "np.sin(x)", -3, 3},
    {"cos", cos, "np.cos(x)", -3, 3},
    {"tan", tan, "np.tan(x)", -1.5, 1.5},
    {"arcsin", arcsin, "np.arcsin(x)", -1, 1},
    {"arccos", arccos, "np.arccos(x)", -1, 1},
    {"arctan", arctan, "np.arctan(x)", -5, 5},
    {"sinh", sinh, "np.sinh(x)", -5, 5},
    {"cosh", cosh, "np.cosh(x)", -5, 5},
    {"tanh", tanh, "np.tanh(x)", -5, 5},
    {"arcsinh", arcsinh, "np.arcsinh(x)", -5, 5},
    {"arccosh", arccosh, "np.arccosh(x)", 1, 5},
    {"arctanh", arctanh, "np.arctanh(x)", -0.99, 0.99},
    {"sigmoid", sigmoid, "1 / (1 + np.exp(-x))", -20, 20},
    {"erf", erf, erf_numpy, -3, 3},
    {"erfinv", erfinv, erfinv_numpy, -1, 1},
    {"degrees", degrees, "np.degrees(x)", -5, 5},
    {"radians", radians, "np.radians(x)", -500, 500},
};

TEST(ElementwiseUnary, FloatingFunctionsMatchNumpy) {
  std::mt19937 rng(1);
  int variant = 0;
  for (auto dtype : float_dtypes) {
    for (const auto& c : float_unary_cases) {
      auto x = sample({3, 40}, dtype, rng, c.lo, c.hi, float_specials);
      auto in = non_contiguous(x, variant++);
      auto out = c.op(in, {});
      EXPECT_EQ(out.dtype(), dtype) << c.name;
      EXPECT_TRUE(agrees(out, widened(c.numpy, dtype), {in})) << c.name << " on " << dtype;
    }
  }
}

TEST(ElementwiseUnary, FloatFunctionsOfIntegersComputeInFloat32) {
  std::mt19937 rng(2);
  for (auto dtype : {int32, uint8, int64, bool_}) {
    auto x = sample({2, 9}, dtype == bool_ ? uint8 : dtype, rng, 0, 10);
    x = astype(x, dtype);
    for (const auto& c : float_unary_cases) {
      if (std::string(c.name) == "erfinv" || std::string(c.name) == "arccosh" || std::string(c.name) == "arctanh" ||
          std::string(c.name) == "abs" || std::string(c.name) == "negative" || std::string(c.name) == "sign" ||
          std::string(c.name) == "square" || std::string(c.name) == "floor" || std::string(c.name) == "ceil" ||
          std::string(c.name) == "round") {
        continue;  // integer-preserving or outside the domain for whole numbers
      }
      auto out = c.op(x, {});
      EXPECT_EQ(out.dtype(), float32) << c.name;
      EXPECT_TRUE(agrees(out, widened(c.numpy, float32), {x})) << c.name << " on " << dtype;
    }
  }
}

TEST(ElementwiseUnary, ComplexFunctionsMatchNumpy) {
  std::mt19937 rng(3);
  struct Case {
    const char* name;
    UnaryFn op;
    const char* numpy;
  };
  const std::vector<Case> cases = {
      {"negative", negative, "-x"},
      {"square", square, "x * x"},
      {"sqrt", sqrt, "np.sqrt(x)"},
      {"rsqrt", rsqrt, "1 / np.sqrt(x)"},
      {"reciprocal", reciprocal, "1 / x"},
      {"exp", exp, "np.exp(x)"},
      {"expm1", expm1, "np.expm1(x)"},
      {"log", log, "np.log(x)"},
      {"log2", log2, "np.log2(x)"},
      {"log10", log10, "np.log10(x)"},
      {"log1p", log1p, "np.log1p(x)"},
      {"sin", sin, "np.sin(x)"},
      {"cos", cos, "np.cos(x)"},
      {"tan", tan, "np.tan(x)"},
      {"arcsin", arcsin, "np.arcsin(x)"},
      {"arccos", arccos, "np.arccos(x)"},
      {"arctan", arctan, "np.arctan(x)"},
      {"sinh", sinh, "np.sinh(x)"},
      {"cosh", cosh, "np.cosh(x)"},
      {"tanh", tanh, "np.tanh(x)"},
      {"arcsinh", arcsinh, "np.arcsinh(x)"},
      {"arccosh", arccosh, "np.arccosh(x)"},
      {"arctanh", arctanh, "np.arctanh(x)"},
      {"sigmoid", sigmoid, "1 / (1 + np.exp(-x))"},
      {"sign", sign, "np.where(x == 0, 0, x / np.where(x == 0, 1, np.abs(x)))"},
      {"abs", abs, "np.abs(x)"},
      {"conjugate", conjugate, "np.conj(x)"},
      {"real", real, "x.real"},
      {"imag", imag, "x.imag"},
      {"isnan", isnan, "np.isnan(x)"},
      {"isinf", isinf, "np.isinf(x)"},
  };
  std::vector<complex64_t> values = {
      {0, 0}, {1, 0}, {0, -1}, {static_cast<float>(nan), 1}, {1, static_cast<float>(inf)}};
  std::uniform_real_distribution<float> dist(-2, 2);
  while (values.size() < 60) {
    values.emplace_back(dist(rng), dist(rng));
  }
  auto x = array(values.begin(), {6, 10}, complex64);
  // Dividing by an infinite complex number: C's Annex G gives 0 where NumPy's division gives NaN.
  values[4] = {1, 1};
  auto finite_x = array(values.begin(), {6, 10}, complex64);
  int variant = 0;
  for (const auto& c : cases) {
    auto name = std::string(c.name);
    auto in = non_contiguous(name == "rsqrt" || name == "sign" ? finite_x : x, variant++);
    auto out = c.op(in, {});
    auto out_dtype = name == "abs" || name == "real" || name == "imag" ? float32
                     : name == "isnan" || name == "isinf"              ? bool_
                                                                       : complex64;
    EXPECT_EQ(out.dtype(), out_dtype) << c.name;
    EXPECT_TRUE(agrees(out, widened(c.numpy, out_dtype), {in}, 2e-5, 2e-5)) << c.name;
  }
}

TEST(ElementwiseUnary, IntegerFunctionsWrapAsNumpy) {
  std::mt19937 rng(4);
  struct Case {
    const char* name;
    UnaryFn op;
    const char* numpy;
  };
  const std::vector<Case> cases = {
      {"abs", abs, "np.abs(a)"},
      {"negative", negative, "-a"},
      {"sign", sign, "np.sign(a)"},
      {"square", square, "np.square(a)"},
      {"bitwise_invert", bitwise_invert, "~a"},
      {"floor", floor, "a"},
      {"round", round, "a"},
  };
  for (auto dtype : integer_dtypes) {
    auto limits = iinfo(dtype);
    std::vector<double> extremes = {static_cast<double>(limits.min), static_cast<double>(limits.max), 0, 1};
    if (dtype == int64 || dtype == uint64) {
      extremes = {0, 1, -3, 3};  // doubles cannot carry the 64-bit limits through make()
    }
    auto x = sample({4, 11}, dtype, rng, is_unsigned(dtype) ? 0 : -20, 20, extremes);
    for (const auto& c : cases) {
      auto out = c.op(non_contiguous(x, 1), {});
      EXPECT_EQ(out.dtype(), dtype) << c.name;
      EXPECT_TRUE(agrees(out, c.numpy, {non_contiguous(x, 1)}, 0, 0)) << c.name << " on " << dtype;
    }
  }
  auto big = array({std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), int64_t{-5}});
  EXPECT_TRUE(agrees(abs(big), "np.abs(a)", {big}, 0, 0));
  EXPECT_TRUE(agrees(negative(big), "-a", {big}, 0, 0));
  EXPECT_TRUE(agrees(square(big), "np.square(a)", {big}, 0, 0));
}

TEST(ElementwiseUnary, BooleanAndPredicates) {
  std::mt19937 rng(5);
  auto b = astype(sample({3, 7}, uint8, rng, 0, 2), bool_);
  EXPECT_TRUE(agrees(logical_not(b), "~a", {b}, 0, 0));
  EXPECT_TRUE(agrees(bitwise_invert(b), "~a", {b}, 0, 0));
  EXPECT_TRUE(agrees(logical_not(non_contiguous(b, 0)), "~a", {non_contiguous(b, 0)}, 0, 0));
  auto i = sample({5}, int32, rng, -2, 2, {0, 1});
  EXPECT_TRUE(agrees(logical_not(i), "np.logical_not(a)", {i}, 0, 0));
  for (auto dtype : float_dtypes) {
    auto x = sample({2, 12}, dtype, rng, -3, 3, float_specials);
    EXPECT_TRUE(agrees(isnan(x), "np.isnan(a)", {x}, 0, 0)) << dtype;
    EXPECT_TRUE(agrees(isinf(x), "np.isinf(a)", {x}, 0, 0)) << dtype;
    EXPECT_TRUE(agrees(isfinite(x), "np.isfinite(a)", {x}, 0, 0)) << dtype;
    EXPECT_TRUE(agrees(isposinf(x), "np.isposinf(a)", {x}, 0, 0)) << dtype;
    EXPECT_TRUE(agrees(isneginf(x), "np.isneginf(a)", {x}, 0, 0)) << dtype;
    EXPECT_TRUE(agrees(logical_not(x), "np.logical_not(a)", {x}, 0, 0)) << dtype;
    EXPECT_TRUE(agrees(trunc(x), "np.trunc(a)", {x}, 0, 0)) << dtype;
  }
  auto n = sample({4}, int16, rng, -5, 5);
  EXPECT_TRUE(agrees(isnan(n), "np.isnan(a)", {n}, 0, 0));
  EXPECT_TRUE(agrees(isfinite(n), "np.isfinite(a)", {n}, 0, 0));
}

TEST(ElementwiseUnary, RoundIsHalfToEvenAndTakesDecimals) {
  // Expected values written out: numpy's rint (ties to even).
  auto halves = make({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 1e8 + 0.5}, {8}, float64);
  EXPECT_TRUE(agrees(round(halves), "np.array([0, 2, 2, -0, -2, -2, 4, 1e8])", {}, 0, 0));
  for (auto dtype : {float32, float16, bfloat16}) {
    auto h = astype(halves, dtype);
    EXPECT_TRUE(agrees(round(h), "np.round(a)", {h}, 0, 0)) << dtype;
  }
  std::mt19937 rng(6);
  auto x = sample({50}, float32, rng, -100, 100);
  for (int decimals : {1, 2, 3, -1}) {
    EXPECT_TRUE(agrees(round(x, decimals), "np.round(a, " + std::to_string(decimals) + ")", {x}, 2e-6, 1e-6))
        << decimals;
  }
  auto xd = sample({50}, float64, rng, -100, 100);
  EXPECT_TRUE(agrees(round(xd, 2), "np.round(a, 2)", {xd}, 1e-15, 0));
  auto n = array({1234, -1250, 1350, 15, -25}, int32);
  EXPECT_TRUE(agrees(round(n, -2), "np.round(a, -2)", {n}, 0, 0));
  EXPECT_TRUE(agrees(round(n, -1), "np.round(a, -1)", {n}, 0, 0));
  EXPECT_EQ(round(n, -2).dtype(), int32);
}

TEST(ElementwiseUnary, SigmoidIsStableForLargeMagnitudes) {
  for (auto dtype : {float32, float64, float16, bfloat16}) {
    auto x = make({-1e4, -1000, -100, -30, -1, 0, 1, 30, 100, 1000, 1e4}, {11}, dtype);
    auto y = sigmoid(x);
    EXPECT_TRUE(agrees(y, widened("1 / (1 + np.exp(-x))", dtype), {x}, rtol_of(dtype), 1e-30)) << dtype;
    auto finite = all(isfinite(y));
    EXPECT_TRUE(finite.item<bool>()) << dtype;
  }
}

TEST(ElementwiseUnary, Float32TanhIsAccurateOnBothSidesOfItsBranchPoint) {
  // float32 tanh joins a polynomial and an exp form at |x| = 0.9 (cpu/math.h): a dense grid
  // around it, tiny and subnormal inputs, and the saturated range, within 2 ulp.
  std::vector<double> v = {nan, inf, -inf, 0.0, -0.0, 1e-30, -1e-10, 1e-5, 3e-39, -1e-44, 0.9, -0.9, 50, -100};
  for (int i = 0; i <= 4000; ++i) {
    v.push_back(0.85 + i * 2.5e-5);
    v.push_back(-10.0 + i * 5e-3);
  }
  auto x = make(v, {static_cast<int>(v.size())}, float32);
  EXPECT_TRUE(agrees(tanh(x), widened("np.tanh(x)", float32), {x}, 2.4e-7, 1e-45));
  // Odd to the last bit: tanh(-0) is -0, as the C library gives.
  auto zeros = tanh(negative(zeros_like(x)));
  eval(zeros);
  for (float z : std::vector<float>(zeros.data<float>(), zeros.data<float>() + zeros.size())) {
    EXPECT_TRUE(z == 0.0F && std::signbit(z));
  }
}

TEST(ElementwiseUnary, Float32ExpAndTanhAreAccurateOverEveryBinade) {
  // Every 4099th float32 bit pattern (both signs: denormals, huge values, infinities' neighbours and NaNs), then the
  // edges of exp's range, against the float nearest the float64 function (std::exp, std::tanh): exp within 1 ulp,
  // tanh within 2; NaN stays NaN, and results past the range are exactly +inf, 0 or +-1.
  std::vector<float> v;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    v.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  }
  const float big = std::numeric_limits<float>::max();
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float infinity = std::numeric_limits<float>::infinity();
  const std::vector<float> edges = {88.72283F, 88.7228394F, 89.0F,    90.0F,     -87.33F, -87.34F, -103.27F,
                                    -103.97F,  -104.0F,     -105.0F,  big,       -big,    tiny,    -tiny,
                                    0.0F,      -0.0F,       infinity, -infinity, NAN,     9.0F,    9.1F};
  v.insert(v.end(), edges.begin(), edges.end());
  const array x(v.begin(), {static_cast<int>(v.size())}, float32);
  auto e = exp(x);
  auto t = tanh(x);
  eval({e, t});
  auto ulps = [](float a, double reference) {
    const auto b = static_cast<float>(reference);
    if (std::isnan(a) || std::isnan(b)) {
      return std::isnan(a) && std::isnan(b) ? int64_t{0} : std::numeric_limits<int64_t>::max();
    }
    // Distance in representable floats (the bit patterns of negative floats counted downwards).
    auto order = [](float f) {
      const auto i = static_cast<int64_t>(std::bit_cast<int32_t>(f));
      return i < 0 ? std::numeric_limits<int32_t>::min() - i : i;
    };
    return std::abs(order(a) - order(b));
  };
  int failures = 0;
  for (size_t i = 0; i < v.size() && failures < 5; ++i) {
    const auto xi = static_cast<double>(v[i]);
    const float ei = e.data<float>()[i];
    const float ti = t.data<float>()[i];
    if (ulps(ei, std::exp(xi)) > 1 || ulps(ti, std::tanh(xi)) > 2) {
      ADD_FAILURE() << "x = " << v[i] << ": exp " << ei << " (float64 " << std::exp(xi) << "), tanh " << ti
                    << " (float64 " << std::tanh(xi) << ")";
      ++failures;
    }
  }
}

TEST(ElementwiseUnary, ErfInvIsAccurateToTheLastBits) {
  // Values near +-1 where the tail is steep, tiny values, and exact edge cases.
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 1.5, nan, 1e-30, -1e-8, 0.5, -0.5, 0.9, 0.999, -0.9999, 0.99999994};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  while (v.size() < 400) {
    double u = dist(rng);
    v.push_back(u);
    v.push_back(std::copysign(1.0 - std::pow(10.0, -8.0 * std::abs(u)), u));  // log-spread towards +-1
  }
  auto x32 = make(v, {static_cast<int>(v.size())}, float32);
  EXPECT_TRUE(agrees(erfinv(x32), widened(erfinv_numpy, float32), {x32}, 3e-7, 1e-37));
  auto x64 = make(v, {static_cast<int>(v.size())}, float64);
  EXPECT_TRUE(agrees(erfinv(x64), widened(erfinv_numpy, float64), {x64}, 1e-13, 1e-300));
}

// ---------------------------------------------------------------- binary

/// Every pair of float_specials, then random values.
std::pair<array, array> special_pairs(Dtype dtype, std::mt19937& rng, double lo, double hi) {
  std::vector<double> a;
  std::vector<double> b;
  for (double s : float_specials) {
    for (double t : float_specials) {
      a.push_back(s);
      b.push_back(t);
    }
  }
  std::uniform_real_distribution<double> dist(lo, hi);
  while (a.size() < 5 * 40) {
    a.push_back(dist(rng));
    b.push_back(dist(rng));
  }
  return {make(a, {5, 40}, dtype), make(b, {5, 40}, dtype)};
}

struct BinaryCase {
  const char* name;
  BinaryFn op;
  const char* numpy;  // of x and y, widened
  double lo;
  double hi;
};

TEST(ElementwiseBinary, FloatingFunctionsMatchNumpy) {
  const std::vector<BinaryCase> cases = {
      {"add", add, "x + y", -10, 10},
      {"subtract", subtract, "x - y", -10, 10},
      {"multiply", multiply, "x * y", -10, 10},
      {"divide", divide, "x / y", -10, 10},
      {"floor_divide", floor_divide, "np.floor(r(x / y))", -10, 10},  // floor(divide(a, b)), as the op builds it
      {"remainder", remainder, "np.remainder(x, y)", -10, 10},
      {"power", power, "np.power(x, y)", 0, 4},
      {"maximum", maximum, "np.maximum(x, y)", -10, 10},
      {"minimum", minimum, "np.minimum(x, y)", -10, 10},
      {"logaddexp", logaddexp, "np.logaddexp(x, y)", -30, 30},
      {"arctan2", arctan2, "np.arctan2(x, y)", -10, 10},
  };
  std::mt19937 rng(8);
  int variant = 0;
  for (auto dtype : float_dtypes) {
    for (const auto& c : cases) {
      auto [x, y] = special_pairs(dtype, rng, c.lo, c.hi);
      auto a = non_contiguous(x, variant++);
      auto out = c.op(a, y, {});
      EXPECT_EQ(out.dtype(), dtype) << c.name;
      // remainder's fmod loses nothing, but the widened reference sees the rounded inputs
      // exactly as we do, so the default tolerances hold for every case.
      EXPECT_TRUE(agrees(out, widened(c.numpy, dtype, 2), {a, y})) << c.name << " on " << dtype;
    }
  }
}

TEST(ElementwiseBinary, ComplexArithmeticAndComparisons) {
  std::mt19937 rng(9);
  std::vector<complex64_t> av = {{1, 2}, {1, 2}, {0, 0}, {static_cast<float>(nan), 0}, {1, 3}, {2, -1}};
  std::vector<complex64_t> bv = {{1, 2}, {1, 3}, {0, 0}, {1, 1}, {1, static_cast<float>(nan)}, {0, 0}};
  std::uniform_real_distribution<float> dist(-2, 2);
  std::uniform_int_distribution<int> small(-1, 1);
  while (av.size() < 48) {
    av.emplace_back(dist(rng), dist(rng));
    bv.emplace_back(av.size() % 3 == 0 ? av.back() : complex64_t(dist(rng), static_cast<float>(small(rng))));
  }
  auto a = array(av.begin(), {4, 12}, complex64);
  auto b = array(bv.begin(), {4, 12}, complex64);
  struct Case {
    const char* name;
    BinaryFn op;
    const char* numpy;
    double tol;
  };
  const std::vector<Case> cases = {
      {"add", add, "x + y", 1e-6},
      {"subtract", subtract, "x - y", 1e-6},
      {"multiply", multiply, "x * y", 1e-5},
      {"divide", divide, "x / y", 1e-5},
      {"power", power, "np.power(x, y)", 1e-3},
      {"maximum", maximum, "np.maximum(a, b)", 0},
      {"minimum", minimum, "np.minimum(a, b)", 0},
      {"logaddexp", logaddexp, "np.log(np.exp(x) + np.exp(y))", 1e-5},
      {"equal", equal, "a == b", 0},
      {"not_equal", not_equal, "a != b", 0},
      {"greater", greater, "a > b", 0},
      {"greater_equal", greater_equal, "a >= b", 0},
      {"less", less, "a < b", 0},
      {"less_equal", less_equal, "a <= b", 0},
  };
  for (const auto& c : cases) {
    auto out = c.op(a, b, {});
    EXPECT_TRUE(agrees(out, widened(c.numpy, out.dtype(), 2), {a, b}, c.tol, c.tol)) << c.name;
    auto t = non_contiguous(a, 1);
    EXPECT_TRUE(agrees(c.op(t, b, {}), widened(c.numpy, out.dtype(), 2), {t, b}, c.tol, c.tol)) << c.name;
  }
  // numpy's special cases of complex powers, written out.
  auto base = array({complex64_t(0, 0), complex64_t(0, 0), complex64_t(2, 0), complex64_t(1, 2)});
  auto exponent = array({complex64_t(0, 0), complex64_t(2, 0), complex64_t(-1, 0), complex64_t(2, 0)});
  EXPECT_TRUE(agrees(power(base, exponent), "np.array([1, 0, 0.5, -3+4j], dtype=np.complex64)", {}, 0, 0));
}

/// Integer operands with negatives, zeros and the type's extremes.
std::pair<array, array> integer_pairs(Dtype dtype, std::mt19937& rng) {
  const bool is_u = is_unsigned(dtype);
  std::vector<double> a = {7, 7, 0, 5, 0, 1, 2, 3};
  std::vector<double> b = {2, 0, 0, 0, 3, 1, 3, 2};
  if (!is_u) {
    for (auto [p, q] : {std::pair{-7, 2}, {7, -2}, {-7, -2}, {-6, 3}, {6, -3}, {-1, 0}, {-5, -1}, {0, -4}}) {
      a.push_back(p);
      b.push_back(q);
    }
  }
  if (dtype != int64 && dtype != uint64) {
    auto limits = iinfo(dtype);
    a.insert(a.end(),
             {static_cast<double>(limits.min), static_cast<double>(limits.max), static_cast<double>(limits.max)});
    b.insert(b.end(), {is_u ? 1.0 : -1.0, 2, static_cast<double>(limits.max)});
  }
  std::uniform_int_distribution<int> dist(is_u ? 0 : -30, 30);
  while (a.size() < 60) {
    a.push_back(dist(rng));
    b.push_back(dist(rng));
  }
  return {make(a, {6, 10}, dtype), make(b, {6, 10}, dtype)};
}

TEST(ElementwiseBinary, IntegerArithmeticMatchesNumpy) {
  struct Case {
    const char* name;
    BinaryFn op;
    const char* numpy;
  };
  const std::vector<Case> cases = {
      {"add", add, "a + b"},
      {"subtract", subtract, "a - b"},
      {"multiply", multiply, "a * b"},
      {"floor_divide", floor_divide, "a // b"},
      {"remainder", remainder, "a % b"},
      {"maximum", maximum, "np.maximum(a, b)"},
      {"minimum", minimum, "np.minimum(a, b)"},
      {"bitwise_and", bitwise_and, "a & b"},
      {"bitwise_or", bitwise_or, "a | b"},
      {"bitwise_xor", bitwise_xor, "a ^ b"},
      {"equal", equal, "a == b"},
      {"not_equal", not_equal, "a != b"},
      {"greater", greater, "a > b"},
      {"greater_equal", greater_equal, "a >= b"},
      {"less", less, "a < b"},
      {"less_equal", less_equal, "a <= b"},
      {"logical_and", logical_and, "np.logical_and(a, b)"},
      {"logical_or", logical_or, "np.logical_or(a, b)"},
      {"logical_xor", logical_xor, "np.logical_xor(a, b)"},
  };
  std::mt19937 rng(10);
  for (auto dtype : integer_dtypes) {
    auto [a, b] = integer_pairs(dtype, rng);
    for (const auto& c : cases) {
      auto out = c.op(a, b, {});
      EXPECT_TRUE(agrees(out, c.numpy, {a, b}, 0, 0)) << c.name << " on " << dtype;
      auto t = non_contiguous(b, 0);
      EXPECT_TRUE(agrees(c.op(a, t, {}), c.numpy, {a, t}, 0, 0)) << c.name << " on " << dtype << " (transposed)";
    }
    // Integer division by an integer gives float32 (true division).
    auto q = divide(a, b);
    EXPECT_EQ(q.dtype(), float32);
    EXPECT_TRUE(agrees(q, widened("x / y", float32, 2), {a, b}, 2e-6, 1e-6)) << dtype;
  }
}

TEST(ElementwiseBinary, IntegerFloorDivisionAndRemainderFollowNumpy) {
  // The cases CONFORMANCE.md names: negative operands round toward -inf, the remainder
  // takes the divisor's sign, and a zero divisor gives 0 (numpy's result, with a warning).
  for (auto dtype : {int8, int16, int32, int64}) {
    auto a = make({-7, 7, -7, 7, 5, 0, -5, -128, -1}, {9}, dtype);
    auto b = make({2, -2, -2, 2, 0, 0, 0, -1, 3}, {9}, dtype);
    EXPECT_TRUE(agrees(floor_divide(a, b), "a // b", {a, b}, 0, 0)) << dtype;
    EXPECT_TRUE(agrees(remainder(a, b), "a % b", {a, b}, 0, 0)) << dtype;
    auto parts = divmod(a, b);
    EXPECT_TRUE(agrees(parts[0], "np.divmod(a, b)[0]", {a, b}, 0, 0)) << dtype;
    EXPECT_TRUE(agrees(parts[1], "np.divmod(a, b)[1]", {a, b}, 0, 0)) << dtype;
  }
  auto q = floor_divide(array({-7, 7, 0}), array(0));
  EXPECT_TRUE(agrees(q, "np.array([0, 0, 0], dtype=np.int32)", {}, 0, 0));
  auto u = floor_divide(array({7U, 0U}, uint32), array({0U, 0U}, uint32));
  EXPECT_TRUE(agrees(u, "np.array([0, 0], dtype=np.uint32)", {}, 0, 0));
  auto minimum32 = array({std::numeric_limits<int32_t>::min()});
  EXPECT_TRUE(agrees(floor_divide(minimum32, array(-1)), "a // np.int32(-1)", {minimum32}, 0, 0));
  EXPECT_TRUE(agrees(remainder(minimum32, array(-1)), "a % np.int32(-1)", {minimum32}, 0, 0));
  // Floats: numpy's remainder keeps the divisor's sign.
  auto x = make({5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 3.0, -1e-30}, {8}, float32);
  auto y = make({2.0, 2.0, -2.0, -2.0, 3.0, -3.0, 0.0, 1.0}, {8}, float32);
  EXPECT_TRUE(agrees(remainder(x, y), "np.remainder(a, b)", {x, y}, 1e-7, 0));
}

TEST(ElementwiseBinary, IntegerPowerMatchesNumpyAndNegativeExponentsGiveZero) {
  std::mt19937 rng(11);
  for (auto dtype : integer_dtypes) {
    auto base = sample({30}, dtype, rng, is_unsigned(dtype) ? 0 : -6, 7, {0, 1, 0, 2, 3});
    auto exponent = sample({30}, dtype, rng, 0, 12, {0, 0, 5, 30, 41});
    EXPECT_TRUE(agrees(power(base, exponent), "np.power(a, b)", {base, exponent}, 0, 0)) << dtype;
  }
  // Negative exponents: numpy raises; nuvec gives 0 (MLX's choice, see math::power).
  auto p = power(array({2, 1, -1, 0, 3}), array({-1, -2, -3, -1, 0}));
  EXPECT_TRUE(agrees(p, "np.array([0, 0, 0, 0, 1], dtype=np.int32)", {}, 0, 0));
  auto boolean = power(array({true, true, false, false}), array({true, false, true, false}));
  EXPECT_TRUE(agrees(boolean, "np.array([True, True, False, True])", {}, 0, 0));
}

TEST(ElementwiseBinary, ShiftsHandleEveryCount) {
  // Counts outside [0, bits) give 0 (left) and 0 or -1 (right), as numpy.
  std::mt19937 rng(12);
  for (auto dtype : integer_dtypes) {
    const double bits = 8.0 * size_of(dtype);
    auto a = sample({40}, dtype, rng, is_unsigned(dtype) ? 0 : -100, 100, {1, -1, 3, -8});
    auto b = sample({40}, dtype, rng, is_unsigned(dtype) ? 0 : -2, bits + 3, {0, bits - 1, bits, bits + 1});
    EXPECT_TRUE(agrees(left_shift(a, b), "np.left_shift(a, b)", {a, b}, 0, 0)) << dtype;
    EXPECT_TRUE(agrees(right_shift(a, b), "np.right_shift(a, b)", {a, b}, 0, 0)) << dtype;
    EXPECT_TRUE(agrees(a << b, "a << b", {a, b}, 0, 0)) << dtype;
  }
}

TEST(ElementwiseBinary, BooleanOperands) {
  auto a = array({true, true, false, false});
  auto b = array({true, false, true, false});
  EXPECT_TRUE(agrees(add(a, b), "a + b", {a, b}, 0, 0));
  EXPECT_TRUE(agrees(multiply(a, b), "a * b", {a, b}, 0, 0));
  EXPECT_TRUE(agrees(maximum(a, b), "np.maximum(a, b)", {a, b}, 0, 0));
  EXPECT_TRUE(agrees(minimum(a, b), "np.minimum(a, b)", {a, b}, 0, 0));
  EXPECT_TRUE(agrees(bitwise_and(a, b), "a & b", {a, b}, 0, 0));
  EXPECT_TRUE(agrees(bitwise_or(a, b), "a | b", {a, b}, 0, 0));
  EXPECT_TRUE(agrees(bitwise_xor(a, b), "a ^ b", {a, b}, 0, 0));
  EXPECT_TRUE(agrees(a && b, "a & b", {a, b}, 0, 0));
  EXPECT_TRUE(agrees(a || b, "a | b", {a, b}, 0, 0));
  EXPECT_TRUE(agrees(logical_xor(a, b), "a ^ b", {a, b}, 0, 0));
  EXPECT_TRUE(agrees(greater(a, b), "a > b", {a, b}, 0, 0));
  EXPECT_TRUE(agrees(less_equal(a, b), "a <= b", {a, b}, 0, 0));
  auto x = make({0.0, nan, -0.0, 2.0}, {4}, float32);
  auto y = make({1.0, 0.0, 0.0, 0.0}, {4}, float32);
  EXPECT_TRUE(agrees(logical_and(x, y), "np.logical_and(a, b)", {x, y}, 0, 0));
  EXPECT_TRUE(agrees(logical_or(x, y), "np.logical_or(a, b)", {x, y}, 0, 0));
}

TEST(ElementwiseBinary, ComparisonsOfFloatsWithNaNAndInf) {
  const std::vector<BinaryCase> cases = {
      {"equal", equal, "x == y", 0, 0},    {"not_equal", not_equal, "x != y", 0, 0},
      {"greater", greater, "x > y", 0, 0}, {"greater_equal", greater_equal, "x >= y", 0, 0},
      {"less", less, "x < y", 0, 0},       {"less_equal", less_equal, "x <= y", 0, 0},
  };
  std::mt19937 rng(13);
  for (auto dtype : float_dtypes) {
    auto [x, y] = special_pairs(dtype, rng, -2, 2);
    for (const auto& c : cases) {
      EXPECT_TRUE(agrees(c.op(x, y, {}), widened(c.numpy, bool_, 2), {x, y}, 0, 0)) << c.name << " on " << dtype;
    }
  }
}

TEST(ElementwiseBinary, MaximumAndMinimumPropagateNaN) {
  // Expected values written out (numpy's maximum/minimum: a NaN on either side wins).
  auto a = make({nan, 1.0, nan, -inf, 2.0, -0.0}, {6}, float32);
  auto b = make({1.0, nan, nan, 3.0, inf, 0.0}, {6}, float32);
  EXPECT_TRUE(agrees(maximum(a, b), "np.array([np.nan, np.nan, np.nan, 3, np.inf, 0], np.float32)", {}, 0, 0));
  EXPECT_TRUE(agrees(minimum(a, b), "np.array([np.nan, np.nan, np.nan, -np.inf, 2, 0], np.float32)", {}, 0, 0));
  for (auto dtype : float_dtypes) {
    // The vector path (32 lanes and a tail) and the scalar-broadcast path.
    std::vector<double> v(37, 1.0);
    v[3] = nan;
    v[36] = nan;
    auto x = make(v, {37}, dtype);
    auto s = make({nan}, {}, dtype);
    EXPECT_TRUE(all(isnan(maximum(x, s))).item<bool>()) << dtype;
    EXPECT_TRUE(all(isnan(minimum(s, x))).item<bool>()) << dtype;
    auto m = maximum(x, make({2.0}, {}, dtype));
    EXPECT_TRUE(agrees(m, widened("np.maximum(x, 2)", dtype), {x})) << dtype;
  }
  auto clipped = clip(make({-2, nan, 0.5, 7}, {4}, float32), array(-1.0F), array(1.0F));
  EXPECT_TRUE(agrees(clipped, "np.array([-1, np.nan, 0.5, 1], np.float32)", {}, 0, 0));
}

TEST(ElementwiseBinary, EqualWithEqualNaN) {
  auto a = make({1, nan, inf, 2}, {4}, float32);
  auto b = make({1, nan, inf, 2}, {4}, float32);
  EXPECT_FALSE(array_equal(a, b).item<bool>());
  EXPECT_TRUE(array_equal(a, b, true).item<bool>());
  auto c = make({1, nan, inf, 3}, {4}, float32);
  EXPECT_FALSE(array_equal(a, c, true).item<bool>());
  auto z = array({complex64_t(1, static_cast<float>(nan))});
  EXPECT_TRUE(array_equal(z, z, true).item<bool>());
  EXPECT_FALSE(array_equal(z, z, false).item<bool>());
}

TEST(ElementwiseBinary, IsCloseMatchesNumpy) {
  std::mt19937 rng(14);
  std::vector<double> a;
  std::vector<double> b;
  std::uniform_real_distribution<double> dist(-10, 10);
  for (int i = 0; i < 40; ++i) {
    double v = dist(rng);
    a.push_back(v);
    b.push_back(i % 3 == 0 ? v * (1 + 1e-7) : i % 3 == 1 ? v * (1 + 1e-3) : v + 1e-9);
  }
  a.insert(a.end(), {nan, nan, inf, inf, -inf, 0.0});
  b.insert(b.end(), {nan, 1.0, inf, -inf, -inf, 1e-9});
  auto x = make(a, {46}, float64);
  auto y = make(b, {46}, float64);
  EXPECT_TRUE(agrees(isclose(x, y), "np.isclose(a, b)", {x, y}, 0, 0));
  EXPECT_TRUE(agrees(isclose(x, y, 1e-5, 1e-8, true), "np.isclose(a, b, equal_nan=True)", {x, y}, 0, 0));
  EXPECT_TRUE(agrees(isclose(x, y, 1e-2, 0.0), "np.isclose(a, b, rtol=1e-2, atol=0)", {x, y}, 0, 0));
  EXPECT_FALSE(allclose(x, y).item<bool>());
  EXPECT_TRUE(allclose(x, x, 1e-5, 1e-8, true).item<bool>());
}

TEST(ElementwiseBinary, OpsRejectDtypesTheKernelsLack) {
  auto z = array({complex64_t(1, 1)});
  auto message = [](const std::function<void()>& fn) -> std::string {
    try {
      fn();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(message([&] { (void)arctan2(z, z); }), "[arctan2] Not supported for complex64 inputs.");
  EXPECT_EQ(message([&] { (void)remainder(z, z); }), "[remainder] Not supported for complex64 inputs.");
  EXPECT_EQ(message([&] { (void)erf(z); }), "[erf] Not supported for complex64 inputs.");
  EXPECT_NE(message([&] { (void)left_shift(array(1.0F), array(1)); }).find("[left_shift] Only integer"),
            std::string::npos);
}

TEST(ElementwiseUnary, NanToNum) {
  for (auto dtype : {float32, float64, float16}) {
    auto x = make({nan, inf, -inf, 1.5, -0.0}, {5}, dtype);
    EXPECT_TRUE(agrees(nan_to_num(x), "np.nan_to_num(a)", {x}, 0, 0)) << dtype;
    EXPECT_TRUE(
        agrees(nan_to_num(x, 7.0F, 100.0F, -100.0F), "np.nan_to_num(a, nan=7, posinf=100, neginf=-100)", {x}, 0, 0))
        << dtype;
  }
}

// ---------------------------------------------------------------- layouts

struct LayoutCase {
  const char* name;
  array a;
  array b;
};

std::vector<LayoutCase> layout_cases(Dtype dtype, std::mt19937& rng) {
  auto r = [&](const Shape& shape) { return sample(shape, dtype, rng, -8, 8); };
  auto strided = [&](const Shape& shape) {
    Shape wide = shape;
    for (auto& d : wide) {
      d *= 2;
    }
    return slice(r(wide), Shape(shape.size(), 0), wide, Shape(shape.size(), 2));
  };
  auto big = r({300, 520});
  auto long_base = r({3 * 70000});
  return {
      {"(3,1) with (1,4)", r({3, 1}), r({1, 4})},
      {"vector with scalar", r({5}), r({})},
      {"scalar with vector", r({}), r({5})},
      {"scalar with scalar", r({}), r({})},
      {"matrix with row", r({4, 5}), r({5})},
      {"matrix with column", r({4, 5}), r({4, 1})},
      {"size-1 axes", r({1, 5, 1}), r({1, 5, 1})},
      {"3-d with broadcast middle", r({2, 1, 4}), r({2, 3, 4})},
      {"empty with row", r({0, 3}), r({1, 3})},
      {"empty with scalar", r({0}), r({})},
      {"empty middle axis", r({2, 0, 3}), r({2, 1, 3})},
      {"transposed with dense", transpose(r({5, 4})), r({4, 5})},
      {"flipped with flipped", flip(r({4, 5}), 1), flip(r({4, 5}), 0)},
      {"strided with dense", strided({3, 4}), r({3, 4})},
      {"3-d permuted", transpose(r({3, 4, 2}), {2, 0, 1}), r({2, 3, 4})},
      {"transposed with column broadcast", transpose(r({6, 7})), r({7, 1})},
      {"large transposed with row (threads over rows)", transpose(big), r({520, 1})},
      {"large strided 1-d with scalar (threads over one run)", slice(long_base, {0}, {3 * 70000}, {3}), r({})},
      {"large contiguous", r({1 << 17}), r({1 << 17})},
      {"large scalar broadcast", r({}), r({1 << 17})},
      {"flipped with scalar", flip(r({4, 5}), 1), r({})},
      {"(1,1) with flipped 3-d", r({1, 1}), flip(r({2, 3, 4}), 0)},
      {"transposed with (1,1,1)", transpose(r({3, 4, 2})), r({1, 1, 1})},
  };
}

TEST(ElementwiseLayout, BinaryOpsOverEveryLayout) {
  std::mt19937 rng(15);
  for (auto dtype : {float32, int32, float16, complex64, uint8}) {
    for (const auto& c : layout_cases(dtype, rng)) {
      EXPECT_TRUE(agrees(add(c.a, c.b), "a + b", {c.a, c.b})) << c.name << " on " << dtype;
      EXPECT_TRUE(agrees(multiply(c.a, c.b), "a * b", {c.a, c.b})) << c.name << " on " << dtype;
      if (dtype != complex64) {
        EXPECT_TRUE(agrees(maximum(c.a, c.b), "np.maximum(a, b)", {c.a, c.b})) << c.name << " on " << dtype;
        EXPECT_TRUE(agrees(less(c.a, c.b), "a < b", {c.a, c.b})) << c.name << " on " << dtype;
      }
    }
  }
}

TEST(ElementwiseLayout, LargeOutputsStreamPastTheCaches) {
  // Outputs of 32 MiB and more are written with streaming stores from the first 64-byte boundary of each thread's
  // part (an odd length puts the second part's start inside a line): a unary op, a binary op with an array and
  // with a scalar operand, an output donated by its input (lines already in cache), and float64; against loops
  // over the same values here.
  const int64_t n = (int64_t{1} << 23) + 3;
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> dist(-4.0F, 4.0F);
  std::vector<float> xs(static_cast<size_t>(n));
  std::vector<float> ys(static_cast<size_t>(n));
  for (size_t i = 0; i < xs.size(); ++i) {
    xs[i] = dist(rng);
    ys[i] = dist(rng);
  }
  const array x(xs.begin(), {static_cast<int>(n)}, float32);
  const array y(ys.begin(), {static_cast<int>(n)}, float32);
  auto e = exp(x);
  auto s = add(x, y);
  auto p = multiply(x, array(2.5F));
  auto d = sqrt(abs(x));  // abs's output, unread elsewhere, is donated to sqrt
  auto w = multiply(astype(x, float64), astype(y, float64));
  eval({e, s, p, d, w});
  const float* ev = e.data<float>();
  const float* sv = s.data<float>();
  const float* pv = p.data<float>();
  const float* dv = d.data<float>();
  const double* wv = w.data<double>();
  int64_t wrong = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double reference = std::exp(static_cast<double>(xs[i]));
    wrong += std::abs(ev[i] - reference) > 2.5e-7 * reference ? 1 : 0;
    wrong += sv[i] != xs[i] + ys[i] ? 1 : 0;
    wrong += pv[i] != xs[i] * 2.5F ? 1 : 0;
    wrong += dv[i] != std::sqrt(std::abs(xs[i])) ? 1 : 0;
    wrong += wv[i] != static_cast<double>(xs[i]) * static_cast<double>(ys[i]) ? 1 : 0;
  }
  EXPECT_EQ(wrong, 0);
}

TEST(ElementwiseLayout, UnaryOpsOverEveryLayout) {
  std::mt19937 rng(16);
  for (auto dtype : {float32, float64, bfloat16, int16}) {
    for (const auto& c : layout_cases(dtype, rng)) {
      for (const auto& x : {c.a, c.b, broadcast_to(c.b, broadcast_shapes(c.a.shape(), c.b.shape()))}) {
        EXPECT_TRUE(agrees(abs(x), "np.abs(a)", {x})) << c.name << " on " << dtype;
        if (is_floating(dtype)) {
          EXPECT_TRUE(agrees(exp(x), widened("np.exp(x)", dtype), {x})) << c.name << " on " << dtype;
          EXPECT_TRUE(agrees(tanh(x), widened("np.tanh(x)", dtype), {x})) << c.name << " on " << dtype;
        }
      }
    }
  }
}

TEST(ElementwiseLayout, ScalarOperandsReachThePrimitiveWithoutABroadcast) {
  auto x = ones({3, 4});
  auto y = x * 2.0F;
  ASSERT_EQ(y.inputs().size(), 2U);
  EXPECT_EQ(y.inputs()[1].shape(), Shape{});
  EXPECT_FALSE(y.inputs()[1].has_primitive());
  auto row = x + ones({4});  // a non-scalar operand is still broadcast
  EXPECT_EQ(row.inputs()[1].shape(), (Shape{3, 4}));
  EXPECT_TRUE(agrees(where(array(true), transpose(x), array(0.0F)), "np.ones((4, 3), np.float32)", {}, 0, 0));
}

TEST(ElementwiseLayout, MixedDtypesPromoteBeforeTheKernel) {
  std::mt19937 rng(17);
  auto i8 = sample({3, 4}, int8, rng, -20, 20);
  auto i16 = sample({4}, int16, rng, -20, 20);
  auto f32 = sample({3, 1}, float32, rng, -2, 2);
  auto f64 = sample({3, 4}, float64, rng, -2, 2);
  EXPECT_TRUE(agrees(i8 + i16, "a + b", {i8, i16}, 0, 0));
  EXPECT_TRUE(agrees(f32 * f64, "a * b", {f32, f64}));
  EXPECT_TRUE(agrees(i8 < f32, "a < b", {i8, f32}, 0, 0));
  auto h = sample({3, 4}, float16, rng, -2, 2);
  auto bf = sample({3, 4}, bfloat16, rng, -2, 2);
  auto mixed = h + bf;  // float16 with bfloat16 promotes to float32
  EXPECT_EQ(mixed.dtype(), float32);
  EXPECT_TRUE(agrees(mixed, "a.astype(np.float32) + b", {h, bf}));
}

// ---------------------------------------------------------------- where

TEST(ElementwiseSelect, WhereMatchesNumpyForEveryDtypeAndLayout) {
  std::mt19937 rng(18);
  for (auto dtype : all_dtypes) {
    auto c = astype(sample({3, 1}, uint8, rng, 0, 2), bool_);
    auto x = sample({1, 4}, dtype == bool_ ? uint8 : dtype, rng, -5, 5);
    auto y = sample({}, dtype == bool_ ? uint8 : dtype, rng, -5, 5);
    x = astype(x, dtype);
    y = astype(y, dtype);
    EXPECT_TRUE(agrees(where(c, x, y), "np.where(a, b, c)", {c, x, y})) << dtype;
    auto full_c = astype(sample({4, 6}, uint8, rng, 0, 2), bool_);
    auto tx = transpose(astype(sample({6, 4}, dtype == bool_ ? uint8 : dtype, rng, -5, 5), dtype));
    auto fy = flip(astype(sample({4, 6}, dtype == bool_ ? uint8 : dtype, rng, -5, 5), dtype), 1);
    EXPECT_TRUE(agrees(where(full_c, tx, fy), "np.where(a, b, c)", {full_c, tx, fy})) << dtype;
    EXPECT_TRUE(
        agrees(where(transpose(full_c), y, transpose(fy)), "np.where(a, b, c)", {transpose(full_c), y, transpose(fy)}))
        << dtype;
  }
  auto big_c = astype(sample({1 << 17}, uint8, rng, 0, 2), bool_);
  auto big_x = sample({1 << 17}, float32, rng, -1, 1);
  EXPECT_TRUE(agrees(where(big_c, big_x, array(0.0F)), "np.where(a, b, np.float32(0))", {big_c, big_x}));
  EXPECT_TRUE(agrees(where(big_c, array(1), array(2)), "np.where(a, 1, 2).astype(np.int32)", {big_c}));
  auto empty = where(zeros({0, 3}, bool_), zeros({0, 3}), ones({3}));
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
  empty.eval();
  // Promotion of the two values, and a non-bool condition.
  auto mixed = where(array({1, 0, 2}), array({1, 2, 3}, int8), array(0.5F));
  EXPECT_TRUE(agrees(mixed, "np.array([1, 0.5, 3], np.float32)", {}, 0, 0));
}

// ---------------------------------------------------------------- 16-bit rounding

TEST(ElementwiseHalf, ResultsRoundToNearestEvenExactlyAsTheScalarTypes) {
  // Expected values from half.h's scalar constructors (round to nearest even, NaN quieted),
  // which tests/core/half_test.cpp checks; products of two 16-bit values are exact in float,
  // so this checks the kernels' vectorized conversions bit for bit, ties and overflow included.
  std::mt19937 rng(19);
  std::uniform_int_distribution<int> bits(0, 0xffff);
  constexpr int n = 4099;
  std::vector<uint16_t> a(n);
  std::vector<uint16_t> b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<uint16_t>(bits(rng));
    b[i] = static_cast<uint16_t>(bits(rng));
  }
  for (auto dtype : {float16, bfloat16}) {
    auto wrap = [&](std::vector<uint16_t>& v) { return view(array(v.begin(), {n}, uint16), dtype); };
    auto x = wrap(a);
    auto y = wrap(b);
    auto product = multiply(x, y);
    auto sum = add(x, y);
    product.eval();
    sum.eval();
    const auto* p = product.data<uint16_t>();
    const auto* s = sum.data<uint16_t>();
    int mismatches = 0;
    for (int i = 0; i < n && mismatches < 5; ++i) {
      float fa = dtype == float16 ? static_cast<float>(float16_t::from_bits(a[i]))
                                  : static_cast<float>(bfloat16_t::from_bits(a[i]));
      float fb = dtype == float16 ? static_cast<float>(float16_t::from_bits(b[i]))
                                  : static_cast<float>(bfloat16_t::from_bits(b[i]));
      uint16_t want_p = dtype == float16 ? float16_t(fa * fb).bits : bfloat16_t(fa * fb).bits;
      uint16_t want_s = dtype == float16 ? float16_t(fa + fb).bits : bfloat16_t(fa + fb).bits;
      // Which NaN a product of two NaNs keeps is the compiler's choice: compare NaN-ness there.
      auto is_nan = [&](uint16_t v) {
        return dtype == float16 ? isnan(float16_t::from_bits(v)) : isnan(bfloat16_t::from_bits(v));
      };
      const bool product_ok = p[i] == want_p || (is_nan(p[i]) && is_nan(want_p));
      const bool sum_ok = s[i] == want_s || (is_nan(s[i]) && is_nan(want_s));
      if (!product_ok || !sum_ok) {
        ++mismatches;
        ADD_FAILURE() << dtype << " element " << i << ": " << a[i] << " and " << b[i] << " give product " << p[i]
                      << " (want " << want_p << "), sum " << s[i] << " (want " << want_s << ")";
      }
    }
  }
}

// ---------------------------------------------------------------- donation

TEST(ElementwiseDonation, TemporaryInputGivesItsBufferToTheOutput) {
  std::mt19937 rng(20);
  auto y = sample({1000}, float32, rng, -1, 1);
  array sum(0.0F);
  array result(0.0F);
  const void* sum_input = nullptr;
  const void* exp_input = nullptr;
  {
    // Each temporary is evaluated, then its only handle is dropped: the graph holds the last one.
    auto t = exp(sample({1000}, float32, rng, -1, 1));
    t.eval();
    sum_input = t.raw_data();
    sum = t + y;
    auto u = sin(y);
    u.eval();
    exp_input = u.raw_data();
    result = exp(u);
  }
  sum.eval();
  result.eval();
  EXPECT_EQ(sum.raw_data(), sum_input) << "a + b reuses a's buffer when nothing else holds a";
  EXPECT_EQ(result.raw_data(), exp_input) << "exp(u) reuses u's buffer when nothing else holds u";
  EXPECT_TRUE(agrees(result, widened("np.exp(np.sin(x))", float32), {y}));
}

TEST(ElementwiseLayout, TransposedInputsGiveATransposedOutput) {
  // Inputs dense in one permuted order are walked in memory order and the output takes
  // their layout (as MLX does); mixed layouts give a row-major output.
  std::mt19937 rng(22);
  auto a = transpose(sample({40, 30, 2}, float32, rng, -2, 2), {2, 0, 1});
  auto b = transpose(sample({40, 30, 2}, float32, rng, -2, 2), {2, 0, 1});
  auto sum = a + b;
  auto e = exp(a);
  auto mixed = a + contiguous(b);
  eval({sum, e, mixed});
  EXPECT_EQ(sum.strides(), a.strides());
  EXPECT_EQ(e.strides(), a.strides());
  EXPECT_EQ(mixed.strides(), (Strides{1200, 30, 1}));
  EXPECT_TRUE(agrees(sum, "a + b", {a, b}));
  EXPECT_TRUE(agrees(e, widened("np.exp(x)", float32), {a}));
  EXPECT_TRUE(agrees(mixed, "a + b", {a, b}));
  EXPECT_TRUE(agrees(a * array(2.0F), "a * 2", {a}));
  const void* input = nullptr;
  array result(0.0F);
  {
    auto t = transpose(exp(sample({300, 200}, float32, rng, -1, 1)));
    t.eval();
    input = t.raw_data();
    result = sin(t);
  }
  result.eval();
  EXPECT_EQ(result.raw_data(), input) << "a transposed temporary also gives its buffer";
  EXPECT_EQ(result.strides(), (Strides{1, 200}));
}

TEST(ElementwiseDonation, HeldInputsAreNeverOverwritten) {
  std::mt19937 rng(21);
  auto x = sample({1000}, float32, rng, -1, 1);
  auto y = sample({1000}, float32, rng, -1, 1);
  auto before = test::to_host(x);
  auto z = x + y;
  z.eval();
  EXPECT_NE(z.raw_data(), x.raw_data());
  EXPECT_NE(z.raw_data(), y.raw_data());
  EXPECT_TRUE(matches(x, before, 0, 0));
  auto w = exp(x) * x;  // exp(x) is a temporary of the graph, x is held
  EXPECT_TRUE(agrees(w, widened("np.exp(x) * x", float32), {x}));
  EXPECT_TRUE(matches(x, before, 0, 0));
}

}  // namespace
}  // namespace nuvec
