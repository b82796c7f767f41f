// MLX's export.h, called as MLX code calls it: a declaration that changes or goes missing fails to compile here.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <unordered_map>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

std::string scratch(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("nuvec_mlx_api_export_" + std::to_string(getpid()) + name))
      .string();
}

TEST(MlxApiExport, ExportAndImportForms) {
  const std::string path = scratch("a.nuvecfn");
  auto x = array({1.0F, 2.0F});
  auto y = array({3.0F, 4.0F});
  std::function<std::vector<array>(const Args&)> fun = [](const Args& args) { return Args{args[0] + args[1]}; };
  std::function<std::vector<array>(const Kwargs&)> kwfun = [](const Kwargs& kw) { return Args{kw.at("x") * 2.0F}; };
  std::function<std::vector<array>(const Args&, const Kwargs&)> both = [](const Args& args, const Kwargs& kw) {
    return Args{args[0] - kw.at("y")};
  };

  export_function(path, fun, {x, y});
  auto imported = import_function(path);
  EXPECT_EQ(imported({x, y})[0].shape(), Shape{2});
  EXPECT_EQ(imported(Args{x, y}).size(), 1U);
  export_function(path, fun, Args{x, y}, /* shapeless = */ true);
  EXPECT_EQ(import_function(path)({ones({3}), ones({3})})[0].shape(), Shape{3});

  export_function(path, kwfun, {{"x", x}});
  EXPECT_EQ(import_function(path)({{"x", x}})[0].shape(), Shape{2});
  export_function(path, kwfun, Kwargs{{"x", x}}, false);
  std::unordered_map<std::string, array> declared{{"x", x}};  // MLX's Kwargs type, spelled out
  export_function(path, kwfun, declared, false, "metadata");
  EXPECT_EQ(import_function(path).metadata(), "metadata");
  EXPECT_EQ(import_function(path)(Kwargs{{"x", x}}).size(), 1U);

  export_function(path, both, {x}, {{"y", y}});
  ImportedFunction f = import_function(path);
  EXPECT_EQ(f({x}, {{"y", y}})[0].shape(), Shape{2});
  export_function(path, both, Args{x}, Kwargs{{"y", y}}, true);
  ImportedFunction copy = import_function(path);
  EXPECT_EQ(copy(Args{ones({4})}, Kwargs{{"y", ones({4})}})[0].shape(), Shape{4});
  std::filesystem::remove(path);
}

TEST(MlxApiExport, ExporterForms) {
  const std::string path = scratch("b.nuvecfn");
  auto fun = [](const Args& args) { return Args{exp(args[0])}; };
  FunctionExporter ex = exporter(path, fun);
  ex({ones({2})});
  ex(Args{ones({3})});
  ex.close();
  FunctionExporter moved = std::move(ex);
  EXPECT_THROW(moved({ones({4})}), std::runtime_error);
  auto imported = import_function(path);
  EXPECT_EQ(imported({ones({3})})[0].shape(), Shape{3});

  auto kw_ex = exporter(
      path, [](const Kwargs& kw) { return Args{kw.at("a")}; }, true);
  kw_ex({{"a", ones({2})}});
  kw_ex.close();
  auto both_ex = exporter(path, [](const Args& args, const Kwargs& kw) { return Args{args[0] + kw.at("b")}; });
  both_ex({ones({2})}, {{"b", ones({2})}});
  both_ex({ones({3})}, Kwargs{{"b", ones({3})}});
  both_ex.close();
  std::filesystem::remove(path);
}

TEST(MlxApiExport, CallbackForms) {
  int events = 0;
  ExportCallback callback = [&events](const ExportCallbackInput& input) {
    events += std::holds_alternative<std::string>(input.at("type")) ? 1 : 0;
  };
  auto x = array({1.0F, 2.0F});
  std::function<std::vector<array>(const Args&)> fun = [](const Args& args) { return Args{exp(args[0])}; };
  std::function<std::vector<array>(const Kwargs&)> kwfun = [](const Kwargs& kw) { return Args{kw.at("x") * 2.0F}; };
  std::function<std::vector<array>(const Args&, const Kwargs&)> both = [](const Args& args, const Kwargs& kw) {
    return Args{args[0] - kw.at("y")};
  };
  export_function(callback, fun, {x});
  export_function(callback, fun, Args{x}, /* shapeless = */ true);
  export_function(callback, kwfun, {{"x", x}});
  export_function(callback, kwfun, Kwargs{{"x", x}}, false);
  export_function(callback, both, {x}, {{"y", x}});
  export_function([&](const ExportCallbackInput& input) { callback(input); }, both, Args{x}, Kwargs{{"y", x}}, true);
  EXPECT_EQ(events, 6 * 5);  // inputs, keyword_inputs, outputs, constants and one primitive each

  FunctionExporter ex = exporter(callback, fun);
  ex({ones({3})});
  ex.close();
  auto kw_ex = exporter(callback, kwfun, true);
  kw_ex({{"x", ones({2})}});
  auto both_ex = exporter(callback, both);
  both_ex({ones({2})}, {{"y", ones({2})}});
  EXPECT_EQ(events, 9 * 5);
  StateT state = 1.5F;
  EXPECT_EQ(std::get<float>(state), 1.5F);
}

// graph_utils.h's export_to_dot, beside print_graph.
TEST(MlxApiExport, ExportToDot) {
  auto a = array({1.0F, 2.0F});
  auto b = exp(a) + a;
  std::ostringstream one;
  export_to_dot(one, b);
  std::ostringstream list;
  export_to_dot(list, std::vector<array>{b, a});
  EXPECT_EQ(one.str().rfind("digraph {", 0), 0U);
  EXPECT_NE(one.str().find("[shape=box, label=\"Exp\"]"), std::string::npos) << one.str();
  EXPECT_NE(one.str().find("A -> p0;"), std::string::npos) << one.str();
  EXPECT_NE(list.str().find("label=\"Add\""), std::string::npos);
}

}  // namespace
}  // namespace nuvec
