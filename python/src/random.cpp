// nuvec.core.random: Threefry keys and the distributions, with MLX's arguments (key=None draws from the global key).

#include "nuvec/core/random.h"
#include "python/src/bindings.h"
#include "python/src/random_state.h"

namespace nuvec::python {

void init_random(py::module_& parent) {
  auto m = parent.def_submodule("random", "Random number generation.");
  using Key = std::optional<array>;
  m.def("key", &random::key, py::arg("seed"), "A PRNG key from a seed.");
  m.def("seed", &random::seed, py::arg("seed"), "Reseeds the global key.");
  // `state` through the module's __getattr__ (PEP 562), so that each read brings the key up to date.
  m.attr("__getattr__") = py::cpp_function([](const std::string& name) -> py::object {
    if (name == "state") {
      return random_state();
    }
    throw py::attribute_error("module 'nuvec.core.random' has no attribute '" + name + "'");
  });
  m.attr("__dir__") = py::cpp_function([m]() {
    py::list names(m.attr("__dict__").attr("keys")());
    names.append("state");
    return names;
  });
  m.def(
      "split", [](const array& key, int num, StreamOrDevice s) { return random::split(key, num, s); }, py::arg("key"),
      py::arg("num") = 2, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "bits",
      [](Shape shape, int width, Key key, StreamOrDevice s) { return random::bits(shape, width, key, s); },
      py::arg("shape") = Shape{}, py::arg("width") = 4, py::kw_only(), py::arg("key") = py::none(),
      py::arg("stream") = py::none());
  m.def(
      "uniform",
      [](py::object low, py::object high, Shape shape, Dtype dtype, Key key, StreamOrDevice s) {
        return random::uniform(to_array(low), to_array(high), shape, dtype, key, s);
      },
      py::arg("low") = 0.0, py::arg("high") = 1.0, py::arg("shape") = Shape{}, py::arg("dtype") = float32,
      py::kw_only(), py::arg("key") = py::none(), py::arg("stream") = py::none());
  m.def(
      "normal",
      [](Shape shape, Dtype dtype, py::object loc, py::object scale, Key key, StreamOrDevice s) {
        return random::normal(shape, dtype, to_optional_array(loc), to_optional_array(scale), key, s);
      },
      py::arg("shape") = Shape{}, py::arg("dtype") = float32, py::arg("loc") = py::none(),
      py::arg("scale") = py::none(), py::kw_only(), py::arg("key") = py::none(), py::arg("stream") = py::none());
  m.def(
      "randint",
      [](py::object low, py::object high, Shape shape, Dtype dtype, Key key, StreamOrDevice s) {
        return random::randint(to_array(low), to_array(high), shape, dtype, key, s);
      },
      py::arg("low"), py::arg("high"), py::arg("shape") = Shape{}, py::arg("dtype") = int32, py::kw_only(),
      py::arg("key") = py::none(), py::arg("stream") = py::none());
  m.def(
      "bernoulli",
      [](py::object p, std::optional<Shape> shape, Key key, StreamOrDevice s) {
        auto prob = to_array(p);
        return shape ? random::bernoulli(prob, *shape, key, s) : random::bernoulli(prob, key, s);
      },
      py::arg("p") = 0.5, py::arg("shape") = py::none(), py::kw_only(), py::arg("key") = py::none(),
      py::arg("stream") = py::none());
  m.def(
      "truncated_normal",
      [](py::object lower, py::object upper, std::optional<Shape> shape, Dtype dtype, Key key, StreamOrDevice s) {
        auto lo = to_array(lower);
        auto hi = to_array(upper);
        return shape ? random::truncated_normal(lo, hi, *shape, dtype, key, s)
                     : random::truncated_normal(lo, hi, dtype, key, s);
      },
      py::arg("lower"), py::arg("upper"), py::arg("shape") = py::none(), py::arg("dtype") = float32, py::kw_only(),
      py::arg("key") = py::none(), py::arg("stream") = py::none());
  m.def(
      "gumbel", [](Shape shape, Dtype dtype, Key key, StreamOrDevice s) { return random::gumbel(shape, dtype, key, s); },
      py::arg("shape") = Shape{}, py::arg("dtype") = float32, py::kw_only(), py::arg("key") = py::none(),
      py::arg("stream") = py::none());
  m.def(
      "categorical",
      [](py::object logits, int axis, std::optional<Shape> shape, std::optional<int> num_samples, Key key,
         StreamOrDevice s) {
        auto l = to_array(logits);
        if (shape && num_samples) {
          throw py::value_error("[categorical] At most one of shape or num_samples can be specified.");
        }
        if (shape) {
          return random::categorical(l, axis, *shape, key, s);
        }
        if (num_samples) {
          return random::categorical(l, axis, *num_samples, key, s);
        }
        return random::categorical(l, axis, key, s);
      },
      py::arg("logits"), py::arg("axis") = -1, py::kw_only(), py::arg("shape") = py::none(),
      py::arg("num_samples") = py::none(), py::arg("key") = py::none(), py::arg("stream") = py::none());
  m.def(
      "laplace",
      [](Shape shape, Dtype dtype, float loc, float scale, Key key, StreamOrDevice s) {
        return random::laplace(shape, dtype, loc, scale, key, s);
      },
      py::arg("shape") = Shape{}, py::arg("dtype") = float32, py::arg("loc") = 0.0F, py::arg("scale") = 1.0F,
      py::kw_only(), py::arg("key") = py::none(), py::arg("stream") = py::none());
  m.def(
      "permutation",
      [](py::object x, int axis, Key key, StreamOrDevice s) {
        if (py::isinstance<py::int_>(x)) {
          return random::permutation(x.cast<int>(), key, s);
        }
        return random::permutation(to_array(x), axis, key, s);
      },
      py::arg("x"), py::arg("axis") = 0, py::kw_only(), py::arg("key") = py::none(), py::arg("stream") = py::none());
  m.def(
      "multivariate_normal",
      [](py::object mean, py::object cov, Shape shape, Dtype dtype, Key key, StreamOrDevice s) {
        return random::multivariate_normal(to_array(mean), to_array(cov), shape, dtype, key, s);
      },
      py::arg("mean"), py::arg("cov"), py::arg("shape") = Shape{}, py::arg("dtype") = float32, py::kw_only(),
      py::arg("key") = py::none(), py::arg("stream") = py::none());
}

}  // namespace nuvec::python
