#include "nuvec/io/npz.h"

#include <algorithm>

#include "nuvec/io/errors.h"
#include "nuvec/io/npy.h"
#include "nuvec/io/zip.h"

namespace nuvec::io {

namespace {
constexpr std::string_view kLoad = "load_npz";
constexpr std::string_view kSave = "save_npz";
}  // namespace

std::unordered_map<std::string, array> load_npz(const std::shared_ptr<const Blob>& blob) {
  std::unordered_map<std::string, array> out;
  for (const auto& entry : detail::zip_entries(*blob, kLoad)) {
    std::string key = entry.name;
    if (key.size() >= 4 && key.substr(key.size() - 4) == ".npy") {
      key.resize(key.size() - 4);
    }
    if (out.count(key) != 0) {
      detail::fail(kLoad, blob->label(), "duplicate entry \"" + entry.name + "\"");
    }
    if (detail::zip_stored_intact(*blob, entry)) {
      out.emplace(key, load_npy(blob, entry.data_offset, entry.size, kLoad));
    } else {
      auto inner = memory_blob(detail::zip_read(*blob, entry, kLoad), blob->label() + " entry " + entry.name);
      out.emplace(key, load_npy(inner, 0, inner->size(), kLoad));
    }
  }
  return out;
}

std::unordered_map<std::string, array> load_npz(const std::string& path) { return load_npz(map_file(path, kLoad)); }

void save_npz(Writer& out, const std::unordered_map<std::string, array>& arrays, bool compressed) {
  std::vector<std::string> names;
  for (const auto& [name, a] : arrays) {
    names.push_back(name);
  }
  // Sorted names make the archive's bytes independent of the map's iteration order.
  std::sort(names.begin(), names.end());
  detail::ZipWriter zip(kSave, out.label());
  for (const auto& name : names) {
    zip.add(name + ".npy", npy_bytes(arrays.at(name)), compressed);
  }
  auto bytes = zip.finish();
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void save_npz(const std::string& path, const std::unordered_map<std::string, array>& arrays, bool compressed) {
  FileWriter out(path);
  save_npz(out, arrays, compressed);
}

}  // namespace nuvec::io
