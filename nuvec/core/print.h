#pragma once

#include <concepts>
#include <ostream>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec {

/// Prints like numpy: `array([[1, 2],\n       [3, 4]], dtype=int32)`. Evaluates the array.
std::ostream& operator<<(std::ostream& os, array a);

/// Prints the unevaluated graph behind `outputs` (MLX's print_graph): its leaves, one letter name each, then one line
/// per node in evaluation order, "Name inputs -> outputs".
void print_graph(std::ostream& os, const std::vector<array>& outputs);
template <std::convertible_to<array>... Arrays>
void print_graph(std::ostream& os, Arrays&&... outputs) {
  print_graph(os, std::vector<array>{std::forward<Arrays>(outputs)...});
}

/// Writes the same graph in Graphviz's DOT language (MLX's export_to_dot): arrays as ellipses named as print_graph
/// names them, primitives as boxes, edges from inputs to primitives to outputs.
void export_to_dot(std::ostream& os, const std::vector<array>& outputs);
template <std::convertible_to<array>... Arrays>
void export_to_dot(std::ostream& os, Arrays&&... outputs) {
  export_to_dot(os, std::vector<array>{std::forward<Arrays>(outputs)...});
}

}  // namespace nuvec
