// nuvec_fast_bench: each nuvec::fast op against its composition from plain ops (nuvec::fast::detail::*_composed),
// one line per case:
//
//   NAME fused_ms=T composed_ms=T ratio=R      median of the reps; ratio = composed / fused (above 1: fused wins)
//
// Cases: rms_norm of (4096, 4096) float32 and bfloat16; attention decode, (1, 32, 1, 128) queries against 4096 keys
// and values; attention prefill, (1, 32, 512, 128) causal. Options: --reps N (default 10). Each rep builds the graph
// and evaluates it; inputs are random and evaluated beforehand.

#include <nuvec/nuvec.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <vector>

namespace {

using nuvec::array;
using Clock = std::chrono::steady_clock;

array random_input(const nuvec::Shape& shape, nuvec::Dtype dtype, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> host(nuvec::shape_size(shape));
  for (auto& v : host) {
    v = dist(gen);
  }
  array a = nuvec::astype(array(host.begin(), shape, nuvec::float32), dtype);
  nuvec::eval(a);
  return a;
}

/// Median milliseconds of `reps` evaluations of build() (after one warm-up).
double time_ms(const std::function<array()>& build, int reps) {
  nuvec::eval(build());
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto start = Clock::now();
    nuvec::eval(build());
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void report(const char* name, const std::function<array()>& fused, const std::function<array()>& composed,
            int reps) {
  const double f = time_ms(fused, reps);
  const double c = time_ms(composed, reps);
  std::printf("%-24s fused_ms=%.3f composed_ms=%.3f ratio=%.2f\n", name, f, c, c / f);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 10;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    }
  }
  namespace fast = nuvec::fast;
  for (auto dtype : {nuvec::float32, nuvec::bfloat16}) {
    auto x = random_input({4096, 4096}, dtype, 1);
    auto w = random_input({4096}, dtype, 2);
    report(dtype == nuvec::float32 ? "rms_norm_f32" : "rms_norm_bf16",
           [&] { return fast::rms_norm(x, w, 1e-5F); },
           [&] { return fast::detail::rms_norm_composed(x, w, 1e-5F); }, reps);
  }
  const float scale = 1.0F / std::sqrt(128.0F);
  {
    auto q = random_input({1, 32, 1, 128}, nuvec::float32, 3);
    auto k = random_input({1, 32, 4096, 128}, nuvec::float32, 4);
    auto v = random_input({1, 32, 4096, 128}, nuvec::float32, 5);
    report("sdpa_decode_f32", [&] { return fast::scaled_dot_product_attention(q, k, v, scale); },
           [&] { return fast::detail::scaled_dot_product_attention_composed(q, k, v, scale); }, reps);
  }
  {
    auto q = random_input({1, 32, 512, 128}, nuvec::float32, 6);
    auto k = random_input({1, 32, 512, 128}, nuvec::float32, 7);
    auto v = random_input({1, 32, 512, 128}, nuvec::float32, 8);
    report("sdpa_prefill_causal_f32", [&] { return fast::scaled_dot_product_attention(q, k, v, scale, "causal"); },
           [&] { return fast::detail::scaled_dot_product_attention_composed(q, k, v, scale, "causal"); }, reps);
  }
  return 0;
}
