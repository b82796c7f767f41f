// nuvec_fft_bench: times nuvec's FFT on a few transforms and prints one line per row for bench/run_fft.py:
//
//   row NAME median_ms=T min_ms=T reps=R
//
// Rows: fft_pow2 (fft of 2^20 complex64), fft_prime (fft of the prime length 100003, complex64: Bluestein),
// rfft_pow2 (rfft of 2^20 float32), fft2_1024 (fft2 of 1024 x 1024 complex64). Inputs are uniform in [-1, 1); each
// rep builds the graph and evaluates it. Two warm-up reps (which also build the plans), then the median of 15.

#include <nuvec/nuvec.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using nuvec::array;

array random_input(const nuvec::Shape& shape, nuvec::Dtype dtype, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<nuvec::complex64_t> values(nuvec::shape_size(shape));
  for (auto& v : values) {
    v = nuvec::complex64_t(dist(rng), dtype == nuvec::complex64 ? dist(rng) : 0.0F);
  }
  auto x = nuvec::astype(array(values.begin(), shape, nuvec::complex64), dtype);
  x.eval();
  return x;
}

void time_row(const std::string& name, const std::function<array()>& build) {
  using Clock = std::chrono::steady_clock;
  constexpr int warmup = 2;
  constexpr int reps = 15;
  std::vector<double> ms;
  for (int i = 0; i < warmup + reps; ++i) {
    const auto start = Clock::now();
    auto out = build();
    out.eval();
    const auto stop = Clock::now();
    if (i >= warmup) {
      ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
  }
  std::sort(ms.begin(), ms.end());
  std::printf("row %s median_ms=%.4f min_ms=%.4f reps=%d\n", name.c_str(), ms[ms.size() / 2], ms.front(), reps);
  std::fflush(stdout);
}

}  // namespace

int main() {
  std::mt19937 rng(0);
  const auto pow2 = random_input({1 << 20}, nuvec::complex64, rng);
  const auto prime = random_input({100003}, nuvec::complex64, rng);
  const auto real = random_input({1 << 20}, nuvec::float32, rng);
  const auto square = random_input({1024, 1024}, nuvec::complex64, rng);
  time_row("fft_pow2", [&] { return nuvec::fft::fft(pow2); });
  time_row("fft_prime", [&] { return nuvec::fft::fft(prime); });
  time_row("rfft_pow2", [&] { return nuvec::fft::rfft(real); });
  time_row("fft2_1024", [&] { return nuvec::fft::fft2(square); });
}
