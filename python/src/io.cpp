// load, save, savez, savez_compressed, save_safetensors and save_gguf (file names or path-like objects).

#include <string>

#include "nuvec/io/io.h"
#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

std::string path_of(const py::object& file) {
  return py::module_::import("os").attr("fspath")(file).cast<std::string>();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string format_of(const std::string& path, const std::optional<std::string>& format) {
  if (format) {
    return *format;
  }
  auto dot = path.rfind('.');
  if (dot == std::string::npos) {
    throw py::value_error(std::string("[load] Could not infer the file format from \"")
                              .append(path)
                              .append("\"; pass format=."));
  }
  return path.substr(dot + 1);
}

template <class Map>
py::dict to_dict(const Map& arrays) {
  py::dict out;
  for (const auto& [name, a] : arrays) {
    out[py::str(name)] = py::cast(a);
  }
  return out;
}

std::unordered_map<std::string, array> array_map(const py::handle& arrays) {
  std::unordered_map<std::string, array> out;
  for (auto item : arrays.cast<py::dict>()) {
    out.emplace(item.first.cast<std::string>(), to_array(item.second));
  }
  return out;
}

py::object metadata_value(const GGUFMetaData& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return py::none();
        } else {
          return py::cast(v);
        }
      },
      value);
}

GGUFMetaData gguf_value(const py::handle& v) {
  if (py::isinstance<py::str>(v)) {
    return v.cast<std::string>();
  }
  if (py::isinstance<py::list>(v) && py::len(v) > 0 && py::isinstance<py::str>(v.cast<py::list>()[0])) {
    return v.cast<std::vector<std::string>>();
  }
  return to_array(v);
}

void save_npz_file(const py::object& file, const py::args& args, const py::kwargs& kwargs, bool compressed) {
  auto path = path_of(file);
  if (!ends_with(path, ".npz")) {
    path += ".npz";
  }
  std::unordered_map<std::string, array> arrays;
  for (size_t i = 0; i < args.size(); ++i) {
    arrays.emplace("arr_" + std::to_string(i), to_array(args[i]));
  }
  for (auto item : kwargs) {
    arrays.emplace(item.first.cast<std::string>(), to_array(item.second));
  }
  py::gil_scoped_release release;
  io::save_npz(path, arrays, compressed);
}

}  // namespace

void init_io(py::module_& m) {
  m.def(
      "load",
      [](const py::object& file, std::optional<std::string> format, bool return_metadata,
         StreamOrDevice s) -> py::object {
        auto path = path_of(file);
        auto kind = format_of(path, format);
        if (kind == "npy") {
          if (return_metadata) {
            throw py::value_error("[load] metadata is not supported for the npy format.");
          }
          return py::cast(load(path, s));
        }
        if (kind == "npz") {
          if (return_metadata) {
            throw py::value_error("[load] metadata is not supported for the npz format.");
          }
          return to_dict(io::load_npz(path));
        }
        if (kind == "safetensors") {
          auto [arrays, metadata] = load_safetensors(path, s);
          if (return_metadata) {
            py::dict meta;
            for (const auto& [k, v] : metadata) {
              meta[py::str(k)] = py::str(v);
            }
            return py::make_tuple(to_dict(arrays), meta);
          }
          return to_dict(arrays);
        }
        if (kind == "gguf") {
          auto [arrays, metadata] = load_gguf(path, s);
          if (return_metadata) {
            py::dict meta;
            for (const auto& [k, v] : metadata) {
              meta[py::str(k)] = metadata_value(v);
            }
            return py::make_tuple(to_dict(arrays), meta);
          }
          return to_dict(arrays);
        }
        throw py::value_error(std::string("[load] Unknown file format \"").append(kind).append("\"."));
      },
      py::arg("file"), py::arg("format") = py::none(), py::arg("return_metadata") = false, py::kw_only(),
      py::arg("stream") = py::none(), "Loads a .npy file (an array) or a .npz, .safetensors or .gguf file (a dict).");
  m.def(
      "save",
      [](const py::object& file, const py::object& arr) {
        auto path = path_of(file);
        if (!ends_with(path, ".npy")) {
          path += ".npy";
        }
        auto a = to_array(arr);
        py::gil_scoped_release release;
        save(path, a);
      },
      py::arg("file"), py::arg("arr"), "Saves an array to a .npy file.");
  m.def(
      "savez",
      [](const py::object& file, const py::args& args, const py::kwargs& kwargs) {
        save_npz_file(file, args, kwargs, false);
      },
      py::arg("file"), "Saves arrays to a .npz archive (positional ones as arr_0, arr_1, ...).");
  m.def(
      "savez_compressed",
      [](const py::object& file, const py::args& args, const py::kwargs& kwargs) {
        save_npz_file(file, args, kwargs, true);
      },
      py::arg("file"), "Saves arrays to a deflate-compressed .npz archive.");
  m.def(
      "save_safetensors",
      [](const py::object& file, const py::dict& arrays, const std::optional<py::dict>& metadata) {
        auto path = path_of(file);
        if (!ends_with(path, ".safetensors")) {
          path += ".safetensors";
        }
        std::unordered_map<std::string, std::string> meta;
        if (metadata) {
          for (auto item : *metadata) {
            meta.emplace(item.first.cast<std::string>(), item.second.cast<std::string>());
          }
        }
        auto map = array_map(arrays);
        py::gil_scoped_release release;
        save_safetensors(path, map, meta);
      },
      py::arg("file"), py::arg("arrays"), py::arg("metadata") = py::none());
  m.def(
      "save_gguf",
      [](const py::object& file, const py::dict& arrays, const std::optional<py::dict>& metadata) {
        auto path = path_of(file);
        if (!ends_with(path, ".gguf")) {
          path += ".gguf";
        }
        std::unordered_map<std::string, GGUFMetaData> meta;
        if (metadata) {
          for (auto item : *metadata) {
            meta.emplace(item.first.cast<std::string>(), gguf_value(item.second));
          }
        }
        auto map = array_map(arrays);
        py::gil_scoped_release release;
        save_gguf(path, map, meta);
      },
      py::arg("file"), py::arg("arrays"), py::arg("metadata") = py::none());
}

}  // namespace nuvec::python
