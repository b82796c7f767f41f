// import_function: reads every trace of a file, and ImportedFunction picks the one matching its arguments.

#include <fstream>
#include <iterator>
#include <sstream>

#include "nuvec/core/device.h"
#include "nuvec/core/error.h"
#include "nuvec/core/export.h"
#include "nuvec/core/export/trace_io.h"

namespace nuvec {

namespace detail {

struct FunctionTable {
  bool shapeless = false;
  std::string metadata;
  std::vector<ExportedTrace> traces;
};

}  // namespace detail

namespace {

std::string shape_text(const Shape& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    os << (i > 0 ? ", " : "") << shape[i];
  }
  os << (shape.size() == 1 ? ",)" : ")");
  return os.str();
}

bool matches(const detail::ExportedTrace& t, bool shapeless, const Args& args, const Kwargs& kwargs,
             const std::vector<array>& inputs) {
  const auto& g = t.graph;
  if (kwargs.size() != t.kwarg_keys.size() || inputs.size() != static_cast<size_t>(g.num_inputs)) {
    return false;
  }
  size_t k = 0;
  for (const auto& [key, value] : detail::sorted_kwargs(kwargs)) {
    if (key != t.kwarg_keys[k++]) {
      return false;
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& v = g.values[i];
    if (inputs[i].dtype() != v.dtype || static_cast<size_t>(inputs[i].ndim()) != v.shape.size() ||
        (!shapeless && inputs[i].shape() != v.shape)) {
      return false;
    }
  }
  return args.size() + kwargs.size() == inputs.size();
}

[[noreturn]] void no_match(const detail::FunctionTable& table, const Args& args, const Kwargs& kwargs) {
  std::ostringstream msg;
  msg << "[import_function::call] No exported trace matches inputs of shapes";
  for (const auto& a : args) {
    msg << " " << shape_text(a.shape()) << " " << a.dtype();
  }
  for (const auto& [key, a] : detail::sorted_kwargs(kwargs)) {
    msg << " \"" << key << "\": " << shape_text(a.shape()) << " " << a.dtype();
  }
  msg << ". Exported" << (table.shapeless ? " (shapeless, any shapes of these ranks)" : "") << ":";
  int n = 1;
  for (const auto& t : table.traces) {
    const auto& g = t.graph;
    const size_t positional = static_cast<size_t>(g.num_inputs) - t.kwarg_keys.size();
    msg << "\n  " << n++ << ".";
    for (size_t i = 0; i < static_cast<size_t>(g.num_inputs); ++i) {
      msg << " ";
      if (i >= positional) {
        msg << "\"" << t.kwarg_keys[i - positional] << "\": ";
      }
      msg << shape_text(g.values[i].shape) << " " << g.values[i].dtype;
    }
  }
  throw_invalid(msg.str());
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file.is_open()) {
    throw_error(ErrorKind::io, std::string("[import_function] Failed to open ").append(path).append("."));
  }
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) {
    throw_error(ErrorKind::io, std::string("[import_function] Failed to read ").append(path).append("."));
  }
  return bytes;
}

}  // namespace

ImportedFunction::ImportedFunction(std::shared_ptr<const detail::FunctionTable> table) : table_(std::move(table)) {}

std::vector<array> ImportedFunction::operator()(const Args& args) const { return (*this)(args, Kwargs{}); }
const std::string& ImportedFunction::metadata() const { return table_->metadata; }
std::vector<array> ImportedFunction::operator()(const Kwargs& kwargs) const { return (*this)(Args{}, kwargs); }

std::vector<array> ImportedFunction::operator()(const Args& args, const Kwargs& kwargs) const {
  std::vector<array> inputs = args;
  for (const auto& [key, value] : detail::sorted_kwargs(kwargs)) {
    inputs.push_back(value);
  }
  for (const auto& t : table_->traces) {
    if (!matches(t, table_->shapeless, args, kwargs, inputs)) {
      continue;
    }
    try {
      return detail::replay_graph(t.graph, inputs, table_->shapeless);
    } catch (const error& e) {
      if (!table_->shapeless || e.kind() != ErrorKind::invalid_argument) {
        throw;
      }
      // compile's message for a node that cannot follow new shapes, said for an import.
      throw_invalid(std::string("[import_function::call] This function was exported shapeless, but its trace cannot "
                                "be replayed for inputs of new shapes: ")
                        .append(e.what()));
    }
  }
  no_match(*table_, args, kwargs);
}

ImportedFunction import_function(const std::string& path) {
  const std::string bytes = read_file(path);
  auto table = std::make_shared<detail::FunctionTable>();
  try {
    detail::ByteReader in(bytes.data(), bytes.size());
    if (bytes.size() < detail::export_magic.size() ||
        std::string_view(in.take(detail::export_magic.size()), detail::export_magic.size()) != detail::export_magic) {
      throw_error(ErrorKind::io, "[import_function] Not a nuvec exported function (no NUVECFN header).");
    }
    const auto version = in.get<uint32_t>();
    if (version != detail::export_version) {
      throw_error(ErrorKind::io, std::string("[import_function] The file has format version ")
                                     .append(std::to_string(version))
                                     .append("; this nuvec reads version ")
                                     .append(std::to_string(detail::export_version))
                                     .append("."));
    }
    table->shapeless = in.get_bool();
    const auto count = in.get<uint32_t>();
    table->metadata = in.get_string();
    const Stream stream = default_stream(default_device());
    std::vector<array> constants;
    for (uint32_t i = 0; i < count; ++i) {
      const uint64_t size = in.get_count(1);
      const char* content = in.take(size);
      if (in.get<uint64_t>() != detail::fnv1a({content, size})) {
        detail::ByteReader::corrupt("a trace's checksum does not match");
      }
      detail::ByteReader trace(content, size);
      table->traces.push_back(detail::read_trace(trace, constants, stream));
    }
    if (in.left() != 0) {
      detail::ByteReader::corrupt("bytes after the last trace");
    }
  } catch (const error& e) {
    if (e.kind() != ErrorKind::io) {
      throw;
    }
    throw_error(ErrorKind::io, std::string(e.what()).append(" (").append(path).append(")"));
  }
  return ImportedFunction(std::move(table));
}

}  // namespace nuvec
