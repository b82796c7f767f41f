// load, save, savez, savez_compressed, save_safetensors and save_gguf: file names, path-like objects or binary
// file-like objects, read or written whole through their read/write.

#include "nuvec/io/io.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

// Collects a saver's bytes in memory (with seeks, which writers may use to patch a header), so the GIL is released
// while arrays evaluate and the file object is written once afterwards.
class MemoryWriter : public io::Writer {
 public:
  [[nodiscard]] bool is_open() const override { return true; }
  [[nodiscard]] bool good() const override { return true; }
  size_t tell() override { return pos_; }
  void seek(int64_t off, std::ios_base::seekdir way = std::ios_base::beg) override {
    auto base = way == std::ios_base::beg   ? 0
                : way == std::ios_base::cur ? static_cast<int64_t>(pos_)
                                            : static_cast<int64_t>(bytes_.size());
    pos_ = static_cast<size_t>(std::max<int64_t>(0, base + off));
  }
  void write(const char* data, size_t n) override {
    bytes_.resize(std::max(bytes_.size(), pos_ + n));
    std::memcpy(bytes_.data() + pos_, data, n);
    pos_ += n;
  }
  [[nodiscard]] std::string label() const override { return "file-like object"; }
  [[nodiscard]] py::bytes bytes() const { return {bytes_.data(), bytes_.size()}; }

 private:
  std::string bytes_;
  size_t pos_ = 0;
};

// Strings and path-like objects name files; anything else with the method is a file-like object.
bool is_file_like(const py::object& file, const char* method) {
  return !py::isinstance<py::str>(file) && !py::hasattr(file, "__fspath__") && py::hasattr(file, method);
}

std::shared_ptr<const io::Blob> read_file_like(const py::object& file) {
  auto data = file.attr("read")();
  if (!py::isinstance<py::bytes>(data)) {
    throw py::value_error("[load] Input must be a file-like object opened in binary mode, or a string.");
  }
  auto view = data.cast<std::string_view>();
  return io::memory_blob(std::vector<unsigned char>(view.begin(), view.end()), "file-like object");
}

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
    throw py::value_error(
        std::string("[load] Could not infer the file format from \"").append(path).append("\"; pass format=."));
  }
  return path.substr(dot + 1);
}

// The format of a file-like object: format=, else the extension of its name when it has one (an open file).
std::string file_like_format(const py::object& file, const std::optional<std::string>& format) {
  if (format) {
    return *format;
  }
  if (!py::hasattr(file, "name") || !py::isinstance<py::str>(file.attr("name"))) {
    throw py::value_error("[load] Could not infer the format of a file-like object without a name; pass format=.");
  }
  return format_of(file.attr("name").cast<std::string>(), format);
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

// Runs `save` into `file`: a file-like object gets the bytes written to memory, a path gets `suffix` appended when
// missing. The GIL is released while `save` evaluates the arrays.
template <class Save>
void save_to(const py::object& file, const std::string& suffix, const Save& save) {
  if (is_file_like(file, "write")) {
    auto out = std::make_shared<MemoryWriter>();
    {
      py::gil_scoped_release release;
      save(out);
    }
    file.attr("write")(out->bytes());
    return;
  }
  auto path = path_of(file);
  if (!ends_with(path, suffix)) {
    path += suffix;
  }
  py::gil_scoped_release release;
  save(std::make_shared<io::FileWriter>(path));
}

void save_npz_file(const py::object& file, const py::args& args, const py::kwargs& kwargs, bool compressed) {
  std::unordered_map<std::string, array> arrays;
  for (size_t i = 0; i < args.size(); ++i) {
    arrays.emplace("arr_" + std::to_string(i), to_array(args[i]));
  }
  for (auto item : kwargs) {
    arrays.emplace(item.first.cast<std::string>(), to_array(item.second));
  }
  save_to(file, ".npz", [&](const std::shared_ptr<io::Writer>& out) { io::save_npz(*out, arrays, compressed); });
}

}  // namespace

void init_io(py::module_& m) {
  m.def(
      "load",
      [](const py::object& file, std::optional<std::string> format, bool return_metadata,
         StreamOrDevice s) -> py::object {
        // A file-like object is read whole into memory (a path is mapped by the loaders).
        auto file_like = is_file_like(file, "read");
        auto path = file_like ? std::string() : path_of(file);
        auto kind = file_like ? file_like_format(file, format) : format_of(path, format);
        auto blob = file_like ? read_file_like(file) : nullptr;
        if (kind == "npy") {
          if (return_metadata) {
            throw py::value_error("[load] metadata is not supported for the npy format.");
          }
          return py::cast(blob ? io::load_npy(blob) : load(path, s));
        }
        if (kind == "npz") {
          if (return_metadata) {
            throw py::value_error("[load] metadata is not supported for the npz format.");
          }
          return to_dict(blob ? io::load_npz(blob) : io::load_npz(path));
        }
        if (kind == "safetensors") {
          auto [arrays, metadata] = blob ? io::load_safetensors(blob) : load_safetensors(path, s);
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
          auto [arrays, metadata] = blob ? io::load_gguf(blob) : load_gguf(path, s);
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
        auto a = to_array(arr);
        save_to(file, ".npy", [&](const std::shared_ptr<io::Writer>& out) { save(out, a); });
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
        std::unordered_map<std::string, std::string> meta;
        if (metadata) {
          for (auto item : *metadata) {
            meta.emplace(item.first.cast<std::string>(), item.second.cast<std::string>());
          }
        }
        auto map = array_map(arrays);
        save_to(file, ".safetensors", [&](const std::shared_ptr<io::Writer>& out) {
          save_safetensors(out, std::move(map), std::move(meta));
        });
      },
      py::arg("file"), py::arg("arrays"), py::arg("metadata") = py::none());
  m.def(
      "save_gguf",
      [](const py::object& file, const py::dict& arrays, const std::optional<py::dict>& metadata) {
        std::unordered_map<std::string, GGUFMetaData> meta;
        if (metadata) {
          for (auto item : *metadata) {
            meta.emplace(item.first.cast<std::string>(), gguf_value(item.second));
          }
        }
        auto map = array_map(arrays);
        save_to(file, ".gguf", [&](const std::shared_ptr<io::Writer>& out) {
          save_gguf(out, std::move(map), std::move(meta));
        });
      },
      py::arg("file"), py::arg("arrays"), py::arg("metadata") = py::none());
}

}  // namespace nuvec::python
