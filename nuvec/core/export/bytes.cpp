#include "nuvec/core/export/bytes.h"

#include "nuvec/core/error.h"

namespace nuvec::detail {

void ByteReader::corrupt(const std::string& what) {
  throw_error(ErrorKind::io,
              std::string("[import_function] The file is truncated or corrupt: ").append(what).append("."));
}

const char* ByteReader::take(size_t size) {
  if (size > left()) {
    corrupt("it ends inside a value");
  }
  const char* p = pos_;
  pos_ += size;
  return p;
}

bool ByteReader::get_bool() {
  auto v = get<uint8_t>();
  if (v > 1) {
    corrupt("a boolean is neither 0 nor 1");
  }
  return v == 1;
}

Dtype ByteReader::get_dtype() { return all_dtypes[static_cast<size_t>(get_enum<Dtype::Val>(num_dtypes))]; }

std::string ByteReader::get_string() {
  uint64_t n = get_count(1);
  const char* p = take(n);
  return {p, n};
}

uint64_t ByteReader::get_count(size_t item_size) {
  auto n = get<uint64_t>();
  if (n > left() / item_size) {
    corrupt("a length runs past the end");
  }
  return n;
}

uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = 14695981039346656037ULL;
  for (char c : bytes) {
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return h;
}

}  // namespace nuvec::detail
