#include "nuvec/core/export/trace_io.h"

#include <algorithm>
#include <cstring>

#include "nuvec/core/allocator.h"
#include "nuvec/core/export/node_check.h"
#include "nuvec/core/export/primitive_io.h"
#include "nuvec/core/ops.h"

namespace nuvec::detail {

namespace {

void put_value(ByteWriter& out, const GraphValue& v) {
  out.put(v.dtype);
  out.put(v.shape);
}

GraphValue get_value(ByteReader& in) {
  Dtype dtype = in.get_dtype();
  Shape shape = in.get_list<int32_t>();
  for (int d : shape) {
    if (d < 0) {
      ByteReader::corrupt("a negative dimension");
    }
  }
  return {std::move(shape), dtype};
}

/// An evaluated array of the value's shape and dtype holding the next bytes.
array get_constant_data(ByteReader& in, const GraphValue& v) {
  size_t count = 1;
  for (int d : v.shape) {
    if (d != 0 && count > in.left() / static_cast<size_t>(d)) {
      ByteReader::corrupt("a constant larger than the file");
    }
    count *= static_cast<size_t>(d);
  }
  if (count > in.left() / size_of(v.dtype)) {
    ByteReader::corrupt("a constant larger than the file");
  }
  const size_t bytes = count * size_of(v.dtype);
  const char* src = in.take(bytes);
  array a(allocator::malloc(bytes), v.shape, v.dtype);
  if (v.dtype == bool_) {
    // A byte other than 0 or 1 is no valid bool.
    auto* dst = static_cast<bool*>(a.raw_data());
    for (size_t i = 0; i < count; ++i) {
      dst[i] = src[i] != 0;
    }
  } else if (bytes > 0) {
    std::memcpy(a.raw_data(), src, bytes);
  }
  return a;
}

/// A value number that lies in the graph.
int get_value_index(ByteReader& in, size_t num_values) {
  auto v = in.get<int32_t>();
  if (v < 0 || static_cast<size_t>(v) >= num_values) {
    ByteReader::corrupt("a value number out of range");
  }
  return v;
}

std::vector<int> get_value_list(ByteReader& in, size_t num_values) {
  std::vector<int> list(in.get_count(sizeof(int32_t)));
  for (auto& v : list) {
    v = get_value_index(in, num_values);
  }
  return list;
}

}  // namespace

int64_t ConstantTable::find(const array& a) const {
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i].id() == a.id()) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

std::string write_trace(const ExportedTrace& trace, ConstantTable& constants) {
  const Graph& g = trace.graph;
  ByteWriter out;
  out.put(trace.kwarg_keys.size());
  for (const auto& k : trace.kwarg_keys) {
    out.put(std::string_view(k));
  }
  out.put(static_cast<uint64_t>(g.num_inputs));

  std::vector<uint64_t> ids;
  std::vector<size_t> fresh;
  for (size_t i = 0; i < g.constants.size(); ++i) {
    int64_t id = constants.find(g.constants[i]);
    if (id < 0) {
      id = static_cast<int64_t>(constants.arrays.size());
      constants.arrays.push_back(g.constants[i]);
      fresh.push_back(i);
    }
    ids.push_back(static_cast<uint64_t>(id));
  }
  out.put(static_cast<uint64_t>(fresh.size()));
  for (size_t i : fresh) {
    const array& c = g.constants[i];
    out.put(ids[i]);
    put_value(out, {c.shape(), c.dtype()});
    array dense = contiguous(c);
    dense.eval();
    if (dense.nbytes() > 0) {
      out.put_raw(dense.raw_data(), dense.nbytes());
    }
  }
  out.put(ids);

  out.put(static_cast<uint64_t>(g.values.size()));
  for (const auto& v : g.values) {
    put_value(out, v);
  }
  out.put(static_cast<uint64_t>(g.nodes.size()));
  for (const auto& n : g.nodes) {
    write_primitive(out, n.primitive);
    out.put(n.args);
    out.put(n.outs);
    out.put(static_cast<int32_t>(n.shape_source));
  }
  out.put(g.outputs);
  return out.bytes();
}

ExportedTrace read_trace(ByteReader& in, std::vector<array>& constants, Stream stream) {
  ExportedTrace trace;
  const uint64_t num_keys = in.get_count(sizeof(uint64_t));
  for (uint64_t i = 0; i < num_keys; ++i) {
    trace.kwarg_keys.push_back(in.get_string());
  }
  Graph& g = trace.graph;
  const uint64_t num_inputs = in.get_count(1);
  if (num_inputs < num_keys || num_inputs > INT32_MAX) {
    ByteReader::corrupt("fewer inputs than keyword arguments");
  }
  g.num_inputs = static_cast<int>(num_inputs);

  const uint64_t num_fresh = in.get_count(1);
  for (uint64_t i = 0; i < num_fresh; ++i) {
    if (in.get<uint64_t>() != constants.size()) {
      ByteReader::corrupt("constants out of order");
    }
    constants.push_back(get_constant_data(in, get_value(in)));
  }
  for (auto id : in.get_list<uint64_t>()) {
    if (id >= constants.size()) {
      ByteReader::corrupt("an unknown constant");
    }
    g.constants.push_back(constants[id]);
  }

  // Each value takes a dtype byte and a shape's count at least.
  const uint64_t num_values = in.get_count(1 + sizeof(uint64_t));
  if (num_values < num_inputs + g.constants.size() || num_values > INT32_MAX) {
    ByteReader::corrupt("fewer values than inputs and constants");
  }
  for (uint64_t i = 0; i < num_values; ++i) {
    g.values.push_back(get_value(in));
  }
  std::vector<bool> defined(num_values, false);
  for (size_t i = 0; i < num_inputs + g.constants.size(); ++i) {
    defined[i] = true;
  }
  for (size_t i = 0; i < g.constants.size(); ++i) {
    const auto& v = g.values[num_inputs + i];
    if (v.shape != g.constants[i].shape() || v.dtype != g.constants[i].dtype()) {
      ByteReader::corrupt("a constant unlike its value");
    }
  }

  const uint64_t num_nodes = in.get_count(1);
  for (uint64_t i = 0; i < num_nodes; ++i) {
    GraphNode n{read_primitive(in), stream, get_value_list(in, num_values), {}, -1};
    n.outs = get_value_list(in, num_values);
    n.shape_source = in.get<int32_t>();
    for (int a : n.args) {
      if (!defined[static_cast<size_t>(a)]) {
        ByteReader::corrupt("a node reads a value computed after it");
      }
    }
    if (n.shape_source < -1 || n.shape_source >= static_cast<int64_t>(num_values) ||
        (n.shape_source >= 0 && !defined[static_cast<size_t>(n.shape_source)])) {
      ByteReader::corrupt("a broadcast's shape source out of range");
    }
    if (n.outs.empty()) {
      ByteReader::corrupt("a node without outputs");
    }
    for (int o : n.outs) {
      if (defined[static_cast<size_t>(o)]) {
        ByteReader::corrupt("a value computed twice");
      }
      defined[static_cast<size_t>(o)] = true;
    }
    check_imported_node(g, n, static_cast<size_t>(i));
    g.nodes.push_back(std::move(n));
  }
  g.outputs = get_value_list(in, num_values);
  for (int o : g.outputs) {
    if (!defined[static_cast<size_t>(o)]) {
      ByteReader::corrupt("an output no node computes");
    }
  }
  if (in.left() != 0) {
    ByteReader::corrupt("bytes after the trace");
  }
  return trace;
}

std::vector<std::pair<std::string, array>> sorted_kwargs(const Kwargs& kwargs) {
  std::vector<std::pair<std::string, array>> sorted(kwargs.begin(), kwargs.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return sorted;
}

}  // namespace nuvec::detail
