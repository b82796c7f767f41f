#pragma once

// The bytes a loader parses: a memory-mapped file or a buffer in memory. Arrays loaded from a blob adopt its bytes
// (zero copy) and keep the blob alive through their deleter, so a mapped file stays mapped while any array views
// it and the OS reads each page when it is first touched.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/io/stream.h"

namespace nuvec::io {

class Blob {
 public:
  virtual ~Blob() = default;
  [[nodiscard]] virtual const unsigned char* data() const = 0;
  [[nodiscard]] virtual size_t size() const = 0;
  /// "file <path>" or another name for error messages.
  [[nodiscard]] const std::string& label() const { return label_; }
  /// Says that the bytes [begin, begin + count) will not be read soon: a mapped file gives back the memory of the
  /// whole pages of its own among them, which are read from the file again if touched (bytes outside the blob are
  /// ignored). Only for bytes that no evaluation has written into (a mapping's written pages would be lost).
  virtual void release(const unsigned char* begin, size_t count) const;

 protected:
  explicit Blob(std::string label) : label_(std::move(label)) {}

 private:
  std::string label_;
};

/// Maps `path` privately (copy-on-write: the file is never written); `op` names the caller in errors.
std::shared_ptr<const Blob> map_file(const std::string& path, std::string_view op);
/// Takes ownership of bytes in memory.
std::shared_ptr<const Blob> memory_blob(std::vector<unsigned char> bytes, std::string label);
/// Reads everything from the reader's current position to its end.
std::shared_ptr<const Blob> read_all(Reader& reader, std::string_view op);

namespace detail {

/// An evaluated array over `dtype`-typed little-endian elements at `offset` in the blob: adopted without a copy when
/// the host is little-endian and the bytes are aligned for the dtype, copied otherwise. Bool bytes are copied and
/// normalized to 0/1. The caller has checked that the bytes lie inside the blob.
array adopt(const std::shared_ptr<const Blob>& blob, size_t offset, Shape shape, Dtype dtype);
/// A fresh evaluated array of `shape` and `dtype` whose bytes the caller fills.
array allocate(const Shape& shape, Dtype dtype);
/// The array's elements, row-major and contiguous, as raw little-endian bytes (evaluates it).
std::vector<unsigned char> contiguous_bytes(const array& a);

}  // namespace detail

}  // namespace nuvec::io
