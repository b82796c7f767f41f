// Dtype, DtypeCategory, the dtype objects (nuvec.core.float32, ...), issubdtype, finfo and iinfo.

#include <string>

#include "python/src/bindings.h"

namespace nuvec::python {

void init_dtypes(py::module_& m) {
  py::class_<Dtype>(m, "Dtype", "An element type: nuvec.core.float32 and its siblings.")
      .def_property_readonly("size", [](const Dtype& t) { return static_cast<int>(size_of(t)); },
                             "The size of one element in bytes.")
      .def("__repr__", [](const Dtype& t) { return std::string("nuvec.core.").append(dtype_name(t)); })
      .def("__eq__", [](const Dtype& a, py::object b) { return py::isinstance<Dtype>(b) && a == b.cast<Dtype>(); })
      .def("__hash__", [](const Dtype& t) { return static_cast<int>(t.val); })
      .def(py::pickle([](const Dtype& t) { return static_cast<int>(t.val); },
                      [](int v) { return all_dtypes[v]; }));
  for (Dtype t : all_dtypes) {
    m.attr(std::string(dtype_name(t)).c_str()) = py::cast(t);
  }
  m.attr("bool_") = py::cast(bool_);

  py::enum_<Dtype_Category>(m, "DtypeCategory", "An abstract kind of dtype, for issubdtype (NumPy's hierarchy).")
      .value("complexfloating", Dtype_Category::complexfloating)
      .value("floating", Dtype_Category::floating)
      .value("inexact", Dtype_Category::inexact)
      .value("signedinteger", Dtype_Category::signedinteger)
      .value("unsignedinteger", Dtype_Category::unsignedinteger)
      .value("integer", Dtype_Category::integer)
      .value("number", Dtype_Category::number)
      .value("generic", Dtype_Category::generic)
      .export_values();

  m.def("issubdtype", py::overload_cast<Dtype, Dtype>(&issubdtype), py::arg("arg1"), py::arg("arg2"));
  m.def("issubdtype", py::overload_cast<Dtype, Dtype_Category>(&issubdtype), py::arg("arg1"), py::arg("arg2"));
  m.def("issubdtype", py::overload_cast<Dtype_Category, Dtype>(&issubdtype), py::arg("arg1"), py::arg("arg2"));
  m.def("issubdtype", py::overload_cast<Dtype_Category, Dtype_Category>(&issubdtype), py::arg("arg1"),
        py::arg("arg2"), "Whether the first dtype or category is a kind of the second (NumPy's issubdtype).");

  py::class_<finfo>(m, "finfo", "The limits of a floating dtype.")
      .def(py::init<Dtype>(), py::arg("dtype"))
      .def_readonly("dtype", &finfo::dtype)
      .def_readonly("min", &finfo::min)
      .def_readonly("max", &finfo::max)
      .def_readonly("eps", &finfo::eps)
      .def("__repr__", [](const finfo& f) {
        return std::string("finfo(min=")
            .append(py::repr(py::float_(f.min)).cast<std::string>())
            .append(", max=")
            .append(py::repr(py::float_(f.max)).cast<std::string>())
            .append(", dtype=")
            .append(dtype_name(f.dtype))
            .append(")");
      });
  py::class_<iinfo>(m, "iinfo", "The limits of an integer dtype.")
      .def(py::init<Dtype>(), py::arg("dtype"))
      .def_readonly("dtype", &iinfo::dtype)
      .def_readonly("min", &iinfo::min)
      .def_readonly("max", &iinfo::max)
      .def("__repr__", [](const iinfo& i) {
        return std::string("iinfo(min=")
            .append(std::to_string(i.min))
            .append(", max=")
            .append(std::to_string(i.max))
            .append(", dtype=")
            .append(dtype_name(i.dtype))
            .append(")");
      });
}

}  // namespace nuvec::python
