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

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec {

using Args = std::vector<array>;
using Kwargs = std::map<std::string, array>;

namespace detail {
struct ExportState;
struct FunctionTable;
}  // namespace detail

struct FunctionExporter;

/// An exporter writing traces of `fun` to `path` (created or truncated now; error(io) when it cannot be).
FunctionExporter exporter(const std::string& path, const std::function<std::vector<array>(const Args&)>& fun,
                          bool shapeless = false);
FunctionExporter exporter(const std::string& path, const std::function<std::vector<array>(const Kwargs&)>& fun,
                          bool shapeless = false);
FunctionExporter exporter(const std::string& path,
                          const std::function<std::vector<array>(const Args&, const Kwargs&)>& fun,
                          bool shapeless = false);

/// Writes traces of one function to one file: each call traces the function on its arguments (a signature, by
/// shapes and dtypes, may be exported once); close() ends it. The file is complete after every call.
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
  friend FunctionExporter exporter(const std::string&, const std::function<std::vector<array>(const Args&)>&, bool);
  friend FunctionExporter exporter(const std::string&, const std::function<std::vector<array>(const Kwargs&)>&, bool);
  friend FunctionExporter exporter(const std::string&,
                                   const std::function<std::vector<array>(const Args&, const Kwargs&)>&, bool);
  FunctionExporter(const std::string& path, std::function<std::vector<array>(const Args&, const Kwargs&)> fun,
                   bool shapeless);

  std::unique_ptr<detail::ExportState> state_;
};

/// Traces `fun` on the arguments and writes it to `path`. Primitives that a file cannot carry (collectives) throw
/// std::invalid_argument naming the primitive.
void export_function(const std::string& path, const std::function<std::vector<array>(const Args&)>& fun,
                     const Args& args, bool shapeless = false);
void export_function(const std::string& path, const std::function<std::vector<array>(const Kwargs&)>& fun,
                     const Kwargs& kwargs, bool shapeless = false);
void export_function(const std::string& path, const std::function<std::vector<array>(const Args&, const Kwargs&)>& fun,
                     const Args& args, const Kwargs& kwargs, bool shapeless = false);

/// A function read from a file: calling it rebuilds the trace that matches the arguments (same count, keyword names
/// and dtypes; same shapes unless exported shapeless) on them, lazily, and returns its outputs. No matching trace
/// throws std::invalid_argument listing the exported signatures. Cheap to copy.
struct ImportedFunction {
  std::vector<array> operator()(const std::initializer_list<array>& args) const { return this->operator()(Args(args)); }
  std::vector<array> operator()(const Args& args) const;
  std::vector<array> operator()(const Kwargs& kwargs) const;
  std::vector<array> operator()(const Args& args, const Kwargs& kwargs) const;

 private:
  friend ImportedFunction import_function(const std::string& path);
  explicit ImportedFunction(std::shared_ptr<const detail::FunctionTable> table);

  std::shared_ptr<const detail::FunctionTable> table_;
};

/// Reads a file written by export_function or an exporter; std::runtime_error when it cannot be read or is not one.
ImportedFunction import_function(const std::string& path);

}  // namespace nuvec
