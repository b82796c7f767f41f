// The array's arithmetic, bitwise and comparison operators with MLX's scalar promotion. Each is bound twice: as a
// method (a.__add__(b), which stubs, help() and NumPy's deferral read) and as the type's C slot, which Python calls
// for `a + b` directly, without pybind11's dispatcher and its argument and return conversions.

#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

using Binary = array (*)(const array&, const array&, StreamOrDevice);

py::object not_implemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }

/// a <op> b with `a` the array; NotImplemented when b is no array-like, so Python tries b's reflected method.
template <Binary Op>
py::object forward(const array& a, py::handle b) {
  if (is_array(b)) {
    return wrap(Op(a, array_of(b), {}));  // b's own handle: a copy would cost two atomic counts
  }
  if (!is_array_like(b)) {
    return not_implemented();
  }
  return wrap(Op(a, to_array_like(b, a), {}));
}

/// b <op> a with `a` the array (the reflected operator).
template <Binary Op>
py::object reflected(const array& a, py::handle b) {
  if (!is_array_like(b)) {
    return not_implemented();
  }
  return wrap(Op(to_array_like(b, a), a, {}));
}

/// Python's binary slot: called for `a <op> b` with the array on either side.
template <Binary Op>
PyObject* binary_slot(PyObject* a, PyObject* b) {
  try {
    return (is_array(a) ? forward<Op>(array_of(a), b) : reflected<Op>(array_of(b), a)).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

/// Python's power slot; pow(a, b, mod) with a modulus has no array meaning.
PyObject* power_slot(PyObject* a, PyObject* b, PyObject* mod) {
  if (mod != Py_None) {
    return py::handle(Py_NotImplemented).inc_ref().ptr();
  }
  return binary_slot<&nuvec::power>(a, b);
}

/// a <op>= b: the Python object is rebound to the result, as MLX's in-place operators.
template <Binary Op>
PyObject* inplace_slot(PyObject* self, PyObject* b) {
  try {
    auto& a = array_of(self);
    a = Op(a, to_array_like(b, a), {});
    return py::handle(self).inc_ref().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

/// a **= b; as power_slot, no modulus.
PyObject* inplace_power_slot(PyObject* self, PyObject* b, PyObject* mod) {
  if (mod != Py_None) {
    return py::handle(Py_NotImplemented).inc_ref().ptr();
  }
  return inplace_slot<&nuvec::power>(self, b);
}

PyObject* richcompare_slot(PyObject* self, PyObject* other, int op) {
  const array& a = array_of(self);
  try {
    switch (op) {
      case Py_LT:
        return forward<&nuvec::less>(a, other).release().ptr();
      case Py_LE:
        return forward<&nuvec::less_equal>(a, other).release().ptr();
      case Py_GT:
        return forward<&nuvec::greater>(a, other).release().ptr();
      case Py_GE:
        return forward<&nuvec::greater_equal>(a, other).release().ptr();
      case Py_EQ:
        return forward<&nuvec::equal>(a, other).release().ptr();
      case Py_NE:
        return forward<&nuvec::not_equal>(a, other).release().ptr();
      default:
        return not_implemented().release().ptr();
    }
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

template <array (*Op)(const array&, StreamOrDevice)>
PyObject* unary_slot(PyObject* self) {
  try {
    return wrap(Op(array_of(self), {})).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyObject* positive_slot(PyObject* self) {
  try {
    return wrap(array_of(self)).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

/// One operator: the method names, the C slots and the op.
struct Operator {
  const char* name;
  const char* reflected_name;  // null for comparisons: Python swaps them itself
  const char* inplace_name;    // null when there is no in-place form
  binaryfunc PyNumberMethods::*slot;
  binaryfunc PyNumberMethods::*inplace_slot;
  binaryfunc slot_fn;
  binaryfunc inplace_fn;
  py::object (*method)(const array&, py::handle);
  py::object (*reflected_method)(const array&, py::handle);
};

template <Binary Op>
Operator arithmetic(const char* name, const char* reflected_name, const char* inplace_name,
                    binaryfunc PyNumberMethods::*slot, binaryfunc PyNumberMethods::*inplace) {
  return {name,         reflected_name, inplace_name, slot, inplace, &binary_slot<Op>, &inplace_slot<Op>,
          &forward<Op>, &reflected<Op>};
}

template <Binary Op>
Operator comparison(const char* name) {
  return {name, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &forward<Op>, nullptr};
}

}  // namespace

void init_operators(ArrayClass& cls) {
  using N = PyNumberMethods;
  const Operator operators[] = {
      arithmetic<&nuvec::add>("__add__", "__radd__", "__iadd__", &N::nb_add, &N::nb_inplace_add),
      arithmetic<&nuvec::subtract>("__sub__", "__rsub__", "__isub__", &N::nb_subtract, &N::nb_inplace_subtract),
      arithmetic<&nuvec::multiply>("__mul__", "__rmul__", "__imul__", &N::nb_multiply, &N::nb_inplace_multiply),
      arithmetic<&nuvec::divide>("__truediv__", "__rtruediv__", "__itruediv__", &N::nb_true_divide,
                                 &N::nb_inplace_true_divide),
      arithmetic<&nuvec::floor_divide>("__floordiv__", "__rfloordiv__", "__ifloordiv__", &N::nb_floor_divide,
                                       &N::nb_inplace_floor_divide),
      arithmetic<&nuvec::remainder>("__mod__", "__rmod__", "__imod__", &N::nb_remainder, &N::nb_inplace_remainder),
      arithmetic<&nuvec::matmul>("__matmul__", "__rmatmul__", "__imatmul__", &N::nb_matrix_multiply,
                                 &N::nb_inplace_matrix_multiply),
      arithmetic<&nuvec::bitwise_and>("__and__", "__rand__", "__iand__", &N::nb_and, &N::nb_inplace_and),
      arithmetic<&nuvec::bitwise_or>("__or__", "__ror__", "__ior__", &N::nb_or, &N::nb_inplace_or),
      arithmetic<&nuvec::bitwise_xor>("__xor__", "__rxor__", "__ixor__", &N::nb_xor, &N::nb_inplace_xor),
      arithmetic<&nuvec::left_shift>("__lshift__", "__rlshift__", "__ilshift__", &N::nb_lshift, &N::nb_inplace_lshift),
      arithmetic<&nuvec::right_shift>("__rshift__", "__rrshift__", "__irshift__", &N::nb_rshift, &N::nb_inplace_rshift),
      arithmetic<&nuvec::power>("__pow__", "__rpow__", "__ipow__", nullptr, nullptr),
      comparison<&nuvec::less>("__lt__"),
      comparison<&nuvec::less_equal>("__le__"),
      comparison<&nuvec::greater>("__gt__"),
      comparison<&nuvec::greater_equal>("__ge__"),
      comparison<&nuvec::equal>("__eq__"),
      comparison<&nuvec::not_equal>("__ne__"),
  };
  for (const auto& op : operators) {
    cls.def(op.name, op.method);
    if (op.reflected_name != nullptr) {
      cls.def(op.reflected_name, op.reflected_method);
    }
    if (op.inplace_name != nullptr) {
      auto fn = op.inplace_fn;
      cls.def(op.inplace_name, [fn](py::object self, py::object b) {
        if (!is_array(self)) {
          throw py::type_error("The in-place operators take an array as their first argument.");
        }
        auto* result = fn(self.ptr(), b.ptr());
        if (result == nullptr) {
          throw py::error_already_set();
        }
        return py::reinterpret_steal<py::object>(result);
      });
    }
  }
  cls.def("__divmod__", [](const array& a, py::handle b) -> py::object {
    if (!is_array_like(b)) {
      return not_implemented();
    }
    auto qr = divmod(a, to_array_like(b, a));
    return py::make_tuple(wrap(qr[0]), wrap(qr[1]));
  });
  cls.def("__rdivmod__", [](const array& a, py::handle b) -> py::object {
    if (!is_array_like(b)) {
      return not_implemented();
    }
    auto qr = divmod(to_array_like(b, a), a);
    return py::make_tuple(wrap(qr[0]), wrap(qr[1]));
  });
  cls.def("__neg__", [](const array& a) { return negative(a); })
      .def("__pos__", [](const array& a) { return a; })
      .def("__abs__", [](const array& a) { return abs(a); })
      .def("__invert__", [](const array& a) { return bitwise_invert(a); });

  // The slots last: defining a method resets its slot to Python's generic lookup of the method.
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  auto* number = type->tp_as_number;
  for (const auto& op : operators) {
    if (op.slot != nullptr) {
      number->*op.slot = op.slot_fn;
      number->*op.inplace_slot = op.inplace_fn;
    }
  }
  number->nb_power = &power_slot;
  number->nb_inplace_power = &inplace_power_slot;
  number->nb_negative = &unary_slot<&nuvec::negative>;
  number->nb_positive = &positive_slot;
  number->nb_absolute = &unary_slot<&nuvec::abs>;
  number->nb_invert = &unary_slot<&nuvec::bitwise_invert>;
  type->tp_richcompare = &richcompare_slot;
  PyType_Modified(type);
}

}  // namespace nuvec::python
