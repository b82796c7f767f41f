// compile_bench: nuvec's side of run_compile.py. Times element-wise workloads over 2^24 float32 elements eagerly
// and compiled (fused kernels), measures the copy bandwidth that bounds them, the first-call compile time (with a
// fresh kernel cache), the first call of a new compiled function whose kernel is already built, and the per-call
// overhead of a cached compiled function. One line per result:
//   row NAME eager_ms=T compiled_ms=T bytes=B
//   bandwidth gbs=G
//   first_call compile_ms=T retrace_ms=T
//   overhead eager_us=T compiled_us=T

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#ifdef __AVX512F__
#include <immintrin.h>
#endif

#include "nuvec/nuvec.h"

using namespace nuvec;
using V = std::vector<array>;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median wall time of f (evaluating its outputs) over reps after two warm-up calls. The allocator's cache is emptied
/// first: the buffers an earlier workload left there slowed the next one's streaming stores by up to 1.7x (a compiled
/// layer norm timed after the eager plain-op one), so every timing starts from the same state.
double time_ms(const std::function<V()>& f, int reps) {
  clear_cache();
  for (int i = 0; i < 2; ++i) {
    eval(f());
  }
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    eval(f());
    times.push_back(ms_since(t0));
  }
  return median(times);
}

/// Copy bandwidth (bytes read plus written per second) with every core, over arrays far larger than the caches:
/// the better of memcpy and a copy whose stores bypass the caches (no read for ownership), as STREAM measures.
double copy_bandwidth_gbs() {
  const size_t n = size_t{1} << 26;  // 256 MiB per array
  std::vector<float> src(n, 1.0F);
  std::vector<float> dst(n, 0.0F);
  const unsigned threads = std::max(1U, std::thread::hardware_concurrency());
  auto copy_part = [&](size_t begin, size_t end, bool streaming) {
#ifdef __AVX512F__
    if (streaming) {
      // Unaligned ends by memcpy; the aligned middle with streaming stores.
      while (begin < end && (reinterpret_cast<uintptr_t>(dst.data() + begin) & 63) != 0) {
        dst[begin] = src[begin];
        ++begin;
      }
      for (; begin + 16 <= end; begin += 16) {
        _mm512_stream_ps(dst.data() + begin, _mm512_loadu_ps(src.data() + begin));
      }
      _mm_sfence();
    }
#endif
    std::memcpy(dst.data() + begin, src.data() + begin, (end - begin) * sizeof(float));
  };
  double best = 0.0;
  for (bool streaming : {false, true}) {
    std::vector<double> times;
    for (int rep = 0; rep < 7; ++rep) {
      auto t0 = Clock::now();
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] { copy_part(n * t / threads, n * (t + 1) / threads, streaming); });
      }
      for (auto& th : pool) th.join();
      times.push_back(ms_since(t0));
    }
    best = std::max(best, 2.0 * static_cast<double>(n * sizeof(float)) / (median(times) * 1e6));
  }
  return best;
}

array gelu(const array& x) { return 0.5F * x * (1.0F + tanh(0.7978845608F * (x + 0.044715F * x * x * x))); }
array silu(const array& x) { return x * sigmoid(x); }
array layer_norm(const array& x, const array& w, const array& b) {
  auto mu = mean(x, -1, true);
  auto xc = x - mu;
  auto var = mean(xc * xc, -1, true);
  return xc * rsqrt(var + 1e-5F) * w + b;
}
V adam(const V& s) {  // p, g, m, v
  auto m = 0.9F * s[2] + 0.1F * s[1];
  auto v = 0.999F * s[3] + 0.001F * square(s[1]);
  auto p = s[0] - 1e-3F * m / (sqrt(v) + 1e-8F);
  return {p, m, v};
}

}  // namespace

int main() {
  const int n = 1 << 24;
  auto key = random::key(0);
  auto x = random::uniform(-2.0F, 2.0F, {n}, float32, key);
  auto x2 = reshape(x, {4096, 4096});
  auto w = random::uniform(-1.0F, 1.0F, {4096}, float32, random::key(1));
  auto b = random::uniform(-1.0F, 1.0F, {4096}, float32, random::key(2));
  V state{x, random::uniform(-1.0F, 1.0F, {n}, float32, random::key(3)),
          random::uniform(-1.0F, 1.0F, {n}, float32, random::key(4)),
          random::uniform(0.0F, 1.0F, {n}, float32, random::key(5))};
  eval(x, x2, w, b);
  eval(state);

  std::printf("bandwidth gbs=%.2f\n", copy_bandwidth_gbs());
  const double f32 = 4.0 * n;
  struct Row {
    const char* name;
    std::function<V(const V&)> f;
    V inputs;
    double bytes;
  };
  const Row rows[] = {
      {"gelu_tanh", [](const V& a) { return V{gelu(a[0])}; }, {x}, 2 * f32},
      {"silu", [](const V& a) { return V{silu(a[0])}; }, {x}, 2 * f32},
      {"layer_norm", [](const V& a) { return V{layer_norm(a[0], a[1], a[2])}; }, {x2, w, b}, 2 * f32},
      {"layer_norm_fast", [](const V& a) { return V{fast::layer_norm(a[0], a[1], a[2], 1e-5F)}; }, {x2, w, b}, 2 * f32},
      {"adam", adam, state, 7 * f32},
  };
  for (const auto& row : rows) {
    auto compiled = compile(row.f);
    const double eager_ms = time_ms([&] { return row.f(row.inputs); }, 9);
    const double compiled_ms = time_ms([&] { return compiled(row.inputs); }, 9);
    std::printf("row %s eager_ms=%.3f compiled_ms=%.3f bytes=%.0f\n", row.name, eager_ms, compiled_ms, row.bytes);
  }

  // First call with an empty kernel cache (the compiler runs), then a new compiled function of the same graph (traced
  // again, its kernel already built and loaded).
  const auto cache = std::filesystem::temp_directory_path() / ("nuvec-compile-bench-" + std::to_string(::getpid()));
  ::setenv("NUVEC_KERNEL_CACHE", cache.c_str(), 1);
  auto small = random::uniform({1024});
  eval(small);
  auto fresh = [] { return compile([](const V& a) { return V{gelu(a[0]) * 1.0009765625F}; }); };
  auto t0 = Clock::now();
  eval(fresh()({small}));
  const double compile_ms = ms_since(t0);
  t0 = Clock::now();
  eval(fresh()({small}));
  const double retrace_ms = ms_since(t0);
  std::filesystem::remove_all(cache);
  std::printf("first_call compile_ms=%.1f retrace_ms=%.2f\n", compile_ms, retrace_ms);

  // Per-call overhead: a tiny input, so the time is dispatch, graph replay and evaluation.
  auto tiny = array({1.0F, 2.0F, 3.0F, 4.0F});
  auto cached = compile([](const V& a) { return V{gelu(a[0])}; });
  const int calls = 2000;
  auto per_call_us = [&](const std::function<V()>& f) {
    for (int i = 0; i < 100; ++i) eval(f());
    std::vector<double> times;
    for (int rep = 0; rep < 5; ++rep) {
      auto start = Clock::now();
      for (int i = 0; i < calls; ++i) eval(f());
      times.push_back(ms_since(start) * 1000.0 / calls);
    }
    return median(times);
  };
  const double eager_us = per_call_us([&] { return V{gelu(tiny)}; });
  const double compiled_us = per_call_us([&] { return cached({tiny}); });
  std::printf("overhead eager_us=%.2f compiled_us=%.2f\n", eager_us, compiled_us);
  return 0;
}
