#pragma once

// Temporary memory for a kernel from nuvec's allocator (its cache makes the repeated large buffers of GEMM and
// convolution cheap), returned on scope exit.

#include <cstddef>
#include <utility>

#include "nuvec/core/allocator.h"

namespace nuvec::cpu {

class Scratch {
 public:
  explicit Scratch(size_t bytes) : buffer_(allocator::malloc(bytes)) {}
  Scratch(Scratch&& other) noexcept : buffer_(std::exchange(other.buffer_, {})) {}
  Scratch& operator=(Scratch&& other) noexcept {
    std::swap(buffer_, other.buffer_);
    return *this;
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { allocator::free(buffer_); }
  [[nodiscard]] void* get() const { return buffer_.raw_ptr(); }

 private:
  allocator::Buffer buffer_;
};

}  // namespace nuvec::cpu
