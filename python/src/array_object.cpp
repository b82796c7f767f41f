// The Python objects of nuvec arrays without pybind11's per-call type lookups: pybind11 finds a bound type by hashing
// its C++ type name on every isinstance, argument load and return, which dominated the cost of a small op.

#include "python/src/convert.h"

namespace nuvec::python {
namespace {

PyTypeObject* array_type = nullptr;
const py::detail::type_info* array_type_info = nullptr;

}  // namespace

void set_array_type(py::handle type) {
  array_type = reinterpret_cast<PyTypeObject*>(type.ptr());
  array_type_info = py::detail::get_type_info(array_type);
}

bool is_array(py::handle value) { return PyObject_TypeCheck(value.ptr(), array_type) != 0; }

array& array_of(py::handle value) {
  auto* instance = reinterpret_cast<py::detail::instance*>(value.ptr());
  return *static_cast<array*>(instance->get_value_and_holder(array_type_info).value_ptr());
}

// What pybind11's cast of a returned array does (a new instance owning a moved value, with its holder), minus its two
// lookups of the type by C++ name and its registration: pybind11 registers an instance (a hash map entry, inserted
// here and erased at deallocation) only to return that same Python object when C++ later returns a reference to its
// value, and a new result's value is reachable from no C++ reference. Unregistered, such a return gives a new
// Python object holding a copy of the handle, the same array.
py::object wrap(array a) {
  using Holder = py::class_<array>::holder_type;
  static_assert(std::is_same_v<Holder, std::unique_ptr<array>>, "wrap builds the holder py::class_<array> declares");
  auto object = py::reinterpret_steal<py::object>(py::detail::make_new_instance(array_type));
  auto* instance = reinterpret_cast<py::detail::instance*>(object.ptr());
  auto value = instance->get_value_and_holder(array_type_info);
  value.value_ptr() = new array(std::move(a));
  instance->owned = true;
  new (&value.holder<Holder>()) Holder(value.value_ptr<array>());
  value.set_holder_constructed();
  return object;
}

void set_python_error() {
  if (py::detail::apply_exception_translators(py::detail::get_local_internals().registered_exception_translators) ||
      py::detail::apply_exception_translators(py::detail::get_internals().registered_exception_translators)) {
    return;
  }
  PyErr_SetString(PyExc_SystemError, "An exception escaped nuvec's exception translators.");
}

}  // namespace nuvec::python
