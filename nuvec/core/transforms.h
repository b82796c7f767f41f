#pragma once

// Function transforms with MLX's signatures: reverse mode (vjp, grad, value_and_grad), forward mode (jvp),
// vectorization (vmap), functions with user-given transforms (custom_function, custom_vjp) and checkpoint. Each is a
// graph walk over the primitives a traced function produced, applying one rule per primitive
// (nuvec/core/transforms/rules.h). Only floating (and complex) arrays carry derivatives: integer and bool primals get
// zero gradients and tangents. Mismatched counts or shapes throw nuvec::error.

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec {

/// A function of arrays to arrays: what the transforms take and give.
using Function = std::function<std::vector<array>(const std::vector<array>&)>;

/// The outputs of fun(primals) and the vector-Jacobian products of the cotangents (one per output, each of its
/// output's shape) with respect to every primal; a primal fun does not depend on gets zeros. Throws when the
/// cotangents' count or shapes differ from the outputs'.
std::pair<std::vector<array>, std::vector<array>> vjp(const Function& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents);
std::pair<array, array> vjp(const std::function<array(const array&)>& fun, const array& primal,
                            const array& cotangent);

/// The outputs of fun(primals) and the Jacobian-vector products of the tangents (one per primal, of its shape,
/// cast to its dtype) for every output; an output that depends on no primal gets zeros. Throws when the tangents'
/// count or shapes differ from the primals'.
std::pair<std::vector<array>, std::vector<array>> jvp(const Function& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& tangents);
std::pair<array, array> jvp(const std::function<array(const array&)>& fun, const array& primal,
                            const array& tangent);

/// (inputs) -> (fun's outputs, the gradients with respect to the inputs in argnums, in argnums' order).
using ValueAndGradFn = std::function<std::pair<std::vector<array>, std::vector<array>>(const std::vector<array>&)>;
/// The same for a function with one output.
using SimpleValueAndGradFn = std::function<std::pair<array, std::vector<array>>(const std::vector<array>&)>;

/// fun's outputs and the gradient of its first output (a 0-d array) with respect to the inputs in argnums (default
/// the first; negative counts from the end), in increasing input order as MLX; the other outputs are auxiliary
/// values, returned but not differentiated. An empty argnums throws here; an index out of range or given twice, or
/// a first output that is not 0-d, throws on the call.
ValueAndGradFn value_and_grad(const Function& fun, const std::vector<int>& argnums);
ValueAndGradFn value_and_grad(const Function& fun, int argnum = 0);
std::function<std::pair<array, array>(const array&)> value_and_grad(const std::function<array(const array&)>& fun);
SimpleValueAndGradFn value_and_grad(const std::function<array(const std::vector<array>&)>& fun,
                                    const std::vector<int>& argnums);
SimpleValueAndGradFn value_and_grad(const std::function<array(const std::vector<array>&)>& fun, int argnum = 0);

/// The gradient of a function with a 0-d output with respect to its inputs in argnums (default the first), in
/// increasing input order; throws as value_and_grad.
std::function<std::vector<array>(const std::vector<array>&)> grad(
    const std::function<array(const std::vector<array>&)>& fun, const std::vector<int>& argnums);
std::function<std::vector<array>(const std::vector<array>&)> grad(
    const std::function<array(const std::vector<array>&)>& fun, int argnum = 0);
std::function<array(const array&)> grad(const std::function<array(const array&)>& fun);

/// fun mapped over one axis of its inputs: in_axes gives each input's mapped axis (-1: not mapped, shared by every
/// call), out_axes where each output's mapped axis goes (0 to the output's rank; an output that depends on no mapped
/// input is broadcast along it). Empty axes mean 0 for every input / output. On the call, throws when the axes'
/// counts differ from the inputs' or outputs', an axis is out of range, the mapped sizes differ or nothing is mapped.
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

/// fun as one node whose vjp, jvp and vmap are the functions given; a transform not given differentiates (or maps)
/// fun itself. A custom vjp that returns a cotangent count other than the primals' throws when it runs.
Function custom_function(Function fun, std::optional<CustomVJPFn> fun_vjp = std::nullopt,
                         std::optional<CustomJVPFn> fun_jvp = std::nullopt,
                         std::optional<CustomVmapFn> fun_vmap = std::nullopt);
/// custom_function with a vjp only.
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
