#include "nuvec/core/export/trace_events.h"

#include <unordered_map>
#include <utility>

#include "nuvec/core/export/primitive_io.h"

namespace nuvec::detail {

namespace {

using ValueInfo = std::vector<std::tuple<std::string, Shape, Dtype>>;

/// Names graph values "A", "B", ..., "Z", "AA", "AB", ... in the order they are first asked for, as MLX names the
/// arrays of its events.
class ValueNamer {
 public:
  explicit ValueNamer(const Graph& g) : graph_(g) {}

  const std::string& name(int value) {
    auto [it, added] = names_.try_emplace(value);
    if (added) {
      for (size_t n = names_.size(); n > 0; n = (n - 1) / 26) {
        it->second.insert(it->second.begin(), static_cast<char>('A' + (n - 1) % 26));
      }
    }
    return it->second;
  }

  ValueInfo info(const std::vector<int>& values) {
    ValueInfo out;
    for (int v : values) {
      const GraphValue& gv = graph_.values[static_cast<size_t>(v)];
      out.emplace_back(name(v), gv.shape, gv.dtype);
    }
    return out;
  }

 private:
  const Graph& graph_;
  std::unordered_map<int, std::string> names_;
};

std::vector<int> value_range(int begin, int end) {
  std::vector<int> values;
  for (int v = begin; v < end; ++v) {
    values.push_back(v);
  }
  return values;
}

}  // namespace

void report_trace(const ExportCallback& callback, const ExportedTrace& trace, ConstantTable& constants) {
  const Graph& g = trace.graph;
  ValueNamer namer(g);
  std::vector<ExportCallbackInput> events;

  events.push_back({{"type", "inputs"}, {"inputs", namer.info(value_range(0, g.num_inputs))}});
  std::vector<std::pair<std::string, std::string>> keywords;
  const int first_keyword = g.num_inputs - static_cast<int>(trace.kwarg_keys.size());
  for (size_t k = 0; k < trace.kwarg_keys.size(); ++k) {
    keywords.emplace_back(trace.kwarg_keys[k], namer.name(first_keyword + static_cast<int>(k)));
  }
  events.push_back({{"type", "keyword_inputs"}, {"keywords", std::move(keywords)}});
  events.push_back({{"type", "outputs"}, {"outputs", namer.info(g.outputs)}});

  // Only constants that no earlier trace of the exporter reported, as MLX does; the table is updated once every
  // event is built, so a failed trace reports nothing.
  std::vector<std::pair<std::string, array>> fresh;
  std::vector<array> added;
  for (size_t i = 0; i < g.constants.size(); ++i) {
    if (constants.find(g.constants[i]) < 0) {
      fresh.emplace_back(namer.name(g.num_inputs + static_cast<int>(i)), g.constants[i]);
      added.push_back(g.constants[i]);
    }
  }
  events.push_back({{"type", "constants"}, {"constants", std::move(fresh)}});

  for (const auto& n : g.nodes) {
    events.push_back({{"type", "primitive"},
                      {"inputs", namer.info(n.args)},
                      {"outputs", namer.info(n.outs)},
                      {"name", std::string(primitive_name(n.primitive))},
                      {"arguments", primitive_state(n.primitive)}});
  }

  constants.arrays.insert(constants.arrays.end(), added.begin(), added.end());
  for (const auto& event : events) {
    callback(event);
  }
}

}  // namespace nuvec::detail
