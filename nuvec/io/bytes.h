#pragma once

// A bounds-checked little-endian cursor over bytes in memory, shared by the parsers: every read is checked against
// the end first, so a malformed file gives an error naming the file instead of reading past its end.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "nuvec/core/shape.h"
#include "nuvec/io/errors.h"

namespace nuvec::io::detail {

/// Reverses the bytes of a trivially copyable value.
template <class T>
T byteswap_value(T value) {
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  for (size_t i = 0; i < sizeof(T) / 2; ++i) {
    std::swap(bytes[i], bytes[sizeof(T) - 1 - i]);
  }
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

/// Reverses each `width`-byte element of `data` in place.
inline void byteswap_elements(void* data, size_t count, size_t width) {
  auto* bytes = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < count; ++i) {
    for (size_t j = 0; j < width / 2; ++j) {
      std::swap(bytes[i * width + j], bytes[i * width + width - 1 - j]);
    }
  }
}

class ByteCursor {
 public:
  ByteCursor(const void* data, size_t size, std::string_view op, std::string_view label)
      : data_(static_cast<const unsigned char*>(data)), size_(size), op_(op), label_(label) {}

  [[nodiscard]] size_t position() const { return pos_; }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] size_t remaining() const { return size_ - pos_; }
  [[nodiscard]] const unsigned char* data() const { return data_; }

  /// Fails unless `n` more bytes exist; `what` names the field being read.
  void need(size_t n, std::string_view what) const {
    if (n > remaining()) {
      fail("truncated file: " + std::string(what) + " needs " + std::to_string(n) + " bytes at offset " +
           std::to_string(pos_) + " but the file has " + std::to_string(size_) + " bytes");
    }
  }

  /// Reads a little-endian (or big-endian) value.
  template <class T>
  T read(std::string_view what, bool big_endian = false) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    if (big_endian != (std::endian::native == std::endian::big)) {
      value = byteswap_value(value);
    }
    return value;
  }

  /// The next `n` bytes, consumed.
  const unsigned char* take(size_t n, std::string_view what) {
    need(n, what);
    const unsigned char* p = data_ + pos_;
    pos_ += n;
    return p;
  }

  void seek(size_t offset, std::string_view what) {
    if (offset > size_) {
      fail(std::string(what) + " at offset " + std::to_string(offset) + " lies past the end of the file (" +
           std::to_string(size_) + " bytes)");
    }
    pos_ = offset;
  }

  [[noreturn]] void fail(std::string_view problem) const { detail::fail(op_, label_, problem); }

 private:
  const unsigned char* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string_view op_;
  std::string_view label_;
};

/// a * b, failing with `what` when it overflows size_t.
inline size_t checked_mul(size_t a, size_t b, const ByteCursor& c, std::string_view what) {
  size_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) {
    c.fail(std::string(what) + " overflows");
  }
  return out;
}

/// Whether an array of `shape` can exist: its row-major strides count empty axes as 1, so the product of the
/// axes with the empty ones taken as 1 must fit int64 even when the array holds no element.
inline bool strides_fit(const Shape& shape) {
  int64_t product = 1;
  for (int32_t dim : shape) {
    if (__builtin_mul_overflow(product, std::max<int64_t>(dim, 1), &product)) {
      return false;
    }
  }
  return true;
}

}  // namespace nuvec::io::detail
