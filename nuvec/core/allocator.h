#pragma once

// The CPU allocator and MLX's memory API (get_active_memory, set_cache_limit, ...).
//
// Every request is rounded up to a size class (see `detail::size_class`); the statistics count those
// rounded sizes, because that is what a buffer really holds on to. Freed buffers are kept in a cache,
// one list per size class, and handed out again for the next request of the same class; when the cache
// passes its limit the least recently freed buffers go back to the system first. All functions here are
// thread-safe.

#include <cstddef>

namespace nuvec::allocator {

/// A raw allocation: the pointer and the size that was asked for (not the rounded size).
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(void* ptr, size_t size) : ptr_(ptr), size_(size) {}

  /// The start of the allocation, 64-byte aligned; null for a zero-size buffer.
  [[nodiscard]] void* raw_ptr() const { return ptr_; }
  /// The size passed to `malloc`.
  [[nodiscard]] size_t size() const { return size_; }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

/// Allocates `size` bytes aligned to 64, reusing a cached buffer of the same size class when there is one.
/// `malloc(0)` gives an empty buffer with a null pointer. Throws `nuvec::error` (out_of_memory) when the memory
/// limit would be passed even after emptying the cache, or when the system has no memory left; never aborts.
[[nodiscard]] Buffer malloc(size_t size);

/// Returns a buffer from `malloc` to the cache (or to the system when the cache limit is too small for it).
/// The buffer must come from `malloc` unchanged and be freed once; freeing an empty buffer does nothing.
void free(Buffer buffer) noexcept;

}  // namespace nuvec::allocator

namespace nuvec {

/// Bytes handed out by `allocator::malloc` and not yet freed, counted in rounded (size-class) sizes.
[[nodiscard]] size_t get_active_memory();
/// The highest `get_active_memory()` since the start or the last `reset_peak_memory()`.
[[nodiscard]] size_t get_peak_memory();
/// Sets the peak to the current active memory.
void reset_peak_memory();
/// Bytes held in the cache: buffers freed by users and kept for reuse, in rounded sizes.
[[nodiscard]] size_t get_cache_memory();

/// The most that active plus cached memory may reach; defaults to the physical memory of the machine
/// (or of the cgroup this process runs in, when that is smaller).
[[nodiscard]] size_t get_memory_limit();
/// Sets the memory limit and returns the previous one. Cached buffers over the new limit are released at once;
/// active memory is never taken back, so a limit below it only makes further allocations fail.
size_t set_memory_limit(size_t limit);
/// Sets the cache limit and returns the previous one; the least recently freed buffers over the new limit are
/// released at once. Defaults to the memory limit, as in MLX: reallocating large buffers every step is slow.
size_t set_cache_limit(size_t limit);
/// Releases every cached buffer to the system.
void clear_cache();

}  // namespace nuvec

namespace nuvec::detail {

/// A size class: the rounded size `allocator::malloc` reserves for a request, and the index of its cache list.
struct SizeClass {
  size_t bytes = 0;
  size_t index = 0;
};

/// The size class of a request of `size` bytes, 0 < size <= max_allocation_size.
[[nodiscard]] SizeClass size_class(size_t size);

/// The largest request `allocator::malloc` accepts before asking the system (half the address space).
inline constexpr size_t max_allocation_size = static_cast<size_t>(-1) / 2;

}  // namespace nuvec::detail
