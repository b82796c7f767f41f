// Each primitive's output-shape and output-dtype rules give the shapes and dtypes of its nodes: every node in the
// graphs of a corpus of op calls (which covers every primitive, including the nodes transforms build) is checked.
// A primitive whose shape is a parameter is told apart. Every primitive's parameters hold what its rules need:
// only Depends gives more shapes than outputs (one per input; its outputs are the first).

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "nuvec/core/compile/graph.h"
#include "nuvec/core/export/node_check.h"
#include "nuvec/core/output_shapes.h"
#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

using V = std::vector<array>;

/// Every op call of the corpus, as unevaluated outputs.
V corpus() {
  auto x = reshape(arange(24.0, float32), {2, 3, 4}) * 0.1F + 0.05F;
  auto m = reshape(arange(12.0, float32), {3, 4}) * 0.1F;
  auto sq = eye(4) * 2.0F + 0.25F * ones({4, 4});
  auto idx = array({0, 2, 1}, int32);
  auto key = random::key(1);
  auto q = reshape(arange(48.0, float32), {1, 2, 6, 4}) * 0.01F;
  auto kv = reshape(arange(24.0, float32), {1, 1, 6, 4}) * 0.02F;
  auto w64 = reshape(arange(64.0 * 32.0, float32), {32, 64}) * 0.001F;
  auto x64 = ones({2, 3, 64});
  V out;
  auto add_all = [&](const V& v) { out.insert(out.end(), v.begin(), v.end()); };
  auto add_pair = [&](const std::pair<array, array>& p) { add_all({p.first, p.second}); };
  // element-wise, creation, views
  add_all({exp(x), x + m, where(x > 1.0F, x, m), astype(x, int32), isnan(x), equal(x, x), real(astype(m,
           complex64)), arange(0.0, 7.0, 2.0), random::uniform(0.0F, 1.0F, {3}, float32, key)});
  add_all({broadcast_to(m, {2, 3, 4}), reshape(x, {6, 4}), transpose(x, {2, 0, 1}), slice(x, {0, 1, 0}, {2, 3, 4}),
           as_strided(m, {2, 2}, {4, 1}, 1), diagonal(x, 1, 1, 2), diagonal(m, -1), view(m, int16),
           stop_gradient(x), flip(m, 0), linspace(0.0, 1.0, 5, true, float16), linspace(0.0, 1.0, 3, false)});
  add_all(depends({x, m}, {sq}));
  // layout and reductions
  add_all({contiguous(transpose(m)), concatenate({x, x, x}, 1), pad(m, {{1, 2}, {0, 3}}), sum(x, {0, 2}, true),
           max(x, 1), sum(astype(m, int8), 0), mean(astype(m, float16), 1), argmax(x, 1, true), argmin(m, 0), softmax(x, -1), logsumexp(x, -1), sort(x, 1), argsort(m, 0),
           partition(x, 2, -1), argpartition(m, 1, 0), searchsorted(array({1.0F, 2.0F, 3.0F}), m),
           cumsum(x, 1), logcumsumexp(m, 0, true, false)});
  // products, quantization, fft, convolution
  add_all({matmul(x, transpose(m)), matmul(ones({5, 1, 2, 3}), ones({4, 3, 6})),
           matmul(astype(m, float16), transpose(astype(m, bfloat16))), addmm(m, m, ones({4, 4}), 2.0F), to_fp8(m),
           from_fp8(to_fp8(m), float32), fft::fft(x, -1), fft::rfft(m, -1), fft::rfftn(x),
           fft::irfft(fft::rfft(m, -1), 4, -1), fft::irfft(fft::rfft(m, -1), 5, -1), conv1d(ones({2, 9, 4}), ones({6, 3, 4}), 2, 1, 2, 1),
           conv2d(ones({1, 7, 8, 2}), ones({4, 3, 3, 1}), {2, 1}, {1, 0}, {1, 2}, 2),
           conv_transpose1d(ones({1, 5, 3}), ones({2, 3, 3}), 2, 1)});
  auto qw = quantize(w64, 64, 4);
  add_all(qw);
  add_all({dequantize(qw[0], qw[1], qw[2], 64, 4), dequantize(qw[0], qw[1], qw[2], 64, 4, "affine", std::nullopt, float16),
           from_fp8(to_fp8(m), bfloat16), quantized_matmul(x64, qw[0], qw[1], qw[2], true, 64, 4),
           quantized_matmul(ones({2, 32}), qw[0], qw[1], qw[2], false, 64, 4),
           gather_qmm(ones({3, 1, 64}), expand_dims(qw[0], 0), expand_dims(qw[1], 0), expand_dims(qw[2], 0),
                      std::nullopt, zeros({3}, uint32), true, 64, 4)});
  // the microscaled modes: two outputs, uint8 scales, no biases, an nvfp4 global scale
  auto mx = quantize(w64, std::nullopt, std::nullopt, "mxfp4");
  auto nv = quantize(w64, std::nullopt, std::nullopt, "nvfp4", array(2.0F));
  add_all(mx);
  add_all(nv);
  add_all({dequantize(mx[0], mx[1], std::nullopt, std::nullopt, std::nullopt, "mxfp4"),
           dequantize(nv[0], nv[1], std::nullopt, std::nullopt, std::nullopt, "nvfp4", array(2.0F), float32),
           quantized_matmul(x64, mx[0], mx[1], std::nullopt, true, std::nullopt, std::nullopt, "mxfp4"),
           quantized_matmul(ones({2, 32}, bfloat16), nv[0], nv[1], std::nullopt, false, std::nullopt, std::nullopt,
                            "nvfp4"),
           gather_qmm(ones({3, 1, 64}), expand_dims(mx[0], 0), expand_dims(mx[1], 0), std::nullopt, std::nullopt,
                      zeros({3}, uint32), true, std::nullopt, std::nullopt, "mxfp4")});
  // fast, and their vjps
  add_all({fast::rms_norm(m, ones({4}), 1e-5F), fast::layer_norm(m, ones({4}), zeros({4}), 1e-5F),
           fast::rope(x, 4, false, 10000.0F, 1.0F, 0), fast::scaled_dot_product_attention(q, kv, kv, 0.5F, "causal"),
           hadamard_transform(ones({2, 8}))});
  add_all(vjp([](const V& a) { return V{fast::rms_norm(a[0], a[1], 1e-5F)}; }, {m, ones({4})}, {ones({3, 4})}).second);
  add_all(vjp([](const V& a) { return V{fast::layer_norm(a[0], a[1], a[2], 1e-5F)}; }, {m, ones({4}), zeros({4})},
              {ones({3, 4})})
              .second);
  add_all(vjp([](const V& a) { return V{fast::scaled_dot_product_attention(a[0], a[1], a[2], 0.5F)}; }, {q, kv, kv},
              {ones({1, 2, 6, 4})})
              .second);
  add_all(vjp([](const V& a) { return V{sum(exp(a[0]) * 2.0F)}; }, {x}, {array(1.0F)}).second);
  add_all(compile([](const V& a) { return V{exp(a[0]) * 2.0F + 1.0F, sum(a[0] * a[0], -1, true)}; })({x}));
  auto custom = custom_vjp([](const V& a) { return V{a[0] * 3.0F}; },
                           [](const V&, const V& ct, const V&) { return V{ct[0] * 3.0F}; });
  add_all(custom({m}));
  // indexing
  add_all({take(m, idx, 0), take(x, array({1, 0}), 2), take_along_axis(m, zeros({3, 1}, int32), 1),
           gather(x, {idx, idx}, {0, 1}, {1, 1, 4}), scatter_add(m, {idx}, ones({3, 1, 4}), {0}),
           put_along_axis(m, zeros({3, 1}, int32), ones({3, 1}), 1), masked_scatter(m, m > 0.5F, ones({12})),
           slice_update(m, zeros({1, 4}), {1, 0}, {2, 4}), slice(m, array({1}), {0}, {2, 4}),
           slice_update(m, ones({2, 4}), array({1}), {0})});
  // linear algebra
  add_pair(linalg::qr(ones({2, 5, 3}) + eye(5, 3)));
  add_all(linalg::svd(ones({4, 2}) + eye(4, 2)));
  add_all(linalg::svd(ones({4, 2}) + eye(4, 2), false));
  add_pair(linalg::lu_factor(sq));
  add_all({linalg::inv(sq), linalg::cholesky(sq), linalg::solve(sq, ones({4, 2})), linalg::tri_inv(sq)});
  add_pair(linalg::eig(sq));
  add_pair(linalg::eigh(sq));
  add_all({linalg::eigvals(sq), linalg::eigvalsh(sq)});
  // masked, gathered and segmented products
  add_all({block_masked_mm(ones({64, 64}), ones({64, 64}), 32, ones({2, 2}, bool_)),
           gather_mm(ones({3, 2, 5}), ones({3, 5, 4}), array({0, 2}, uint32), array({1, 1}, uint32)),
           segmented_mm(ones({3, 6}), ones({6, 2}), reshape(array({0, 2, 2, 6}, uint32), {2, 2}))});
  // collectives: on one process the ops return their input, so the nodes are built as on more
  const auto one_process = distributed::init().raw_group();
  const Stream s = default_stream(default_device());
  for (auto kind : {CollectiveKind::all_sum, CollectiveKind::all_gather, CollectiveKind::sum_scatter}) {
    add_all({array(m.shape(), m.dtype(), Collective{kind, one_process, -1}, {m}, s)});
  }
  add_all({array({2, 5}, int16, Collective{CollectiveKind::recv, one_process, 0, {2, 5}, int16}, {}, s)});
  return out;
}

/// Primitives whose output shape is one of their parameters.
const std::set<std::string_view> shape_parameters = {Arange::name, RandomBits::name, Broadcast::name,   Reshape::name,
                                                     Slice::name,  AsStrided::name,  DynamicSlice::name};

TEST(OutputShapes, EveryRuleGivesTheShapesAndDtypesOfItsNodes) {
  std::set<std::string_view> seen;
  std::set<std::string_view> parameters;
  std::set<uintptr_t> visited;
  V todo = corpus();
  while (!todo.empty()) {
    array a = todo.back();
    todo.pop_back();
    if (!a.has_primitive() || !visited.insert(a.node_id()).second) {
      continue;
    }
    const std::string_view primitive = name(a.primitive());
    seen.insert(primitive);
    const V outputs = a.outputs();
    if (detail::shape_is_parameter(a.primitive())) {
      parameters.insert(primitive);
    }
    const auto dtypes = detail::output_dtypes(a.primitive(), a.inputs());
    const auto shapes = detail::output_shapes(a.primitive(), a.inputs());
    if (primitive == Depends::name) {
      EXPECT_EQ(shapes.size(), a.inputs().size());
    } else {
      EXPECT_EQ(shapes.size(), outputs.size()) << primitive;
    }
    ASSERT_EQ(dtypes.size(), shapes.size()) << primitive;
    for (size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_EQ(dtypes[i], outputs[i].dtype()) << primitive << " output " << i;
      EXPECT_EQ(shapes[i], outputs[i].shape()) << primitive << " output " << i;
    }
    for (const auto& in : a.inputs()) {
      todo.push_back(in);
    }
  }
  EXPECT_EQ(parameters, shape_parameters);
  // The corpus covers every primitive outside the unary and binary families (which share one rule, the broadcast
  // of their inputs).
  std::set<std::string_view> all;
  [&]<size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          using P = std::variant_alternative_t<I, Primitive::Variant>;
          if constexpr (!UnaryPrimitive<P> && !BinaryPrimitive<P>) {
            all.insert(P::name);
          }
        }(),
        ...);
  }
  (std::make_index_sequence<std::variant_size_v<Primitive::Variant>>{});
  std::vector<std::string_view> missing;
  for (auto p : all) {
    if (!seen.contains(p)) {
      missing.push_back(p);
    }
  }
  EXPECT_TRUE(missing.empty()) << "primitives the corpus does not reach: " << ::testing::PrintToString(missing);
}

TEST(OutputShapes, ImportAcceptsEveryNodeTheOpsBuild) {
  // import_function's check of each node (export/node_check.h) rejects no node an op builds: every node of the
  // corpus, as a one-node graph, passes it. Custom functions, compiled chains and collectives are never in a file.
  const std::set<std::string_view> never_exported = {Custom::name, Compiled::name, Collective::name};
  std::set<uintptr_t> visited;
  V todo = corpus();
  size_t checked = 0;
  while (!todo.empty()) {
    array a = todo.back();
    todo.pop_back();
    if (!a.has_primitive() || !visited.insert(a.node_id()).second) {
      continue;
    }
    for (const auto& in : a.inputs()) {
      todo.push_back(in);
    }
    if (never_exported.contains(name(a.primitive()))) {
      continue;
    }
    detail::Graph g;
    detail::GraphNode n{a.primitive(), a.stream(), {}, {}, -1};
    for (const auto& in : a.inputs()) {
      n.args.push_back(static_cast<int>(g.values.size()));
      g.values.push_back({in.shape(), in.dtype()});
    }
    for (const auto& o : a.outputs()) {
      n.outs.push_back(static_cast<int>(g.values.size()));
      g.values.push_back({o.shape(), o.dtype()});
    }
    EXPECT_NO_THROW(detail::check_imported_node(g, n, 0)) << name(a.primitive());
    ++checked;
  }
  EXPECT_GT(checked, 100U);
}

TEST(OutputShapes, ShapelessCompileFollowsNewShapesThroughTheRules) {
  // Sorting, scans, products and normalizations now replay on new shapes.
  auto f = [](const V& a) {
    auto y = fast::rms_norm(a[0], std::nullopt, 1e-5F);
    return V{cumsum(sort(y, -1), 0), matmul(y, transpose(a[0]))};
  };
  auto g = compile(f, true);
  for (const Shape& shape : {Shape{3, 4}, Shape{5, 2}}) {
    auto x = random::normal(shape, float32, 0.0F, 1.0F, random::key(2));
    auto compiled = g({x});
    auto eager = f({x});
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(compiled[i].shape(), eager[i].shape());
      EXPECT_TRUE(allclose(compiled[i], eager[i], 1e-5, 1e-5).item<bool>()) << shape_string(shape) << " " << i;
    }
  }
}

}  // namespace
}  // namespace nuvec
