// compile_bench: nuvec's side of run_compile.py. Times element-wise workloads over 2^24 float32 elements eagerly
// and compiled (fused kernels), each compiled one against its bandwidth floor, then the first-call compile time (with
// a fresh kernel cache), the first call of a new compiled function whose kernel is already built, and the per-call
// overhead of a cached compiled function. One line per result:
//   row NAME eager_ms=T compiled_ms=T floor_ms=T floor_min_ms=T floor_max_ms=T bytes=B
//   first_call compile_ms=T retrace_ms=T
//   overhead eager_us=T compiled_us=T
//
// The floor of a row is a measurement, not a constant: a kernel with the row's traffic and nothing else (it reads
// the row's large inputs once and writes as many outputs of the same size once, with streaming stores, into nuvec
// buffers, split over nuvec's pool with the compiled kernels' grain), timed turn about with the eager and compiled
// functions (medians of 11 each; min and max of the floor's reps printed as its spread). Why: the copy measured once
// before the rows (256 MiB std::vectors, std::threads, the better of memcpy and streaming stores) gave 36-66 GB/s
// minutes apart, and so did this floor: the VM's bandwidth itself moves (the same 2-thread streaming copy of 64 MiB
// took 3.5 ms at 21:10:09 and 2.6 ms at 21:10:36, 38 and 51 GB/s, medians of 11), so a floor taken at another moment
// judged the rows by another machine. Not the causes: L3 keeping part of the input (a copy right after another
// was 2-3% faster than one after reading 64 MiB else), compute before the copy (none), the page size (a copy over
// 4 KiB pages, as the old std::vectors had, ran at 0.64-0.85x the speed of one over huge pages, but steadily so;
// nuvec's buffers are advised huge). Each loaded vector is streamed straight out; memcpy (plain stores, a read for
// ownership per line) was 1.5x slower.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "nuvec/cpu/strided.h"
#include "nuvec/cpu/thread_pool.h"
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

/// The floor kernel's stores: past the caches where the CPU has streaming stores, as the compiled kernels' are.
void store_block(float* const* outs, size_t writes, size_t i, const float* value) {
#if defined(__AVX512F__)
  const __m512 v = _mm512_loadu_ps(value);
  for (size_t o = 0; o < writes; ++o) _mm512_stream_ps(outs[o] + i, v);
#elif defined(__AVX__)
  const __m256 lo = _mm256_loadu_ps(value);
  const __m256 hi = _mm256_loadu_ps(value + 8);
  for (size_t o = 0; o < writes; ++o) {
    _mm256_stream_ps(outs[o] + i, lo);
    _mm256_stream_ps(outs[o] + i + 8, hi);
  }
#else
  for (size_t o = 0; o < writes; ++o) std::memcpy(outs[o] + i, value, 16 * sizeof(float));
#endif
}

/// The ideal kernel of a row's memory traffic: reads each of `ins` once and writes each of `outs` once (their sum),
/// split over nuvec's pool as a compiled kernel is. Outputs are 64-byte aligned (nuvec's buffers), so a chunk's
/// unaligned ends go element by element and the rest in aligned blocks of 16.
void floor_kernel(const std::vector<const float*>& ins, const std::vector<float*>& outs, size_t n) {
  cpu::parallel_for(n, cpu::elementwise_grain, [&](size_t begin, size_t end) {
    auto value_at = [&](size_t i) {
      float v = 0.0F;
      for (const float* in : ins) v += in[i];
      return v;
    };
    size_t i = begin;
    for (; i < end && i % 16 != 0; ++i) {
      for (float* out : outs) out[i] = value_at(i);
    }
    alignas(64) float block[16];
    for (; i + 16 <= end; i += 16) {
      for (size_t j = 0; j < 16; ++j) block[j] = ins[0][i + j];
      for (size_t r = 1; r < ins.size(); ++r) {
        for (size_t j = 0; j < 16; ++j) block[j] += ins[r][i + j];
      }
      store_block(outs.data(), outs.size(), i, block);
    }
    for (; i < end; ++i) {
      for (float* out : outs) out[i] = value_at(i);
    }
#if defined(__AVX__)
    _mm_sfence();
#endif
  });
}

struct Timing {
  double eager_ms;
  double compiled_ms;
  double floor_ms;
  double floor_min_ms;
  double floor_max_ms;
};

/// The eager and compiled functions and the floor kernel of the same traffic, timed turn about (each rep runs the
/// three, which goes first rotating), so that all see the same machine: on this VM the copy bandwidth drifts by up to
/// 2x within minutes, and a floor measured once at the start judged every row by that moment's bandwidth. Eager was
/// timed in a block of its own before the compiled reps: `power(x, array(3.0f))`, which compile leaves to the eager
/// kernel, then read 0.64-0.83x "compiled against eager" in every run, the same kernel timed at two moments. The
/// allocator's cache is emptied first: the buffers an earlier workload left there slowed the next one's streaming
/// stores by up to 1.7x, so every row starts from the same state. Medians of reps after two warm-ups each.
Timing time_turn_about(const std::function<V()>& eager, const std::function<V()>& compiled,
                       const std::function<void()>& floor, int reps) {
  clear_cache();
  for (int i = 0; i < 2; ++i) {
    eval(eager());
    eval(compiled());
    floor();
  }
  std::vector<double> times[3];
  auto run = [&](int which) {
    auto t0 = Clock::now();
    if (which == 0) {
      eval(eager());
    } else if (which == 1) {
      eval(compiled());
    } else {
      floor();
    }
    times[which].push_back(ms_since(t0));
  };
  for (int i = 0; i < reps; ++i) {
    for (int k = 0; k < 3; ++k) run((i + k) % 3);
  }
  const auto [lo, hi] = std::minmax_element(times[2].begin(), times[2].end());
  return {median(times[0]), median(times[1]), median(times[2]), *lo, *hi};
}

array gelu(const array& x) { return 0.5F * x * (1.0F + tanh(0.7978845608F * (x + 0.044715F * x * x * x))); }
/// GELU as MLX's nn.gelu_approx writes it: constants as 0-d arrays and x ** 3 by power.
array gelu_mlx(const array& x) {
  const array half(0.5F);
  const array one(1.0F);
  const array c(0.7978845608F);
  const array k(0.044715F);
  return half * x * (one + tanh(c * (x + k * power(x, array(3.0F)))));
}
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
  // Adam's first step with zero moments as MLX code makes them cheaply: broadcast views of one value (stride 0).
  const auto zero_moment = broadcast_to(array(0.0F), {n});
  V first_step{state[0], state[1], zero_moment, zero_moment};
  // A column broadcast along the rows, a transposed view and rows sliced out of a wider array.
  auto column = random::uniform(-1.0F, 1.0F, {4096, 1}, float32, random::key(9));
  auto transposed = transpose(x2);
  auto wide = random::uniform(-2.0F, 2.0F, {4096, 4096 + 64}, float32, random::key(10));
  auto sliced = slice(wide, {0, 32}, {4096, 4096 + 32});
  eval(x, x2, w, b, column, transposed, sliced);
  eval(state);
  eval(first_step);

  // The floor kernels' outputs: dense nuvec buffers (2 MiB aligned, huge pages), as a compiled kernel's are.
  V sinks;
  for (int o = 0; o < 3; ++o) sinks.push_back(random::uniform({n}, float32, random::key(6 + o)));
  eval(sinks);
  struct Row {
    const char* name;
    std::function<V(const V&)> f;
    V inputs;
    size_t reads;  // the inputs of n elements, first in `inputs`; the others are rows of 4096 read from cache
    size_t writes;
  };
  const Row rows[] = {
      // Next to no arithmetic: the generated kernels' own memory path against the floor.
      {"affine", [](const V& a) { return V{a[0] * 1.0009765625F + 0.5F}; }, {x}, 1, 1},
      {"gelu_tanh", [](const V& a) { return V{gelu(a[0])}; }, {x}, 1, 1},
      {"silu", [](const V& a) { return V{silu(a[0])}; }, {x}, 1, 1},
      {"layer_norm", [](const V& a) { return V{layer_norm(a[0], a[1], a[2])}; }, {x2, w, b}, 1, 1},
      {"layer_norm_fast", [](const V& a) { return V{fast::layer_norm(a[0], a[1], a[2], 1e-5F)}; }, {x2, w, b}, 1, 1},
      {"adam", adam, state, 4, 3},
      // Written the way users write them: 0-d array constants and power, zero-initialized optimizer state, inputs
      // broadcast, transposed and sliced.
      {"gelu_mlx", [](const V& a) { return V{gelu_mlx(a[0])}; }, {x}, 1, 1},
      {"power3", [](const V& a) { return V{power(a[0], array(3.0F))}; }, {x}, 1, 1},
      {"adam_zeros", adam, first_step, 2, 3},
      {"broadcast_column", [](const V& a) { return V{a[0] * a[1] + array(0.5F)}; }, {x2, column}, 1, 1},
      {"transposed", [](const V& a) { return V{a[0] * array(1.0009765625F) + array(0.5F)}; }, {transposed}, 1, 1},
      {"sliced", [](const V& a) { return V{a[0] * array(1.0009765625F) + array(0.5F)}; }, {sliced}, 1, 1},
  };
  for (const auto& row : rows) {
    auto compiled = compile(row.f);
    std::vector<const float*> ins;
    for (size_t i = 0; i < row.reads; ++i) ins.push_back(row.inputs[i].data<float>());
    std::vector<float*> outs;
    for (size_t o = 0; o < row.writes; ++o) outs.push_back(sinks[o].data<float>());
    const Timing t = time_turn_about([&] { return row.f(row.inputs); }, [&] { return compiled(row.inputs); },
                                     [&] { floor_kernel(ins, outs, n); }, 11);
    std::printf("row %s eager_ms=%.3f compiled_ms=%.3f floor_ms=%.3f floor_min_ms=%.3f floor_max_ms=%.3f bytes=%.0f\n",
                row.name, t.eager_ms, t.compiled_ms, t.floor_ms, t.floor_min_ms, t.floor_max_ms,
                4.0 * n * static_cast<double>(row.reads + row.writes));
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
