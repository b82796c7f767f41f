// The Python objects of nuvec arrays without pybind11's per-call type lookups: pybind11 finds a bound type by hashing
// its C++ type name on every isinstance, argument load and return, which dominated the cost of a small op.

#include "python/src/convert.h"

namespace nuvec::python {
namespace {

PyTypeObject* array_type = nullptr;
const py::detail::type_info* array_type_info = nullptr;

void* move_array(const void* source) { return new array(std::move(*static_cast<array*>(const_cast<void*>(source)))); }

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

py::object wrap(array a) {
  return py::reinterpret_steal<py::object>(py::detail::type_caster_generic::cast(
      &a, py::return_value_policy::move, py::handle(), array_type_info, nullptr, &move_array));
}

void set_python_error() {
  if (py::detail::apply_exception_translators(py::detail::get_local_internals().registered_exception_translators) ||
      py::detail::apply_exception_translators(py::detail::get_internals().registered_exception_translators)) {
    return;
  }
  PyErr_SetString(PyExc_SystemError, "An exception escaped nuvec's exception translators.");
}

}  // namespace nuvec::python
