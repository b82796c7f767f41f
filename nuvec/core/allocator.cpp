#include "nuvec/core/allocator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "nuvec/core/backend.h"
#include "nuvec/core/device.h"
#include "nuvec/core/error.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define NUVEC_HAS_MMAP 1
#endif

namespace nuvec::detail {
namespace {

// Size classes. Requests up to 1 KiB round up to a multiple of 64 bytes: small buffers (scalars, shapes, short
// rows) waste at most 63 bytes, and every class stays a valid `aligned_alloc` size. Above 1 KiB each power of two
// (2^e, 2^(e+1)] is split into 8 equal steps, so the rounding wastes less than 1/8 of a request (powers of two
// would waste up to half of a large tensor), the classes are few enough (under 450) to index a fixed array, and
// near-equal shapes still share a class and reuse each other's buffers. The steps grow with the size: every class
// from 32 KiB is a whole number of 4 KiB pages, and every class from 16 MiB a whole number of 2 MiB huge pages.
constexpr size_t small_step = 64;
constexpr size_t small_log2 = 10;  // small classes end at 1 KiB
constexpr size_t small_max = size_t{1} << small_log2;
constexpr size_t small_classes = small_max / small_step;
constexpr size_t classes_per_doubling = 8;

constexpr size_t round_up(size_t n, size_t step) { return (n + step - 1) / step * step; }

}  // namespace

// The largest exponent e with 2^e < size is digits - 2, so the indices stay below this count.
constexpr size_t size_class_count =
    small_classes + (std::numeric_limits<size_t>::digits - 1 - small_log2) * classes_per_doubling;

SizeClass size_class(size_t size) {
  assert(size > 0 && size <= max_allocation_size);
  if (size <= small_max) {
    size_t bytes = round_up(size, small_step);
    return {bytes, bytes / small_step - 1};
  }
  size_t e = std::bit_width(size - 1) - 1;  // 2^e < size <= 2^(e+1)
  size_t step = (size_t{1} << e) / classes_per_doubling;
  size_t bytes = round_up(size, step);
  size_t k = (bytes - (size_t{1} << e)) / step;  // 1..8
  return {bytes, small_classes + (e - small_log2) * classes_per_doubling + k - 1};
}

}  // namespace nuvec::detail

namespace nuvec::allocator {
namespace {

using detail::SizeClass;

constexpr size_t alignment = 64;
// From 1 MiB buffers are mapped straight from the kernel, so freeing one (or evicting it) gives the memory back
// to the system at once instead of leaving it in the C heap.
constexpr size_t mmap_threshold = size_t{1} << 20;
// From 2 MiB buffers start on a huge-page boundary and are advised to use transparent huge pages. Measured on
// Linux 6.18 with THP in "madvise" mode (malloc, fill, free, clear_cache): fresh 3 MiB-512 MiB buffers were
// 1.5-6x faster to fill (8 MiB: ~450 -> ~65 ms per GiB), 1 GiB ones within noise; random reads over 512 MiB
// were ~18% faster. Below 2 MiB no huge page fits. Only the huge pages that the request itself fills are advised:
// a size class rounds up by up to an eighth, and a huge page the request only reaches into is resident whole (a
// model's 17 MiB weights took 18 MiB each).
constexpr size_t huge_page_size = size_t{2} << 20;

/// A mapping of `bytes` (a size class) for a request of `requested` bytes.
void* system_alloc(size_t bytes, [[maybe_unused]] size_t requested) noexcept {
#ifdef NUVEC_HAS_MMAP
  if (bytes >= mmap_threshold) {
    constexpr int prot = PROT_READ | PROT_WRITE;
    constexpr int flags = MAP_PRIVATE | MAP_ANONYMOUS;
    if (bytes < huge_page_size) {
      void* ptr = mmap(nullptr, bytes, prot, flags, -1, 0);
      return ptr == MAP_FAILED ? nullptr : ptr;
    }
    // Map one huge page more than needed and unmap the ends, so the buffer starts on a 2 MiB boundary: the kernel
    // only backs aligned 2 MiB ranges with huge pages, and only some kernels align large mappings themselves.
    size_t span = bytes + huge_page_size;
    void* raw = mmap(nullptr, span, prot, flags, -1, 0);
    if (raw == MAP_FAILED) {
      return nullptr;
    }
    auto* start = static_cast<char*>(raw);
    auto address = reinterpret_cast<uintptr_t>(raw);
    size_t head = ((address + huge_page_size - 1) & ~(huge_page_size - 1)) - address;
    char* ptr = start + head;
    if (head > 0) {
      munmap(start, head);
    }
    if (size_t tail = span - head - bytes; tail > 0) {
      munmap(ptr + bytes, tail);
    }
#ifdef MADV_HUGEPAGE
    if (const size_t filled = requested / huge_page_size * huge_page_size; filled > 0) {
      madvise(ptr, filled, MADV_HUGEPAGE);  // a hint: failure (THP disabled) leaves ordinary pages
    }
#endif
    return ptr;
  }
#endif
  return std::aligned_alloc(alignment, bytes);  // every size class is a multiple of 64
}

void system_free(void* ptr, size_t bytes) noexcept {
#ifdef NUVEC_HAS_MMAP
  if (bytes >= mmap_threshold) {
    munmap(ptr, bytes);
    return;
  }
#endif
  std::free(ptr);
}

/// A freed buffer waiting in the cache. Each sits in two doubly linked lists: the list of all cached buffers in
/// the order they were freed (for LRU eviction) and the list of its size class (for reuse).
struct CachedBlock {
  void* ptr = nullptr;
  SizeClass size_class;
  CachedBlock* older = nullptr;
  CachedBlock* newer = nullptr;
  CachedBlock* class_older = nullptr;
  CachedBlock* class_newer = nullptr;
};

// A buffer from the C heap holds its own record while cached (in its first bytes, unused until it is handed out
// again), so freeing and reusing a small buffer allocates nothing: a small op frees and reuses one per evaluation.
// A mapped buffer gets a record of its own: writing one into it could fault in a page (or a huge page) never used.
static_assert(sizeof(CachedBlock) <= detail::small_step && std::is_trivially_destructible_v<CachedBlock>,
              "a cache record fits in the smallest size class");

bool record_inside(const SizeClass& size_class) { return size_class.bytes < mmap_threshold; }

/// The cache record of the buffer at `ptr`; null when one of its own could not be allocated.
CachedBlock* new_record(void* ptr, const SizeClass& size_class) noexcept {
  if (record_inside(size_class)) {
    return new (ptr) CachedBlock{ptr, size_class};
  }
  return new (std::nothrow) CachedBlock{ptr, size_class};
}

/// Ends a record; one inside its buffer must go before the buffer is handed out or released.
void delete_record(CachedBlock* block) noexcept {
  if (!record_inside(block->size_class)) {
    delete block;
  }
}

/// The cache of freed buffers; every operation is O(1). Reuse takes the newest buffer of a class (its memory is
/// the most likely to still be in CPU caches and mapped); eviction takes the oldest of all, which is also the
/// oldest of its class, so both lists only ever lose an end. Not synchronized: the caller holds the lock.
class Cache {
 public:
  void push(CachedBlock* block) {
    Ends& ends = classes_[block->size_class.index];
    link_newest(block, all_, &CachedBlock::older, &CachedBlock::newer);
    link_newest(block, ends, &CachedBlock::class_older, &CachedBlock::class_newer);
    bytes_ += block->size_class.bytes;
  }

  /// The most recently freed buffer of this class, taken out of the cache; null when there is none.
  CachedBlock* take_newest(const SizeClass& size_class) {
    CachedBlock* block = classes_[size_class.index].newest;
    if (block != nullptr) {
      unlink(block);
    }
    return block;
  }

  /// The least recently freed buffer of all, taken out of the cache; null when the cache is empty.
  CachedBlock* take_oldest() {
    CachedBlock* block = all_.oldest;
    if (block != nullptr) {
      unlink(block);
    }
    return block;
  }

  [[nodiscard]] size_t bytes() const { return bytes_; }

 private:
  struct Ends {
    CachedBlock* newest = nullptr;
    CachedBlock* oldest = nullptr;
  };
  using Link = CachedBlock* CachedBlock::*;

  static void link_newest(CachedBlock* block, Ends& ends, Link older, Link newer) {
    block->*older = ends.newest;
    block->*newer = nullptr;
    (ends.newest != nullptr ? ends.newest->*newer : ends.oldest) = block;
    ends.newest = block;
  }

  static void unlink_from(CachedBlock* block, Ends& ends, Link older, Link newer) {
    (block->*older != nullptr ? (block->*older)->*newer : ends.oldest) = block->*newer;
    (block->*newer != nullptr ? (block->*newer)->*older : ends.newest) = block->*older;
  }

  void unlink(CachedBlock* block) {
    unlink_from(block, all_, &CachedBlock::older, &CachedBlock::newer);
    unlink_from(block, classes_[block->size_class.index], &CachedBlock::class_older, &CachedBlock::class_newer);
    bytes_ -= block->size_class.bytes;
  }

  Ends all_;
  std::array<Ends, detail::size_class_count> classes_{};
  size_t bytes_ = 0;
};

/// Buffers evicted under the lock, released to the system once the lock is gone: the system calls (munmap in
/// particular) are slow and must not hold up other threads.
class Evicted {
 public:
  Evicted() = default;
  Evicted(const Evicted&) = delete;
  Evicted& operator=(const Evicted&) = delete;
  ~Evicted() { release(); }

  void add(CachedBlock* block) {
    block->older = head_;
    head_ = block;
  }

  void release() noexcept {
    while (head_ != nullptr) {
      CachedBlock* block = head_;
      head_ = block->older;
      void* ptr = block->ptr;
      size_t bytes = block->size_class.bytes;
      delete_record(block);
      system_free(ptr, bytes);
    }
  }

 private:
  CachedBlock* head_ = nullptr;
};

/// The physical memory of the machine, or the memory limit of this process's cgroup when that is smaller
/// (inside a container the machine's memory is not what the process may use).
size_t default_memory_limit() {
  size_t limit = std::numeric_limits<size_t>::max();
#ifdef NUVEC_HAS_MMAP
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    limit = static_cast<size_t>(pages) * static_cast<size_t>(page_size);
  }
#endif
#ifdef __linux__
  auto read_limit = [&limit](const std::string& path) {
    std::ifstream file(path);
    unsigned long long value = 0;
    if (file >> value) {  // "max" (no limit) does not parse and is skipped
      limit = std::min<unsigned long long>(limit, value);
    }
  };
  read_limit("/sys/fs/cgroup/memory.max");                    // cgroup v2, namespaced
  read_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes");  // cgroup v1, namespaced
  std::ifstream cgroups("/proc/self/cgroup");                 // lines "id:controllers:path"
  for (std::string line; std::getline(cgroups, line);) {
    size_t first = line.find(':');
    size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) {
      continue;
    }
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      read_limit("/sys/fs/cgroup" + path + "/memory.max");
    } else if (controllers == "memory") {
      read_limit("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
    }
  }
#endif
  return limit;
}

/// The allocator's lock. Its sections are a few list operations, so a waiter spins (yielding the core between looks)
/// instead of sleeping, and releasing it is a plain store where a mutex's unlock is an atomic exchange: every small
/// op's buffer takes it twice (allocated, freed), and an atomic costs about 6 ns on the machines measured.
class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) {
        std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

struct State {
  SpinLock lock;
  Cache cache;
  size_t active = 0;
  // Bytes admitted under the memory limit whose system allocation is still running outside the lock. They count
  // against the limit (so threads cannot overshoot it together) but not as active memory until handed out.
  size_t pending = 0;
  size_t peak = 0;
  size_t memory_limit = default_memory_limit();
  size_t cache_limit = memory_limit;

  void take_active(size_t bytes) {
    active += bytes;
    peak = std::max(peak, active);
  }

  /// Moves least recently freed buffers from the cache to `evicted` until the cache holds at most `target` bytes.
  void evict_to(size_t target, Evicted& evicted) {
    while (cache.bytes() > target) {
      evicted.add(cache.take_oldest());
    }
  }

  /// What the cache may hold under both limits; active memory is never taken back.
  [[nodiscard]] size_t cache_room() const {
    size_t in_use = active + pending;
    return std::min(cache_limit, memory_limit > in_use ? memory_limit - in_use : 0);
  }
};

State& state() {
  // Never destroyed: buffers may still be freed by other static destructors at exit.
  static State* const instance = new State();
  return *instance;
}

std::string requested(size_t size, size_t bytes) {
  std::string text = std::to_string(size) + " bytes";
  if (bytes != size) {
    text += " (" + std::to_string(bytes) + " with rounding)";
  }
  return text;
}

}  // namespace

Buffer malloc(size_t size) {
  if (size == 0) {
    return Buffer{};
  }
  if (size > detail::max_allocation_size) {
    throw_error(ErrorKind::out_of_memory, "[malloc] Unable to allocate " + std::to_string(size) +
                                              " bytes: the largest supported allocation is " +
                                              std::to_string(detail::max_allocation_size) + " bytes.");
  }
  SizeClass size_class = detail::size_class(size);
  size_t bytes = size_class.bytes;
  State& s = state();
  Evicted evicted;

  CachedBlock* reused = nullptr;
  bool admitted = false;
  size_t limit = 0;
  size_t in_use = 0;
  {
    std::lock_guard lock(s.lock);
    reused = s.cache.take_newest(size_class);
    if (reused != nullptr) {
      s.take_active(bytes);
    } else {
      limit = s.memory_limit;
      in_use = s.active + s.pending;
      admitted = in_use <= limit && bytes <= limit - in_use;
      if (admitted) {
        s.pending += bytes;
        // Cached buffers count against the limit too: release the least recently freed until this one fits.
        s.evict_to(limit - in_use - bytes, evicted);
      } else {
        s.evict_to(0, evicted);  // at the limit: give the cache back before failing
      }
    }
  }
  if (reused != nullptr) {
    void* ptr = reused->ptr;
    delete_record(reused);
    return Buffer{ptr, size};
  }
  evicted.release();
  if (!admitted) {
    throw_error(ErrorKind::out_of_memory, "[malloc] Unable to allocate " + requested(size, bytes) +
                                              ": the memory limit is " + std::to_string(limit) + " bytes and " +
                                              std::to_string(in_use) + " are in use.");
  }

  void* ptr = system_alloc(bytes, size);
  if (ptr == nullptr) {
    // The system is short of memory (other processes, or a limit above what the machine has): return the cache
    // to it and try once more.
    {
      std::lock_guard lock(s.lock);
      s.evict_to(0, evicted);
    }
    evicted.release();
    ptr = system_alloc(bytes, size);
  }
  {
    std::lock_guard lock(s.lock);
    s.pending -= bytes;
    if (ptr != nullptr) {
      s.take_active(bytes);
    }
    limit = s.memory_limit;
    in_use = s.active + s.pending;
  }
  if (ptr == nullptr) {
    throw_error(ErrorKind::out_of_memory, "[malloc] Unable to allocate " + requested(size, bytes) +
                                              ": the system is out of memory (the memory limit is " +
                                              std::to_string(limit) + " bytes and " + std::to_string(in_use) +
                                              " are in use).");
  }
  return Buffer{ptr, size};
}

void free(Buffer buffer) noexcept {
  void* ptr = buffer.raw_ptr();
  if (ptr == nullptr) {
    return;
  }
  SizeClass size_class = detail::size_class(buffer.size());
  // Made before taking the lock; without one the buffer simply goes back to the system.
  CachedBlock* block = new_record(ptr, size_class);
  State& s = state();
  Evicted evicted;
  bool cached = false;
  {
    std::lock_guard lock(s.lock);
    assert(s.active >= size_class.bytes && "free: a buffer freed twice, or not from malloc");
    s.active -= size_class.bytes;
    // A buffer larger than the cache may hold is released rather than flushing everything else out.
    if (block != nullptr && size_class.bytes <= s.cache_room()) {
      s.cache.push(block);
      s.evict_to(s.cache_room(), evicted);  // never reaches the new block, which fits by itself
      cached = true;
    }
  }
  if (!cached) {
    if (block != nullptr && !record_inside(size_class)) {
      delete block;  // never linked: the record of its own made above
    }
    system_free(ptr, size_class.bytes);
  }
}

}  // namespace nuvec::allocator

namespace nuvec {

using allocator::Evicted;
using allocator::state;
using allocator::State;

namespace {

/// The GPU whose allocator the memory API reports: the default device, when it is one (as MLX's API reports the
/// device's allocator); -1 for the host's.
int reported_gpu() {
  const Device& d = default_device();
  return d.type == Device::gpu ? d.index : -1;
}

}  // namespace

size_t get_active_memory() {
  if (int gpu = reported_gpu(); gpu >= 0) {
    return detail::gpu_memory(gpu, detail::GpuMemory::active);
  }
  State& s = state();
  std::lock_guard lock(s.lock);
  return s.active;
}

size_t get_peak_memory() {
  if (int gpu = reported_gpu(); gpu >= 0) {
    return detail::gpu_memory(gpu, detail::GpuMemory::peak);
  }
  State& s = state();
  std::lock_guard lock(s.lock);
  return s.peak;
}

void reset_peak_memory() {
  if (int gpu = reported_gpu(); gpu >= 0) {
    detail::gpu_reset_peak_memory(gpu);
    return;
  }
  State& s = state();
  std::lock_guard lock(s.lock);
  s.peak = s.active;
}

size_t get_cache_memory() {
  if (int gpu = reported_gpu(); gpu >= 0) {
    return detail::gpu_memory(gpu, detail::GpuMemory::cache);
  }
  State& s = state();
  std::lock_guard lock(s.lock);
  return s.cache.bytes();
}

size_t get_memory_limit() {
  if (int gpu = reported_gpu(); gpu >= 0) {
    return detail::gpu_memory(gpu, detail::GpuMemory::memory_limit);
  }
  State& s = state();
  std::lock_guard lock(s.lock);
  return s.memory_limit;
}

// In the setters `evicted` is declared before the lock, so its buffers go back to the system after unlocking.

size_t set_memory_limit(size_t limit) {
  if (int gpu = reported_gpu(); gpu >= 0) {
    return detail::gpu_set_limit(gpu, false, limit);
  }
  State& s = state();
  Evicted evicted;
  std::lock_guard lock(s.lock);
  size_t previous = std::exchange(s.memory_limit, limit);
  s.evict_to(s.cache_room(), evicted);
  return previous;
}

size_t set_cache_limit(size_t limit) {
  if (int gpu = reported_gpu(); gpu >= 0) {
    return detail::gpu_set_limit(gpu, true, limit);
  }
  State& s = state();
  Evicted evicted;
  std::lock_guard lock(s.lock);
  size_t previous = std::exchange(s.cache_limit, limit);
  s.evict_to(s.cache_room(), evicted);
  return previous;
}

void clear_cache() {
  if (int gpu = reported_gpu(); gpu >= 0) {
    detail::gpu_clear_cache(gpu);
    return;
  }
  {
    State& s = state();
    Evicted evicted;
    std::lock_guard lock(s.lock);
    s.evict_to(0, evicted);
  }
#if defined(__GLIBC__)
  // glibc keeps freed chunks under its mmap threshold (the cache's smaller buffers, and whatever else the program
  // freed: a tokenizer's JSON, a prefill's graph) in its heap; trimming hands them to the system, as a caller who
  // clears the cache expects.
  malloc_trim(0);
#endif
}

}  // namespace nuvec
