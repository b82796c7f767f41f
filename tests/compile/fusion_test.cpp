// Compiled results equal eager results: every fusable op on every dtype it takes, broadcasting patterns,
// non-contiguous inputs and special values, with the chains fused into Compiled nodes.

#include <functional>
#include <random>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>

#include "tests/compile/compile_support.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using V = std::vector<array>;
using test::count_primitives;
using test::same_values;

const Dtype real_dtypes[] = {bool_, uint8, uint16, uint32, uint64, int8,   int16,
                             int32, int64, float16, bfloat16, float32, float64};

double tolerance(Dtype d, bool transcendental) {
  if (d == float16 || d == bfloat16) {
    return transcendental ? 2e-2 : 0.0;
  }
  if (!transcendental) {
    return 0.0;
  }
  return d == float64 ? 1e-13 : 2e-6;
}

using Chain = std::function<array(const V&)>;
struct Named {
  std::string name;
  Chain f;
  bool transcendental;
  /// The primitive the chain is about: it must not stay in the compiled graph (it fused). Empty: not checked.
  std::string primitive;
};

/// Runs the chains eagerly, drops those eager rejects (the op has no such dtype), then runs the others as one
/// compiled function (one kernel build per call) and compares. Returns how many were compared.
int check_all(const std::vector<Named>& chains, const V& inputs, const std::string& what) {
  std::vector<const Named*> kept;
  V eager;
  for (const auto& c : chains) {
    try {
      auto e = c.f(inputs);
      e.eval();
      eager.push_back(e);
      kept.push_back(&c);
    } catch (const nuvec::error&) {
    }
  }
  if (kept.empty()) {
    return 0;
  }
  auto compiled = compile([&](const V& xs) {
    V outs;
    for (const auto* c : kept) outs.push_back(c->f(xs));
    return outs;
  })(inputs);
  EXPECT_GE(count_primitives(compiled, "Compiled"), 1) << what;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (!kept[i]->primitive.empty()) {
      EXPECT_EQ(count_primitives({compiled[i]}, kept[i]->primitive), 0)
          << kept[i]->name << " " << what << ": " << kept[i]->primitive << " did not fuse";
    }
    EXPECT_TRUE(same_values(compiled[i], eager[i], tolerance(eager[i].dtype(), kept[i]->transcendental)))
        << kept[i]->name << " " << what;
  }
  return static_cast<int>(kept.size());
}

class Fusion : public ::testing::Test {
 protected:
  void SetUp() override { test::test_kernel_cache(); }
};

using UnaryOp = array (*)(const array&, StreamOrDevice);
using BinaryOp = array (*)(const array&, const array&, StreamOrDevice);
template <class Op>
struct Case {
  const char* name;
  Op op;
  bool transcendental;
  std::string_view primitive;
};

const std::vector<Case<UnaryOp>>& unary_cases() {
  static const std::vector<Case<UnaryOp>> cases = {
      {"abs", abs, false, Abs::name},
      {"negative", negative, false, Negative::name},
      {"sign", sign, false, Sign::name},
      {"floor", floor, false, Floor::name},
      {"ceil", ceil, false, Ceil::name},
      {"round", [](const array& a, StreamOrDevice s) { return round(a, 0, s); }, false, Round::name},
      {"square", square, false, Square::name},
      {"sqrt", sqrt, false, Sqrt::name},
      {"rsqrt", rsqrt, false, Rsqrt::name},
      {"reciprocal", reciprocal, false, Reciprocal::name},
      {"exp", exp, true, Exp::name},
      {"expm1", expm1, true, Expm1::name},
      {"log", log, true, Log::name},
      {"log2", log2, true, Log2::name},
      {"log10", log10, true, Log10::name},
      {"log1p", log1p, true, Log1p::name},
      {"sin", sin, true, Sin::name},
      {"cos", cos, true, Cos::name},
      {"tan", tan, true, Tan::name},
      {"arcsin", arcsin, true, ArcSin::name},
      {"arccos", arccos, true, ArcCos::name},
      {"arctan", arctan, true, ArcTan::name},
      {"sinh", sinh, true, Sinh::name},
      {"cosh", cosh, true, Cosh::name},
      {"tanh", tanh, true, Tanh::name},
      {"arcsinh", arcsinh, true, ArcSinh::name},
      {"arccosh", arccosh, true, ArcCosh::name},
      {"arctanh", arctanh, true, ArcTanh::name},
      {"sigmoid", sigmoid, true, Sigmoid::name},
      {"erf", erf, true, Erf::name},
      {"erfinv", erfinv, true, ErfInv::name},
      {"isnan", isnan, false, IsNaN::name},
      {"isinf", isinf, false, IsInf::name},
      {"logical_not", logical_not, false, LogicalNot::name},
      {"bitwise_invert", bitwise_invert, false, BitwiseInvert::name}};
  return cases;
}

const std::vector<Case<BinaryOp>>& binary_cases() {
  static const std::vector<Case<BinaryOp>> cases = {
      {"add", add, false, Add::name},
      {"subtract", subtract, false, Subtract::name},
      {"multiply", multiply, false, Multiply::name},
      {"divide", divide, false, Divide::name},
      {"remainder", remainder, false, Remainder::name},
      {"power", power, true, Power::name},
      {"maximum", maximum, false, Maximum::name},
      {"minimum", minimum, false, Minimum::name},
      {"logaddexp", logaddexp, true, LogAddExp::name},
      {"arctan2", arctan2, true, ArcTan2::name},
      {"equal", [](const array& a, const array& b, StreamOrDevice s) { return equal(a, b, s); }, false, Equal::name},
      {"not_equal", not_equal, false, NotEqual::name},
      {"greater", greater, false, Greater::name},
      {"greater_equal", greater_equal, false, GreaterEqual::name},
      {"less", less, false, Less::name},
      {"less_equal", less_equal, false, LessEqual::name},
      {"logical_and", logical_and, false, LogicalAnd::name},
      {"logical_or", logical_or, false, LogicalOr::name},
      {"bitwise_and", bitwise_and, false, BitwiseAnd::name},
      {"bitwise_or", bitwise_or, false, BitwiseOr::name},
      {"bitwise_xor", bitwise_xor, false, BitwiseXor::name},
      {"left_shift", left_shift, false, LeftShift::name},
      {"right_shift", right_shift, false, RightShift::name}};
  return cases;
}

/// Element-wise primitives that never fuse, with the reason: the generator has no complex type.
const std::set<std::string_view> not_fused = {Conjugate::name, Real::name, Imag::name};

/// The primitive to check for: the case's own, when the op builds it for these inputs (some ops take another
/// route on some dtypes, such as abs of an unsigned array, which is the array itself).
template <class Op, class... Args>
std::string checked_primitive(const Case<Op>& c, const Args&... args) {
  try {
    auto y = c.op(args..., {});
    return y.has_primitive() && name(y.primitive()) == c.primitive ? std::string(c.primitive) : std::string();
  } catch (const nuvec::error&) {
    return {};
  }
}

TEST_F(Fusion, EveryElementwisePrimitiveIsCheckedOrListed) {
  std::set<std::string_view> elementwise;
  [&]<size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          using P = std::variant_alternative_t<I, Primitive::Variant>;
          if constexpr (UnaryPrimitive<P> || BinaryPrimitive<P>) {
            elementwise.insert(P::name);
          }
        }(),
        ...);
  }
  (std::make_index_sequence<std::variant_size_v<Primitive::Variant>>{});
  std::set<std::string_view> covered(not_fused);
  for (const auto& c : unary_cases()) {
    covered.insert(c.primitive);
  }
  for (const auto& c : binary_cases()) {
    covered.insert(c.primitive);
  }
  EXPECT_EQ(covered, elementwise);
}

TEST_F(Fusion, EveryUnaryOpAndDtype) {
  std::mt19937 rng(7);
  int checked = 0;
  for (Dtype d : real_dtypes) {
    auto x = test::random_array({3, 37}, d, rng, -3.0, 3.0);
    std::vector<Named> chains;
    for (const auto& c : unary_cases()) {
      // The op then another one, so that it sits inside a fused chain.
      chains.push_back({c.name,
                        [op = c.op](const V& xs) {
                          auto y = op(xs[0], {});
                          return y.dtype() == bool_ ? logical_not(y) : square(y);
                        },
                        c.transcendental, checked_primitive(c, x)});
    }
    checked += check_all(chains, {x}, std::string(dtype_name(d)));
  }
  EXPECT_GT(checked, 150);
}

TEST_F(Fusion, EveryBinaryOpAndDtype) {
  std::mt19937 rng(11);
  int checked = 0;
  for (Dtype d : real_dtypes) {
    auto a = test::random_array({4, 33}, d, rng, -4.0, 4.0);
    auto b = test::random_array({4, 33}, d, rng, -4.0, 4.0);
    std::vector<Named> chains;
    for (const auto& c : binary_cases()) {
      chains.push_back({c.name,
                        [op = c.op](const V& xs) {
                          auto y = op(xs[0], xs[1], {});
                          return y.dtype() == bool_ ? logical_not(y) : op(y, xs[1], {});
                        },
                        c.transcendental, checked_primitive(c, a, b)});
    }
    checked += check_all(chains, {a, b}, std::string(dtype_name(d)));
  }
  EXPECT_GT(checked, 150);
}

TEST_F(Fusion, ConversionsBetweenEveryPairOfDtypes) {
  std::mt19937 rng(3);
  for (Dtype from : real_dtypes) {
    auto x = test::random_array({5, 9}, from, rng, -300.0, 300.0);
    std::vector<Named> chains;
    for (Dtype to : real_dtypes) {
      chains.push_back({std::string("-> ") + std::string(dtype_name(to)),
                        [to](const V& xs) { return astype(xs[0] * xs[0], to); }, false,
                        from == to ? std::string() : std::string(AsType::name)});
      chains.push_back({std::string("-> ") + std::string(dtype_name(to)) + " and back",
                        [to, from](const V& xs) { return astype(astype(xs[0], to), from) + xs[0]; }, false,
                        from == to ? std::string() : std::string(AsType::name)});
    }
    EXPECT_EQ(check_all(chains, {x}, std::string(dtype_name(from))), 26);
  }
}

TEST_F(Fusion, SelectAndSpecialValues) {
  auto x = array({0.0F, -0.0F, 1.0F, -1.0F, NAN, INFINITY, -INFINITY, 1e-40F, 3e38F, -2.5F});
  auto y = array({NAN, 0.0F, -1.0F, 2.0F, 1.0F, INFINITY, 5.0F, 0.0F, 3e38F, 2.5F});
  auto f = [](const V& xs) {
    auto a = xs[0];
    auto b = xs[1];
    return where(a > b, maximum(a, b) * 2.0F, minimum(a, b) - sigmoid(a)) + logaddexp(a, b) / (b * b + 1.0F);
  };
  EXPECT_EQ(check_all({{"select", f, true, std::string(Select::name)}}, {x, y}, "select"), 1);
}

TEST_F(Fusion, BroadcastingPatterns) {
  std::mt19937 rng(5);
  const std::vector<std::pair<Shape, Shape>> patterns = {
      {{4, 5}, {5}}, {{4, 1}, {1, 6}}, {{2, 3, 4}, {3, 1}}, {{7}, {}}, {{1}, {3, 1, 2}}, {{0, 3}, {3}}, {{}, {}}};
  for (const auto& [sa, sb] : patterns) {
    auto a = test::random_array(sa, float32, rng);
    auto b = test::random_array(sb, float32, rng);
    auto f = [](const V& xs) { return exp(xs[0] * 0.5F) + xs[1] * xs[0] - 1.0F; };
    auto eager = f({a, b});
    auto compiled = compile([&](const V& xs) { return V{f(xs)}; })({a, b});
    EXPECT_TRUE(same_values(compiled[0], eager, 2e-6)) << shape_string(sa) << " " << shape_string(sb);
  }
}

TEST_F(Fusion, NonContiguousInputs) {
  std::mt19937 rng(9);
  auto base = test::random_array({6, 8}, float32, rng);
  auto other = test::random_array({8, 6}, float32, rng);
  const V layouts[] = {
      {transpose(base), other},                                   // permuted
      {slice(other, {0, 0}, {8, 6}, {2, 1}), slice(base, {0, 0}, {4, 6}, {1, 1})},  // strided rows
      {broadcast_to(array({1.0F, 2.0F, 3.0F, 4.0F, 5.0F, 6.0F}), {8, 6}), other},  // a broadcast view
      {flip(other, 0), transpose(base)}};
  auto f = [](const V& xs) { return tanh(xs[0]) * xs[1] + square(xs[1]); };
  for (const auto& inputs : layouts) {
    V evaluated = inputs;
    eval(evaluated);
    auto eager = f(evaluated);
    auto compiled = compile([&](const V& xs) { return V{f(xs)}; })(evaluated);
    EXPECT_TRUE(same_values(compiled[0], eager, 2e-6)) << shape_string(evaluated[0].shape()) << " " << shape_string(evaluated[1].shape());
  }
}

/// Views of (64, 600) values in each layout the strided entry walks differently, with its name: transposed, rows
/// and columns strided, rows offset in a wider array, broadcast along the rows or along the columns, and one value
/// broadcast everywhere (what `zeros(shape)` is).
std::vector<std::pair<std::string, array>> layouts(Dtype d, std::mt19937& rng) {
  std::vector<std::pair<std::string, array>> views = {
      {"transposed", transpose(test::random_array({600, 64}, d, rng, -3.0, 3.0))},
      {"strided", slice(test::random_array({128, 1200}, d, rng, -3.0, 3.0), {0, 0}, {128, 1200}, {2, 2})},
      {"offset rows", slice(test::random_array({64, 700}, d, rng, -3.0, 3.0), {0, 50}, {64, 650})},
      {"broadcast row", broadcast_to(test::random_array({600}, d, rng, -3.0, 3.0), {64, 600})},
      {"broadcast column", broadcast_to(test::random_array({64, 1}, d, rng, -3.0, 3.0), {64, 600})},
      {"one value", broadcast_to(astype(array(1.5F), d), {64, 600})}};
  for (auto& [name, view] : views) {
    view.eval();
  }
  return views;
}

TEST_F(Fusion, EveryOpOnBroadcastTransposedAndSlicedInputs) {
  std::mt19937 rng(29);
  for (Dtype d : {float32, int32, bfloat16}) {
    const auto views = layouts(d, rng);
    const auto dense = test::random_array({64, 600}, d, rng, -3.0, 3.0);
    for (size_t k = 0; k < views.size(); ++k) {
      const auto& [layout, x] = views[k];
      std::vector<Named> chains;
      for (const auto& c : unary_cases()) {
        chains.push_back({c.name,
                          [op = c.op](const V& xs) {
                            auto y = op(xs[0], {});
                            return y.dtype() == bool_ ? logical_not(y) : square(y);
                          },
                          c.transcendental, checked_primitive(c, x)});
      }
      check_all(chains, {x}, std::string(dtype_name(d)) + " " + layout);
      // Binary ops with the layout on either side, against a dense operand, the next layout and the transposed one
      // (which makes the kernel walk tiles of rows).
      const auto& other = views[(k + 1) % views.size()].second;
      for (const auto& [a, b, what] :
           {std::tuple{x, dense, "and dense"}, std::tuple{dense, x, "dense and"},
            std::tuple{x, other, "and the next layout"}, std::tuple{x, views[0].second, "and transposed"}}) {
        chains.clear();
        for (const auto& c : binary_cases()) {
          chains.push_back({c.name,
                            [op = c.op](const V& xs) {
                              auto y = op(xs[0], xs[1], {});
                              return y.dtype() == bool_ ? logical_not(y) : op(y, xs[1], {});
                            },
                            c.transcendental, checked_primitive(c, a, b)});
        }
        chains.push_back({"select and conversion",
                          [](const V& xs) { return where(xs[0] > xs[1], astype(xs[0], float32), array(2.0F)) * 0.5F; },
                          false, std::string(Select::name)});
        check_all(chains, {a, b}, std::string(dtype_name(d)) + " " + layout + " " + what);
      }
    }
  }
}

TEST_F(Fusion, LargeBroadcastAndTransposedInputsStream) {
  // Over 2^20 elements per thread the strided walk streams its outputs a block at a time: Adam's first step with
  // moments that are broadcast zeros, and a chain over a transposed input, on rows that are no multiple of a block.
  const Shape shape{2048, 1100};
  auto p = random::uniform(-1.0F, 1.0F, shape, float32, random::key(1));
  auto g = random::uniform(-1.0F, 1.0F, shape, float32, random::key(2));
  auto zero_moment = broadcast_to(array(0.0F), shape);
  auto adam = [](const V& xs) {
    auto m1 = array(0.9F) * xs[2] + array(0.1F) * xs[1];
    auto v1 = array(0.999F) * xs[3] + array(0.001F) * square(xs[1]);
    return V{xs[0] - array(0.01F) * m1 / (sqrt(v1) + array(1e-8F)), m1, v1};
  };
  const V inputs{p, g, zero_moment, zero_moment};
  auto compiled = compile(adam)(inputs);
  auto eager = adam(inputs);
  EXPECT_EQ(count_primitives(compiled, "Compiled"), 1);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(same_values(compiled[i], eager[i], 1e-6)) << i;
  }
  auto t = transpose(random::uniform(-3.0F, 3.0F, {1100, 2048}, float32, random::key(3)));
  t.eval();
  auto chain = [](const V& xs) { return V{tanh(xs[0]) * xs[1] + xs[0]}; };
  EXPECT_TRUE(same_values(compile(chain)({t, g})[0], chain({t, g})[0], 2e-6));
}

TEST_F(Fusion, OneValueBroadcastEverywhereIsReadOnceByTheFlatLoop) {
  // Inputs of one value broadcast everywhere at run time (stride 0 on every axis, as zeros(shape) is) with dense
  // ones, with a traced one-element input, and alone: sizes that are no multiple of a block, and one over 2^20
  // elements per thread, whose outputs stream.
  auto chain = [](const V& xs) { return V{xs[0] * xs[1] + xs[2] * xs[3], exp(xs[2]) - xs[1]}; };
  std::mt19937 rng(31);
  for (const Shape& shape : {Shape{7}, Shape{3, 517}, Shape{33, 1031}, Shape{2100, 1024}}) {
    const auto dense = test::random_array(shape, float32, rng, -3.0, 3.0);
    const auto one = broadcast_to(array(0.75F), shape);
    const auto other = broadcast_to(reshape(array(-1.25F), {1}), shape);
    const auto scalar = array(2.5F);
    for (const V& inputs : {V{dense, one, other, dense}, V{one, dense, dense, other}, V{dense, scalar, one, dense},
                            V{one, other, one, other}}) {
      auto compiled = compile(chain)(inputs);
      auto eager = chain(inputs);
      EXPECT_EQ(count_primitives(compiled, "Compiled"), 1);
      for (size_t i = 0; i < 2; ++i) {
        EXPECT_TRUE(same_values(compiled[i], eager[i], 2e-6)) << shape.back() << " output " << i;
      }
    }
  }
}

TEST_F(Fusion, SeveralOutputsOfOneChain) {
  // The Adam update: three outputs of one kernel.
  std::mt19937 rng(13);
  auto p = test::random_array({1000}, float32, rng);
  auto g = test::random_array({1000}, float32, rng);
  auto m = test::random_array({1000}, float32, rng);
  auto v = abs(test::random_array({1000}, float32, rng));
  auto adam = [](const V& xs) {
    auto m1 = 0.9F * xs[2] + 0.1F * xs[1];
    auto v1 = 0.999F * xs[3] + 0.001F * square(xs[1]);
    auto p1 = xs[0] - 0.01F * m1 / (sqrt(v1) + 1e-8F);
    return V{p1, m1, v1};
  };
  auto eager = adam({p, g, m, v});
  auto compiled = compile(adam)({p, g, m, v});
  EXPECT_EQ(count_primitives(compiled, "Compiled"), 1);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(same_values(compiled[i], eager[i], 1e-6)) << i;
  }
}

TEST_F(Fusion, LargeOutputsStreamPastTheCaches) {
  // Over 2^20 elements per thread the kernels write through L1 buffers and streaming stores: flat and row kernels.
  auto x = random::uniform(-3.0F, 3.0F, {1024, 4096}, float32, random::key(3));
  auto w = random::uniform(-1.0F, 1.0F, {4096}, float32, random::key(4));
  auto flat = [](const V& xs) { return V{tanh(xs[0]) * 0.5F + xs[0], xs[0] * xs[0]}; };
  auto rows = [](const V& xs) {
    auto xc = xs[0] - mean(xs[0], -1, true);
    return V{xc * rsqrt(mean(xc * xc, -1, true) + 1e-5F) * xs[1]};
  };
  auto flat_out = compile(flat)({x});
  auto rows_out = compile(rows)({x, w});
  EXPECT_EQ(count_primitives(flat_out, "Compiled"), 1);
  EXPECT_EQ(count_primitives(rows_out, "Compiled"), 1);
  auto flat_eager = flat({x});
  EXPECT_TRUE(same_values(flat_out[0], flat_eager[0], 2e-6));
  EXPECT_TRUE(same_values(flat_out[1], flat_eager[1]));
  EXPECT_TRUE(same_values(rows_out[0], rows({x, w})[0], 1e-4));
  // Outputs of 4, 2 and 1 bytes streamed a line of the narrowest at a time (64 elements), over a length whose halves
  // start and end inside lines.
  auto odd = random::uniform(-3.0F, 3.0F, {(1 << 22) + 7}, float32, random::key(7));
  auto mixed = [](const V& xs) {
    return V{xs[0] * 2.0F + 1.0F, astype(xs[0] - 1.0F, bfloat16), greater(xs[0], array(0.5F))};
  };
  auto mixed_out = compile(mixed)({odd});
  auto mixed_eager = mixed({odd});
  EXPECT_EQ(count_primitives(mixed_out, "Compiled"), 1);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(same_values(mixed_out[i], mixed_eager[i])) << i;
  }
  // Rows streamed block by block: a length that is no multiple of a block (nor of a vector), and rows longer than
  // the caches.
  for (const Shape& shape : {Shape{512, 4099}, Shape{2, 1 << 20}}) {
    auto y = random::uniform(-3.0F, 3.0F, shape, float32, random::key(5));
    auto v = random::uniform(-1.0F, 1.0F, {shape.back()}, float32, random::key(6));
    auto out = compile(rows)({y, v});
    EXPECT_EQ(count_primitives(out, "Compiled"), 1) << shape_string(shape);
    EXPECT_TRUE(same_values(out[0], rows({y, v})[0], 1e-4)) << shape_string(shape);
  }
}

TEST_F(Fusion, ChainsAroundOtherPrimitives) {
  // A reduction over another axis splits the graph: the chains before and after it fuse, the sum stays.
  std::mt19937 rng(17);
  auto x = test::random_array({16, 32}, float32, rng);
  auto f = [](const V& xs) {
    auto y = exp(xs[0]) * 2.0F + 1.0F;
    auto s = sum(y, 0, true);
    return V{log(y / s) - 1.0F, y};
  };
  auto eager = f({x});
  auto compiled = compile(f)({x});
  EXPECT_EQ(count_primitives(compiled, "Compiled"), 2);
  EXPECT_EQ(count_primitives(compiled, "Reduce"), 1);
  EXPECT_TRUE(same_values(compiled[0], eager[0], 2e-6));
  EXPECT_TRUE(same_values(compiled[1], eager[1], 2e-6));
}

TEST_F(Fusion, RowReductionsAndNormalizationsFuse) {
  // Sums and maxima over the last axis join their chain: a layer norm and a softmax written with plain ops become
  // one row kernel each, as does a chain that ends in a sum.
  std::mt19937 rng(19);
  for (Dtype d : {float32, float64}) {
    for (const Shape& shape : {Shape{8, 33}, Shape{2, 3, 17}, Shape{1, 2}}) {
      auto x = test::random_array(shape, d, rng, -3.0, 3.0);
      auto w = test::random_array({shape.back()}, d, rng);
      auto b = test::random_array({shape.back()}, d, rng);
      auto layer_norm = [](const V& xs) {
        auto mu = mean(xs[0], -1, true);
        auto xc = xs[0] - mu;
        auto var = mean(xc * xc, -1, true);
        return V{xc * rsqrt(var + 1e-5F) * xs[1] + xs[2]};
      };
      auto soft = [](const V& xs) {
        auto e = exp(xs[0] - max(xs[0], -1, true));
        return V{e / sum(e, -1, true), sum(square(xs[0]) * 0.5F, -1, true)};
      };
      const double tol = d == float64 ? 1e-12 : 2e-5;
      auto ln = compile(layer_norm)({x, w, b});
      EXPECT_EQ(count_primitives(ln, "Compiled"), 1);
      EXPECT_EQ(count_primitives(ln, "Reduce"), 0);
      EXPECT_TRUE(same_values(ln[0], layer_norm({x, w, b})[0], tol)) << shape_string(shape);
      auto sm = compile(soft)({x});
      EXPECT_EQ(count_primitives(sm, "Compiled"), 1);
      auto eager = soft({x});
      EXPECT_TRUE(same_values(sm[0], eager[0], tol)) << shape_string(shape);
      EXPECT_TRUE(same_values(sm[1], eager[1], tol)) << shape_string(shape);
    }
  }
  // The softmax primitive joins the chain that feeds it.
  auto logits = test::random_array({6, 50}, float32, rng, -5.0, 5.0);
  auto scaled = [](const V& xs) { return V{softmax(xs[0] * 2.0F + 1.0F, -1)}; };
  auto sm = compile(scaled)({logits});
  EXPECT_EQ(count_primitives(sm, "Compiled"), 1);
  EXPECT_EQ(count_primitives(sm, "Softmax"), 0);
  EXPECT_TRUE(same_values(sm[0], scaled({logits})[0], 2e-6));
  // NaN in a row propagates through the max, as eagerly; a transposed input takes the strided walk.
  auto x = array({1.0F, NAN, 3.0F, 4.0F, 5.0F, 6.0F}, {2, 3});
  auto f = [](const V& xs) { return V{exp(xs[0] - max(xs[0], -1, true))}; };
  EXPECT_TRUE(same_values(compile(f)({x})[0], f({x})[0], 1e-6));
  auto t = transpose(reshape(arange(12.0F), {3, 4}));
  EXPECT_TRUE(same_values(compile(f)({t})[0], f({t})[0], 1e-6));
  // The gradient of a fused layer norm goes through its tape.
  auto loss = [](const V& xs) {
    auto mu = mean(xs[0], -1, true);
    auto xc = xs[0] - mu;
    return sum(xc * rsqrt(mean(xc * xc, -1, true) + 1e-5F) * xs[0]);
  };
  auto xs = V{reshape(arange(12.0F) * 0.3F, {3, 4})};
  auto expected = grad(loss)(xs)[0];
  auto compiled = compile([&](const V& in) { return V{loss(in)}; });
  auto got = grad([&](const V& in) { return compiled(in)[0]; })(xs)[0];
  EXPECT_TRUE(same_values(got, expected, 1e-4));
}

}  // namespace
}  // namespace nuvec
