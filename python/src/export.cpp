// MLX's mx.export_function, mx.import_function, mx.exporter and mx.export_to_dot. Arguments are arrays (or values
// to_array accepts), positional and keyword; the function returns an array or a list or tuple of arrays.

#include "nuvec/core/export.h"

#include <fstream>
#include <sstream>
#include <string>

#include "nuvec/core/print.h"
#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

std::string path_of(const py::object& file) {
  return py::module_::import("os").attr("fspath")(file).cast<std::string>();
}

Args args_of(const py::args& args) {
  Args out;
  for (auto a : args) {
    out.push_back(to_array(a));
  }
  return out;
}

Kwargs kwargs_of(const py::kwargs& kwargs) {
  Kwargs out;
  for (auto [key, value] : kwargs) {
    out.emplace(key.cast<std::string>(), to_array(value));
  }
  return out;
}

std::vector<array> outputs_of(const py::object& out) {
  if (py::isinstance<array>(out)) {
    return {out.cast<array>()};
  }
  if (py::isinstance<py::list>(out) || py::isinstance<py::tuple>(out)) {
    std::vector<array> arrays;
    for (auto item : out) {
      if (!py::isinstance<array>(item)) {
        throw py::type_error("[export_function] The function must return an array or a list or tuple of arrays.");
      }
      arrays.push_back(item.cast<array>());
    }
    return arrays;
  }
  throw py::type_error("[export_function] The function must return an array or a list or tuple of arrays.");
}

/// The Python function as export's C++ function: traced with the GIL held, as the caller holds it.
std::function<std::vector<array>(const Args&, const Kwargs&)> traced(py::function fun) {
  return [fun = std::move(fun)](const Args& args, const Kwargs& kwargs) {
    py::tuple positional(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      positional[i] = py::cast(args[i]);
    }
    py::dict named;
    for (const auto& [key, value] : kwargs) {
      named[py::str(key)] = py::cast(value);
    }
    return outputs_of(fun(*positional, **named));
  };
}

py::list to_py(const std::vector<array>& arrays) {
  py::list out;
  for (const auto& a : arrays) {
    out.append(py::cast(a));
  }
  return out;
}

}  // namespace

void init_export(py::module_& m) {
  py::class_<FunctionExporter>(m, "FunctionExporter",
                               "Writes traces of one function to one file (from exporter()); usable with `with`.")
      .def(
          "__call__",
          [](FunctionExporter& self, const py::args& args, const py::kwargs& kwargs) {
            self(args_of(args), kwargs_of(kwargs));
          },
          "Traces the function on these arguments and appends the trace to the file.")
      .def("close", &FunctionExporter::close, "Ends the export; later calls raise.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](FunctionExporter& self, const py::args&) { self.close(); });

  py::class_<ImportedFunction>(m, "ImportedFunction", "A function read by import_function().")
      .def(
          "__call__",
          [](const ImportedFunction& self, const py::args& args, const py::kwargs& kwargs) {
            return to_py(self(args_of(args), kwargs_of(kwargs)));
          },
          "Runs the exported trace that matches the arguments; returns the list of its outputs.");

  m.def(
      "export_function",
      [](const py::object& file, py::function fun, const py::args& args, bool shapeless, const py::kwargs& kwargs) {
        export_function(path_of(file), traced(std::move(fun)), args_of(args), kwargs_of(kwargs), shapeless);
      },
      py::arg("file"), py::arg("fun"), py::arg("shapeless") = false,
      "Traces fun on the arguments (positional and keyword arrays) and writes it to file; with shapeless the import "
      "accepts inputs of other shapes.");
  m.def(
      "exporter",
      [](const py::object& file, py::function fun, bool shapeless) {
        return exporter(path_of(file), traced(std::move(fun)), shapeless);
      },
      py::arg("file"), py::arg("fun"), py::kw_only(), py::arg("shapeless") = false,
      "A FunctionExporter writing traces of fun to file, one per call (several input shapes in one file).");
  m.def(
      "import_function", [](const py::object& file) { return import_function(path_of(file)); }, py::arg("file"),
      "Reads a function written by export_function or an exporter.");
  m.def(
      "export_to_dot",
      [](const py::object& file, const py::args& outputs) {
        std::vector<array> arrays;
        for (auto a : outputs) {
          auto more = outputs_of(py::reinterpret_borrow<py::object>(a));
          arrays.insert(arrays.end(), more.begin(), more.end());
        }
        std::ostringstream dot;
        export_to_dot(dot, arrays);
        if (py::hasattr(file, "write") && !py::isinstance<py::str>(file)) {
          file.attr("write")(dot.str());
          return;
        }
        std::ofstream out(path_of(file));
        out << dot.str();
      },
      py::arg("file"),
      "Writes the graph behind the arrays in Graphviz's DOT language to file (a path or an object with write()).");
}

}  // namespace nuvec::python
