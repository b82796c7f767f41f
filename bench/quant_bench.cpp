// quant_bench: times quantized_matmul against its bandwidth floor (decode) and against the float32 matmul (prefill).
//
//   bandwidth read_gbs=R copy_gbs=G threads=T   reading 512 MiB (summed, so nothing is written), and a STREAM-like
//                                               copy of 512 MiB (read + write counted); best of 7, split over T threads
//   row NAME median_ms=T floor_ms=F ratio=R cached_ms=C ...
//                                               decode rows: each call takes the next of several copies of the weight
//                                               (over 96 MiB in all, three times the L3 cache), as a model's layers
//                                               would, so the weights come from memory; floor = packed weights +
//                                               scales + biases / read bandwidth. cached_ms: one copy, called again
//                                               and again (it stays in the L3 cache, so it may beat the floor);
//                                               float_path_ms (w (N, K)): streamed with NUVEC_QMM_INT8=0, no int8
//                                               dot products
//   row NAME median_ms=T f32_ms=F ratio=R       prefill rows (t: transpose, nt: not): against matmul(x, w_float.T)
//
// Each rep builds the graph and evaluates it; inputs are random and pre-evaluated. Options: --reps N (default 30),
// --rows N (rows of x in the decode rows, default 1; below 32, where the sgemm path starts).

#include <nuvec/cpu/thread_pool.h>
#include <nuvec/nuvec.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using nuvec::array;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

constexpr size_t bandwidth_bytes = size_t{512} << 20;

/// The best time (ms) of part(t) run on `threads` threads at once, over 7 repetitions.
double best_parallel_ms(int threads, const std::function<void(int)>& part) {
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    auto t0 = Clock::now();
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t) {
      workers.emplace_back(part, t);
    }
    part(0);
    for (auto& w : workers) {
      w.join();
    }
    best = std::min(best, ms_since(t0));
  }
  return best;
}

/// The copy bandwidth (GB/s, read + write counted) of 512 MiB split over `threads` threads.
double copy_gbs(int threads) {
  std::vector<char> src(bandwidth_bytes, 1);
  std::vector<char> dst(bandwidth_bytes, 2);
  const size_t chunk = bandwidth_bytes / static_cast<size_t>(threads);
  const double ms =
      best_parallel_ms(threads, [&](int t) { std::memcpy(dst.data() + t * chunk, src.data() + t * chunk, chunk); });
  return 2.0 * static_cast<double>(bandwidth_bytes) / (ms * 1e-3) / 1e9;
}

/// The read bandwidth (GB/s) of 512 MiB split over `threads` threads: 64-bit words summed in eight independent
/// chains (the compiler vectorizes it), so that only reads reach memory.
double read_gbs(int threads) {
  const size_t words = bandwidth_bytes / sizeof(uint64_t);
  std::vector<uint64_t> data(words, 1);
  const size_t chunk = words / static_cast<size_t>(threads);
  std::vector<uint64_t> sums(static_cast<size_t>(threads));
  const double ms = best_parallel_ms(threads, [&](int t) {
    const uint64_t* p = data.data() + t * chunk;
    uint64_t lane[8] = {};
    for (size_t i = 0; i + 8 <= chunk; i += 8) {
      for (int j = 0; j < 8; ++j) {
        lane[j] += p[i + j];
      }
    }
    sums[t] = lane[0] + lane[1] + lane[2] + lane[3] + lane[4] + lane[5] + lane[6] + lane[7];
  });
  if (std::accumulate(sums.begin(), sums.end(), uint64_t{0}) != words - words % (8 * threads)) {
    std::fprintf(stderr, "read bandwidth: wrong sum\n");
  }
  return static_cast<double>(bandwidth_bytes) / (ms * 1e-3) / 1e9;
}

array random_matrix(const nuvec::Shape& shape, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.F, 1.F);
  std::vector<float> values(nuvec::shape_size(shape));
  for (auto& v : values) {
    v = dist(rng);
  }
  array a(values.begin(), shape, nuvec::float32);
  a.eval();
  return a;
}

/// The median time of fn(rep) over `reps` calls, after one warm-up call.
double time_ms(int reps, const std::function<array(int)>& fn) {
  fn(0).eval();  // warm up: buffers, thread pool, library initialisation
  std::vector<double> times;
  for (int rep = 0; rep < reps; ++rep) {
    auto t0 = Clock::now();
    auto out = fn(rep);
    out.eval();
    times.push_back(ms_since(t0));
  }
  return median(times);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 30;
  int rows = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (std::string(argv[i]) == "--rows" && i + 1 < argc) {
      rows = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--reps N] [--rows N]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1 || rows < 1) {
    std::fprintf(stderr, "%s: --reps and --rows must be at least 1\n", argv[0]);
    return 2;
  }
  const int threads = nuvec::cpu::num_threads();
  const double gbs = read_gbs(threads);
  std::printf("bandwidth read_gbs=%.2f copy_gbs=%.2f threads=%d\n", gbs, copy_gbs(threads), threads);

  std::mt19937 rng(7);
  constexpr int k = 4096;
  constexpr int n = 4096;
  auto w = random_matrix({n, k}, rng);
  auto x = random_matrix({rows, k}, rng);
  for (int bits : {4, 8}) {
    auto q = nuvec::quantize(w, 64, bits);
    nuvec::eval(q);
    const double bytes = static_cast<double>(q[0].nbytes() + q[1].nbytes() + q[2].nbytes());
    const double floor_ms = bytes / (gbs * 1e9) * 1e3;
    const auto copies = static_cast<size_t>(std::ceil(double(size_t{96} << 20) / bytes));
    std::vector<std::vector<array>> weights;
    for (size_t c = 0; c < copies; ++c) {
      weights.push_back({nuvec::copy(q[0]), nuvec::copy(q[1]), nuvec::copy(q[2])});
      nuvec::eval(weights.back());
    }
    for (bool transpose : {true, false}) {
      auto streamed = [&](int rep) {
        const auto& wq = weights[static_cast<size_t>(rep) % copies];
        return nuvec::quantized_matmul(x, wq[0], wq[1], wq[2], transpose, 64, bits);
      };
      const double ms = time_ms(reps, streamed);
      const double cached_ms =
          time_ms(reps, [&](int) { return nuvec::quantized_matmul(x, q[0], q[1], q[2], transpose, 64, bits); });
      std::printf("row decode_%dbit_%s_x%d median_ms=%.3f floor_ms=%.3f ratio=%.2f cached_ms=%.3f weight_gbs=%.2f",
                  bits, transpose ? "t" : "nt", rows, ms, floor_ms, ms / floor_ms, cached_ms,
                  bytes / (ms * 1e-3) / 1e9);
      if (transpose) {  // the int8 kernels take w (N, K) only
        setenv("NUVEC_QMM_INT8", "0", 1);
        std::printf(" float_path_ms=%.3f", time_ms(reps, streamed));
        unsetenv("NUVEC_QMM_INT8");
      }
      std::printf("\n");
    }
  }

  auto xp = random_matrix({512, k}, rng);
  const double f32_ms = time_ms(std::max(3, reps / 6), [&](int) { return nuvec::matmul(xp, nuvec::transpose(w)); });
  for (int bits : {4, 8}) {
    auto q = nuvec::quantize(w, 64, bits);
    nuvec::eval(q);
    const double deq_ms =
        time_ms(std::max(3, reps / 6), [&](int) { return nuvec::dequantize(q[0], q[1], q[2], 64, bits); });
    for (bool transpose : {true, false}) {
      const double ms = time_ms(std::max(3, reps / 6), [&](int) {
        return nuvec::quantized_matmul(xp, q[0], q[1], q[2], transpose, 64, bits);
      });
      std::printf("row prefill_%dbit_%s_512x4096x4096 median_ms=%.2f f32_ms=%.2f ratio=%.2f dequantize_ms=%.2f\n", bits,
                  transpose ? "t" : "nt", ms, f32_ms, ms / f32_ms, deq_ms);
    }
  }
  return 0;
}
