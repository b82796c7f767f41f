// export_function / exporter with an ExportCallback: the events MLX's callback export sends (mlx/export.cpp,
// FunctionExporter::export_with_callback): "inputs", "keyword_inputs", "outputs", "constants", then one "primitive"
// per node, with values named A, B, ... in the order the events first mention them.

#include <gtest/gtest.h>

#include <string>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

using V = std::vector<array>;
using ValueInfo = std::vector<std::tuple<std::string, Shape, Dtype>>;

/// Records every event of a callback export.
struct Recorder {
  std::vector<ExportCallbackInput> events;
  ExportCallback callback() {
    return [this](const ExportCallbackInput& e) { events.push_back(e); };
  }
  [[nodiscard]] std::vector<std::string> types() const {
    std::vector<std::string> out;
    for (const auto& e : events) {
      out.push_back(field<std::string>(e, "type"));
    }
    return out;
  }
  template <class T>
  static const T& field(const ExportCallbackInput& e, const std::string& key) {
    return std::get<T>(e.at(key));
  }
};

TEST(ExportCallback, EventsInMlxOrder) {
  const array c = array({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  auto fun = [c](const Args& args, const Kwargs& kwargs) {
    return V{add(add(exp(matmul(args[0], transpose(args[1]))), c), kwargs.at("bias"))};
  };
  Recorder r;
  export_function(r.callback(), fun, {zeros({2, 3}), zeros({2, 3})}, {{"bias", zeros({2, 2})}});

  ASSERT_EQ(r.types(), (std::vector<std::string>{"inputs", "keyword_inputs", "outputs", "constants", "primitive",
                                                 "primitive", "primitive", "primitive", "primitive"}));
  const auto& e = r.events;
  // Positional inputs, then keyword inputs in key order; then the output, then the constant.
  EXPECT_EQ(Recorder::field<ValueInfo>(e[0], "inputs"),
            (ValueInfo{{"A", {2, 3}, float32}, {"B", {2, 3}, float32}, {"C", {2, 2}, float32}}));
  using Keywords = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(Recorder::field<Keywords>(e[1], "keywords"), (Keywords{{"bias", "C"}}));
  EXPECT_EQ(Recorder::field<ValueInfo>(e[2], "outputs"), (ValueInfo{{"D", {2, 2}, float32}}));
  using Constants = std::vector<std::pair<std::string, array>>;
  const auto& constants = Recorder::field<Constants>(e[3], "constants");
  ASSERT_EQ(constants.size(), 1U);
  EXPECT_EQ(constants[0].first, "E");
  EXPECT_TRUE(array_equal(constants[0].second, c).item<bool>());

  const std::vector<std::string> names{"Transpose", "Matmul", "Exp", "Add", "Add"};
  // Each node's inputs and outputs; new intermediates take the next letters.
  const std::vector<std::pair<ValueInfo, ValueInfo>> io{
      {{{"B", {2, 3}, float32}}, {{"F", {3, 2}, float32}}},
      {{{"A", {2, 3}, float32}, {"F", {3, 2}, float32}}, {{"G", {2, 2}, float32}}},
      {{{"G", {2, 2}, float32}}, {{"H", {2, 2}, float32}}},
      {{{"H", {2, 2}, float32}, {"E", {2, 2}, float32}}, {{"I", {2, 2}, float32}}},
      {{{"I", {2, 2}, float32}, {"C", {2, 2}, float32}}, {{"D", {2, 2}, float32}}}};
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    const auto& p = e[4 + i];
    EXPECT_EQ(Recorder::field<std::string>(p, "name"), names[i]);
    EXPECT_EQ(Recorder::field<ValueInfo>(p, "inputs"), io[i].first);
    EXPECT_EQ(Recorder::field<ValueInfo>(p, "outputs"), io[i].second);
  }
  // Transpose's one parameter, its axes, as the Shape alternative.
  const auto& transpose_args = Recorder::field<std::vector<StateT>>(e[4], "arguments");
  ASSERT_EQ(transpose_args.size(), 1U);
  EXPECT_EQ(std::get<6>(transpose_args[0]), (Shape{1, 0}));
  EXPECT_TRUE(Recorder::field<std::vector<StateT>>(e[5], "arguments").empty());
}

TEST(ExportCallback, ArgumentsFollowThePrimitivesFields) {
  auto fun = [](const Args& a) { return V{sum(astype(a[0], int32), std::vector<int>{1})}; };
  Recorder r;
  export_function(r.callback(), fun, {zeros({2, 3})});
  ASSERT_EQ(r.events.size(), 7U);  // AsType, Reduce, then the Reshape that drops the reduced axis
  EXPECT_EQ(Recorder::field<std::string>(r.events[4], "name"), "AsType");
  const auto& astype_args = Recorder::field<std::vector<StateT>>(r.events[4], "arguments");
  ASSERT_EQ(astype_args.size(), 1U);
  EXPECT_EQ(std::get<Dtype>(astype_args[0]), int32);
  // Reduce: its type as an int (ReduceType::sum is 0), its axes, its output dtype.
  EXPECT_EQ(Recorder::field<std::string>(r.events[5], "name"), "Reduce");
  const auto& reduce_args = Recorder::field<std::vector<StateT>>(r.events[5], "arguments");
  ASSERT_EQ(reduce_args.size(), 3U);
  EXPECT_EQ(std::get<int>(reduce_args[0]), static_cast<int>(ReduceType::sum));
  EXPECT_EQ(std::get<6>(reduce_args[1]), (Shape{1}));
  EXPECT_EQ(std::get<Dtype>(reduce_args[2]), int32);
}

TEST(ExportCallback, ExporterReportsEachConstantOnce) {
  // A matmul uses the captured array as it is (a broadcast of it would be a new constant of the trace).
  const array w = array({5.0f, 6.0f, 7.0f, 8.0f}, {2, 2});
  Recorder r;
  auto ex = exporter(r.callback(), [w](const Args& a) { return V{matmul(a[0], w)}; });
  ex({zeros({1, 2})});
  ex({zeros({3, 2})});
  ASSERT_EQ(r.events.size(), 10U);  // two traces of inputs, keywords, outputs, constants, the matmul
  using Constants = std::vector<std::pair<std::string, array>>;
  EXPECT_EQ(Recorder::field<Constants>(r.events[3], "constants").size(), 1U);
  EXPECT_TRUE(Recorder::field<Constants>(r.events[8], "constants").empty());
  // Names start again at A in each trace; the known constant is named where a node first uses it.
  const auto& inputs = Recorder::field<ValueInfo>(r.events[5], "inputs");
  EXPECT_EQ(inputs, (ValueInfo{{"A", {3, 2}, float32}}));
  const auto& matmul_in = Recorder::field<ValueInfo>(r.events[9], "inputs");
  ASSERT_EQ(matmul_in.size(), 2U);
  EXPECT_EQ(std::get<0>(matmul_in[1]), "C");

  ex.close();
  EXPECT_THROW(ex({zeros({4})}), std::runtime_error);
}

TEST(ExportCallback, ShapelessSignaturesAreByRank) {
  auto fun = [](const Args& a) { return V{exp(a[0])}; };
  Recorder shaped;
  auto by_shape = exporter(shaped.callback(), fun);
  by_shape({zeros({2})});
  by_shape({zeros({3})});
  EXPECT_THROW(by_shape({zeros({3})}), std::runtime_error);

  Recorder shapeless;
  auto by_rank = exporter(shapeless.callback(), fun, true);
  by_rank({zeros({2})});
  try {
    by_rank({zeros({3})});
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("same signature"), std::string::npos) << e.what();
  }
  by_rank({zeros({3, 1})});
  EXPECT_EQ(shapeless.events.size(), 10U);
}

TEST(ExportCallback, CollectiveThrowsBeforeAnyEvent) {
  auto fun = [](const Args& a) {
    return V{array(a[0].shape(), a[0].dtype(), Collective{CollectiveKind::all_sum, nullptr, -1}, {a[0]},
                   default_stream(default_device()))};
  };
  Recorder r;
  try {
    export_function(r.callback(), fun, {ones({2})});
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("export_function] Collective cannot be exported"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(r.events.empty());
}

}  // namespace
}  // namespace nuvec
