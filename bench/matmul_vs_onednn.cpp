// nuvec's matmul against the libraries it calls, in one run: float32 against oneDNN's dnnl_sgemm
// and OpenBLAS's cblas_sgemm, bfloat16 against oneDNN's matmul primitive, and NumPy (OpenBLAS) as
// the everyday baseline. nuvec and the direct call alternate rep by rep, so machine noise hits
// both alike; OpenBLAS and NumPy run in phases of their own, because OpenBLAS's idle threads spin
// and would slow the OpenMP threads of oneDNN running next to them.
//
//   build/release/bench/matmul_vs_onednn [reps]    (built by CMake as the matmul_vs_onednn target)
//
// Prints one line per size: medians in ms, GFLOP/s, and nuvec / direct.

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <vector>

#include "nuvec/cpu/thread_pool.h"
#include "nuvec/nuvec.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Times `fns` alternately, `reps` times each after two warm-up rounds; returns each one's median.
std::vector<double> alternate(const std::vector<std::function<void()>>& fns, int reps) {
  std::vector<std::vector<double>> times(fns.size());
  for (int r = 0; r < reps + 2; ++r) {
    for (size_t i = 0; i < fns.size(); ++i) {
      auto start = Clock::now();
      fns[i]();
      if (r >= 2) {
        times[i].push_back(ms_since(start));
      }
    }
  }
  std::vector<double> out;
  for (auto& t : times) {
    out.push_back(median(t));
  }
  return out;
}

std::vector<float> uniform(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.F, 2.F);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = dist(rng);
  }
  return v;
}

double gflops(int n, double ms) { return 2.0 * n * n * n / (ms * 1e6); }

/// NumPy's a @ b (float32) for each size, medians in ms, from Debian's python3 (OpenBLAS).
std::vector<double> numpy_times(const std::vector<int>& sizes, int reps) {
  std::string script =
      "import numpy as np, time, sys\n"
      "for n in [" +
      [&] {
        std::string s;
        for (int n : sizes) {
          s += std::to_string(n) + ",";
        }
        return s;
      }() +
      "]:\n"
      "    r = np.random.default_rng(0)\n"
      "    a = r.uniform(-2, 2, (n, n)).astype(np.float32); b = r.uniform(-2, 2, (n, n)).astype(np.float32)\n"
      "    t = []\n"
      "    for i in range(" +
      std::to_string(reps + 2) +
      "):\n"
      "        s = time.perf_counter(); c = a @ b; t.append((time.perf_counter() - s) * 1e3)\n"
      "    t = sorted(t[2:]); print(t[len(t) // 2])\n";
  std::string command =
      "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=/usr/lib/python3/dist-packages "
      "/usr/bin/python3 -c '" +
      script + "'";
  std::vector<double> out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    double v = 0;
    while (fscanf(pipe, "%lf", &v) == 1) {
      out.push_back(v);
    }
    pclose(pipe);
  }
  out.resize(sizes.size(), -1.0);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 11;
  const std::vector<int> sizes = {1024, 2048};
  std::printf("nuvec threads %d, reps %d (median ms; GFLOP/s in brackets)\n", nuvec::cpu::num_threads(), reps);

  // float32: nuvec vs dnnl_sgemm, alternating.
  std::vector<double> nuvec_f32;
  std::vector<double> dnnl_f32;
  for (int n : sizes) {
    auto av = uniform(static_cast<size_t>(n) * n, 1);
    auto bv = uniform(static_cast<size_t>(n) * n, 2);
    std::vector<float> c(static_cast<size_t>(n) * n);
    nuvec::array a(av.begin(), {n, n}, nuvec::float32);
    nuvec::array b(bv.begin(), {n, n}, nuvec::float32);
    auto t = alternate({[&] { nuvec::matmul(a, b).eval(); },
                        [&] { dnnl_sgemm('N', 'N', n, n, n, 1.F, av.data(), n, bv.data(), n, 0.F, c.data(), n); }},
                       reps);
    nuvec_f32.push_back(t[0]);
    dnnl_f32.push_back(t[1]);
  }

  // bfloat16 1024: nuvec vs oneDNN's matmul primitive (made once, outside the timing).
  const int nb = 1024;
  auto a32 = uniform(static_cast<size_t>(nb) * nb, 3);
  auto b32 = uniform(static_cast<size_t>(nb) * nb, 4);
  auto a16 = nuvec::astype(nuvec::array(a32.begin(), {nb, nb}, nuvec::float32), nuvec::bfloat16);
  auto b16 = nuvec::astype(nuvec::array(b32.begin(), {nb, nb}, nuvec::float32), nuvec::bfloat16);
  nuvec::eval({a16, b16});
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  dnnl::memory::desc md({nb, nb}, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::ab);
  dnnl::matmul bf16_mm(dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), engine));
  std::vector<uint16_t> c16(static_cast<size_t>(nb) * nb);
  dnnl::memory am(md, engine, a16.data<void>());
  dnnl::memory bm(md, engine, b16.data<void>());
  dnnl::memory cm(md, engine, c16.data());
  auto t16 = alternate({[&] { nuvec::matmul(a16, b16).eval(); },
                        [&] {
                          bf16_mm.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
                          stream.wait();
                        }},
                       reps);

  // OpenBLAS directly, then NumPy: phases of their own.
  std::vector<double> blas_f32;
  for (int n : sizes) {
    auto av = uniform(static_cast<size_t>(n) * n, 1);
    auto bv = uniform(static_cast<size_t>(n) * n, 2);
    std::vector<float> c(static_cast<size_t>(n) * n);
    blas_f32.push_back(alternate({[&] {
                                   cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.F, av.data(), n,
                                               bv.data(), n, 0.F, c.data(), n);
                                 }},
                                 reps)[0]);
  }
  auto np = numpy_times(sizes, reps);

  std::printf("%-18s %16s %16s %16s %16s %14s\n", "case", "nuvec", "oneDNN direct", "OpenBLAS direct", "NumPy",
              "nuvec/oneDNN");
  for (size_t i = 0; i < sizes.size(); ++i) {
    int n = sizes[i];
    std::printf("%-18s %8.2f [%5.0f] %8.2f [%5.0f] %8.2f [%5.0f] %8.2f [%5.0f] %13.3fx\n",
                ("f32 " + std::to_string(n) + "^3").c_str(), nuvec_f32[i], gflops(n, nuvec_f32[i]), dnnl_f32[i],
                gflops(n, dnnl_f32[i]), blas_f32[i], gflops(n, blas_f32[i]), np[i], gflops(n, np[i]),
                nuvec_f32[i] / dnnl_f32[i]);
  }
  std::printf("%-18s %8.2f [%5.0f] %8.2f [%5.0f] %16s %8.2f [%5.0f] %13.3fx   (NumPy: f32, no bf16)\n", "bf16 1024^3",
              t16[0], gflops(nb, t16[0]), t16[1], gflops(nb, t16[1]), "-", np[0], gflops(nb, np[0]), t16[0] / t16[1]);
  return 0;
}
