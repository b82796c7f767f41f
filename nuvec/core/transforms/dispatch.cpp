// The three exhaustive visits that route a node to its rules.

#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

template <class P>
concept ElementwiseFamily = UnaryPrimitive<P> || BinaryPrimitive<P>;

std::vector<array> vjp_rule(const Primitive& p, const VjpArgs& args) {
  return std::visit(
      [&]<class P>(const P& alt) {
        if constexpr (ElementwiseFamily<P>) {
          return vjp_elementwise(p, args);
        } else {
          return vjp_of(alt, args);
        }
      },
      p);
}

std::vector<array> jvp_rule(const Primitive& p, const JvpArgs& args) {
  return std::visit(
      [&]<class P>(const P& alt) {
        if constexpr (ElementwiseFamily<P>) {
          return jvp_elementwise(p, args);
        } else {
          return jvp_of(alt, args);
        }
      },
      p);
}

Batched vmap_rule(const Primitive& p, const VmapArgs& args) {
  return std::visit(
      [&]<class P>(const P& alt) {
        if constexpr (ElementwiseFamily<P>) {
          return vmap_elementwise(p, args);
        } else {
          return vmap_of(alt, args);
        }
      },
      p);
}

bool gradient_flows(const Primitive& p, size_t index, size_t num_outputs) {
  return std::visit(
      [&]<class P>(const P& alt) {
        if constexpr (std::is_same_v<P, StopGradient>) {
          return false;
        } else if constexpr (std::is_same_v<P, Depends>) {
          return index < num_outputs;
        } else if constexpr (std::is_same_v<P, Custom>) {
          return index >= static_cast<size_t>(alt.num_outputs);
        } else {
          return true;
        }
      },
      p);
}

}  // namespace nuvec::detail
