// FunctionExporter: traces a function per signature and appends each trace to its file or hands it to its callback.

#include <algorithm>
#include <fstream>
#include <utility>

#include "nuvec/core/error.h"
#include "nuvec/core/export.h"
#include "nuvec/core/export/flatten.h"
#include "nuvec/core/export/trace_events.h"
#include "nuvec/core/export/trace_io.h"

namespace nuvec {

namespace detail {

struct ExportState {
  std::string path;
  std::ofstream file;
  /// Set for a callback export, which has no file.
  ExportCallback callback;
  std::function<std::vector<array>(const Args&, const Kwargs&)> fun;
  bool shapeless = false;
  std::string metadata;
  uint32_t count = 0;
  bool closed = false;
  /// The signatures exported so far: keyword names, then dtypes and shapes (ranks when shapeless).
  std::vector<std::pair<std::vector<std::string>, std::vector<int64_t>>> signatures;
  ConstantTable constants;

  void write_header() {
    ByteWriter header;
    header.put_raw(export_magic.data(), export_magic.size());
    header.put(export_version);
    header.put(static_cast<uint8_t>(shapeless));
    header.put(count);
    header.put(std::string_view(metadata));
    file.seekp(0);
    file.write(header.bytes().data(), static_cast<std::streamsize>(header.bytes().size()));
  }

  void check_file(const char* doing) {
    file.flush();
    if (!file) {
      throw_error(ErrorKind::io,
                  std::string("[export_function] Failed ").append(doing).append(" ").append(path).append("."));
    }
  }
};

}  // namespace detail

namespace {

std::vector<int64_t> signature(const std::vector<array>& inputs, bool shapeless) {
  std::vector<int64_t> key;
  for (const auto& x : inputs) {
    key.push_back(static_cast<int64_t>(x.dtype().val));
    key.push_back(x.ndim());
    if (!shapeless) {
      key.insert(key.end(), x.shape().begin(), x.shape().end());
    }
  }
  return key;
}

}  // namespace

FunctionExporter::FunctionExporter(const std::string& path,
                                   std::function<std::vector<array>(const Args&, const Kwargs&)> fun, bool shapeless,
                                   const std::string& metadata)
    : state_(std::make_unique<detail::ExportState>()) {
  auto& s = *state_;
  s.path = path;
  s.fun = std::move(fun);
  s.shapeless = shapeless;
  s.metadata = metadata;
  s.file.open(path, std::ios::binary | std::ios::out | std::ios::trunc);
  if (!s.file.is_open()) {
    throw_error(ErrorKind::io, std::string("[export_function] Failed to open ").append(path).append("."));
  }
  s.write_header();
  s.check_file("to write");
}

FunctionExporter::FunctionExporter(ExportCallback callback,
                                   std::function<std::vector<array>(const Args&, const Kwargs&)> fun, bool shapeless)
    : state_(std::make_unique<detail::ExportState>()) {
  state_->callback = std::move(callback);
  state_->fun = std::move(fun);
  state_->shapeless = shapeless;
}

FunctionExporter::FunctionExporter(FunctionExporter&& other) noexcept = default;
FunctionExporter& FunctionExporter::operator=(FunctionExporter&& other) noexcept = default;
FunctionExporter::~FunctionExporter() = default;

void FunctionExporter::close() {
  if (state_) {
    state_->closed = true;
    state_->file.close();
  }
}

void FunctionExporter::operator()(const Args& args) { (*this)(args, Kwargs{}); }
void FunctionExporter::operator()(const Kwargs& kwargs) { (*this)(Args{}, kwargs); }

void FunctionExporter::operator()(const Args& args, const Kwargs& kwargs) {
  if (!state_ || state_->closed) {
    throw_error(ErrorKind::io, "[export_function] Attempting to write after exporting is closed.");
  }
  auto& s = *state_;
  detail::ExportedTrace trace;
  std::vector<array> inputs = args;
  for (const auto& [key, value] : detail::sorted_kwargs(kwargs)) {
    trace.kwarg_keys.push_back(key);
    inputs.push_back(value);
  }
  auto key = std::make_pair(trace.kwarg_keys, signature(inputs, s.shapeless));
  if (std::find(s.signatures.begin(), s.signatures.end(), key) != s.signatures.end()) {
    throw_error(ErrorKind::io,
                "[export_function] Attempting to export a function twice with the same signature is not allowed.");
  }

  const size_t num_args = args.size();
  const auto& keys = trace.kwarg_keys;
  trace.graph = detail::trace_graph(
      [&](const std::vector<array>& flat) {
        Args positional(flat.begin(), flat.begin() + static_cast<std::ptrdiff_t>(num_args));
        Kwargs named;
        for (size_t i = 0; i < keys.size(); ++i) {
          named.emplace(keys[i], flat[num_args + i]);
        }
        return s.fun(positional, named);
      },
      inputs);
  detail::simplify_graph(trace.graph);
  detail::flatten_graph(trace.graph);

  if (s.callback) {
    detail::report_trace(s.callback, trace, s.constants);
    s.signatures.push_back(std::move(key));
    return;
  }

  // Serialize first, so a primitive that cannot be exported leaves the file as it was.
  detail::ConstantTable constants = s.constants;
  const std::string content = detail::write_trace(trace, constants);
  detail::ByteWriter framed;
  framed.put(static_cast<uint64_t>(content.size()));
  framed.put_raw(content.data(), content.size());
  framed.put(detail::fnv1a(content));
  s.file.seekp(0, std::ios::end);
  s.file.write(framed.bytes().data(), static_cast<std::streamsize>(framed.bytes().size()));
  ++s.count;
  s.write_header();
  s.check_file("to write");
  s.constants = std::move(constants);
  s.signatures.push_back(std::move(key));
}

FunctionExporter exporter(const std::string& path, const std::function<std::vector<array>(const Args&)>& fun,
                          bool shapeless, const std::string& metadata) {
  return FunctionExporter(
      path, [fun](const Args& args, const Kwargs&) { return fun(args); }, shapeless, metadata);
}

FunctionExporter exporter(const std::string& path, const std::function<std::vector<array>(const Kwargs&)>& fun,
                          bool shapeless, const std::string& metadata) {
  return FunctionExporter(
      path, [fun](const Args&, const Kwargs& kwargs) { return fun(kwargs); }, shapeless, metadata);
}

FunctionExporter exporter(const std::string& path,
                          const std::function<std::vector<array>(const Args&, const Kwargs&)>& fun, bool shapeless,
                          const std::string& metadata) {
  return FunctionExporter(path, fun, shapeless, metadata);
}

FunctionExporter exporter(const ExportCallback& callback, const std::function<std::vector<array>(const Args&)>& fun,
                          bool shapeless) {
  return FunctionExporter(
      callback, [fun](const Args& args, const Kwargs&) { return fun(args); }, shapeless);
}

FunctionExporter exporter(const ExportCallback& callback, const std::function<std::vector<array>(const Kwargs&)>& fun,
                          bool shapeless) {
  return FunctionExporter(
      callback, [fun](const Args&, const Kwargs& kwargs) { return fun(kwargs); }, shapeless);
}

FunctionExporter exporter(const ExportCallback& callback,
                          const std::function<std::vector<array>(const Args&, const Kwargs&)>& fun, bool shapeless) {
  return FunctionExporter(callback, fun, shapeless);
}

void export_function(const std::string& path, const std::function<std::vector<array>(const Args&)>& fun,
                     const Args& args, bool shapeless, const std::string& metadata) {
  exporter(path, fun, shapeless, metadata)(args);
}

void export_function(const std::string& path, const std::function<std::vector<array>(const Kwargs&)>& fun,
                     const Kwargs& kwargs, bool shapeless, const std::string& metadata) {
  exporter(path, fun, shapeless, metadata)(kwargs);
}

void export_function(const std::string& path, const std::function<std::vector<array>(const Args&, const Kwargs&)>& fun,
                     const Args& args, const Kwargs& kwargs, bool shapeless, const std::string& metadata) {
  exporter(path, fun, shapeless, metadata)(args, kwargs);
}

void export_function(const ExportCallback& callback, const std::function<std::vector<array>(const Args&)>& fun,
                     const Args& args, bool shapeless) {
  exporter(callback, fun, shapeless)(args);
}

void export_function(const ExportCallback& callback, const std::function<std::vector<array>(const Kwargs&)>& fun,
                     const Kwargs& kwargs, bool shapeless) {
  exporter(callback, fun, shapeless)(kwargs);
}

void export_function(const ExportCallback& callback,
                     const std::function<std::vector<array>(const Args&, const Kwargs&)>& fun, const Args& args,
                     const Kwargs& kwargs, bool shapeless) {
  exporter(callback, fun, shapeless)(args, kwargs);
}

}  // namespace nuvec
