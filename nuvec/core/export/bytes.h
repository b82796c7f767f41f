#pragma once

// The byte layer of nuvec's exported-function files (format.h): little-endian fixed-width values, length-prefixed
// strings and lists. The reader checks every length against the bytes left, so a truncated or corrupt file throws
// instead of reading past its end.

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "nuvec/core/dtype.h"

namespace nuvec::detail {

static_assert(std::endian::native == std::endian::little,
              "export files are little-endian; so is every host nuvec runs on");

/// Appends values to a byte string.
class ByteWriter {
 public:
  template <class T>
  requires std::is_arithmetic_v<T> || std::is_enum_v<T>
  void put(T value) {
    const auto* p = reinterpret_cast<const char*>(&value);
    bytes_.append(p, sizeof(T));
  }
  void put(Dtype dtype) { put(static_cast<uint8_t>(dtype.val)); }
  void put(std::string_view text) {
    put(static_cast<uint64_t>(text.size()));
    bytes_.append(text);
  }
  template <class T>
  void put(const std::vector<T>& values) {
    put(static_cast<uint64_t>(values.size()));
    for (const auto& v : values) {
      put(v);
    }
  }
  void put_raw(const void* data, size_t size) { bytes_.append(static_cast<const char*>(data), size); }

  [[nodiscard]] const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

/// Reads values back from a byte range; throws error(io) naming `what` when the range ends early or holds a value
/// no writer wrote (an unknown dtype or enum).
class ByteReader {
 public:
  ByteReader(const char* begin, size_t size) : pos_(begin), end_(begin + size) {}

  template <class T>
  requires std::is_arithmetic_v<T> T get() {
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  bool get_bool();
  Dtype get_dtype();
  /// An enum stored as its underlying value, below `count`.
  template <class E>
  requires std::is_enum_v<E> E get_enum(int count) {
    auto raw = get<std::underlying_type_t<E>>();
    if (static_cast<int64_t>(raw) < 0 || static_cast<int64_t>(raw) >= count) {
      corrupt("an enumeration value out of range");
    }
    return static_cast<E>(raw);
  }
  std::string get_string();
  /// A list of `T` whose stored length fits in the bytes left.
  template <class T>
  std::vector<T> get_list() {
    uint64_t n = get_count(sizeof(T));
    std::vector<T> values(n);
    for (auto& v : values) {
      v = get<T>();
    }
    return values;
  }
  /// A stored count of items of at least `item_size` bytes each, checked against the bytes left.
  uint64_t get_count(size_t item_size);
  /// The next `size` bytes.
  const char* take(size_t size);
  [[nodiscard]] size_t left() const { return static_cast<size_t>(end_ - pos_); }

  [[noreturn]] static void corrupt(const std::string& what);

 private:
  const char* pos_;
  const char* end_;
};

/// FNV-1a (64-bit) of a byte range: each trace carries it, so a damaged file is refused rather than replayed.
uint64_t fnv1a(std::string_view bytes);

}  // namespace nuvec::detail
