#include "nuvec/cpu/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "nuvec/core/error.h"

// Design
//
// One process-wide pool of num_threads() - 1 workers; the calling thread is the last participant. A job is published
// through one 64-bit atomic word, `state_`: the job's epoch (32 bits), its chunk count (16 bits) and the index of the
// next unclaimed chunk (16 bits). Every participant, the caller included, claims chunks with a compare-exchange that
// also checks the epoch, so a worker that wakes late can never take a chunk of a newer job with the bounds of an older
// one, and a job completes even when some workers never wake (the caller claims their chunks). The job's other fields
// are plain data written before the epoch is published (release) and read after a successful claim (acquire); the
// caller returns only once every chunk is counted done, so they stay valid while any participant can read them.
//
// Dispatch cost: after a job, workers spin on `state_` for kSpinTime before sleeping on a condition variable, so
// back-to-back kernels dispatch through a few cache-line transfers and no system call. The caller takes the mutex and
// notifies only when a worker is asleep: it publishes the epoch and then reads `sleepers_`, a worker counts itself in
// `sleepers_` and then reads the epoch, all sequentially consistent, so at least one of them sees the other. The caller
// waits for the last chunk the same way (spin, then sleep; `caller_sleeping_` tells the last worker to notify).
//
// Concurrent callers: the pool runs one job at a time. A caller that finds it busy (try_lock on run_mutex_ fails) runs
// its loop inline instead of waiting: the running job already keeps every configured thread busy, so waiting would add
// latency without adding throughput, and running inline can never deadlock (say, a body that waits for another thread
// which itself calls parallel_for). Nested calls, from a worker or from the caller while it runs a job, run inline too.
//
// Lifetime: the pool is created on first use and leaked on purpose, so a parallel_for from another static's destructor,
// or from a thread still running during exit, touches valid memory. A function-local static destroyed at exit stops
// and joins the workers; parallel_for runs inline from then on.

namespace nuvec::cpu {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxThreads = 0xffff;  // the chunk count and chunk index fields of Pool::state_ are 16 bits wide
constexpr auto kSpinTime = std::chrono::microseconds(100);
constexpr std::size_t kCacheLine = 64;

// True on pool workers, and on a calling thread while the pool runs its job: parallel_for runs inline there.
thread_local bool tl_in_parallel = false;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#else
  std::this_thread::yield();
#endif
}

// Spins until pred() holds or kSpinTime passes; returns the last pred(). Yields every few microseconds, so that on an
// oversubscribed machine a spinning thread does not keep the thread it waits for off its core; not more often, as a
// yield is a system call (yielding every 64 pauses put 13% of a small model's decode in the kernel of a virtual
// machine, and decoded 5% fewer tokens per second).
template <class Pred>
bool spin_until(Pred pred) {
  const auto deadline = Clock::now() + kSpinTime;
  for (unsigned i = 1;; ++i) {
    if (pred()) {
      return true;
    }
    cpu_relax();
    if (i % 256 == 0) {
      if (Clock::now() >= deadline) {
        return pred();
      }
      std::this_thread::yield();
    }
  }
}

int default_num_threads() {
  if (const char* env = std::getenv("NUVEC_NUM_THREADS")) {
    const char* end = env + std::strlen(env);
    int value = 0;
    const auto [ptr, ec] = std::from_chars(env, end, value);
    if (ec == std::errc() && ptr == end && value >= 1) {
      return std::min(value, kMaxThreads);
    }
  }
  return std::min(available_cores(), kMaxThreads);
}

constexpr std::uint64_t pack_state(std::uint32_t epoch, std::uint32_t chunks, std::uint32_t next) {
  return (std::uint64_t{epoch} << 32) | (std::uint64_t{chunks} << 16) | next;
}
constexpr std::uint32_t epoch_of(std::uint64_t state) { return static_cast<std::uint32_t>(state >> 32); }
constexpr std::uint32_t chunks_of(std::uint64_t state) { return static_cast<std::uint32_t>((state >> 16) & 0xffff); }
constexpr std::uint32_t next_of(std::uint64_t state) { return static_cast<std::uint32_t>(state & 0xffff); }

void run_inline(std::size_t n, detail::RangeFn body) { body.call(body.object, 0, n); }

class Pool {
 public:
  Pool() : threads_(default_num_threads()) {}

  int num_threads() const { return threads_.load(std::memory_order_relaxed); }

  void set_num_threads(int n) {
    if (n < 1 || n > kMaxThreads) {
      throw_invalid("[set_num_threads] Expected a thread count in [1, " + std::to_string(kMaxThreads) + "]; got " +
                    std::to_string(n) + ".");
    }
    if (tl_in_parallel) {
      throw_invalid("[set_num_threads] Cannot change the thread count from inside a parallel_for body.");
    }
    const std::lock_guard lock(run_mutex_);
    if (n == threads_.load(std::memory_order_relaxed)) {
      return;
    }
    stop_workers();  // the next job starts n - 1 of them
    threads_.store(n, std::memory_order_relaxed);
  }

  void run(std::size_t n, std::size_t grain, detail::RangeFn body) {
    if (threads_.load(std::memory_order_relaxed) <= 1) {
      run_inline(n, body);
      return;
    }
    std::unique_lock run_lock(run_mutex_, std::try_to_lock);
    if (!run_lock.owns_lock()) {  // busy: see Concurrent callers above
      run_inline(n, body);
      return;
    }
    const std::size_t blocks = n / grain + (n % grain != 0 ? 1 : 0);
    const auto chunks = static_cast<std::uint32_t>(
        std::min(blocks, static_cast<std::size_t>(threads_.load(std::memory_order_relaxed))));
    if (chunks <= 1 || shut_down_.load(std::memory_order_relaxed)) {
      run_lock.unlock();
      run_inline(n, body);
      return;
    }
    if (!workers_started_) {
      start_workers();
    }

    body_ = body;
    n_ = n;
    grain_ = grain;
    base_blocks_ = blocks / chunks;
    extra_blocks_ = blocks % chunks;
    done_.store(0, std::memory_order_relaxed);
    failed_.store(false, std::memory_order_relaxed);
    const std::uint32_t epoch = epoch_of(state_.load(std::memory_order_relaxed)) + 1;
    state_.store(pack_state(epoch, chunks, 0), std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      { const std::lock_guard lock(mutex_); }  // a worker between its check and its wait holds mutex_
      work_cv_.notify_all();
    }

    tl_in_parallel = true;
    run_chunks(epoch);
    wait_done(chunks);
    tl_in_parallel = false;
    const std::exception_ptr error = std::exchange(error_, nullptr);
    run_lock.unlock();
    if (error) {
      std::rethrow_exception(error);
    }
  }

  // Stops and joins the workers at exit; parallel_for runs inline afterwards.
  void shutdown() {
    shut_down_.store(true, std::memory_order_relaxed);
    if (tl_in_parallel) {  // exit() called from a body: this thread may hold run_mutex_ or be a worker
      {
        const std::lock_guard lock(mutex_);
        stop_.store(true, std::memory_order_relaxed);
      }
      work_cv_.notify_all();
      for (std::thread& worker : workers_) {
        worker.detach();
      }
      workers_.clear();
      return;
    }
    const std::lock_guard lock(run_mutex_);
    stop_workers();
  }

 private:
  // With run_mutex_ held. A worker that cannot be created is not an error: the caller claims every chunk left over.
  void start_workers() {
    workers_started_ = true;
    const std::uint32_t seen = epoch_of(state_.load(std::memory_order_relaxed));
    const int count = threads_.load(std::memory_order_relaxed) - 1;
    workers_.reserve(static_cast<std::size_t>(count));
    try {
      for (int i = 0; i < count; ++i) {
        workers_.emplace_back([this, seen] { worker_loop(seen); });
      }
    } catch (const std::system_error&) {
    }
  }

  // With run_mutex_ held, so no job is in flight.
  void stop_workers() {
    {
      const std::lock_guard lock(mutex_);
      stop_.store(true, std::memory_order_relaxed);
    }
    work_cv_.notify_all();
    for (std::thread& worker : workers_) {
      worker.join();
    }
    workers_.clear();
    stop_.store(false, std::memory_order_relaxed);
    workers_started_ = false;
  }

  void worker_loop(std::uint32_t seen) {
    tl_in_parallel = true;
    const auto has_news = [&] {
      return stop_.load(std::memory_order_relaxed) || epoch_of(state_.load(std::memory_order_seq_cst)) != seen;
    };
    for (;;) {
      if (!spin_until(has_news)) {
        std::unique_lock lock(mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        work_cv_.wait(lock, has_news);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
      if (stop_.load(std::memory_order_relaxed)) {
        return;
      }
      seen = epoch_of(state_.load(std::memory_order_acquire));
      run_chunks(seen);
    }
  }

  // Claims and runs chunks of job `epoch` until none is left.
  void run_chunks(std::uint32_t epoch) {
    std::uint64_t state = state_.load(std::memory_order_acquire);
    for (;;) {
      if (epoch_of(state) != epoch || next_of(state) >= chunks_of(state)) {
        return;
      }
      if (!state_.compare_exchange_weak(state, state + 1, std::memory_order_acquire, std::memory_order_acquire)) {
        continue;
      }
      const std::uint32_t chunks = chunks_of(state);
      run_chunk(next_of(state), chunks);
      if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == chunks) {
        if (caller_sleeping_.load(std::memory_order_seq_cst)) {
          { const std::lock_guard lock(mutex_); }  // the caller between its check and its wait holds mutex_
          done_cv_.notify_one();
        }
        return;  // the job is over; its fields may already belong to the next one
      }
      state = state_.load(std::memory_order_acquire);
    }
  }

  // Chunk i covers blocks of `grain_` items; the first extra_blocks_ chunks take one block more, the last one ends at n.
  void run_chunk(std::uint32_t index, std::uint32_t chunks) noexcept {
    if (failed_.load(std::memory_order_relaxed)) {
      return;  // skipped: the job already failed
    }
    const std::size_t first_block = index * base_blocks_ + std::min<std::size_t>(index, extra_blocks_);
    const std::size_t begin = first_block * grain_;
    const std::size_t end =
        index + 1 == chunks ? n_ : (first_block + base_blocks_ + (index < extra_blocks_ ? 1 : 0)) * grain_;
    try {
      body_.call(body_.object, begin, end);
    } catch (...) {
      if (!failed_.exchange(true, std::memory_order_relaxed)) {
        error_ = std::current_exception();  // published to the caller by the done_ increment that follows
      }
    }
  }

  void wait_done(std::uint32_t chunks) {
    const auto finished = [&] { return done_.load(std::memory_order_seq_cst) == chunks; };
    if (spin_until(finished)) {
      return;
    }
    std::unique_lock lock(mutex_);
    caller_sleeping_.store(true, std::memory_order_seq_cst);
    done_cv_.wait(lock, finished);
    caller_sleeping_.store(false, std::memory_order_relaxed);
  }

  // Configuration; run_mutex_ is held by the thread whose job the pool runs and by whoever changes the workers.
  std::mutex run_mutex_;
  std::atomic<int> threads_;  // written with run_mutex_ held
  std::atomic<bool> shut_down_{false};
  std::vector<std::thread> workers_;  // run_mutex_
  bool workers_started_ = false;      // run_mutex_

  // The current job: written by its caller before it publishes the epoch, read by participants after a claim.
  alignas(kCacheLine) detail::RangeFn body_{};
  std::size_t n_ = 0;
  std::size_t grain_ = 1;
  std::size_t base_blocks_ = 0;
  std::size_t extra_blocks_ = 0;
  std::exception_ptr error_;  // written by the participant that sets failed_
  std::atomic<bool> failed_{false};

  alignas(kCacheLine) std::atomic<std::uint64_t> state_{0};  // epoch | chunk count | next chunk to claim
  alignas(kCacheLine) std::atomic<std::uint32_t> done_{0};   // chunks of the current job finished

  // Sleeping and waking.
  alignas(kCacheLine) std::mutex mutex_;
  std::condition_variable work_cv_;  // workers wait for a new epoch or stop_
  std::condition_variable done_cv_;  // the caller waits for done_ == chunks
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};  // written with mutex_ held
};

Pool& pool() {
  static Pool* const instance = new Pool();  // leaked on purpose: see Lifetime above
  static const struct Joiner {
    ~Joiner() { instance->shutdown(); }
  } joiner;
  return *instance;
}

}  // namespace

void detail::parallel_for_impl(std::size_t n, std::size_t grain, RangeFn body) {
  if (tl_in_parallel) {  // nested: the pool is already busy with this thread's job
    run_inline(n, body);
    return;
  }
  pool().run(n, std::max<std::size_t>(grain, 1), body);
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    return std::max(1, CPU_COUNT(&set));
  }
  const unsigned hardware = std::thread::hardware_concurrency();  // 0 when unknown
  return hardware == 0 ? 1 : static_cast<int>(std::min<unsigned>(hardware, 1U << 30));
}

int num_threads() { return pool().num_threads(); }

void set_num_threads(int n) { pool().set_num_threads(n); }

}  // namespace nuvec::cpu
