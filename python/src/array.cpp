// nuvec.core.array: construction, properties, conversion to Python values, operators and pickling.

#include <cstring>
#include <sstream>
#include <string>

#include "nuvec/core/print.h"
#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

/// Iterates over the first axis, as MLX's array iterator.
class ArrayIterator {
 public:
  explicit ArrayIterator(array a) : a_(std::move(a)) {
    if (a_.ndim() == 0) {
      throw py::type_error("iteration over a 0-d array");
    }
  }
  array next() {
    if (index_ >= a_.shape(0)) {
      throw py::stop_iteration();
    }
    return take(a_, index_++, 0);
  }

 private:
  array a_;
  int index_ = 0;
};

py::bytes state_bytes(array a) {
  auto dense = contiguous(a);
  eval_released(dense);
  return {static_cast<const char*>(dense.raw_data()), dense.nbytes()};
}

array from_state(const py::bytes& data, const Shape& shape, Dtype dtype) {
  std::string_view view = data;
  auto buffer = allocator::malloc(view.size());
  if (!view.empty()) {
    std::memcpy(buffer.raw_ptr(), view.data(), view.size());
  }
  return array(buffer, shape, dtype);
}

/// a.T as a C getter: pybind11's properties go through its dispatcher, which costs more than the transpose.
PyObject* transposed(PyObject* self, void* /*closure*/) {
  try {
    return wrap(transpose(array_of(self))).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

// The first line is the getter's signature, as pybind11 writes a property's (the stubs read it).
PyGetSetDef transposed_def = {"T", &transposed, nullptr,
                              "(self: nuvec.core.array) -> nuvec.core.array\n\nThe array with its axes reversed.",
                              nullptr};

}  // namespace

py::class_<array> init_array(py::module_& m) {
  py::class_<ArrayIterator>(m, "_ArrayIterator")
      .def("__next__", &ArrayIterator::next)
      .def("__iter__", [](py::object self) { return self; });

  // buffer_protocol gives the type its slot table; buffer.cpp fills it.
  py::class_<array> cls(m, "array", py::buffer_protocol(), "A lazy n-dimensional array.");
  set_array_type(cls);
  cls.def(py::init([](py::object val, std::optional<Dtype> dtype) { return to_array(val, dtype); }), py::arg("val"),
          py::arg("dtype") = py::none(),
          "An array from a scalar, a nested list or tuple, a NumPy array, a buffer or a DLPack object.")
      .def_property_readonly("dtype", &array::dtype)
      .def_property_readonly("shape",
                             [](const array& a) {
                               py::tuple shape(a.ndim());
                               for (int i = 0; i < a.ndim(); ++i) {
                                 shape[i] = a.shape(i);
                               }
                               return shape;
                             })
      .def_property_readonly("ndim", &array::ndim)
      .def_property_readonly("size", &array::size)
      .def_property_readonly("itemsize", &array::itemsize)
      .def_property_readonly("nbytes", &array::nbytes)
      .def_property_readonly("real", [](const array& a) { return real(a); })
      .def_property_readonly("imag", [](const array& a) { return imag(a); })
      .def("item", &to_scalar, "The value of a one-element array as a Python scalar.")
      .def("tolist", &to_list, "The elements as nested lists of Python scalars.")
      .def("__repr__",
           [](array a) {
             eval_released(a);
             std::ostringstream os;
             os << a;
             return os.str();
           })
      .def("__len__",
           [](const array& a) {
             if (a.ndim() == 0) {
               throw py::type_error("len() 0-dimensional array.");
             }
             return a.shape(0);
           })
      .def("__iter__", [](const array& a) { return ArrayIterator(a); })
      .def("__bool__",
           [](const array& a) {
             if (a.size() != 1) {
               throw py::value_error("The truth value of an array with more than one element is ambiguous.");
             }
             return to_scalar(a).cast<bool>();
           })
      .def("__float__", [](const array& a) { return py::float_(to_scalar(a)); })
      .def("__int__", [](const array& a) { return py::int_(to_scalar(a)); })
      .def("__index__",
           [](const array& a) {
             if (!is_integer(a.dtype()) && a.dtype() != bool_) {
               throw py::type_error("Only integer arrays can be used as an index.");
             }
             return py::int_(to_scalar(a));
           })
      .def("__hash__", [](const array& a) { return static_cast<py::ssize_t>(a.id()); })
      .def("__copy__", [](const array& a) { return copy(a); })
      .def(
          "__deepcopy__", [](const array& a, const py::object&) { return copy(a); }, py::arg("memo"))
      .def(py::pickle([](const array& a) { return py::make_tuple(state_bytes(a), py::cast(a.shape()), a.dtype()); },
                      [](const py::tuple& t) {
                        return from_state(t[0].cast<py::bytes>(), t[1].cast<Shape>(), t[2].cast<Dtype>());
                      }));
  auto transposed_descriptor =
      py::reinterpret_steal<py::object>(PyDescr_NewGetSet(reinterpret_cast<PyTypeObject*>(cls.ptr()), &transposed_def));
  if (!transposed_descriptor) {
    throw py::error_already_set();
  }
  cls.attr("T") = transposed_descriptor;

  return cls;
}

}  // namespace nuvec::python
