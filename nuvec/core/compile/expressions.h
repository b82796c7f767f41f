#pragma once

// The C++ forms of values in generated kernels, and the expression of each element-wise primitive: one `expr`
// overload per primitive in expressions.cpp, reached by an exhaustive visit, so an element-wise primitive without
// one does not compile.

#include <optional>
#include <string>
#include <vector>

#include "nuvec/core/primitives.h"

namespace nuvec::detail {

/// Primitives the generator writes as per-element expressions: the unary and binary families, Select, AsType and
/// Broadcast (a read of its input). Every other primitive has no element-wise form.
template <class P>
concept Elementwise =
    UnaryPrimitive<P> || BinaryPrimitive<P> || std::same_as<P, Select> || std::same_as<P, AsType> ||
    std::same_as<P, Broadcast>;

/// The C++ type values of `d` are computed in (float for the 16-bit floats); throws for complex64.
std::string compute_type(Dtype d);
/// The C++ type elements of `d` are stored as.
std::string storage_type(Dtype d);
/// A stored element of `d` as a compute value, and back.
std::string load(Dtype d, const std::string& expr);
std::string store(Dtype d, const std::string& expr);
/// A compute value rounded to its 16-bit dtype (identity for other dtypes).
std::string rounded(Dtype d, const std::string& expr);

/// `value` as a compute value of `d` in C++ source (exact: hexadecimal floats).
std::string literal(Dtype d, double value);

/// x ** e for a float or integer x of dtype `d` and a known exponent e, in the form detail::power_form gives the CPU
/// kernel (products, square roots); nullopt where the generic expression (pow) serves.
std::optional<std::string> constant_power(Dtype d, const std::string& x, double e);

/// The expression of primitive `p` over operands named `args` of dtypes `arg_dtypes`, giving a value of dtype
/// `out`; nullopt where the generator has none (the primitive is not element-wise, or not for these dtypes).
std::optional<std::string> expression(const Primitive& p, const std::vector<Dtype>& arg_dtypes,
                                      const std::vector<std::string>& args, Dtype out);

}  // namespace nuvec::detail
