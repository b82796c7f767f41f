// MLX's mx.export_function, mx.import_function, mx.exporter and mx.export_to_dot. Arguments are arrays (or values
// to_array accepts), positional and keyword, or one tuple and/or dict of them; the function returns an array or a
// list or tuple of arrays. export_function writes a file (with MLX's metadata string) or hands the trace to a
// callback, as MLX's.

#include "nuvec/core/export.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "nuvec/core/print.h"
#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

std::string path_of(const py::object& file) {
  return py::module_::import("os").attr("fspath")(file).cast<std::string>();
}

Args args_of(const py::handle& args) {
  Args out;
  for (auto a : args) {
    out.push_back(to_array(a));
  }
  return out;
}

Kwargs kwargs_of(const py::handle& kwargs) {
  Kwargs out;
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(kwargs)) {
    out.emplace(key.cast<std::string>(), to_array(value));
  }
  return out;
}

/// The example inputs as MLX takes them: positional and keyword arrays, or one tuple or list of arrays and/or one
/// dict of them (`fun((a, b), {"x": x})` for `fun(a, b, x=x)`).
std::pair<Args, Kwargs> inputs_of(const py::args& args, const py::kwargs& kwargs, const char* op) {
  auto sequence = [](py::handle v) { return py::isinstance<py::tuple>(v) || py::isinstance<py::list>(v); };
  bool packed = !args.empty() && (sequence(args[0]) || py::isinstance<py::dict>(args[0]));
  if (!packed) {
    return {args_of(args), kwargs_of(kwargs)};
  }
  bool valid = kwargs.empty() &&
               (args.size() == 1 || (args.size() == 2 && sequence(args[0]) && py::isinstance<py::dict>(args[1])));
  if (!valid) {
    throw_invalid(
        std::string(op).append(" Inputs can either be a variable number of positional and keyword arrays "
                               "or a single tuple and/or dictionary of arrays."));
  }
  if (py::isinstance<py::dict>(args[0])) {
    return {Args{}, kwargs_of(args[0])};
  }
  return {args_of(args[0]), args.size() == 2 ? kwargs_of(args[1]) : Kwargs{}};
}

/// A path: a str or an os.PathLike (not a callable, which export_function takes as its callback).
bool is_path(const py::object& file) { return py::isinstance<py::str>(file) || py::hasattr(file, "__fspath__"); }

std::vector<array> outputs_of(const py::object& out) {
  if (is_array(out)) {
    return {out.cast<array>()};
  }
  if (py::isinstance<py::list>(out) || py::isinstance<py::tuple>(out)) {
    std::vector<array> arrays;
    for (auto item : out) {
      if (!is_array(item)) {
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
            auto [positional, named] = inputs_of(args, kwargs, "[export_function]");
            self(positional, named);
          },
          "Traces the function on these arguments and appends the trace to the file.")
      .def("close", &FunctionExporter::close, "Ends the export; later calls raise.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](FunctionExporter& self, const py::args&) { self.close(); });

  py::class_<ImportedFunction>(m, "ImportedFunction", "A function read by import_function().")
      .def(
          "__call__",
          [](const ImportedFunction& self, const py::args& args, const py::kwargs& kwargs) {
            auto [positional, named] = inputs_of(args, kwargs, "[import_function::call]");
            return to_py(self(positional, named));
          },
          "Runs the exported trace that matches the arguments; returns the list of its outputs.");

  m.def(
      "export_function",
      [](const py::object& file_or_callback, py::function fun, const py::args& args, bool shapeless,
         const std::optional<std::string>& metadata, const py::kwargs& kwargs) {
        auto [positional, named] = inputs_of(args, kwargs, "[export_function]");
        if (is_path(file_or_callback)) {
          export_function(path_of(file_or_callback), traced(std::move(fun)), positional, named, shapeless,
                          metadata.value_or(""));
          return;
        }
        if (PyCallable_Check(file_or_callback.ptr()) == 0) {
          throw py::type_error("[export_function] The first argument must be a path or a callback.");
        }
        if (metadata && !metadata->empty()) {
          throw_invalid(
              "[export_function] The metadata argument is only supported when exporting to a file, not when using "
              "a callback.");
        }
        // Each event reaches the callback as a dict (pybind11's conversions of its fields); the GIL is held, as
        // tracing runs in this call.
        auto callback = [file_or_callback](const ExportCallbackInput& event) { file_or_callback(py::cast(event)); };
        export_function(callback, traced(std::move(fun)), positional, named, shapeless);
      },
      py::arg("file_or_callback"), py::arg("fun"), py::arg("shapeless") = false, py::arg("metadata") = py::none(),
      "Traces fun on the arguments (positional and keyword arrays, or a tuple and/or dict of them) and writes it to "
      "a file, with the metadata string, or hands it to a callback as events (dicts); with shapeless the import "
      "accepts inputs of other shapes.");
  m.def(
      "exporter",
      [](const py::object& file, py::function fun, bool shapeless, const std::optional<std::string>& metadata) {
        return exporter(path_of(file), traced(std::move(fun)), shapeless, metadata.value_or(""));
      },
      py::arg("file"), py::arg("fun"), py::kw_only(), py::arg("shapeless") = false, py::arg("metadata") = py::none(),
      "A FunctionExporter writing traces of fun to file, one per call (several input shapes in one file), with the "
      "metadata string.");
  m.def(
      "import_function",
      [](const py::object& file, bool return_metadata) -> py::object {
        auto imported = import_function(path_of(file));
        if (return_metadata) {
          auto metadata = imported.metadata();
          return py::make_tuple(py::cast(std::move(imported)), metadata);
        }
        return py::cast(std::move(imported));
      },
      py::arg("file"), py::arg("return_metadata") = false,
      "Reads a function written by export_function or an exporter; with return_metadata, the pair of it and the "
      "metadata string it was exported with.");
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
