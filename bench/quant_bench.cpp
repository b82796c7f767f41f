// quant_bench: times quantized_matmul against its bandwidth floor (decode) and against the float32 matmul (prefill).
//
//   bandwidth copy_gbs=G threads=T                        STREAM-like copy of 512 MiB (read + write counted), best of 7
//   row NAME median_ms=T floor_ms=F ratio=R ...          decode rows: floor = packed weights + scales + biases / copy
//   row NAME median_ms=T f32_ms=F ratio=R                prefill rows (t: transpose, nt: not): against
//                                                        matmul(x, w_float.T)
//
// Each rep builds the graph and evaluates it; inputs are random and pre-evaluated. Options: --reps N (default 30),
// --rows N (rows of x in the decode rows, default 1; below 32, where the sgemm path starts).

#include <nuvec/cpu/thread_pool.h>
#include <nuvec/nuvec.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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

/// The best copy bandwidth (GB/s, read + write counted) of 512 MiB split over `threads` threads.
double copy_gbs(int threads) {
  constexpr size_t bytes = size_t{512} << 20;
  std::vector<char> src(bytes, 1);
  std::vector<char> dst(bytes, 2);
  const size_t chunk = bytes / static_cast<size_t>(threads);
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    auto t0 = Clock::now();
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t) {
      workers.emplace_back([&, t] { std::memcpy(dst.data() + t * chunk, src.data() + t * chunk, chunk); });
    }
    std::memcpy(dst.data(), src.data(), chunk);
    for (auto& w : workers) {
      w.join();
    }
    best = std::min(best, ms_since(t0));
  }
  return 2.0 * static_cast<double>(bytes) / (best * 1e-3) / 1e9;
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

double time_ms(int reps, const std::function<array()>& fn) {
  fn().eval();  // warm up: buffers, thread pool, library initialisation
  std::vector<double> times;
  for (int rep = 0; rep < reps; ++rep) {
    auto t0 = Clock::now();
    auto out = fn();
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
  const double gbs = copy_gbs(threads);
  std::printf("bandwidth copy_gbs=%.2f threads=%d\n", gbs, threads);

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
    for (bool transpose : {true, false}) {
      const double ms =
          time_ms(reps, [&] { return nuvec::quantized_matmul(x, q[0], q[1], q[2], transpose, 64, bits); });
      std::printf("row decode_%dbit_%s_x%d median_ms=%.3f floor_ms=%.3f ratio=%.2f weight_gbs=%.2f\n", bits,
                  transpose ? "t" : "nt", rows, ms, floor_ms, ms / floor_ms, bytes / (ms * 1e-3) / 1e9);
    }
  }

  auto xp = random_matrix({512, k}, rng);
  const double f32_ms = time_ms(std::max(3, reps / 6), [&] { return nuvec::matmul(xp, nuvec::transpose(w)); });
  for (int bits : {4, 8}) {
    auto q = nuvec::quantize(w, 64, bits);
    nuvec::eval(q);
    const double deq_ms = time_ms(std::max(3, reps / 6), [&] { return nuvec::dequantize(q[0], q[1], q[2], 64, bits); });
    for (bool transpose : {true, false}) {
      const double ms = time_ms(std::max(3, reps / 6),
                                [&] { return nuvec::quantized_matmul(xp, q[0], q[1], q[2], transpose, 64, bits); });
      std::printf("row prefill_%dbit_%s_512x4096x4096 median_ms=%.2f f32_ms=%.2f ratio=%.2f dequantize_ms=%.2f\n", bits,
                  transpose ? "t" : "nt", ms, f32_ms, ms / f32_ms, deq_ms);
    }
  }
  return 0;
}
