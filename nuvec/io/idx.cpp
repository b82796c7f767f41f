#include "nuvec/io/idx.h"

#include <bit>
#include <cstring>

#include "nuvec/core/dtype.h"
#include "nuvec/io/bytes.h"
#include "nuvec/io/deflate.h"

namespace nuvec::io {

namespace {

constexpr std::string_view kLoad = "load_idx";
constexpr std::string_view kSave = "save_idx";

// The type codes of the format, and the dtype each one holds.
struct IdxType {
  unsigned char code;
  Dtype dtype;
};
constexpr IdxType kTypes[] = {{0x08, uint8}, {0x09, int8},    {0x0B, int16},
                              {0x0C, int32}, {0x0D, float32}, {0x0E, float64}};

array parse(const std::shared_ptr<const Blob>& blob, const unsigned char* data, size_t size) {
  detail::ByteCursor in(data, size, kLoad, blob->label());
  const unsigned char* magic = in.take(4, "the magic number");
  if (magic[0] != 0 || magic[1] != 0) {
    in.fail("wrong magic: an IDX file starts with two zero bytes, found bytes " + std::to_string(magic[0]) + " and " +
            std::to_string(magic[1]));
  }
  const IdxType* type = nullptr;
  for (const auto& t : kTypes) {
    if (t.code == magic[2]) {
      type = &t;
    }
  }
  if (type == nullptr) {
    in.fail("unknown IDX type code " + std::to_string(magic[2]) +
            " (known: 8 uint8, 9 int8, 11 int16, 12 int32, 13 float32, 14 float64)");
  }
  int ndim = magic[3];
  Shape shape;
  size_t count = 1;
  for (int i = 0; i < ndim; ++i) {
    auto dim = in.read<uint32_t>("an axis size", /*big_endian=*/true);
    if (dim > static_cast<uint32_t>(INT32_MAX)) {
      in.fail("axis " + std::to_string(i) + " has size " + std::to_string(dim) + ", more than nuvec's 2^31 - 1");
    }
    shape.push_back(static_cast<int32_t>(dim));
    count = detail::checked_mul(count, dim, in, "the element count");
  }
  if (!detail::strides_fit(shape)) {
    in.fail("shape " + shape_string(shape) + " overflows");
  }
  size_t itemsize = size_of(type->dtype);
  size_t bytes = detail::checked_mul(count, itemsize, in, "the data size");
  if (in.remaining() != bytes) {
    in.fail("the header promises " + std::to_string(bytes) + " bytes of data for shape " + shape_string(shape) +
            " but the file holds " + std::to_string(in.remaining()));
  }
  const unsigned char* src = in.take(bytes, "the data");
  if (itemsize == 1) {
    return detail::adopt(blob, static_cast<size_t>(src - blob->data()), std::move(shape), type->dtype);
  }
  array out = detail::allocate(shape, type->dtype);
  if (bytes == 0) {
    return out;  // an empty array has no buffer to copy into
  }
  std::memcpy(out.raw_data(), src, bytes);
  if (std::endian::native == std::endian::little) {
    detail::byteswap_elements(out.raw_data(), count, itemsize);
  }
  return out;
}

}  // namespace

array load_idx(const std::shared_ptr<const Blob>& blob) {
  const unsigned char* data = blob->data();
  size_t size = blob->size();
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    auto inflated = detail::inflate_bytes(data, size, detail::DeflateFormat::gzip, detail::max_inflated_size(size),
                                          kLoad, blob->label());
    auto plain = memory_blob(std::move(inflated), blob->label());
    return parse(plain, plain->data(), plain->size());
  }
  return parse(blob, data, size);
}

array load_idx(const std::string& path) { return load_idx(map_file(path, kLoad)); }

void save_idx(const std::string& path, const array& a, bool gzip) {
  const IdxType* type = nullptr;
  for (const auto& t : kTypes) {
    if (t.dtype == a.dtype()) {
      type = &t;
    }
  }
  std::string label = "file " + path;
  if (type == nullptr) {
    detail::fail(kSave, label,
                 "IDX holds uint8, int8, int16, int32, float32 or float64; got " + std::string(dtype_name(a.dtype())));
  }
  if (a.ndim() > 255) {
    detail::fail(kSave, label, "IDX holds at most 255 axes; got " + std::to_string(a.ndim()));
  }
  std::vector<unsigned char> out = {0, 0, type->code, static_cast<unsigned char>(a.ndim())};
  for (int dim : a.shape()) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      out.push_back(static_cast<unsigned char>((static_cast<uint32_t>(dim) >> shift) & 0xFF));
    }
  }
  auto data = detail::contiguous_bytes(a);
  detail::byteswap_elements(data.data(), a.size(), size_of(a.dtype()));  // little-endian to IDX's big-endian
  out.insert(out.end(), data.begin(), data.end());
  if (gzip) {
    out = detail::deflate_bytes(out.data(), out.size(), detail::DeflateFormat::gzip, kSave, label);
  }
  FileWriter writer(path);
  writer.write(reinterpret_cast<const char*>(out.data()), out.size());
}

}  // namespace nuvec::io
