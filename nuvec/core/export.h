#pragma once

// export_function / import_function: MLX's export.h for nuvec. A function of arrays is traced into its graph of
// primitives (with their parameters), and the graph is written to a file together with its inputs' signature, its
// outputs, its keyword-argument names and the arrays it captured (with their data). Another program imports the file
// and calls the function without its source. One file may hold several traces (several input shapes); a shapeless
// export replays its one trace for inputs of any shapes of the same ranks and dtypes.
//
// The file format is nuvec's own, not MLX's bytes (laid out in nuvec/core/export/trace_io.h): magic "NUVECFN\0", a
// version, the shapeless flag, the number of traces, then each trace as a length, its bytes and a checksum. Importing
// checks all of it: a file that is truncated, damaged, of another format or of a newer version throws
// std::runtime_error.
//
// The ExportCallback overloads hand the same traced graph to a callback instead of a file, as a series of events.

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec {

using Args = std::vector<array>;
using Kwargs = std::unordered_map<std::string, array>;

/// One parameter of a primitive as an ExportCallback receives it (MLX's alternatives; Shape and std::vector<int> are
/// one type here as in MLX, and nuvec reports integer lists as the Shape alternative, index 6).
using StateT = std::variant<bool, int, size_t, float, double, Dtype, Shape, Strides, std::vector<int>,
                            std::vector<size_t>, std::vector<std::tuple<bool, bool, bool>>,
                            std::vector<std::variant<bool, int, float>>, std::optional<float>, std::string>;

/// One event of a callback export, keyed by field: "type" is "inputs", "keyword_inputs", "outputs", "constants" or
/// "primitive"; values are named "A", "B", ..., "Z", "AA", ... in the order the events first mention them.
using ExportCallbackInput = std::unordered_map<
    std::string,
    std::variant<std::vector<std::tuple<std::string, Shape, Dtype>>, std::vector<std::pair<std::string, array>>,
                 std::vector<std::pair<std::string, std::string>>, std::vector<StateT>, std::string>>;
using ExportCallback = std::function<void(const ExportCallbackInput&)>;

namespace detail {
struct ExportState;
struct FunctionTable;
}  // namespace detail

struct FunctionExporter;

/// An exporter writing traces of `fun` to `path` (created or truncated now; error(io) when it cannot be), with
/// `metadata`, a string of the caller's that the file keeps (ImportedFunction::metadata).
FunctionExporter exporter(const std::string& path, const std::function<std::vector<array>(const Args&)>& fun,
                          bool shapeless = false, const std::string& metadata = "");
FunctionExporter exporter(const std::string& path, const std::function<std::vector<array>(const Kwargs&)>& fun,
                          bool shapeless = false, const std::string& metadata = "");
FunctionExporter exporter(const std::string& path,
                          const std::function<std::vector<array>(const Args&, const Kwargs&)>& fun,
                          bool shapeless = false, const std::string& metadata = "");

/// An exporter handing each trace of `fun` to `callback` as events: "inputs" (name, shape, dtype of each input),
/// "keyword_inputs" (keyword, input name), "outputs", "constants" (name and array of each constant not reported by
/// an earlier trace of this exporter), then one "primitive" per node in order ("name", "inputs", "outputs",
/// "arguments": its parameters). A trace that cannot be exported throws before its first event.
FunctionExporter exporter(const ExportCallback& callback, const std::function<std::vector<array>(const Args&)>& fun,
                          bool shapeless = false);
FunctionExporter exporter(const ExportCallback& callback, const std::function<std::vector<array>(const Kwargs&)>& fun,
                          bool shapeless = false);
FunctionExporter exporter(const ExportCallback& callback,
                          const std::function<std::vector<array>(const Args&, const Kwargs&)>& fun,
                          bool shapeless = false);

/// Writes traces of one function to one file or callback: each call traces the function on its arguments (a
/// signature, by shapes and dtypes, may be exported once); close() ends it. The file is complete after every call.
struct FunctionExporter {
  void operator()(const std::initializer_list<array>& args) { this->operator()(Args(args)); }
  void operator()(const Args& args);
  void operator()(const Kwargs& kwargs);
  void operator()(const Args& args, const Kwargs& kwargs);

  /// Later calls throw; the file keeps the traces written so far.
  void close();

  FunctionExporter(const FunctionExporter&) = delete;
  FunctionExporter& operator=(const FunctionExporter&) = delete;
  FunctionExporter(FunctionExporter&& other) noexcept;
  FunctionExporter& operator=(FunctionExporter&& other) noexcept;
  ~FunctionExporter();

 private:
  friend FunctionExporter exporter(const std::string&, const std::function<std::vector<array>(const Args&)>&, bool,
                                   const std::string&);
  friend FunctionExporter exporter(const std::string&, const std::function<std::vector<array>(const Kwargs&)>&, bool,
                                   const std::string&);
  friend FunctionExporter exporter(const std::string&,
                                   const std::function<std::vector<array>(const Args&, const Kwargs&)>&, bool,
                                   const std::string&);
  friend FunctionExporter exporter(const ExportCallback&, const std::function<std::vector<array>(const Args&)>&, bool);
  friend FunctionExporter exporter(const ExportCallback&, const std::function<std::vector<array>(const Kwargs&)>&,
                                   bool);
  friend FunctionExporter exporter(const ExportCallback&,
                                   const std::function<std::vector<array>(const Args&, const Kwargs&)>&, bool);
  FunctionExporter(const std::string& path, std::function<std::vector<array>(const Args&, const Kwargs&)> fun,
                   bool shapeless, const std::string& metadata);
  FunctionExporter(ExportCallback callback, std::function<std::vector<array>(const Args&, const Kwargs&)> fun,
                   bool shapeless);

  std::unique_ptr<detail::ExportState> state_;
};

/// Traces `fun` on the arguments and writes it to `path`, with `metadata` (see exporter). Primitives that a file
/// cannot carry (collectives) throw std::invalid_argument naming the primitive.
void export_function(const std::string& path, const std::function<std::vector<array>(const Args&)>& fun,
                     const Args& args, bool shapeless = false, const std::string& metadata = "");
void export_function(const std::string& path, const std::function<std::vector<array>(const Kwargs&)>& fun,
                     const Kwargs& kwargs, bool shapeless = false, const std::string& metadata = "");
void export_function(const std::string& path, const std::function<std::vector<array>(const Args&, const Kwargs&)>& fun,
                     const Args& args, const Kwargs& kwargs, bool shapeless = false,
                     const std::string& metadata = "");

/// Traces `fun` on the arguments and hands the trace to `callback` (exporter's events); collectives throw as above.
void export_function(const ExportCallback& callback, const std::function<std::vector<array>(const Args&)>& fun,
                     const Args& args, bool shapeless = false);
void export_function(const ExportCallback& callback, const std::function<std::vector<array>(const Kwargs&)>& fun,
                     const Kwargs& kwargs, bool shapeless = false);
void export_function(const ExportCallback& callback,
                     const std::function<std::vector<array>(const Args&, const Kwargs&)>& fun, const Args& args,
                     const Kwargs& kwargs, bool shapeless = false);

/// A function read from a file: calling it rebuilds the trace that matches the arguments (same count, keyword names
/// and dtypes; same shapes unless exported shapeless) on them, lazily, and returns its outputs. No matching trace
/// throws std::invalid_argument listing the exported signatures. Cheap to copy.
struct ImportedFunction {
  std::vector<array> operator()(const std::initializer_list<array>& args) const { return this->operator()(Args(args)); }
  std::vector<array> operator()(const Args& args) const;
  std::vector<array> operator()(const Kwargs& kwargs) const;
  std::vector<array> operator()(const Args& args, const Kwargs& kwargs) const;
  /// The metadata the file was exported with ("" when none).
  [[nodiscard]] const std::string& metadata() const;

 private:
  friend ImportedFunction import_function(const std::string& path);
  explicit ImportedFunction(std::shared_ptr<const detail::FunctionTable> table);

  std::shared_ptr<const detail::FunctionTable> table_;
};

/// Reads a file written by export_function or an exporter; std::runtime_error when it cannot be read or is not one.
ImportedFunction import_function(const std::string& path);

}  // namespace nuvec
