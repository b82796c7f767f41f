#include "nuvec/core/allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nuvec/core/error.h"

// Heap allocations made by this thread while counting (the cache's own bookkeeping must make none for small
// buffers): the global operator new is replaced for this test binary, forwarding to malloc as the default does.
namespace {
thread_local bool counting_news = false;
thread_local int news = 0;

void* counted_new(std::size_t size) {
  news += counting_news ? 1 : 0;
  return std::malloc(size == 0 ? 1 : size);
}
}  // namespace

void* operator new(std::size_t size) {
  if (void* p = counted_new(size)) {
    return p;
  }
  throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t& /*tag*/) noexcept { return counted_new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t /*size*/) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t& /*tag*/) noexcept { std::free(p); }

namespace nuvec {
namespace {

using allocator::Buffer;

size_t class_bytes(size_t size) { return detail::size_class(size).bytes; }

// Every test starts with an empty cache and puts both limits back, so tests do not see each other's buffers.
class AllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    memory_limit_ = get_memory_limit();
    cache_limit_ = set_cache_limit(get_memory_limit());
    clear_cache();
    active_ = get_active_memory();
  }

  void TearDown() override {
    set_memory_limit(memory_limit_);
    set_cache_limit(cache_limit_);
    clear_cache();
    EXPECT_EQ(get_active_memory(), active_) << "the test leaked buffers";
  }

  size_t memory_limit_ = 0;
  size_t cache_limit_ = 0;
  size_t active_ = 0;  // active memory when the test started
};

TEST(SizeClassTest, RoundsToDocumentedClasses) {
  // Expected values from the rule in allocator.cpp: multiples of 64 up to 1 KiB, then 8 steps per power of two.
  EXPECT_EQ(class_bytes(1), 64U);
  EXPECT_EQ(class_bytes(64), 64U);
  EXPECT_EQ(class_bytes(65), 128U);
  EXPECT_EQ(class_bytes(1024), 1024U);
  EXPECT_EQ(class_bytes(1025), 1152U);
  EXPECT_EQ(class_bytes(2048), 2048U);
  EXPECT_EQ(class_bytes(2049), 2304U);
  EXPECT_EQ(class_bytes((size_t{1} << 20) + 1), (size_t{1} << 20) + (size_t{1} << 17));
  EXPECT_EQ(class_bytes(detail::max_allocation_size), detail::max_allocation_size + 1);
}

TEST(SizeClassTest, WasteIsBoundedAndIndicesMatchSizes) {
  std::mt19937_64 random(7);
  std::vector<size_t> sizes;
  for (size_t size = 1; size <= 70000; ++size) {
    sizes.push_back(size);
  }
  for (int i = 0; i < 100000; ++i) {
    sizes.push_back(random() % (size_t{1} << (random() % 62 + 1)) + 1);
  }
  for (size_t size : sizes) {
    detail::SizeClass size_class = detail::size_class(size);
    ASSERT_GE(size_class.bytes, size);
    ASSERT_EQ(size_class.bytes % 64, 0U) << size;
    ASSERT_LT(size_class.bytes - size, std::max<size_t>(64, size / 8)) << size;
    if (size > 32768) {
      ASSERT_EQ(size_class.bytes % 4096, 0U) << size;
    }
    // A class's own size maps to the same class: the index identifies the rounded size.
    detail::SizeClass again = detail::size_class(size_class.bytes);
    ASSERT_EQ(again.bytes, size_class.bytes);
    ASSERT_EQ(again.index, size_class.index);
  }
  // Consecutive classes have consecutive indices.
  size_t previous = detail::size_class(1).index;
  EXPECT_EQ(previous, 0U);
  for (size_t size = 65; size <= (size_t{1} << 24); size = detail::size_class(size).bytes + 1) {
    size_t index = detail::size_class(size).index;
    ASSERT_EQ(index, previous + 1) << size;
    previous = index;
  }
}

TEST_F(AllocatorTest, ReusesFreedBufferOfSameClass) {
  for (size_t size : {size_t{1000}, size_t{100000}, size_t{3} << 20}) {
    Buffer first = allocator::malloc(size);
    void* ptr = first.raw_ptr();
    allocator::free(first);
    Buffer second = allocator::malloc(size);
    EXPECT_EQ(second.raw_ptr(), ptr) << size;
    allocator::free(second);
    // A different size in the same class gets the buffer too.
    Buffer third = allocator::malloc(class_bytes(size) - 1);
    EXPECT_EQ(third.raw_ptr(), ptr) << size;
    EXPECT_EQ(third.size(), class_bytes(size) - 1);
    allocator::free(third);
  }
}

TEST_F(AllocatorTest, CachingASmallBufferAllocatesNothing) {
  // A buffer from the C heap keeps its cache record in its own bytes; a mapped one (from 1 MiB) gets a record of its
  // own, so caching it never writes to (and faults in) its pages.
  for (size_t size : {size_t{16}, size_t{1000}, size_t{100000}}) {
    Buffer warm = allocator::malloc(size);
    allocator::free(warm);
    counting_news = true;
    news = 0;
    for (int i = 0; i < 100; ++i) {
      Buffer b = allocator::malloc(size);
      std::memset(b.raw_ptr(), 0xab, size);  // the record is gone once the buffer is handed out
      allocator::free(b);
    }
    counting_news = false;
    EXPECT_EQ(news, 0) << size;
    EXPECT_EQ(get_cache_memory(), class_bytes(size)) << size;
    clear_cache();
  }
  counting_news = true;
  news = 0;
  allocator::free(allocator::malloc(size_t{2} << 20));
  counting_news = false;
  EXPECT_EQ(news, 1);
}

TEST_F(AllocatorTest, CountsActiveAndCachedMemoryInClassSizes) {
  Buffer small = allocator::malloc(100);
  Buffer large = allocator::malloc(5000);
  EXPECT_EQ(small.size(), 100U);
  EXPECT_EQ(get_active_memory(), active_ + 128 + class_bytes(5000));
  EXPECT_EQ(get_cache_memory(), 0U);

  allocator::free(small);
  EXPECT_EQ(get_active_memory(), active_ + class_bytes(5000));
  EXPECT_EQ(get_cache_memory(), 128U);

  allocator::free(large);
  EXPECT_EQ(get_active_memory(), active_);
  EXPECT_EQ(get_cache_memory(), 128 + class_bytes(5000));

  Buffer again = allocator::malloc(120);  // the cached 128-byte buffer
  EXPECT_EQ(get_active_memory(), active_ + 128);
  EXPECT_EQ(get_cache_memory(), class_bytes(5000));
  allocator::free(again);

  clear_cache();
  EXPECT_EQ(get_cache_memory(), 0U);
  EXPECT_EQ(get_active_memory(), active_);
}

TEST_F(AllocatorTest, CacheLimitZeroEmptiesCache) {
  std::vector<Buffer> buffers;
  for (size_t size : {size_t{64}, size_t{4096}, size_t{1} << 20, size_t{5} << 20}) {
    buffers.push_back(allocator::malloc(size));
  }
  for (Buffer& buffer : buffers) {
    allocator::free(buffer);
  }
  EXPECT_GT(get_cache_memory(), 5U << 20);

  size_t previous = set_cache_limit(0);
  EXPECT_EQ(previous, get_memory_limit());  // as SetUp left it
  EXPECT_EQ(get_cache_memory(), 0U);

  // With no room in the cache, freed buffers go straight back to the system.
  allocator::free(allocator::malloc(4096));
  EXPECT_EQ(get_cache_memory(), 0U);
  EXPECT_EQ(set_cache_limit(previous), 0U);
}

TEST_F(AllocatorTest, BufferLargerThanCacheLimitSkipsTheCache) {
  set_cache_limit(2048);
  Buffer small = allocator::malloc(1024);
  Buffer large = allocator::malloc(4096);
  void* small_ptr = small.raw_ptr();
  allocator::free(small);
  allocator::free(large);  // cannot fit: released without flushing the buffers that do
  EXPECT_EQ(get_cache_memory(), 1024U);
  Buffer again = allocator::malloc(1024);
  EXPECT_EQ(again.raw_ptr(), small_ptr);
  allocator::free(again);
}

TEST_F(AllocatorTest, EvictsLeastRecentlyFreedFirst) {
  // Three classes of 64, 128 and 192 bytes, freed in the order a, b, c.
  Buffer a = allocator::malloc(64);
  Buffer b = allocator::malloc(128);
  Buffer c = allocator::malloc(192);
  void* c_ptr = c.raw_ptr();
  allocator::free(a);
  allocator::free(b);
  allocator::free(c);
  EXPECT_EQ(get_cache_memory(), 64U + 128 + 192);

  set_cache_limit(128 + 192);  // room for all but a, the least recently freed
  EXPECT_EQ(get_cache_memory(), 128U + 192);
  set_cache_limit(200);  // then b goes
  EXPECT_EQ(get_cache_memory(), 192U);
  Buffer c_again = allocator::malloc(192);
  EXPECT_EQ(c_again.raw_ptr(), c_ptr);
  EXPECT_EQ(get_cache_memory(), 0U);
  allocator::free(c_again);

  // Freeing past the limit evicts too, oldest first, within one class as well.
  clear_cache();
  set_cache_limit(size_t{2} * 1024);
  Buffer x1 = allocator::malloc(1024);
  Buffer x2 = allocator::malloc(1024);
  Buffer x3 = allocator::malloc(1024);
  void* x2_ptr = x2.raw_ptr();
  void* x3_ptr = x3.raw_ptr();
  allocator::free(x1);
  allocator::free(x2);
  allocator::free(x3);  // x1 is evicted
  EXPECT_EQ(get_cache_memory(), 2U * 1024);
  Buffer y3 = allocator::malloc(1024);  // the most recently freed comes back first
  Buffer y2 = allocator::malloc(1024);
  EXPECT_EQ(y3.raw_ptr(), x3_ptr);
  EXPECT_EQ(y2.raw_ptr(), x2_ptr);
  EXPECT_EQ(get_cache_memory(), 0U);

  allocator::free(y2);
  allocator::free(y3);

  // A buffer freed again becomes the most recent: p is freed before q, taken back, and freed after q.
  clear_cache();
  set_cache_limit(memory_limit_);
  Buffer p = allocator::malloc(1024);
  Buffer q = allocator::malloc(64);
  void* p_ptr = p.raw_ptr();
  allocator::free(p);
  allocator::free(q);
  Buffer p_again = allocator::malloc(1024);
  EXPECT_EQ(p_again.raw_ptr(), p_ptr);
  allocator::free(p_again);
  set_cache_limit(1024);  // q is now the least recently freed
  EXPECT_EQ(get_cache_memory(), 1024U);
  Buffer p_last = allocator::malloc(1024);
  EXPECT_EQ(p_last.raw_ptr(), p_ptr);
  allocator::free(p_last);
}

TEST_F(AllocatorTest, MemoryLimitFailsCleanlyAndRecovers) {
  Buffer held = allocator::malloc(4096);
  allocator::free(allocator::malloc(64));
  size_t in_use = get_active_memory();
  size_t previous = set_memory_limit(in_use + 1000);
  EXPECT_EQ(previous, memory_limit_);
  EXPECT_EQ(get_memory_limit(), in_use + 1000);
  EXPECT_EQ(get_cache_memory(), 64U);  // within the limit: kept

  try {
    Buffer buffer = allocator::malloc(1000);
    allocator::free(buffer);
    FAIL() << "malloc passed the memory limit";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory);
    EXPECT_EQ(std::string(e.what()),
              "[malloc] Unable to allocate 1000 bytes (1024 with rounding): the memory limit is " +
                  std::to_string(in_use + 1000) + " bytes and " + std::to_string(in_use) + " are in use.");
  }
  try {
    Buffer buffer = allocator::malloc(2048);
    allocator::free(buffer);
    FAIL() << "malloc passed the memory limit";
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()), "[malloc] Unable to allocate 2048 bytes: the memory limit is " +
                                         std::to_string(in_use + 1000) + " bytes and " + std::to_string(in_use) +
                                         " are in use.");
  }
  EXPECT_EQ(get_active_memory(), in_use);  // a failed allocation leaves no trace
  EXPECT_EQ(get_cache_memory(), 0U);       // but at the limit the cache goes back to the system
  Buffer fits = allocator::malloc(960);    // exactly the room left after rounding
  EXPECT_EQ(get_active_memory(), in_use + 960);
  allocator::free(fits);

  set_memory_limit(previous);
  Buffer after = allocator::malloc(1 << 20);
  ASSERT_NE(after.raw_ptr(), nullptr);
  std::memset(after.raw_ptr(), 1, after.size());
  allocator::free(after);
  allocator::free(held);
}

TEST_F(AllocatorTest, MemoryLimitReleasesCacheBeforeFailing) {
  allocator::free(allocator::malloc(65536));
  EXPECT_EQ(get_cache_memory(), 65536U);
  set_memory_limit(get_active_memory() + 65536 + 4096);  // the cache still fits
  EXPECT_EQ(get_cache_memory(), 65536U);

  Buffer buffer = allocator::malloc(32768);  // fits only once the cache is released
  EXPECT_EQ(get_cache_memory(), 0U);
  allocator::free(buffer);
  EXPECT_EQ(get_cache_memory(), 32768U);

  // Lowering the limit releases cached buffers that no longer fit.
  set_memory_limit(get_active_memory());
  EXPECT_EQ(get_cache_memory(), 0U);
}

TEST_F(AllocatorTest, ReportsRequestsTheSystemCannotServe) {
  set_memory_limit(static_cast<size_t>(-1));
  try {
    Buffer buffer = allocator::malloc(size_t{1} << 62);  // 4 EiB: more than any address space
    allocator::free(buffer);
    FAIL() << "a 4 EiB allocation succeeded";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("[malloc] Unable to allocate 4611686018427387904 bytes: the system is out "
                                         "of memory"),
              std::string::npos)
        << e.what();
  }
  try {
    Buffer buffer = allocator::malloc(static_cast<size_t>(-1));
    allocator::free(buffer);
    FAIL() << "a SIZE_MAX allocation succeeded";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("the largest supported allocation is"), std::string::npos) << e.what();
  }
  EXPECT_EQ(get_active_memory(), active_);
}

TEST_F(AllocatorTest, TracksPeakMemory) {
  reset_peak_memory();
  EXPECT_EQ(get_peak_memory(), active_);
  Buffer a = allocator::malloc(1 << 20);
  Buffer b = allocator::malloc(3 << 20);
  EXPECT_EQ(get_peak_memory(), active_ + (1 << 20) + (3 << 20));
  allocator::free(b);
  allocator::free(a);
  EXPECT_EQ(get_peak_memory(), active_ + (1 << 20) + (3 << 20));
  Buffer c = allocator::malloc(1 << 20);  // below the peak: the peak stays
  EXPECT_EQ(get_peak_memory(), active_ + (1 << 20) + (3 << 20));
  reset_peak_memory();
  EXPECT_EQ(get_peak_memory(), active_ + (1 << 20));
  allocator::free(c);
  EXPECT_EQ(get_peak_memory(), active_ + (1 << 20));
}

TEST_F(AllocatorTest, AlignsEveryBufferTo64Bytes) {
  for (size_t size : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{4097}, size_t{100000},
                      size_t{1} << 20, (size_t{3} << 20) + 5, (size_t{17} << 20) + 12345}) {
    Buffer buffer = allocator::malloc(size);
    ASSERT_NE(buffer.raw_ptr(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.raw_ptr()) % 64, 0U) << size;
    std::memset(buffer.raw_ptr(), 0xab, size);  // the whole request is usable
    allocator::free(buffer);
  }
}

TEST_F(AllocatorTest, ZeroSizeGivesAnEmptyBuffer) {
  Buffer buffer = allocator::malloc(0);
  EXPECT_EQ(buffer.raw_ptr(), nullptr);
  EXPECT_EQ(buffer.size(), 0U);
  EXPECT_EQ(get_active_memory(), active_);
  allocator::free(buffer);
  allocator::free(Buffer{});
  EXPECT_EQ(get_active_memory(), active_);
  EXPECT_EQ(get_cache_memory(), 0U);
}

TEST_F(AllocatorTest, ConcurrentAllocationAndFree) {
  // A small cache so that eviction runs alongside reuse.
  set_cache_limit(size_t{8} << 20);
  constexpr int thread_count = 8;
  constexpr int iterations = 4000;
  const std::vector<size_t> sizes = {1, 64, 100, 1000, 4096, 10000, 70000, size_t{1} << 20, (size_t{5} << 20) / 2};

  std::vector<std::thread> threads;
  threads.reserve(thread_count);
  std::vector<int> failures(thread_count, 0);
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      std::vector<Buffer> held;
      auto release = [&](size_t i) {
        Buffer buffer = held[i];
        const auto* bytes = static_cast<const unsigned char*>(buffer.raw_ptr());
        // Nobody else wrote into this buffer while this thread held it.
        if (bytes[0] != t || bytes[buffer.size() - 1] != t) {
          ++failures[static_cast<size_t>(t)];
        }
        held[i] = held.back();
        held.pop_back();
        allocator::free(buffer);
      };
      for (int i = 0; i < iterations; ++i) {
        unsigned choice = random() % 100;
        if (choice < 55 || held.empty()) {
          size_t size = sizes[random() % sizes.size()];
          if (size >= (size_t{1} << 20) && random() % 8 != 0) {
            size = 4096;  // keep large buffers rarer
          }
          Buffer buffer = allocator::malloc(size);
          auto* bytes = static_cast<unsigned char*>(buffer.raw_ptr());
          bytes[0] = static_cast<unsigned char>(t);  // both ends, so the sanitizers see every buffer's range used
          bytes[size - 1] = static_cast<unsigned char>(t);
          held.push_back(buffer);
        } else if (choice < 98) {
          release(random() % held.size());
        } else if (choice == 98) {
          static_cast<void>(get_active_memory() + get_peak_memory() + get_cache_memory() + get_memory_limit());
        } else {
          clear_cache();
        }
      }
      while (!held.empty()) {
        release(held.size() - 1);
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (int t = 0; t < thread_count; ++t) {
    EXPECT_EQ(failures[static_cast<size_t>(t)], 0) << "thread " << t;
  }
  EXPECT_EQ(get_active_memory(), active_);
  EXPECT_LE(get_cache_memory(), size_t{8} << 20);
  EXPECT_GE(get_peak_memory(), active_);
}

}  // namespace
}  // namespace nuvec
