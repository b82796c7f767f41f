// The Python objects of nuvec arrays. A pybind11 class costs a small op more than the op's node: its instances keep
// a pointer to a heap copy of the array with a holder beside it (allocated and freed per result), and pybind11 finds
// a bound type by hashing its C++ name on every isinstance, argument load and return. Here the array lives inside
// the object, which is made and freed by the type's own slots.

#include "python/src/array_object.h"

#include <structmember.h>

#include <cstddef>
#include <new>

namespace nuvec::python {
namespace {

/// A nuvec.core.array: the array's handle inline, then the weak reference list (weakref.ref(a) works as on any
/// class).
struct ArrayObject {
  PyObject ob_base;
  alignas(array) std::byte storage[sizeof(array)];
  PyObject* weakrefs;
};

PyTypeObject* array_type = nullptr;

array* value_of(PyObject* self) {
  return std::launder(reinterpret_cast<array*>(reinterpret_cast<ArrayObject*>(self)->storage));
}

/// What a new object holds until __init__ gives it its value (array.__new__(array), unpickling before
/// __setstate__): every object holds a valid array, so the per-op path never checks.
const array& placeholder() {
  static const auto* const value = new array(0.0F);  // never freed: objects may outlive static destructors
  return *value;
}

PyObject* array_new(PyTypeObject* type, PyObject* /*args*/, PyObject* /*kwargs*/) {
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) {
    return nullptr;
  }
  new (reinterpret_cast<ArrayObject*>(self)->storage) array(placeholder());
  return self;
}

void array_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  if (reinterpret_cast<ArrayObject*>(self)->weakrefs != nullptr) {
    PyObject_ClearWeakRefs(self);
  }
  value_of(self)->~array();
  type->tp_free(self);
  Py_DECREF(type);  // instances of heap types hold a reference to their type
}

}  // namespace

py::object make_array_type(py::module_& m) {
  static PyMemberDef members[] = {
      {"__weaklistoffset__", T_PYSSIZET, offsetof(ArrayObject, weakrefs), READONLY, nullptr},
      {nullptr, 0, 0, 0, nullptr},
  };
  static const char* doc = "A lazy n-dimensional array.";
  static PyType_Slot slots[] = {
      {Py_tp_new, reinterpret_cast<void*>(&array_new)},
      {Py_tp_dealloc, reinterpret_cast<void*>(&array_dealloc)},
      {Py_tp_members, static_cast<void*>(members)},
      {Py_tp_doc, const_cast<char*>(doc)},
      {0, nullptr},
  };
  static PyType_Spec spec = {"nuvec.core.array", sizeof(ArrayObject), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
                             slots};
  auto type = py::reinterpret_steal<py::object>(PyType_FromModuleAndSpec(m.ptr(), &spec, nullptr));
  if (!type) {
    throw py::error_already_set();
  }
  set_array_type(type);
  m.attr("array") = type;
  return type;
}

void set_array_type(py::handle type) {
  array_type = reinterpret_cast<PyTypeObject*>(type.inc_ref().ptr());  // kept for the life of the process
}

bool is_array(py::handle value) { return PyObject_TypeCheck(value.ptr(), array_type) != 0; }

array& array_of(py::handle value) { return *value_of(value.ptr()); }

py::object wrap(array a) {
  PyObject* self = array_type->tp_alloc(array_type, 0);
  if (self == nullptr) {
    throw py::error_already_set();
  }
  new (reinterpret_cast<ArrayObject*>(self)->storage) array(std::move(a));
  return py::reinterpret_steal<py::object>(self);
}

void set_python_error() {
  if (py::detail::apply_exception_translators(py::detail::get_local_internals().registered_exception_translators) ||
      py::detail::apply_exception_translators(py::detail::get_internals().registered_exception_translators)) {
    return;
  }
  PyErr_SetString(PyExc_SystemError, "An exception escaped nuvec's exception translators.");
}

}  // namespace nuvec::python
