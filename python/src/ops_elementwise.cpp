// Element-wise ops: unary math, binary arithmetic and comparisons (with MLX's scalar promotion), where and clip.
// The unary and binary functions, round, where and clip take the fast-call path (fast_function.h), with their array
// methods.

#include <set>
#include <string_view>

#include "python/src/bindings.h"
#include "python/src/fast_function.h"

namespace nuvec::python {
namespace {

using Unary = array (*)(const array&, StreamOrDevice);
using Binary = array (*)(const array&, const array&, StreamOrDevice);

// The element-wise functions that MLX also offers as array methods (a.exp()).
const std::set<std::string_view> methods = {"abs",   "conj",   "conjugate", "cos",     "exp",        "log",
                                            "log10", "log1p",  "log2",      "sin",     "reciprocal", "rsqrt",
                                            "sqrt",  "square", "tan",       "maximum", "minimum"};

/// name(a, *, stream=None), on the fast-call path: in eager-style loops these follow one another.
void def_unary(py::module_& m, ArrayClass& cls, const char* name, Unary fn) {
  auto body = [fn](const Arguments& args) { return wrap(fn(args.to_array(0), args.to_stream(1))); };
  auto parameters = std::string(", *, ").append(stream_parameter);
  if (methods.contains(name)) {
    def_fast_both(m, cls, name, parameters, body);
  } else {
    def_fast(m, std::string(name).append("(a: object").append(parameters).append(") -> nuvec.core.array"), body);
  }
}

/// name(a, b, *, stream=None) with MLX's scalar promotion, on the fast-call path.
void def_binary(py::module_& m, ArrayClass& cls, const char* name, Binary fn) {
  auto body = [fn](const Arguments& args) {
    auto [x, y] = to_arrays(args[0], args[1]);
    return wrap(fn(x, y, args.to_stream(2)));
  };
  auto parameters = std::string(", b: object, *, ").append(stream_parameter);
  if (methods.contains(name)) {
    def_fast_both(m, cls, name, parameters, body);
  } else {
    def_fast(m, std::string(name).append("(a: object").append(parameters).append(") -> nuvec.core.array"), body);
  }
}

}  // namespace

void init_ops_elementwise(py::module_& m, ArrayClass& cls) {
  const std::pair<const char*, Unary> unary[] = {
      {"abs", &nuvec::abs},
      {"negative", &nuvec::negative},
      {"sign", &nuvec::sign},
      {"floor", &nuvec::floor},
      {"ceil", &nuvec::ceil},
      {"trunc", &nuvec::trunc},
      {"square", &nuvec::square},
      {"sqrt", &nuvec::sqrt},
      {"rsqrt", &nuvec::rsqrt},
      {"reciprocal", &nuvec::reciprocal},
      {"exp", &nuvec::exp},
      {"expm1", &nuvec::expm1},
      {"log", &nuvec::log},
      {"log2", &nuvec::log2},
      {"log10", &nuvec::log10},
      {"log1p", &nuvec::log1p},
      {"sin", &nuvec::sin},
      {"cos", &nuvec::cos},
      {"tan", &nuvec::tan},
      {"arcsin", &nuvec::arcsin},
      {"arccos", &nuvec::arccos},
      {"arctan", &nuvec::arctan},
      {"sinh", &nuvec::sinh},
      {"cosh", &nuvec::cosh},
      {"tanh", &nuvec::tanh},
      {"arcsinh", &nuvec::arcsinh},
      {"arccosh", &nuvec::arccosh},
      {"arctanh", &nuvec::arctanh},
      {"sigmoid", &nuvec::sigmoid},
      {"erf", &nuvec::erf},
      {"erfinv", &nuvec::erfinv},
      {"degrees", &nuvec::degrees},
      {"radians", &nuvec::radians},
      {"conjugate", &nuvec::conjugate},
      {"conj", &nuvec::conjugate},
      {"real", &nuvec::real},
      {"imag", &nuvec::imag},
      {"isnan", &nuvec::isnan},
      {"isinf", &nuvec::isinf},
      {"isfinite", &nuvec::isfinite},
      {"isposinf", &nuvec::isposinf},
      {"isneginf", &nuvec::isneginf},
      {"logical_not", &nuvec::logical_not},
      {"bitwise_invert", &nuvec::bitwise_invert},
      {"stop_gradient", &nuvec::stop_gradient},
  };
  for (const auto& [name, fn] : unary) {
    def_unary(m, cls, name, fn);
  }
  const std::pair<const char*, Binary> binary[] = {
      {"add", &nuvec::add},
      {"subtract", &nuvec::subtract},
      {"multiply", &nuvec::multiply},
      {"divide", &nuvec::divide},
      {"floor_divide", &nuvec::floor_divide},
      {"remainder", &nuvec::remainder},
      {"power", &nuvec::power},
      {"maximum", &nuvec::maximum},
      {"minimum", &nuvec::minimum},
      {"logaddexp", &nuvec::logaddexp},
      {"arctan2", &nuvec::arctan2},
      {"equal", &nuvec::equal},
      {"not_equal", &nuvec::not_equal},
      {"greater", &nuvec::greater},
      {"greater_equal", &nuvec::greater_equal},
      {"less", &nuvec::less},
      {"less_equal", &nuvec::less_equal},
      {"logical_and", &nuvec::logical_and},
      {"logical_or", &nuvec::logical_or},
      {"logical_xor", &nuvec::logical_xor},
      {"bitwise_and", &nuvec::bitwise_and},
      {"bitwise_or", &nuvec::bitwise_or},
      {"bitwise_xor", &nuvec::bitwise_xor},
      {"left_shift", &nuvec::left_shift},
      {"right_shift", &nuvec::right_shift},
      {"inner", &nuvec::inner},
      {"outer", &nuvec::outer},
      {"kron", &nuvec::kron},
      {"matmul", &nuvec::matmul},
  };
  for (const auto& [name, fn] : binary) {
    def_binary(m, cls, name, fn);
  }
  m.def(
      "divmod",
      [](const py::object& a, const py::object& b, StreamOrDevice s) {
        auto [x, y] = to_arrays(a, b);
        auto qr = divmod(x, y, s);
        return py::make_tuple(qr[0], qr[1]);
      },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("stream") = py::none());
  def_fast_both(
      m, cls, "round", std::string(", decimals: int = 0, *, ").append(stream_parameter),
      [](const Arguments& args) { return wrap(round(args.to_array(0), args.to_int(1, 0), args.to_stream(2))); });
  m.def(
      "nan_to_num",
      [](const py::object& a, float nan, std::optional<float> posinf, std::optional<float> neginf, StreamOrDevice s) {
        return nan_to_num(to_array(a), nan, posinf, neginf, s);
      },
      py::arg("a"), py::arg("nan") = 0.0F, py::arg("posinf") = py::none(), py::arg("neginf") = py::none(),
      py::kw_only(), py::arg("stream") = py::none());
  def_fast(m,
           std::string("where(condition: object, x: object, y: object, *, ")
               .append(stream_parameter)
               .append(") -> nuvec.core.array"),
           [](const Arguments& args) {
             auto [x, y] = to_arrays(args[1], args[2]);
             return wrap(where(args.to_array(0), x, y, args.to_stream(3)));
           });
  // The bounds take the array's dtype as a Python scalar operand does (a float bound keeps a float16 array float16).
  def_fast(m,
           std::string("clip(a: object, a_min: object, a_max: object, *, ")
               .append(stream_parameter)
               .append(") -> nuvec.core.array"),
           [](const Arguments& args) {
             auto x = args.to_array(0);
             auto bound = [&](size_t i) -> std::optional<array> {
               if (!args.given(i)) {
                 return std::nullopt;
               }
               return to_array_like(args[i], x);
             };
             return wrap(clip(x, bound(1), bound(2), args.to_stream(3)));
           });
  m.def(
      "isclose",
      [](const py::object& a, const py::object& b, double rtol, double atol, bool equal_nan, StreamOrDevice s) {
        auto [x, y] = to_arrays(a, b);
        return isclose(x, y, rtol, atol, equal_nan, s);
      },
      py::arg("a"), py::arg("b"), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8, py::kw_only(),
      py::arg("equal_nan") = false, py::arg("stream") = py::none());
  m.def(
      "allclose",
      [](const py::object& a, const py::object& b, double rtol, double atol, bool equal_nan, StreamOrDevice s) {
        auto [x, y] = to_arrays(a, b);
        return allclose(x, y, rtol, atol, equal_nan, s);
      },
      py::arg("a"), py::arg("b"), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8, py::kw_only(),
      py::arg("equal_nan") = false, py::arg("stream") = py::none());
  m.def(
      "array_equal",
      [](const py::object& a, const py::object& b, bool equal_nan, StreamOrDevice s) {
        return array_equal(to_array(a), to_array(b), equal_nan, s);
      },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("equal_nan") = false, py::arg("stream") = py::none());
}

}  // namespace nuvec::python
