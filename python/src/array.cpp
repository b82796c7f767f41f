// nuvec.core.array: construction, properties, conversion to Python values, operators and pickling.

#include <array>
#include <cstring>
#include <sstream>
#include <string>

#include "nuvec/core/print.h"
#include "python/src/bindings.h"
#include "python/src/fast_function.h"

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

py::bytes state_bytes(const array& a) {
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

/// The dtype objects of the module (nuvec.core.float32, ...) by Dtype::Val, for the dtype getter.
std::array<PyObject*, num_dtypes> dtype_objects{};

/// The cheap properties as C getters (shape, dtype, ...): read in loops, and pybind11's properties go through its
/// dispatcher, which costs several times the read.
template <auto Read>
PyObject* getter(PyObject* self, void* /*closure*/) {
  try {
    return Read(array_of(self)).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

py::object shape_of(const array& a) {
  py::tuple shape(a.ndim());
  for (int i = 0; i < a.ndim(); ++i) {
    PyTuple_SET_ITEM(shape.ptr(), i, PyLong_FromLong(a.shape(i)));
  }
  return shape;
}

py::object dtype_of(const array& a) {
  return py::reinterpret_borrow<py::object>(dtype_objects[static_cast<size_t>(a.dtype().val)]);
}

py::object ndim_of(const array& a) { return py::int_(a.ndim()); }
py::object size_of_array(const array& a) { return py::int_(a.size()); }
py::object itemsize_of(const array& a) { return py::int_(a.itemsize()); }
py::object nbytes_of(const array& a) { return py::int_(a.nbytes()); }
py::object transposed(const array& a) { return wrap(transpose(a)); }
py::object real_part(const array& a) { return wrap(real(a)); }
py::object imaginary_part(const array& a) { return wrap(imag(a)); }

// Each doc's first line is the getter's signature, as pybind11 writes a property's (the stubs read it).
std::array<PyGetSetDef, 9> getters = {{
    {"shape", &getter<&shape_of>, nullptr, "(self: nuvec.core.array) -> tuple\n\nThe size of each axis.", nullptr},
    {"dtype", &getter<&dtype_of>, nullptr, "(self: nuvec.core.array) -> nuvec.core.Dtype\n\nThe element type.",
     nullptr},
    {"ndim", &getter<&ndim_of>, nullptr, "(self: nuvec.core.array) -> int\n\nThe number of axes.", nullptr},
    {"size", &getter<&size_of_array>, nullptr, "(self: nuvec.core.array) -> int\n\nThe number of elements.", nullptr},
    {"itemsize", &getter<&itemsize_of>, nullptr, "(self: nuvec.core.array) -> int\n\nThe size of one element in bytes.",
     nullptr},
    {"nbytes", &getter<&nbytes_of>, nullptr, "(self: nuvec.core.array) -> int\n\nThe size of the elements in bytes.",
     nullptr},
    {"T", &getter<&transposed>, nullptr,
     "(self: nuvec.core.array) -> nuvec.core.array\n\nThe array with its axes reversed.", nullptr},
    {"real", &getter<&real_part>, nullptr, "(self: nuvec.core.array) -> nuvec.core.array\n\nThe real part.", nullptr},
    {"imag", &getter<&imaginary_part>, nullptr, "(self: nuvec.core.array) -> nuvec.core.array\n\nThe imaginary part.",
     nullptr},
}};

}  // namespace

ArrayClass init_array(py::module_& m) {
  py::class_<ArrayIterator>(m, "_ArrayIterator")
      .def("__next__", &ArrayIterator::next)
      .def("__iter__", [](py::object self) { return self; });

  ArrayClass cls(make_array_type(m));
  cls.def("__repr__",
          [](const array& a) {
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
      // Pickled as pybind11's py::pickle did (copyreg's __newobj__, then __setstate__), so earlier pickles load.
      .def("__getstate__",
           [](const array& a) { return py::make_tuple(state_bytes(a), py::cast(a.shape()), a.dtype()); });
  // __init__ and __setstate__ are fast methods: pybind11 takes functions of these names for constructors of its own
  // classes, which this type is not. Python calls __init__ after the type's tp_new made the object.
  def_fast_method(cls,
                  "__init__(self: nuvec.core.array, val: object, dtype: Optional[nuvec.core.Dtype] = None) -> None\n\n"
                  "An array from a scalar, a nested list or tuple, a NumPy array, a buffer or a DLPack object.",
                  [](const Arguments& args) {
                    array_of(args[0]) =
                        to_array(args[1], args.given(2) ? std::optional<Dtype>(args.to_dtype(2)) : std::nullopt);
                    return py::none();
                  });
  def_fast_method(cls, "__setstate__(self: nuvec.core.array, arg0: tuple) -> None", [](const Arguments& args) {
    py::handle state = args[1];
    if (!PyTuple_Check(state.ptr()) || PyTuple_GET_SIZE(state.ptr()) != 3) {
      throw py::type_error("__setstate__(): the state must be a tuple (bytes, shape, dtype)");
    }
    auto t = py::reinterpret_borrow<py::tuple>(state);
    array_of(args[0]) = from_state(t[0].cast<py::bytes>(), t[1].cast<Shape>(), t[2].cast<Dtype>());
    return py::none();
  });
  for (Dtype t : all_dtypes) {
    py::object dtype = m.attr(std::string(dtype_name(t)).c_str());
    dtype_objects[static_cast<size_t>(t.val)] = dtype.release().ptr();  // the module's own: never released
  }
  for (auto& def : getters) {
    auto descriptor =
        py::reinterpret_steal<py::object>(PyDescr_NewGetSet(reinterpret_cast<PyTypeObject*>(cls.ptr()), &def));
    if (!descriptor) {
      throw py::error_already_set();
    }
    cls.attr(def.name) = descriptor;
  }
  // item() and tolist() end most eager loops.
  def_fast_method(cls, "item(self: nuvec.core.array) -> object",
                  [](const Arguments& args) { return to_scalar(array_of(args[0])); });
  def_fast_method(cls, "tolist(self: nuvec.core.array) -> object",
                  [](const Arguments& args) { return to_list(array_of(args[0])); });

  return cls;
}

}  // namespace nuvec::python
