#pragma once

// compile: MLX's `compile` for nuvec. A compiled function is traced once per
// input signature (shapes, dtypes, constants) into a graph of primitives; the
// graph is simplified (common subexpressions, constant folding, no-op
// conversions and broadcasts) and its element-wise chains are fused into
// kernels generated as C++ and built by the system compiler (nuvec/core/compile/).
// Later calls with the same signature replay the graph on the new inputs.

#include <cstddef>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/core/transforms.h"

namespace nuvec {

/// How much compile does (MLX's modes): nothing (functions run as written), tracing only, tracing and
/// simplification, or everything (the default).
enum class CompileMode { disabled, no_simplify, no_fuse, enabled };

/// fun traced once per signature of its inputs. What does not depend on the inputs is computed once when traced and
/// reused: random numbers drawn from the global key inside fun repeat on every call (pass a key as an input, or the
/// key as state, to draw new ones). With shapeless, the signature holds dtypes and ranks but not
/// shapes: the graph is replayed on inputs of other shapes without retracing (primitives whose parameters fix a
/// shape, such as Reshape, then throw).
Function compile(Function fun, bool shapeless = false);
/// As MLX: a plain function (or nullptr, which picks this overload rather than an ambiguous conversion).
inline Function compile(std::vector<array> (*fun)(const std::vector<array>&), bool shapeless = false) {
  return compile(Function(fun), shapeless);
}
/// As MLX: a lambda without captures goes through its function pointer.
template <class F>
requires std::is_convertible_v<F, decltype(+std::declval<F>())>
auto compile(F&& fun, bool shapeless = false) { return compile(+fun, shapeless); }

/// A function of arrays and numeric constants; the constants' values join the signature (a new value retraces).
using ConstantFunction = std::function<std::vector<array>(const std::vector<array>&, const std::vector<double>&)>;
/// compile for a ConstantFunction: the compiled function takes the arrays and the constants.
std::function<std::vector<array>(const std::vector<array>&, const std::vector<double>&)> compile(
    ConstantFunction fun, bool shapeless = false);

/// The arrays a stateful function reads and replaces (model parameters, optimizer moments): called at every call
/// of the compiled function, which passes their values as implicit inputs and stores their new values back.
using CompileState = std::function<std::vector<array*>()>;
/// compile for a stateful function: `state` is called at every call, and the arrays it points to are read before
/// and replaced after; if fun throws while tracing, they keep their values. A null pointer throws.
Function compile(Function fun, CompileState state, bool shapeless = false);

/// Compile off: compiled functions run their function directly (NUVEC_DISABLE_COMPILE=1 at start-up does this).
void disable_compile();
/// Compile back on (CompileMode::enabled).
void enable_compile();
/// Sets or reads the process-wide mode; it applies to every compiled function from its next call.
void set_compile_mode(CompileMode mode);
CompileMode compile_mode();

/// The number of signatures each compiled function keeps traced (least recently used evicted first); 64 at start.
/// A limit of 0 throws.
void set_compile_cache_limit(size_t limit);
size_t compile_cache_limit();

}  // namespace nuvec
