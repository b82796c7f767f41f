#include "nuvec/io/gguf.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "nuvec/core/ops.h"
#include "nuvec/io/bytes.h"
#include "nuvec/io/json.h"

namespace nuvec {

namespace {

constexpr std::string_view kLoad = "load_gguf";
constexpr std::string_view kSave = "save_gguf";
constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint32_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

// Metadata value types.
enum class ValueType : uint32_t {
  uint8 = 0,
  int8 = 1,
  uint16 = 2,
  int16 = 3,
  uint32 = 4,
  int32 = 5,
  float32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  uint64 = 10,
  int64 = 11,
  float64 = 12,
};

// The dtype of a numeric value type, or nothing for strings and arrays.
std::optional<Dtype> numeric_dtype(uint32_t type) {
  switch (type) {
    case 0:
      return uint8;
    case 1:
      return int8;
    case 2:
      return uint16;
    case 3:
      return int16;
    case 4:
      return uint32;
    case 5:
      return int32;
    case 6:
      return float32;
    case 7:
      return bool_;
    case 10:
      return uint64;
    case 11:
      return int64;
    case 12:
      return float64;
    default:
      return std::nullopt;
  }
}

std::optional<ValueType> value_type_of(Dtype dtype) {
  switch (dtype) {
    case Dtype::Val::uint8:
      return ValueType::uint8;
    case Dtype::Val::int8:
      return ValueType::int8;
    case Dtype::Val::uint16:
      return ValueType::uint16;
    case Dtype::Val::int16:
      return ValueType::int16;
    case Dtype::Val::uint32:
      return ValueType::uint32;
    case Dtype::Val::int32:
      return ValueType::int32;
    case Dtype::Val::float32:
      return ValueType::float32;
    case Dtype::Val::bool_:
      return ValueType::boolean;
    case Dtype::Val::uint64:
      return ValueType::uint64;
    case Dtype::Val::int64:
      return ValueType::int64;
    case Dtype::Val::float64:
      return ValueType::float64;
    case Dtype::Val::float16:
    case Dtype::Val::bfloat16:
    case Dtype::Val::complex64:
      return std::nullopt;
  }
  return std::nullopt;
}

class GGUFReader {
 public:
  GGUFReader(const std::shared_ptr<const io::Blob>& blob, io::GGUFQuantized mode)
      : blob_(blob), in_(blob->data(), blob->size(), kLoad, blob->label()), mode_(mode) {}
  /// A reader that hands every tensor to `typed` as stored (the metadata still comes back from read()).
  GGUFReader(const std::shared_ptr<const io::Blob>& blob, std::vector<io::GGUFTensor>& typed)
      : blob_(blob), in_(blob->data(), blob->size(), kLoad, blob->label()), typed_(&typed) {}

  GGUFLoad read() {
    if (in_.read<uint32_t>("the magic number") != kMagic) {
      in_.fail("wrong magic: not a GGUF file (it starts with \"GGUF\")");
    }
    auto version = in_.read<uint32_t>("the version");
    if (version != 2 && version != 3) {
      in_.fail(version == 0x03000000 || version == 0x02000000
                   ? std::string("big-endian GGUF files are not supported")
                   : "unsupported GGUF version " + std::to_string(version) + " (supported: 2 and 3)");
    }
    auto n_tensors = in_.read<uint64_t>("the tensor count");
    auto n_kv = in_.read<uint64_t>("the metadata count");
    // Each pair needs at least 12 bytes and each tensor info 24: larger counts are lies, refused before any
    // allocation.
    if (n_kv > in_.remaining() / 12 || n_tensors > in_.remaining() / 24) {
      in_.fail("the header claims " + std::to_string(n_tensors) + " tensors and " + std::to_string(n_kv) +
               " metadata pairs, more than the file can hold");
    }
    GGUFLoad out;
    uint64_t alignment = kDefaultAlignment;
    for (uint64_t i = 0; i < n_kv; ++i) {
      std::string key = string("a metadata key", true);
      auto type = in_.read<uint32_t>("a metadata value type");
      if (out.second.count(key) != 0) {
        in_.fail("duplicate metadata key \"" + key + "\"");
      }
      if (key == "general.alignment") {
        if (type != static_cast<uint32_t>(ValueType::uint32)) {
          in_.fail("general.alignment must be a uint32");
        }
        size_t at = in_.position();
        alignment = in_.read<uint32_t>("general.alignment");
        if (alignment == 0 || alignment % 8 != 0) {
          in_.fail("general.alignment " + std::to_string(alignment) + " is not a positive multiple of 8");
        }
        in_.seek(at, "general.alignment");
      }
      out.second.emplace(std::move(key), value(type, 0));
    }
    struct Info {
      std::string name;
      Shape shape;
      const io::detail::GGMLTypeInfo* type;
      uint64_t offset;
      uint64_t bytes;
    };
    std::vector<Info> infos;
    infos.reserve(n_tensors);
    std::unordered_set<std::string> names;
    for (uint64_t i = 0; i < n_tensors; ++i) {
      Info info;
      info.name = string("a tensor name", true);
      std::string where = "tensor \"" + info.name + "\": ";
      auto n_dims = in_.read<uint32_t>("a tensor's axis count");
      if (n_dims > kMaxDims) {
        in_.fail(where + std::to_string(n_dims) + " axes, more than GGUF's " + std::to_string(kMaxDims));
      }
      uint64_t count = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        auto dim = in_.read<uint64_t>("an axis size");
        if (dim > static_cast<uint64_t>(INT32_MAX)) {
          in_.fail(where + "axis size " + std::to_string(dim) + " exceeds 2^31 - 1");
        }
        info.shape.insert(info.shape.begin(), static_cast<int32_t>(dim));
        count = io::detail::checked_mul(count, dim, in_, where + "the element count");
      }
      if (!io::detail::strides_fit(info.shape)) {
        in_.fail(where + "shape " + shape_string(info.shape) + " overflows");
      }
      auto code = in_.read<uint32_t>("a tensor type");
      info.type = io::detail::ggml_type_info(code);
      if (info.type == nullptr) {
        in_.fail(where + "unknown or unsupported tensor type " + std::to_string(code));
      }
      if (info.type->block_elems > 1 && (info.shape.empty() || info.shape.back() % info.type->block_elems != 0)) {
        in_.fail(where + "the innermost axis is not a multiple of " + std::string(info.type->name) + "'s block of " +
                 std::to_string(info.type->block_elems));
      }
      info.bytes =
          io::detail::checked_mul(count / info.type->block_elems, info.type->block_bytes, in_, where + "the byte size");
      info.offset = in_.read<uint64_t>("a tensor offset");
      if (info.offset % alignment != 0) {
        in_.fail(where + "offset " + std::to_string(info.offset) + " is not a multiple of the alignment " +
                 std::to_string(alignment));
      }
      if (!names.insert(info.name).second) {
        in_.fail("duplicate tensor name \"" + info.name + "\"");
      }
      infos.push_back(std::move(info));
    }
    uint64_t data_start = (in_.position() + alignment - 1) / alignment * alignment;
    uint64_t data_size = data_start <= blob_->size() ? blob_->size() - data_start : 0;
    for (auto& info : infos) {
      if (info.offset > data_size || info.bytes > data_size - info.offset) {
        in_.fail("tensor \"" + info.name + "\": data at offset " + std::to_string(info.offset) + " (" +
                 std::to_string(info.bytes) + " bytes) runs past the end of the file");
      }
      size_t at = data_start + info.offset;
      const auto& t = *info.type;
      if (typed_ != nullptr) {
        Shape stored = info.shape;
        if (t.bits != 0) {
          stored.back() = static_cast<int32_t>(stored.back() / t.block_elems * t.block_bytes);
        }
        typed_->push_back(
            {info.name, t.type, info.shape, io::detail::adopt(blob_, at, stored, t.bits == 0 ? t.dtype : uint8)});
      } else if (t.bits == 0) {
        out.first.insert_or_assign(info.name, io::detail::adopt(blob_, at, info.shape, t.dtype));
      } else if (mode_ == io::GGUFQuantized::skip) {
        continue;
      } else if ((mode_ == io::GGUFQuantized::packed && t.group == 32) || mode_ == io::GGUFQuantized::packed_all) {
        auto packed = io::detail::pack_blocks(t, blob_->data() + at, info.shape);
        std::string base = info.name;
        if (base.size() > 7 && base.substr(base.size() - 7) == ".weight") {
          base.resize(base.size() - 7);
        }
        out.first.insert_or_assign(info.name, packed[0]);
        out.first.insert_or_assign(base + ".scales", packed[1]);
        out.first.insert_or_assign(base + ".biases", packed[2]);
      } else {
        out.first.insert_or_assign(info.name, io::detail::dequantize_blocks(t, blob_->data() + at, info.shape));
      }
    }
    return out;
  }

 private:
  std::string string(std::string_view what, bool must_be_utf8) {
    auto n = in_.read<uint64_t>(what);
    const unsigned char* p = in_.take(n, what);
    std::string s(reinterpret_cast<const char*>(p), n);
    if (must_be_utf8 && !io::detail::valid_utf8(s)) {
      in_.fail(std::string(what) + " is not valid UTF-8");
    }
    return s;
  }

  // Reads a value of `type`; depth bounds arrays of arrays.
  GGUFMetaData value(uint32_t type, int depth) {
    if (auto dtype = numeric_dtype(type)) {
      const unsigned char* p = in_.take(size_of(*dtype), "a metadata value");
      array a = io::detail::allocate({}, *dtype);
      std::memcpy(a.raw_data(), p, size_of(*dtype));
      if (*dtype == bool_) {
        *static_cast<unsigned char*>(a.raw_data()) = *p != 0 ? 1 : 0;
      }
      return a;
    }
    if (type == static_cast<uint32_t>(ValueType::string)) {
      return string("a metadata string", false);
    }
    if (type != static_cast<uint32_t>(ValueType::array)) {
      in_.fail("unknown metadata value type " + std::to_string(type));
    }
    if (depth > 8) {
      in_.fail("metadata arrays nested deeper than 8");
    }
    auto item_type = in_.read<uint32_t>("a metadata array type");
    auto n = in_.read<uint64_t>("a metadata array length");
    if (auto dtype = numeric_dtype(item_type)) {
      size_t bytes = io::detail::checked_mul(n, size_of(*dtype), in_, "a metadata array's size");
      const unsigned char* p = in_.take(bytes, "a metadata array");
      if (n > static_cast<uint64_t>(INT32_MAX)) {
        in_.fail("a metadata array of " + std::to_string(n) + " elements is longer than 2^31 - 1");
      }
      array a = io::detail::allocate({static_cast<int32_t>(n)}, *dtype);
      if (bytes > 0) {
        std::memcpy(a.raw_data(), p, bytes);
      }
      if (*dtype == bool_) {
        auto* b = static_cast<unsigned char*>(a.raw_data());
        std::transform(b, b + n, b, [](unsigned char v) { return static_cast<unsigned char>(v != 0); });
      }
      return a;
    }
    if (item_type == static_cast<uint32_t>(ValueType::string)) {
      if (n > in_.remaining() / 8) {
        in_.fail("a string array of " + std::to_string(n) + " elements is longer than the file");
      }
      std::vector<std::string> strings;
      strings.reserve(n);
      for (uint64_t i = 0; i < n; ++i) {
        strings.push_back(string("a metadata string", false));
      }
      return strings;
    }
    if (item_type == static_cast<uint32_t>(ValueType::array)) {
      if (n > in_.remaining() / 12) {
        in_.fail("an array of " + std::to_string(n) + " arrays is longer than the file");
      }
      for (uint64_t i = 0; i < n; ++i) {
        value(item_type, depth + 1);
      }
      return std::monostate{};
    }
    in_.fail("unknown metadata array element type " + std::to_string(item_type));
  }

  std::shared_ptr<const io::Blob> blob_;
  io::detail::ByteCursor in_;
  io::GGUFQuantized mode_ = io::GGUFQuantized::packed;
  std::vector<io::GGUFTensor>* typed_ = nullptr;
};

class ByteSink {
 public:
  template <class T>
  void put(T value) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &value, sizeof(T));
    bytes.insert(bytes.end(), b, b + sizeof(T));
  }
  void string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  std::vector<unsigned char> bytes;
};

void put_value(ByteSink& sink, const std::string& key, const GGUFMetaData& value, const std::string& label) {
  auto bad = [&](const std::string& why) { io::detail::fail(kSave, label, "metadata \"" + key + "\": " + why); };
  if (const auto* s = std::get_if<std::string>(&value)) {
    sink.put<uint32_t>(static_cast<uint32_t>(ValueType::string));
    sink.string(*s);
  } else if (const auto* v = std::get_if<std::vector<std::string>>(&value)) {
    sink.put<uint32_t>(static_cast<uint32_t>(ValueType::array));
    sink.put<uint32_t>(static_cast<uint32_t>(ValueType::string));
    sink.put<uint64_t>(v->size());
    for (const auto& s : *v) {
      sink.string(s);
    }
  } else if (const auto* a = std::get_if<array>(&value)) {
    auto type = value_type_of(a->dtype());
    if (!type) {
      bad("GGUF metadata has no " + std::string(dtype_name(a->dtype())) + " type");
    }
    if (a->ndim() > 1) {
      bad("metadata arrays must be 0-d or 1-d; got shape " + shape_string(a->shape()));
    }
    auto data = io::detail::contiguous_bytes(*a);
    if (a->ndim() == 1) {
      sink.put<uint32_t>(static_cast<uint32_t>(ValueType::array));
      sink.put<uint32_t>(static_cast<uint32_t>(*type));
      sink.put<uint64_t>(a->size());
    } else {
      sink.put<uint32_t>(static_cast<uint32_t>(*type));
    }
    sink.bytes.insert(sink.bytes.end(), data.begin(), data.end());
  } else {
    bad("an empty value cannot be written");
  }
}

}  // namespace

namespace io {

GGUFLoad load_gguf(const std::shared_ptr<const Blob>& blob, GGUFQuantized mode) {
  return GGUFReader(blob, mode).read();
}

GGUFLoad load_gguf(const std::string& file, GGUFQuantized mode) { return load_gguf(map_file(file, kLoad), mode); }

GGUFTensors load_gguf_tensors(const std::string& file) {
  GGUFTensors out;
  out.blob = map_file(file, kLoad);
  out.metadata = GGUFReader(out.blob, out.tensors).read().second;
  return out;
}

void save_gguf(Writer& out, const std::vector<GGUFTensor>& tensors,
               const std::unordered_map<std::string, GGUFMetaData>& metadata, uint32_t alignment) {
  std::string label = out.label();
  if (alignment == 0 || alignment % 8 != 0) {
    detail::fail(kSave, label, "alignment " + std::to_string(alignment) + " is not a positive multiple of 8");
  }
  std::vector<std::string> keys;
  for (const auto& [k, v] : metadata) {
    if (k == "general.alignment") {
      detail::fail(kSave, label, "general.alignment is set from the alignment argument");
    }
    if (!detail::valid_utf8(k)) {
      detail::fail(kSave, label, "a metadata key is not valid UTF-8");
    }
    keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  ByteSink sink;
  sink.put<uint32_t>(kMagic);
  sink.put<uint32_t>(3);
  sink.put<uint64_t>(tensors.size());
  sink.put<uint64_t>(keys.size() + (alignment != kDefaultAlignment ? 1 : 0));
  if (alignment != kDefaultAlignment) {
    sink.string("general.alignment");
    sink.put<uint32_t>(static_cast<uint32_t>(ValueType::uint32));
    sink.put<uint32_t>(alignment);
  }
  for (const auto& k : keys) {
    sink.string(k);
    put_value(sink, k, metadata.at(k), label);
  }
  // Each tensor's bytes, converted or checked, and its offset in the data section.
  std::vector<std::vector<unsigned char>> payloads;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    std::string where = "tensor \"" + t.name + "\": ";
    const auto* info = detail::ggml_type_info(static_cast<uint32_t>(t.type));
    if (info == nullptr) {
      detail::fail(kSave, label, where + "unknown tensor type " + std::to_string(static_cast<uint32_t>(t.type)));
    }
    if (!detail::valid_utf8(t.name)) {
      detail::fail(kSave, label, "a tensor name is not valid UTF-8");
    }
    if (t.shape.size() > kMaxDims) {
      detail::fail(kSave, label, where + "GGUF tensors have at most 4 axes; got " + shape_string(t.shape));
    }
    std::vector<unsigned char> bytes;
    if (info->bits == 0) {
      if (t.data.shape() != t.shape) {
        detail::fail(kSave, label,
                     where + "data of shape " + shape_string(t.data.shape()) + " for shape " + shape_string(t.shape));
      }
      bytes = detail::contiguous_bytes(astype(t.data, info->dtype));
    } else {
      size_t count = shape_size(t.shape);
      if (t.shape.empty() || t.shape.back() % info->block_elems != 0) {
        detail::fail(kSave, label,
                     where + "the innermost axis must be a multiple of " + std::to_string(info->block_elems) + " for " +
                         std::string(info->name));
      }
      if (t.data.dtype() != uint8 || t.data.size() != count / info->block_elems * info->block_bytes) {
        detail::fail(kSave, label,
                     where + std::string(info->name) + " blocks for shape " + shape_string(t.shape) + " are " +
                         std::to_string(count / info->block_elems * info->block_bytes) + " uint8 bytes; got " +
                         std::to_string(t.data.size()) + " " + std::string(dtype_name(t.data.dtype())));
      }
      bytes = detail::contiguous_bytes(t.data);
    }
    sink.string(t.name);
    sink.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (size_t d = t.shape.size(); d-- > 0;) {
      sink.put<uint64_t>(static_cast<uint64_t>(t.shape[d]));
    }
    sink.put<uint32_t>(static_cast<uint32_t>(t.type));
    sink.put<uint64_t>(offset);
    offset = (offset + bytes.size() + alignment - 1) / alignment * alignment;
    payloads.push_back(std::move(bytes));
  }
  sink.bytes.resize((sink.bytes.size() + alignment - 1) / alignment * alignment, 0);
  out.write(reinterpret_cast<const char*>(sink.bytes.data()), sink.bytes.size());
  std::vector<char> zeros(alignment, 0);
  for (const auto& p : payloads) {
    out.write(reinterpret_cast<const char*>(p.data()), p.size());
    size_t pad = (alignment - p.size() % alignment) % alignment;
    out.write(zeros.data(), pad);
  }
}

}  // namespace io

GGUFLoad load_gguf(const std::string& file, StreamOrDevice) { return io::load_gguf(file, io::GGUFQuantized::packed); }

namespace {

/// MLX's save_gguf over io::save_gguf: the tensors sorted by name, of MLX's dtypes only, and general.alignment taken
/// from the metadata (removed from `meta_data`); checked before anything is written.
std::pair<std::vector<io::GGUFTensor>, uint32_t> mlx_gguf_tensors(
    const std::unordered_map<std::string, array>& array_map, std::unordered_map<std::string, GGUFMetaData>& meta_data,
    const std::string& label) {
  // MLX's callers give the alignment as metadata; the writer takes it as an argument.
  uint32_t alignment = kDefaultAlignment;
  if (auto it = meta_data.find("general.alignment"); it != meta_data.end()) {
    const auto* a = std::get_if<array>(&it->second);
    if (a == nullptr || a->ndim() != 0 || !is_integer(a->dtype())) {
      io::detail::fail(kSave, label, "general.alignment must be an integer scalar");
    }
    alignment = static_cast<uint32_t>(array(*a).item<uint64_t>());
    meta_data.erase(it);
  }
  std::vector<io::GGUFTensor> tensors;
  for (const auto& [name, a] : array_map) {
    const auto* info = io::detail::ggml_type_for(a.dtype());
    if (info == nullptr) {
      io::detail::fail(kSave, label,
                       "tensor \"" + name + "\": GGUF has no " + std::string(dtype_name(a.dtype())) + " type");
    }
    // MLX's save_gguf writes only these; the other GGUF types are written through io::save_gguf.
    const Dtype d = a.dtype();
    if (d != float32 && d != float16 && d != int8 && d != int16 && d != int32) {
      io::detail::fail(kSave, label,
                       "tensor \"" + name + "\": dtype " + std::string(dtype_name(d)) +
                           " is not supported (float32, float16, int8, int16 and int32 are, as in MLX)");
    }
    tensors.push_back({name, info->type, a.shape(), a});
  }
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return {std::move(tensors), alignment};
}

}  // namespace

void save_gguf(std::string file, std::unordered_map<std::string, array> array_map,
               std::unordered_map<std::string, GGUFMetaData> meta_data) {
  if (file.size() < 5 || file.substr(file.size() - 5) != ".gguf") {
    file += ".gguf";
  }
  auto [tensors, alignment] = mlx_gguf_tensors(array_map, meta_data, "file " + file);
  io::FileWriter writer(file);
  io::save_gguf(writer, tensors, meta_data, alignment);
}

void save_gguf(std::shared_ptr<io::Writer> out_stream, std::unordered_map<std::string, array> array_map,
               std::unordered_map<std::string, GGUFMetaData> meta_data) {
  auto [tensors, alignment] = mlx_gguf_tensors(array_map, meta_data, out_stream->label());
  io::save_gguf(*out_stream, tensors, meta_data, alignment);
}

}  // namespace nuvec
