// nuvec_conv_bench: times nuvec's conv2d forward on ResNet-like shapes (and one conv_transpose2d), through each
// implementation, and prints one
// machine-readable line per measurement for bench/conv_vs_torch.py (which times PyTorch in the same run):
//
//   row NAME backend=B median_ms=T min_ms=T cpu_ms=T reps=R
//       B: automatic (what conv2d picks), onednn or gemm; cpu_ms: the median CPU time of the process (all threads)
//   error NAME backend=B MESSAGE
//
// Options: --rows a,b,c (default: every row), --list (one row a line: NAME n h w c_in c_out k stride pad
// transposed),
// --backends automatic,onednn,gemm (default: all three). Inputs are uniform in [-1, 1), float32, channels last,
// created and evaluated before timing; each rep builds conv2d and evaluates it. Two warm-up reps, then the median
// of 15 reps (7 when a rep takes over 100 ms, 3 over 500 ms).

#include <nuvec/cpu/conv.h>
#include <nuvec/nuvec.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nuvec::array;
using Clock = std::chrono::steady_clock;

struct Row {
  const char* name;
  int n, h, w, c_in, c_out, k, stride, pad;
  int transposed;  // 1: conv_transpose2d with output_padding stride - 1 (an upsampling layer)
};

// ResNet-50/34 stages: 3x3 stride 1 at each width, the 1x1 reduction, the stride-2 3x3 between stages; batch 8, 32;
// and a decoder's 2x upsampling layer (T: transposed).
const Row rows[] = {
    {"3x3_56x56x64_b8", 8, 56, 56, 64, 64, 3, 1, 1, 0},      {"3x3_56x56x64_b32", 32, 56, 56, 64, 64, 3, 1, 1, 0},
    {"3x3_28x28x128_b8", 8, 28, 28, 128, 128, 3, 1, 1, 0},   {"3x3_28x28x128_b32", 32, 28, 28, 128, 128, 3, 1, 1, 0},
    {"3x3_14x14x256_b8", 8, 14, 14, 256, 256, 3, 1, 1, 0},   {"3x3_14x14x256_b32", 32, 14, 14, 256, 256, 3, 1, 1, 0},
    {"1x1_56x56x256_b8", 8, 56, 56, 256, 64, 1, 1, 0, 0},    {"1x1_56x56x256_b32", 32, 56, 56, 256, 64, 1, 1, 0, 0},
    {"3x3s2_56x56x64_b8", 8, 56, 56, 64, 128, 3, 2, 1, 0},   {"3x3s2_56x56x64_b32", 32, 56, 56, 64, 128, 3, 2, 1, 0},
    {"T3x3s2_28x28x128_b8", 8, 28, 28, 128, 64, 3, 2, 1, 1},
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

array uniform(const nuvec::Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.F, 1.F);
  std::vector<float> values(nuvec::shape_size(shape));
  for (auto& v : values) {
    v = dist(rng);
  }
  array a(values.begin(), shape, nuvec::float32);
  a.eval();
  return a;
}

/// The process's CPU time (all threads) in ms.
double cpu_now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

/// One rep: wall-clock ms, and the process's CPU ms in `cpu_ms`.
double time_ms(const array& x, const array& w, const Row& r, double& cpu_ms) {
  const double c0 = cpu_now_ms();
  auto t0 = Clock::now();
  auto y = r.transposed != 0 ? nuvec::conv_transpose2d(x, w, {r.stride, r.stride}, {r.pad, r.pad}, {1, 1},
                                                       {r.stride - 1, r.stride - 1})
                             : nuvec::conv2d(x, w, {r.stride, r.stride}, {r.pad, r.pad});
  y.eval();
  const double wall = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  cpu_ms = cpu_now_ms() - c0;
  return wall;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    out.push_back(item);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> selected;
  std::vector<std::string> backends{"automatic", "onednn", "gemm"};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--list") {
      for (const auto& r : rows) {
        std::printf("%s %d %d %d %d %d %d %d %d %d\n", r.name, r.n, r.h, r.w, r.c_in, r.c_out, r.k, r.stride, r.pad,
                    r.transposed);
      }
      return 0;
    }
    if (arg == "--rows" && i + 1 < argc) {
      selected = split(argv[++i]);
    } else if (arg == "--backends" && i + 1 < argc) {
      backends = split(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--list] [--rows a,b] [--backends automatic,onednn,gemm]\n", argv[0]);
      return 2;
    }
  }
  std::mt19937 rng(7);
  for (const auto& r : rows) {
    if (!selected.empty() && std::find(selected.begin(), selected.end(), r.name) == selected.end()) {
      continue;
    }
    auto x = uniform({r.n, r.h, r.w, r.c_in}, rng);
    auto w = uniform({r.c_out, r.k, r.k, r.c_in}, rng);
    for (const auto& b : backends) {
      nuvec::cpu::set_conv_backend(b == "onednn" ? nuvec::cpu::ConvBackend::onednn
                                   : b == "gemm" ? nuvec::cpu::ConvBackend::gemm
                                                 : nuvec::cpu::ConvBackend::automatic);
      try {
        double cpu = 0;
        time_ms(x, w, r, cpu);
        const double warm = time_ms(x, w, r, cpu);
        const int reps = warm > 500 ? 3 : warm > 100 ? 7 : 15;
        std::vector<double> times;
        std::vector<double> cpu_times;
        for (int i = 0; i < reps; ++i) {
          times.push_back(time_ms(x, w, r, cpu));
          cpu_times.push_back(cpu);
        }
        std::printf("row %s backend=%s median_ms=%.4f min_ms=%.4f cpu_ms=%.4f reps=%d\n", r.name, b.c_str(),
                    median(times), *std::min_element(times.begin(), times.end()), median(cpu_times), reps);
      } catch (const std::exception& e) {
        std::printf("error %s backend=%s %s\n", r.name, b.c_str(), e.what());
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
