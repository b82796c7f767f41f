#pragma once

// nuvec.core.array as a Python type of its own: the object holds the C++ array inline (no pybind11 instance, holder
// or heap copy of the handle), and pybind11 converts arrays in and out of bindings through the type_caster below.
// Shared by nuvec.core and nuvec._lm (which finds the type by importing nuvec.core).

#include <pybind11/pybind11.h>

#include <utility>

#include "nuvec/core/array.h"

namespace py = pybind11;

namespace nuvec::python {

/// Creates nuvec.core.array in `m` and records it for the functions below (nuvec.core's init, once).
py::object make_array_type(py::module_& m);
/// Records an existing nuvec.core.array type (another extension module that passes arrays).
void set_array_type(py::handle type);
/// Whether `value` is a nuvec array (or of a subclass of it): the cheap check of the per-op path.
bool is_array(py::handle value);
/// The array held by `value`, which is_array accepts.
array& array_of(py::handle value);
/// `a` as a new Python array object.
py::object wrap(array a);

/// Turns the C++ exception being handled into the Python error pybind11's translators give it (for functions called
/// by Python directly, outside pybind11's dispatcher); call it from a catch block, then return nullptr to Python.
void set_python_error();

/// The array type as the binding files add methods to it, with py::class_'s `def` (pybind11 functions bound as
/// methods, their signatures read by the stubs).
class ArrayClass : public py::object {
 public:
  explicit ArrayClass(py::object type) : py::object(std::move(type)) {}

  template <class Func, class... Extra>
  ArrayClass& def(const char* name, Func&& f, const Extra&... extra) {
    py::cpp_function method(std::forward<Func>(f), py::name(name), py::is_method(*this),
                            py::sibling(py::getattr(*this, name, py::none())), extra...);
    attr(name) = method;
    return *this;
  }

  /// A read-only property computed by `fget(self)`, documented by its signature and `doc` as pybind11's.
  template <class Getter>
  ArrayClass& def_property_readonly(const char* name, Getter&& fget, const char* doc) {
    py::cpp_function getter(std::forward<Getter>(fget), py::is_method(*this), py::doc(doc));
    py::handle property(reinterpret_cast<PyObject*>(&PyProperty_Type));
    attr(name) = property(getter, py::none(), py::none(), py::none());
    return *this;
  }
};

}  // namespace nuvec::python

namespace pybind11::detail {

/// Arrays in and out of pybind11 bindings: an argument refers to the array inside the Python object (so `array&`
/// parameters may assign to it), a result becomes a new object through wrap.
template <>
class type_caster<nuvec::array> {
 public:
  static constexpr auto name = const_name("nuvec.core.array");

  bool load(handle src, bool /*convert*/) {
    if (!nuvec::python::is_array(src)) {
      return false;
    }
    value_ = &nuvec::python::array_of(src);
    return true;
  }

  static handle cast(const nuvec::array& a, return_value_policy /*policy*/, handle /*parent*/) {
    return nuvec::python::wrap(a).release();
  }
  static handle cast(nuvec::array&& a, return_value_policy /*policy*/, handle /*parent*/) {
    return nuvec::python::wrap(std::move(a)).release();
  }
  static handle cast(const nuvec::array* a, return_value_policy policy, handle parent) {
    return a == nullptr ? none().release() : cast(*a, policy, parent);
  }

  template <class T>
  using cast_op_type = pybind11::detail::cast_op_type<T>;
  // NOLINTNEXTLINE(google-explicit-constructor): pybind11 converts casters to their values implicitly
  operator nuvec::array&() { return *value_; }
  // NOLINTNEXTLINE(google-explicit-constructor)
  operator nuvec::array*() { return value_; }

 private:
  nuvec::array* value_ = nullptr;
};

}  // namespace pybind11::detail
