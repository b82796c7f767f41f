#pragma once

// Function transforms with MLX's signatures: reverse mode (vjp, grad,
// value_and_grad), forward mode (jvp), vectorization (vmap), functions with
// user-given transforms (custom_function, custom_vjp) and checkpoint. Each is a
// graph walk over the primitives a traced function produced, applying one rule
// per primitive (nuvec/core/transforms/rules.h).

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec {

using Function = std::function<std::vector<array>(const std::vector<array>&)>;

/// The outputs of fun(primals) and the vector-Jacobian products of the cotangents (one per output) with respect to
/// every primal.
std::pair<std::vector<array>, std::vector<array>> vjp(const Function& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents);
std::pair<array, array> vjp(const std::function<array(const array&)>& fun, const array& primal,
                            const array& cotangent);

/// The outputs of fun(primals) and the Jacobian-vector products of the tangents (one per primal) for every output.
std::pair<std::vector<array>, std::vector<array>> jvp(const Function& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& tangents);
std::pair<array, array> jvp(const std::function<array(const array&)>& fun, const array& primal,
                            const array& tangent);

/// fun's outputs and the gradient of its first output (a scalar) with respect to the primals in argnums; the other
/// outputs are auxiliary values, returned but not differentiated.
using ValueAndGradFn = std::function<std::pair<std::vector<array>, std::vector<array>>(const std::vector<array>&)>;
using SimpleValueAndGradFn = std::function<std::pair<array, std::vector<array>>(const std::vector<array>&)>;

ValueAndGradFn value_and_grad(const Function& fun, const std::vector<int>& argnums);
ValueAndGradFn value_and_grad(const Function& fun, int argnum = 0);
std::function<std::pair<array, array>(const array&)> value_and_grad(const std::function<array(const array&)>& fun);
SimpleValueAndGradFn value_and_grad(const std::function<array(const std::vector<array>&)>& fun,
                                    const std::vector<int>& argnums);
SimpleValueAndGradFn value_and_grad(const std::function<array(const std::vector<array>&)>& fun, int argnum = 0);

/// The gradient of a scalar function with respect to the primals in argnums.
std::function<std::vector<array>(const std::vector<array>&)> grad(
    const std::function<array(const std::vector<array>&)>& fun, const std::vector<int>& argnums);
std::function<std::vector<array>(const std::vector<array>&)> grad(
    const std::function<array(const std::vector<array>&)>& fun, int argnum = 0);
std::function<array(const array&)> grad(const std::function<array(const array&)>& fun);

/// fun mapped over one axis of its inputs: in_axes gives each input's mapped axis (-1: not mapped, shared by every
/// call), out_axes where each output's mapped axis goes. Empty axes mean 0 for every input / output.
Function vmap(const Function& fun, const std::vector<int>& in_axes = {}, const std::vector<int>& out_axes = {});
std::function<array(const array&)> vmap(const std::function<array(const array&)>& fun, int in_axis = 0,
                                        int out_axis = 0);
std::function<array(const array&, const array&)> vmap(const std::function<array(const array&, const array&)>& fun,
                                                       int in_axis_a = 0, int in_axis_b = 0, int out_axis = 0);

/// A custom vjp: (primals, cotangents, outputs) -> one cotangent per primal.
using CustomVJPFn = std::function<std::vector<array>(const std::vector<array>&, const std::vector<array>&,
                                                     const std::vector<array>&)>;
/// A custom jvp: (primals, tangents, argnums) -> one tangent per output; tangents[i] belongs to primals[argnums[i]].
using CustomJVPFn = std::function<std::vector<array>(const std::vector<array>&, const std::vector<array>&,
                                                     const std::vector<int>&)>;
/// A custom vmap: (inputs, axes) -> (outputs, their mapped axes); axes as vmap's in_axes.
using CustomVmapFn =
    std::function<std::pair<std::vector<array>, std::vector<int>>(const std::vector<array>&, const std::vector<int>&)>;

/// fun with the transforms given; a transform not given differentiates (or maps) fun itself.
Function custom_function(Function fun, std::optional<CustomVJPFn> fun_vjp = std::nullopt,
                         std::optional<CustomJVPFn> fun_jvp = std::nullopt,
                         std::optional<CustomVmapFn> fun_vmap = std::nullopt);
Function custom_vjp(Function fun, CustomVJPFn fun_vjp);

/// fun whose intermediates are not kept for the backward pass: its vjp runs fun again once the cotangents exist.
Function checkpoint(Function fun);

namespace detail {
/// What a Custom primitive carries: the function and the transforms its user gave.
struct CustomRules {
  Function fun;
  std::optional<CustomVJPFn> vjp;
  std::optional<CustomJVPFn> jvp;
  std::optional<CustomVmapFn> vmap;
};
}  // namespace detail

}  // namespace nuvec
