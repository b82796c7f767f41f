#include "nuvec/io/safetensors.h"

#include <algorithm>
#include <cstring>

#include "nuvec/core/dtype.h"
#include "nuvec/io/bytes.h"
#include "nuvec/io/json.h"

namespace nuvec {

namespace {

constexpr std::string_view kLoad = "load_safetensors";
constexpr std::string_view kSave = "save_safetensors";
// The reference implementation refuses larger headers; so does nuvec, before allocating one.
constexpr uint64_t kMaxHeader = 100'000'000;

struct DtypeName {
  std::string_view name;
  Dtype dtype;
};
constexpr DtypeName kDtypes[] = {{"BOOL", bool_},    {"U8", uint8},     {"U16", uint16},  {"U32", uint32},
                                 {"U64", uint64},    {"I8", int8},      {"I16", int16},   {"I32", int32},
                                 {"I64", int64},     {"F16", float16},  {"F32", float32}, {"F64", float64},
                                 {"BF16", bfloat16}, {"C64", complex64}};

std::string_view name_of(Dtype dtype) {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) {
      return d.name;
    }
  }
  return {};
}

struct Entry {
  std::string name;
  Dtype dtype;
  Shape shape;
  uint64_t begin;
  uint64_t end;
};

struct Header {
  std::vector<Entry> entries;
  std::unordered_map<std::string, std::string> metadata;
  uint64_t data_start;
};

// Parses and validates the JSON header against the size of the byte buffer that follows it.
Header parse_header(std::string_view json, uint64_t buffer_size, const std::string& label) {
  std::string error;
  auto root = io::detail::parse_json(json, error);
  if (!root) {
    io::detail::fail(kLoad, label, "invalid JSON header: " + error);
  }
  if (root->kind != io::detail::Json::Kind::object) {
    io::detail::fail(kLoad, label, "the header is not a JSON object");
  }
  Header header;
  header.data_start = 8 + json.size();
  for (size_t member = 0; member < root->keys.size(); ++member) {
    const std::string& key = root->keys[member];
    const io::detail::Json& value = root->items[member];
    if (key == "__metadata__") {
      if (value.kind != io::detail::Json::Kind::object) {
        io::detail::fail(kLoad, label, "__metadata__ is not an object");
      }
      for (size_t i = 0; i < value.keys.size(); ++i) {
        if (value.items[i].kind != io::detail::Json::Kind::string) {
          io::detail::fail(kLoad, label, "metadata value of \"" + value.keys[i] + "\" is not a string");
        }
        header.metadata[value.keys[i]] = value.items[i].text;
      }
      continue;
    }
    std::string where = "tensor \"" + key + "\": ";
    if (value.kind != io::detail::Json::Kind::object) {
      io::detail::fail(kLoad, label, where + "the entry is not an object");
    }
    const auto* dtype = value.find("dtype");
    const auto* shape = value.find("shape");
    const auto* offsets = value.find("data_offsets");
    if (dtype == nullptr || shape == nullptr || offsets == nullptr) {
      io::detail::fail(kLoad, label, where + "the entry needs dtype, shape and data_offsets");
    }
    if (value.keys.size() != 3) {
      io::detail::fail(kLoad, label, where + "the entry has keys besides dtype, shape and data_offsets");
    }
    if (dtype->kind != io::detail::Json::Kind::string) {
      io::detail::fail(kLoad, label, where + "dtype is not a string");
    }
    const DtypeName* found = nullptr;
    for (const auto& d : kDtypes) {
      if (d.name == dtype->text) {
        found = &d;
      }
    }
    if (found == nullptr) {
      io::detail::fail(kLoad, label, where + "unknown or unsupported dtype \"" + dtype->text + "\"");
    }
    if (shape->kind != io::detail::Json::Kind::array) {
      io::detail::fail(kLoad, label, where + "shape is not an array");
    }
    Entry entry{key, found->dtype, {}, 0, 0};
    uint64_t count = 1;
    for (const auto& dim : shape->items) {
      auto d = dim.as_uint();
      if (!d || *d > static_cast<uint64_t>(INT32_MAX)) {
        io::detail::fail(kLoad, label, where + "shape entries must be integers in [0, 2^31 - 1]");
      }
      entry.shape.push_back(static_cast<int32_t>(*d));
      if (__builtin_mul_overflow(count, *d, &count)) {
        io::detail::fail(kLoad, label, where + "the element count overflows");
      }
    }
    if (!io::detail::strides_fit(entry.shape)) {
      io::detail::fail(kLoad, label, where + "shape " + shape_string(entry.shape) + " overflows");
    }
    if (offsets->kind != io::detail::Json::Kind::array || offsets->items.size() != 2 || !offsets->items[0].as_uint() ||
        !offsets->items[1].as_uint()) {
      io::detail::fail(kLoad, label, where + "data_offsets must be two non-negative integers");
    }
    entry.begin = *offsets->items[0].as_uint();
    entry.end = *offsets->items[1].as_uint();
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(count, uint64_t{size_of(entry.dtype)}, &bytes)) {
      io::detail::fail(kLoad, label, where + "the byte size overflows");
    }
    if (entry.end < entry.begin || entry.end > buffer_size) {
      io::detail::fail(kLoad, label,
                       where + "data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
                           "] lie outside the data buffer of " + std::to_string(buffer_size) + " bytes");
    }
    if (entry.end - entry.begin != bytes) {
      io::detail::fail(kLoad, label,
                       where + "data_offsets span " + std::to_string(entry.end - entry.begin) + " bytes but " +
                           std::string(dtype->text) + " of shape " + shape_string(entry.shape) + " needs " +
                           std::to_string(bytes));
    }
    header.entries.push_back(std::move(entry));
  }
  // The specification forbids holes and overlaps: sorted by offset, the tensors tile the buffer exactly.
  std::vector<const Entry*> sorted;
  for (const auto& e : header.entries) {
    sorted.push_back(&e);
  }
  std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t cursor = 0;
  for (const Entry* e : sorted) {
    if (e->begin != cursor) {
      io::detail::fail(kLoad, label,
                       "tensor \"" + e->name + "\" starts at " + std::to_string(e->begin) +
                           " but the previous tensor ends at " + std::to_string(cursor) +
                           " (overlap or hole in the data buffer)");
    }
    cursor = e->end;
  }
  if (cursor != buffer_size) {
    io::detail::fail(kLoad, label,
                     "the tensors cover " + std::to_string(cursor) + " bytes of a " + std::to_string(buffer_size) +
                         "-byte data buffer");
  }
  return header;
}

uint64_t read_header_size(const unsigned char* bytes, uint64_t file_size, const std::string& label) {
  uint64_t n = 0;
  std::memcpy(&n, bytes, 8);
  if (std::endian::native == std::endian::big) {
    n = io::detail::byteswap_value(n);
  }
  if (n > kMaxHeader) {
    io::detail::fail(
        kLoad, label,
        "header size " + std::to_string(n) + " exceeds the limit of " + std::to_string(kMaxHeader) + " bytes");
  }
  if (n > file_size - 8) {
    io::detail::fail(kLoad, label,
                     "header size " + std::to_string(n) + " runs past the end of the file (" +
                         std::to_string(file_size) + " bytes)");
  }
  if (n == 0) {
    io::detail::fail(kLoad, label, "empty header");
  }
  return n;
}

std::string header_json(const std::vector<std::pair<std::string, array>>& arrays,
                        const std::unordered_map<std::string, std::string>& metadata, const std::string& label) {
  std::string json = "{";
  if (!metadata.empty()) {
    std::vector<std::pair<std::string, std::string>> sorted(metadata.begin(), metadata.end());
    std::sort(sorted.begin(), sorted.end());
    json += "\"__metadata__\":{";
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (!io::detail::valid_utf8(sorted[i].first) || !io::detail::valid_utf8(sorted[i].second)) {
        io::detail::fail(kSave, label, "metadata key \"" + sorted[i].first + "\" or its value is not valid UTF-8");
      }
      json += i ? "," : "";
      json += io::detail::json_quote(sorted[i].first);
      json += ':';
      json += io::detail::json_quote(sorted[i].second);
    }
    json += "}";
  }
  uint64_t offset = 0;
  for (const auto& [name, a] : arrays) {
    if (!io::detail::valid_utf8(name)) {
      io::detail::fail(kSave, label, "tensor name is not valid UTF-8");
    }
    if (name == "__metadata__") {
      io::detail::fail(kSave, label, "\"__metadata__\" is reserved and cannot name a tensor");
    }
    json += json.size() > 1 ? "," : "";
    json += io::detail::json_quote(name);
    json += ":{\"dtype\":\"";
    json += name_of(a.dtype());
    json += "\",\"shape\":[";
    for (int i = 0; i < a.ndim(); ++i) {
      json += i ? "," : "";
      json += std::to_string(a.shape(i));
    }
    json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + a.nbytes()) + "]}";
    offset += a.nbytes();
  }
  json += "}";
  // Pad with spaces so the data buffer starts 8-byte aligned (the specification allows trailing spaces).
  while ((json.size() + 8) % 8 != 0) {
    json += ' ';
  }
  return json;
}

// Larger elements first, then by name: every tensor stays aligned to its element size in the data buffer.
std::vector<std::pair<std::string, array>> ordered(std::unordered_map<std::string, array> arrays) {
  std::vector<std::pair<std::string, array>> out(arrays.begin(), arrays.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if (a.second.itemsize() != b.second.itemsize()) {
      return a.second.itemsize() > b.second.itemsize();
    }
    return a.first < b.first;
  });
  return out;
}

}  // namespace

namespace io {

SafetensorsLoad load_safetensors(const std::shared_ptr<const Blob>& blob) {
  const std::string& label = blob->label();
  if (blob->size() < 8) {
    detail::fail(kLoad, label,
                 "truncated file: " + std::to_string(blob->size()) + " bytes, fewer than the 8-byte header size");
  }
  uint64_t n = read_header_size(blob->data(), blob->size(), label);
  std::string_view json(reinterpret_cast<const char*>(blob->data()) + 8, n);
  Header header = parse_header(json, blob->size() - 8 - n, label);
  SafetensorsLoad out;
  out.second = std::move(header.metadata);
  for (auto& e : header.entries) {
    out.first.insert_or_assign(e.name, detail::adopt(blob, header.data_start + e.begin, std::move(e.shape), e.dtype));
  }
  return out;
}

}  // namespace io

SafetensorsLoad load_safetensors(const std::string& file, StreamOrDevice) {
  return io::load_safetensors(io::map_file(file, kLoad));
}

SafetensorsLoad load_safetensors(std::shared_ptr<io::Reader> in_stream, StreamOrDevice) {
  std::string label = in_stream->label();
  if (!in_stream->is_open()) {
    io::detail::fail(kLoad, label, "the source is not open");
  }
  size_t start = in_stream->tell();
  in_stream->seek(0, std::ios_base::end);
  size_t end = in_stream->tell();
  if (end < start + 8) {
    io::detail::fail(
        kLoad, label,
        "truncated file: " + std::to_string(end - std::min(start, end)) + " bytes, fewer than the 8-byte header size");
  }
  unsigned char size_bytes[8];
  in_stream->read(reinterpret_cast<char*>(size_bytes), 8, start);
  uint64_t n = read_header_size(size_bytes, end - start, label);
  std::string json(n, '\0');
  in_stream->read(json.data(), n, start + 8);
  Header header = parse_header(json, end - start - 8 - n, label);
  SafetensorsLoad out;
  out.second = std::move(header.metadata);
  for (auto& e : header.entries) {
    array a = io::detail::allocate(e.shape, e.dtype);
    if (e.end > e.begin) {
      in_stream->read(static_cast<char*>(a.raw_data()), e.end - e.begin, start + header.data_start + e.begin);
    }
    if (e.dtype == bool_) {
      auto* p = static_cast<unsigned char*>(a.raw_data());
      std::transform(p, p + a.size(), p, [](unsigned char v) { return static_cast<unsigned char>(v != 0); });
    } else if (std::endian::native == std::endian::big) {
      size_t width = e.dtype == complex64 ? 4 : size_of(e.dtype);
      io::detail::byteswap_elements(a.raw_data(), a.nbytes() / width, width);
    }
    out.first.insert_or_assign(e.name, std::move(a));
  }
  in_stream->seek(static_cast<int64_t>(end));
  return out;
}

void save_safetensors(std::shared_ptr<io::Writer> out_stream, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata) {
  std::string label = out_stream->label();
  auto list = ordered(std::move(arrays));
  std::string json = header_json(list, metadata, label);
  unsigned char size_bytes[8];
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) {
    size_bytes[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xFF);
  }
  out_stream->write(reinterpret_cast<const char*>(size_bytes), 8);
  out_stream->write(json.data(), json.size());
  for (const auto& [name, a] : list) {
    auto bytes = io::detail::contiguous_bytes(a);
    out_stream->write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
}

void save_safetensors(std::string file, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata) {
  // MLX appends the extension when it is missing.
  if (file.size() < 12 || file.substr(file.size() - 12) != ".safetensors") {
    file += ".safetensors";
  }
  save_safetensors(std::make_shared<io::FileWriter>(file), std::move(arrays), std::move(metadata));
}

}  // namespace nuvec
