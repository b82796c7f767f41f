// nuvec.core.linalg.

#include "nuvec/core/linalg.h"
#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

py::tuple to_tuple(const std::vector<array>& arrays) {
  py::tuple out(arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    out[i] = py::cast(arrays[i]);
  }
  return out;
}

}  // namespace

void init_linalg(py::module_& parent) {
  auto m = parent.def_submodule("linalg", "Linear algebra.");
  m.def(
      "norm",
      [](py::object a, py::object ord, Axes axis, bool keepdims, StreamOrDevice s) {
        auto x = to_array(a);
        std::optional<std::vector<int>> axes;
        if (axis) {
          axes = axes_or_all(axis, x);
        }
        if (ord.is_none()) {
          return linalg::norm(x, axes, keepdims, s);
        }
        if (py::isinstance<py::str>(ord)) {
          return linalg::norm(x, ord.cast<std::string>(), axes, keepdims, s);
        }
        return linalg::norm(x, ord.cast<double>(), axes, keepdims, s);
      },
      py::arg("a"), py::arg("ord") = py::none(), py::arg("axis") = py::none(), py::arg("keepdims") = false,
      py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "qr",
      [](py::object a, StreamOrDevice s) {
        auto [q, r] = linalg::qr(to_array(a), s);
        return py::make_tuple(q, r);
      },
      py::arg("a"), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "svd",
      [](py::object a, bool compute_uv, StreamOrDevice s) -> py::object {
        auto out = linalg::svd(to_array(a), compute_uv, s);
        if (!compute_uv) {
          return py::cast(out[0]);
        }
        return to_tuple(out);
      },
      py::arg("a"), py::arg("compute_uv") = true, py::kw_only(), py::arg("stream") = py::none());
  using Unary = array (*)(const array&, StreamOrDevice);
  const std::pair<const char*, Unary> unary[] = {
      {"inv", &linalg::inv}, {"pinv", &linalg::pinv}, {"eigvals", &linalg::eigvals}, {"det", &linalg::det}};
  for (const auto& [name, fn] : unary) {
    m.def(
        name, [fn](py::object a, StreamOrDevice s) { return fn(to_array(a), s); }, py::arg("a"), py::kw_only(),
        py::arg("stream") = py::none());
  }
  using Triangle = array (*)(const array&, bool, StreamOrDevice);
  const std::pair<const char*, Triangle> triangle[] = {
      {"tri_inv", &linalg::tri_inv}, {"cholesky", &linalg::cholesky}, {"cholesky_inv", &linalg::cholesky_inv}};
  for (const auto& [name, fn] : triangle) {
    m.def(
        name, [fn](py::object a, bool upper, StreamOrDevice s) { return fn(to_array(a), upper, s); }, py::arg("a"),
        py::arg("upper") = false, py::kw_only(), py::arg("stream") = py::none());
  }
  m.def(
      "lu", [](py::object a, StreamOrDevice s) { return to_tuple(linalg::lu(to_array(a), s)); }, py::arg("a"),
      py::kw_only(), py::arg("stream") = py::none());
  using Pair = std::pair<array, array> (*)(const array&, StreamOrDevice);
  const std::pair<const char*, Pair> pairs[] = {
      {"lu_factor", &linalg::lu_factor}, {"eig", &linalg::eig}, {"slogdet", &linalg::slogdet}};
  for (const auto& [name, fn] : pairs) {
    m.def(
        name,
        [fn](py::object a, StreamOrDevice s) {
          auto [x, y] = fn(to_array(a), s);
          return py::make_tuple(x, y);
        },
        py::arg("a"), py::kw_only(), py::arg("stream") = py::none());
  }
  m.def(
      "eigh",
      [](py::object a, const std::string& uplo, StreamOrDevice s) {
        auto [w, v] = linalg::eigh(to_array(a), uplo, s);
        return py::make_tuple(w, v);
      },
      py::arg("a"), py::arg("UPLO") = "L", py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "eigvalsh",
      [](py::object a, const std::string& uplo, StreamOrDevice s) { return linalg::eigvalsh(to_array(a), uplo, s); },
      py::arg("a"), py::arg("UPLO") = "L", py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "solve", [](py::object a, py::object b, StreamOrDevice s) { return linalg::solve(to_array(a), to_array(b), s); },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "solve_triangular",
      [](py::object a, py::object b, bool upper, StreamOrDevice s) {
        return linalg::solve_triangular(to_array(a), to_array(b), upper, s);
      },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("upper") = false, py::arg("stream") = py::none());
  m.def(
      "cross",
      [](py::object a, py::object b, int axis, StreamOrDevice s) {
        return linalg::cross(to_array(a), to_array(b), axis, s);
      },
      py::arg("a"), py::arg("b"), py::arg("axis") = -1, py::kw_only(), py::arg("stream") = py::none());
}

}  // namespace nuvec::python
