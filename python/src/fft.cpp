// nuvec.core.fft (NumPy's numpy.fft names, arguments and norm= strings).

#include "nuvec/core/fft.h"
#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

fft::FFTNorm to_norm(const std::string& norm) {
  if (norm == "backward") {
    return fft::FFTNorm::Backward;
  }
  if (norm == "ortho") {
    return fft::FFTNorm::Ortho;
  }
  if (norm == "forward") {
    return fft::FFTNorm::Forward;
  }
  throw py::value_error(std::string("[fft] norm must be \"backward\", \"ortho\" or \"forward\"; got \"")
                            .append(norm)
                            .append("\"."));
}

using OneD = array (*)(const array&, int, int, fft::FFTNorm, StreamOrDevice);
using OneDDefault = array (*)(const array&, int, fft::FFTNorm, StreamOrDevice);
using ND = array (*)(const array&, const Shape&, const std::vector<int>&, fft::FFTNorm, StreamOrDevice);
using NDAxes = array (*)(const array&, const std::vector<int>&, fft::FFTNorm, StreamOrDevice);

}  // namespace

void init_fft(py::module_& parent) {
  auto m = parent.def_submodule("fft", "Discrete Fourier transforms.");
  const std::tuple<const char*, OneD, OneDDefault> one_d[] = {
      {"fft", &fft::fft, &fft::fft},
      {"ifft", &fft::ifft, &fft::ifft},
      {"rfft", &fft::rfft, &fft::rfft},
      {"irfft", &fft::irfft, &fft::irfft},
  };
  for (const auto& [name, fn, fn_default] : one_d) {
    m.def(
        name,
        [fn, fn_default](py::object a, std::optional<int> n, int axis, const std::string& norm, StreamOrDevice s) {
          auto x = to_array(a);
          return n ? fn(x, *n, axis, to_norm(norm), s) : fn_default(x, axis, to_norm(norm), s);
        },
        py::arg("a"), py::arg("n") = py::none(), py::arg("axis") = -1, py::arg("norm") = "backward", py::kw_only(),
        py::arg("stream") = py::none());
  }
  const std::tuple<const char*, ND, NDAxes, bool> n_d[] = {
      {"fft2", &fft::fftn, &fft::fftn, true},      {"ifft2", &fft::ifftn, &fft::ifftn, true},
      {"rfft2", &fft::rfftn, &fft::rfftn, true},   {"irfft2", &fft::irfftn, &fft::irfftn, true},
      {"fftn", &fft::fftn, &fft::fftn, false},     {"ifftn", &fft::ifftn, &fft::ifftn, false},
      {"rfftn", &fft::rfftn, &fft::rfftn, false},  {"irfftn", &fft::irfftn, &fft::irfftn, false},
  };
  for (const auto& [name, fn, fn_axes, two_d] : n_d) {
    py::object default_axes = two_d ? py::object(py::make_tuple(-2, -1)) : py::object(py::none());
    m.def(
        name,
        [fn, fn_axes](py::object a, std::optional<Shape> sizes, std::optional<std::vector<int>> axes,
                      const std::string& norm, StreamOrDevice s) {
          auto x = to_array(a);
          std::vector<int> chosen;
          if (axes) {
            chosen = *axes;
          } else {
            // Without axes: the last len(s) axes, or all of them.
            int count = sizes ? static_cast<int>(sizes->size()) : x.ndim();
            for (int i = x.ndim() - count; i < x.ndim(); ++i) {
              chosen.push_back(i);
            }
          }
          return sizes ? fn(x, *sizes, chosen, to_norm(norm), s) : fn_axes(x, chosen, to_norm(norm), s);
        },
        py::arg("a"), py::arg("s") = py::none(), py::arg("axes") = default_axes, py::arg("norm") = "backward",
        py::kw_only(), py::arg("stream") = py::none());
  }
  for (const char* name : {"fftshift", "ifftshift"}) {
    bool inverse = name[0] == 'i';
    m.def(
        name,
        [inverse](py::object a, std::optional<std::vector<int>> axes, StreamOrDevice s) {
          auto x = to_array(a);
          if (inverse) {
            return axes ? fft::ifftshift(x, *axes, s) : fft::ifftshift(x, s);
          }
          return axes ? fft::fftshift(x, *axes, s) : fft::fftshift(x, s);
        },
        py::arg("a"), py::arg("axes") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  }
  m.def(
      "fftfreq", [](int n, double d, StreamOrDevice s) { return fft::fftfreq(n, d, s); }, py::arg("n"),
      py::arg("d") = 1.0, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "rfftfreq", [](int n, double d, StreamOrDevice s) { return fft::rfftfreq(n, d, s); }, py::arg("n"),
      py::arg("d") = 1.0, py::kw_only(), py::arg("stream") = py::none());
}

}  // namespace nuvec::python
