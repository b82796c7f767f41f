#include "nuvec/core/print.h"

#include <iomanip>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "nuvec/core/dispatch.h"
#include "nuvec/core/eval.h"
#include "nuvec/core/ops.h"

namespace nuvec {

namespace {

// Arrays larger than this print their first and last few entries per axis.
constexpr size_t summarize_above = 1000;
constexpr int edge_items = 3;

template <class T>
std::string format_value(T v) {
  std::ostringstream os;
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "true" : "false");
  } else if constexpr (std::is_same_v<T, complex64_t>) {
    os << std::setprecision(6) << v.real() << (v.imag() < 0 ? "-" : "+") << std::abs(v.imag()) << "j";
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    os << v;
  } else if constexpr (std::is_integral_v<T>) {
    os << static_cast<int64_t>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    os << std::setprecision(8) << v;
  } else {
    os << std::setprecision(6) << static_cast<float>(v);
  }
  return os.str();
}

template <class T>
void print_axis(std::ostream& os, const T* data, const array& a, int axis, int64_t offset, int indent, bool summarize) {
  if (axis == a.ndim()) {
    os << format_value(data[offset]);
    return;
  }
  os << '[';
  int n = a.shape(axis);
  for (int i = 0; i < n; ++i) {
    if (summarize && n > 2 * edge_items && i == edge_items) {
      os << "...";
      i = n - edge_items - 1;
      os << (axis + 1 == a.ndim() ? ", " : ",\n" + std::string(static_cast<size_t>(indent + 1), ' '));
      continue;
    }
    print_axis(os, data, a, axis + 1, offset + i * a.strides(axis), indent + 1, summarize);
    if (i + 1 < n) {
      if (axis + 1 == a.ndim()) {
        os << ", ";
      } else {
        os << ',' << std::string(static_cast<size_t>(a.ndim() - axis - 1), '\n')
           << std::string(static_cast<size_t>(indent + 1), ' ');
      }
    }
  }
  os << ']';
}

}  // namespace

std::ostream& operator<<(std::ostream& os, array a) {
  a.eval();
  os << "array(";
  constexpr int prefix = 6;  // "array("
  dispatch(a.dtype(),
           [&]<class T>(type_tag<T>) { print_axis(os, a.data<T>(), a, 0, 0, prefix, a.size() > summarize_above); });
  return os << ", dtype=" << a.dtype() << ')';
}

namespace {

/// Names arrays A, B, ..., Z, BA, BB, ... in the order they are first seen.
class Namer {
 public:
  const std::string& operator()(const array& a) {
    auto [it, added] = names_.try_emplace(a.id());
    if (added) {
      size_t n = names_.size() - 1;
      do {
        it->second.insert(it->second.begin(), static_cast<char>('A' + n % 26));
        n /= 26;
      } while (n > 0);
    }
    return it->second;
  }

 private:
  std::unordered_map<uintptr_t, std::string> names_;
};

}  // namespace

void print_graph(std::ostream& os, const std::vector<array>& outputs) {
  auto nodes = schedule(outputs);
  Namer name;
  std::unordered_set<uintptr_t> leaves;
  for (const auto& node : nodes) {
    for (const auto& in : node.inputs()) {
      if (!in.has_primitive() && leaves.insert(in.id()).second) {
        os << name(in) << "\n";
      }
    }
  }
  for (const auto& node : nodes) {
    os << nuvec::name(node.primitive());
    for (const auto& in : node.inputs()) {
      os << " " << name(in);
    }
    os << " ->";
    for (const auto& out : node.outputs()) {
      os << " " << name(out);
    }
    os << "\n";
  }
}

void export_to_dot(std::ostream& os, const std::vector<array>& outputs) {
  auto nodes = schedule(outputs);
  Namer name;
  std::unordered_set<uintptr_t> drawn;
  auto array_node = [&](const array& a) {
    const std::string& n = name(a);
    if (drawn.insert(a.id()).second) {
      os << "  " << n << " [label=\"" << n << "\"];\n";
    }
    return n;
  };
  os << "digraph {\n  node [shape=ellipse];\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& node = nodes[i];
    const std::string box = "p" + std::to_string(i);
    os << "  " << box << " [shape=box, label=\"" << nuvec::name(node.primitive()) << "\"];\n";
    for (const auto& in : node.inputs()) {
      os << "  " << array_node(in) << " -> " << box << ";\n";
    }
    for (const auto& out : node.outputs()) {
      os << "  " << box << " -> " << array_node(out) << ";\n";
    }
  }
  os << "}\n";
}

}  // namespace nuvec
