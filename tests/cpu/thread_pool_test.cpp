#include "nuvec/cpu/thread_pool.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "nuvec/core/error.h"

namespace nuvec::cpu {
namespace {

using Clock = std::chrono::steady_clock;

struct Chunk {
  std::size_t begin;
  std::size_t end;
  std::thread::id thread;
};

// Runs parallel_for over [0, n), checks every index is visited exactly once and returns the chunks sorted by begin.
std::vector<Chunk> run_and_check_coverage(std::size_t n, std::size_t grain) {
  std::vector<std::atomic<int>> hits(n);
  std::mutex mutex;
  std::vector<Chunk> chunks;
  parallel_for(n, grain, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      hits[i].fetch_add(1, std::memory_order_relaxed);
    }
    const std::lock_guard lock(mutex);
    chunks.push_back({begin, end, std::this_thread::get_id()});
  });
  for (std::size_t i = 0; i < n; ++i) {
    if (hits[i].load() != 1) {
      ADD_FAILURE() << "index " << i << " visited " << hits[i].load() << " times (n=" << n << ", grain=" << grain << ")";
      break;
    }
  }
  std::sort(chunks.begin(), chunks.end(), [](const Chunk& a, const Chunk& b) { return a.begin < b.begin; });
  return chunks;
}

// Spins until `entered` reaches `count` (every participant inside the body at once), giving up after 10 s.
bool wait_for_all(std::atomic<int>& entered, int count) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (entered.load() < count) {
    if (Clock::now() > deadline) {
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

class ThreadPoolTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_threads_ = num_threads(); }
  void TearDown() override { set_num_threads(saved_threads_); }

 private:
  int saved_threads_ = 1;
};

TEST_F(ThreadPoolTest, DefaultIsAtLeastOneThread) { EXPECT_GE(num_threads(), 1); }

// The default thread count follows the affinity mask (taskset, mpirun's binding), not the machine's core count.
TEST_F(ThreadPoolTest, AvailableCoresFollowTheAffinityMask) {
  cpu_set_t before;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(before), &before), 0);
  EXPECT_EQ(available_cores(), CPU_COUNT(&before));
  int first = 0;
  while (!CPU_ISSET(first, &before)) {
    ++first;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(available_cores(), 1);
  ASSERT_EQ(::sched_setaffinity(0, sizeof(before), &before), 0);
}

TEST_F(ThreadPoolTest, SetNumThreadsRoundTrips) {
  set_num_threads(3);
  EXPECT_EQ(num_threads(), 3);
  set_num_threads(1);
  EXPECT_EQ(num_threads(), 1);
}

// Every index exactly once; chunk count min(threads, ceil(n / grain)); contiguous chunks, each a multiple of grain
// but the last, sizes differing by at most one grain (the split the header promises).
TEST_F(ThreadPoolTest, CoversEveryIndexOnceWithEvenChunks) {
  const std::vector<std::size_t> sizes = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 100, 1000, 1023, 4096, 10007};
  const std::vector<std::size_t> grains = {0, 1, 2, 3, 4, 7, 16, 100, 1000, 5000, std::numeric_limits<std::size_t>::max()};
  for (const int threads : {1, 2, 3, 4, 7}) {
    set_num_threads(threads);
    for (const std::size_t n : sizes) {
      for (const std::size_t grain : grains) {
        SCOPED_TRACE("threads=" + std::to_string(threads) + " n=" + std::to_string(n) + " grain=" + std::to_string(grain));
        const std::vector<Chunk> chunks = run_and_check_coverage(n, grain);
        if (n == 0) {
          EXPECT_TRUE(chunks.empty());
          continue;
        }
        const std::size_t g = std::max<std::size_t>(grain, 1);
        const std::size_t blocks = n / g + (n % g != 0);
        ASSERT_EQ(chunks.size(), std::min(blocks, static_cast<std::size_t>(threads)));
        EXPECT_EQ(chunks.front().begin, 0u);
        EXPECT_EQ(chunks.back().end, n);
        std::size_t smallest = std::numeric_limits<std::size_t>::max();
        std::size_t largest = 0;
        for (std::size_t i = 0; i < chunks.size(); ++i) {
          const std::size_t size = chunks[i].end - chunks[i].begin;
          EXPECT_GT(size, 0u);
          if (i + 1 < chunks.size()) {
            EXPECT_EQ(chunks[i].end, chunks[i + 1].begin);
            EXPECT_EQ(size % g, 0u) << "chunk " << i;
            smallest = std::min(smallest, size);
            largest = std::max(largest, size);
          }
        }
        if (chunks.size() > 1) {
          EXPECT_LE(largest - smallest, g);
          EXPECT_LE(chunks.back().end - chunks.back().begin, largest);
        }
      }
    }
  }
}

// Expected bounds worked out by hand: 101 blocks of 10 over 4 chunks gives 26, 25, 25, 25 blocks, the last one short.
TEST_F(ThreadPoolTest, SplitsIntoOneChunkPerThread) {
  set_num_threads(4);
  const std::vector<Chunk> chunks = run_and_check_coverage(1001, 10);
  ASSERT_EQ(chunks.size(), 4u);
  EXPECT_EQ(chunks[0].end, 260u);
  EXPECT_EQ(chunks[1].end, 510u);
  EXPECT_EQ(chunks[2].end, 760u);
  EXPECT_EQ(chunks[3].end, 1001u);
}

TEST_F(ThreadPoolTest, SmallWorkRunsInlineAsOneCall) {
  set_num_threads(4);
  const std::vector<Chunk> chunks = run_and_check_coverage(100, 100);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].begin, 0u);
  EXPECT_EQ(chunks[0].end, 100u);
  EXPECT_EQ(chunks[0].thread, std::this_thread::get_id());
}

TEST_F(ThreadPoolTest, OneThreadRunsInline) {
  set_num_threads(1);
  const std::vector<Chunk> chunks = run_and_check_coverage(100000, 1);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].begin, 0u);
  EXPECT_EQ(chunks[0].end, 100000u);
  EXPECT_EQ(chunks[0].thread, std::this_thread::get_id());
}

// Each chunk waits until all four are inside the body at once, so they must run on four different threads.
TEST_F(ThreadPoolTest, UsesTheWorkers) {
  set_num_threads(4);
  std::atomic<int> entered{0};
  std::atomic<int> timed_out{0};
  std::mutex mutex;
  std::set<std::thread::id> threads;
  parallel_for(4, 1, [&](std::size_t, std::size_t) {
    {
      const std::lock_guard lock(mutex);
      threads.insert(std::this_thread::get_id());
    }
    entered.fetch_add(1);
    if (!wait_for_all(entered, 4)) {
      timed_out.fetch_add(1);
    }
  });
  EXPECT_EQ(timed_out.load(), 0);
  EXPECT_EQ(threads.size(), 4u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 1u);
}

TEST_F(ThreadPoolTest, NestedCallsRunInline) {
  set_num_threads(4);
  constexpr std::size_t outer = 64;
  constexpr std::size_t inner = 50;
  std::vector<std::atomic<int>> hits(outer * inner);
  std::atomic<int> inner_calls{0};
  std::atomic<int> wrong_inner_ranges{0};
  parallel_for(outer, 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      parallel_for(inner, 1, [&](std::size_t b, std::size_t e) {
        inner_calls.fetch_add(1);
        if (b != 0 || e != inner) {
          wrong_inner_ranges.fetch_add(1);
        }
        for (std::size_t j = b; j < e; ++j) {
          hits[i * inner + j].fetch_add(1);
        }
      });
    }
  });
  EXPECT_EQ(inner_calls.load(), static_cast<int>(outer));
  EXPECT_EQ(wrong_inner_ranges.load(), 0);
  for (std::size_t k = 0; k < hits.size(); ++k) {
    ASSERT_EQ(hits[k].load(), 1) << "index " << k;
  }
}

// Both chunks are inside the body at once, so one of them runs on a worker; its nested calls (three deep) finish.
TEST_F(ThreadPoolTest, NestedCallFromWorkerDoesNotDeadlock) {
  set_num_threads(2);
  std::atomic<int> entered{0};
  std::atomic<int> leaves{0};
  std::atomic<int> timed_out{0};
  std::mutex mutex;
  std::set<std::thread::id> threads;
  parallel_for(2, 1, [&](std::size_t, std::size_t) {
    {
      const std::lock_guard lock(mutex);
      threads.insert(std::this_thread::get_id());
    }
    entered.fetch_add(1);
    if (!wait_for_all(entered, 2)) {
      timed_out.fetch_add(1);
    }
    parallel_for(10, 1, [&](std::size_t b1, std::size_t e1) {
      for (std::size_t i = b1; i < e1; ++i) {
        parallel_for(10, 1, [&](std::size_t b2, std::size_t e2) { leaves.fetch_add(static_cast<int>(e2 - b2)); });
      }
    });
  });
  EXPECT_EQ(timed_out.load(), 0);
  EXPECT_EQ(threads.size(), 2u);
  EXPECT_EQ(leaves.load(), 2 * 10 * 10);
}

TEST_F(ThreadPoolTest, RethrowsTheBodysException) {
  set_num_threads(4);
  try {
    parallel_for(1000, 1, [](std::size_t begin, std::size_t end) {
      if (begin <= 500 && 500 < end) {
        throw std::runtime_error("chunk with 500 failed");
      }
    });
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "chunk with 500 failed");
  }
  run_and_check_coverage(1000, 1);  // the pool still works
}

TEST_F(ThreadPoolTest, RethrowsOneExceptionWhenEveryChunkThrows) {
  set_num_threads(4);
  for (int repeat = 0; repeat < 50; ++repeat) {
    try {
      parallel_for(4000, 1, [](std::size_t begin, std::size_t) {
        throw_error(ErrorKind::internal, "chunk at " + std::to_string(begin));
      });
      FAIL() << "expected an exception";
    } catch (const error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::internal);
      EXPECT_EQ(std::string(e.what()).rfind("chunk at ", 0), 0u) << e.what();
    }
  }
  run_and_check_coverage(4000, 1);
}

// Both chunks are inside the body at once, so the throwing one (the one not on the caller) runs on a worker.
TEST_F(ThreadPoolTest, RethrowsAWorkersExceptionOnTheCaller) {
  set_num_threads(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> entered{0};
  try {
    parallel_for(2, 1, [&](std::size_t, std::size_t) {
      entered.fetch_add(1);
      wait_for_all(entered, 2);
      if (std::this_thread::get_id() != caller) {
        throw std::out_of_range("thrown on a worker");
      }
    });
    FAIL() << "expected an exception";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "thrown on a worker");
  }
  EXPECT_EQ(entered.load(), 2);
}

TEST_F(ThreadPoolTest, RethrowsFromInlineRuns) {
  set_num_threads(1);
  EXPECT_THROW(parallel_for(10, 1, [](std::size_t, std::size_t) { throw std::logic_error("inline"); }),
               std::logic_error);
  set_num_threads(4);
  EXPECT_THROW(parallel_for(10, 10, [](std::size_t, std::size_t) { throw std::logic_error("small"); }),
               std::logic_error);
}

TEST_F(ThreadPoolTest, SetNumThreadsRejectsBadCounts) {
  for (const int bad : {0, -3, 70000}) {
    try {
      set_num_threads(bad);
      FAIL() << "expected an error for " << bad;
    } catch (const error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_EQ(std::string(e.what()),
                "[set_num_threads] Expected a thread count in [1, 65535]; got " + std::to_string(bad) + ".");
    }
  }
}

TEST_F(ThreadPoolTest, SetNumThreadsFromInsideABodyThrows) {
  set_num_threads(2);
  std::atomic<int> rejected{0};
  std::atomic<int> entered{0};
  parallel_for(2, 1, [&](std::size_t, std::size_t) {
    entered.fetch_add(1);
    wait_for_all(entered, 2);
    try {
      set_num_threads(3);
    } catch (const error& e) {
      if (std::string(e.what()) == "[set_num_threads] Cannot change the thread count from inside a parallel_for body.") {
        rejected.fetch_add(1);
      }
    }
  });
  EXPECT_EQ(rejected.load(), 2);
  EXPECT_EQ(num_threads(), 2);
}

// Eight user threads share the pool: whichever finds it busy runs inline, and every call still covers its range.
TEST_F(ThreadPoolTest, ConcurrentCallersAreCorrect) {
  set_num_threads(4);
  constexpr int kUsers = 8;
  constexpr int kCalls = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> users;
  for (int user = 0; user < kUsers; ++user) {
    users.emplace_back([&, user] {
      for (int call = 0; call < kCalls; ++call) {
        const auto n = static_cast<std::size_t>(1000 + 13 * user + call);
        std::vector<std::atomic<int>> hits(n);
        parallel_for(n, 7, [&](std::size_t begin, std::size_t end) {
          for (std::size_t i = begin; i < end; ++i) {
            hits[i].fetch_add(1, std::memory_order_relaxed);
          }
        });
        for (std::size_t i = 0; i < n; ++i) {
          if (hits[i].load() != 1) {
            failures.fetch_add(1);
            break;
          }
        }
      }
    });
  }
  for (std::thread& user : users) {
    user.join();
  }
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(ThreadPoolTest, SetNumThreadsWhileOthersRun) {
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> users;
  for (int user = 0; user < 3; ++user) {
    users.emplace_back([&] {
      while (!stop.load()) {
        std::vector<std::atomic<int>> hits(5000);
        parallel_for(hits.size(), 16, [&](std::size_t begin, std::size_t end) {
          for (std::size_t i = begin; i < end; ++i) {
            hits[i].fetch_add(1, std::memory_order_relaxed);
          }
        });
        for (const std::atomic<int>& hit : hits) {
          if (hit.load() != 1) {
            failures.fetch_add(1);
            break;
          }
        }
      }
    });
  }
  for (int round = 0; round < 40; ++round) {
    set_num_threads(1 + round % 5);
  }
  stop.store(true);
  for (std::thread& user : users) {
    user.join();
  }
  EXPECT_EQ(failures.load(), 0);
}

// A const callable and a std::function go through the same template.
TEST_F(ThreadPoolTest, AcceptsConstCallablesAndStdFunction) {
  set_num_threads(2);
  std::atomic<std::size_t> total{0};
  const auto add = [&](std::size_t begin, std::size_t end) { total.fetch_add(end - begin); };
  parallel_for(1000, 1, add);
  const std::function<void(std::size_t, std::size_t)> function = add;
  parallel_for(1000, 1, function);
  EXPECT_EQ(total.load(), 2000u);
}

// Death tests in the "threadsafe" style re-run this binary, so the child starts with no pool: it reads the
// environment variable afresh, and the exit code reports whether the workers were joined at exit without hanging.
class ThreadPoolExitTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

void check_and_exit(int expected_threads) {
  if (num_threads() != expected_threads) {
    std::_Exit(1);
  }
  std::atomic<std::size_t> total{0};
  parallel_for(1000, 1, [&](std::size_t begin, std::size_t end) { total.fetch_add(end - begin); });
  std::exit(total.load() == 1000 ? 0 : 2);
}

TEST_F(ThreadPoolExitTest, EnvironmentVariableSetsTheDefault) {
  EXPECT_EXIT(
      {
        setenv("NUVEC_NUM_THREADS", "3", 1);
        check_and_exit(3);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(ThreadPoolExitTest, InvalidEnvironmentVariableIsIgnored) {
  const unsigned hardware = std::thread::hardware_concurrency();
  const int expected = hardware == 0 ? 1 : static_cast<int>(hardware);
  for (const char* value : {"abc", "0", "-2", "4x", ""}) {
    SCOPED_TRACE(value);
    EXPECT_EXIT(
        {
          setenv("NUVEC_NUM_THREADS", value, 1);
          check_and_exit(expected);
        },
        ::testing::ExitedWithCode(0), "");
  }
}

TEST_F(ThreadPoolExitTest, ExitFromInsideABodyDoesNotHang) {
  EXPECT_EXIT(
      {
        set_num_threads(2);
        std::atomic<int> entered{0};
        parallel_for(2, 1, [&](std::size_t begin, std::size_t) {
          entered.fetch_add(1);
          wait_for_all(entered, 2);
          if (begin == 0) {
            std::exit(0);
          }
        });
        std::_Exit(1);
      },
      ::testing::ExitedWithCode(0), "");
}

// Not a correctness test: prints the cost of one parallel_for. Run with --gtest_also_run_disabled_tests.
TEST_F(ThreadPoolTest, DISABLED_DispatchOverhead) {
  const auto time_per_call = [](int calls, std::size_t n, std::size_t grain, auto&& body, bool idle_before) {
    double total_ns = 0;
    for (int i = 0; i < calls; ++i) {
      if (idle_before) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // longer than the spin: workers are asleep
      }
      const auto start = Clock::now();
      parallel_for(n, grain, body);
      total_ns += std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    }
    return total_ns / calls;
  };
  const auto empty = [](std::size_t, std::size_t) {};
  constexpr std::size_t kElements = 300000;
  std::vector<float> a(kElements, 1.0F);
  std::vector<float> b(kElements, 2.0F);
  std::vector<float> c(kElements);
  const auto add = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      c[i] = a[i] + b[i];
    }
  };
  const auto sqrt_exp = [&](std::size_t begin, std::size_t end) {  // compute-bound: should scale with threads
    for (std::size_t i = begin; i < end; ++i) {
      c[i] = std::sqrt(a[i]) * std::exp(b[i] * static_cast<float>(i % 7));
    }
  };
  for (const int threads : {1, 2, std::max(2, static_cast<int>(std::thread::hardware_concurrency()))}) {
    set_num_threads(threads);
    time_per_call(1000, 2, 1, empty, false);  // warm up: workers started
    std::printf("threads=%d  empty body: back-to-back %.0f ns/call, workers asleep %.0f ns/call;  "
                "on %zu floats: add %.1f us/call, sqrt*exp %.1f us/call\n",
                threads, time_per_call(200000, 2, 1, empty, false), time_per_call(300, 2, 1, empty, true), kElements,
                time_per_call(2000, kElements, 4096, add, false) / 1000,
                time_per_call(500, kElements, 4096, sqrt_exp, false) / 1000);
  }
}

}  // namespace
}  // namespace nuvec::cpu
