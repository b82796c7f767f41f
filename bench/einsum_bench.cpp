// einsum against matmul of the same shapes and against NumPy's np.einsum(optimize=True), for the two contractions
// models use most: a batched product "bij,bjk->bik" and attention scores "bhqd,bhkd->bhqk". nuvec's einsum and
// matmul alternate rep by rep (so machine noise hits both alike); NumPy runs afterwards in /usr/bin/python3 (the
// environment of bench/README.md). Inputs are float32, uniform in [-2, 2).
//
//   build/release/bench/einsum_bench [reps]    (the einsum_bench target)
//
// Prints one line per contraction: medians in ms and the ratios einsum / matmul and einsum / np.einsum.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Times `fns` alternately, `reps` times each after two warm-up rounds; returns each one's median in ms.
std::vector<double> alternate(const std::vector<std::function<void()>>& fns, int reps) {
  std::vector<std::vector<double>> times(fns.size());
  for (int r = 0; r < reps + 2; ++r) {
    for (size_t i = 0; i < fns.size(); ++i) {
      const auto start = Clock::now();
      fns[i]();
      if (r >= 2) {
        times[i].push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      }
    }
  }
  std::vector<double> out;
  for (auto& t : times) {
    out.push_back(median(t));
  }
  return out;
}

nuvec::array uniform(const nuvec::Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.F, 2.F);
  std::vector<float> values(nuvec::shape_size(shape));
  for (auto& v : values) {
    v = dist(rng);
  }
  nuvec::array a(values.begin(), shape, nuvec::float32);
  a.eval();
  return a;
}

std::string py_shape(const nuvec::Shape& shape) {
  std::string text = "(";
  for (auto d : shape) {
    text += std::to_string(d) + ",";
  }
  return text + ")";
}

/// NumPy's median time in ms of np.einsum(subscripts, x, y, optimize=True), or -1 when Python fails.
double numpy_ms(const std::string& subscripts, const nuvec::Shape& x, const nuvec::Shape& y, int reps) {
  const std::string script =
      "import numpy as np, time\n"
      "r = np.random.default_rng(0)\n"
      "x = r.uniform(-2, 2, " + py_shape(x) + ").astype(np.float32)\n"
      "y = r.uniform(-2, 2, " + py_shape(y) + ").astype(np.float32)\n"
      "t = []\n"
      "for i in range(" + std::to_string(reps + 2) + "):\n"
      "    s = time.perf_counter(); np.einsum('" + subscripts + "', x, y, optimize=True)\n"
      "    t.append((time.perf_counter() - s) * 1e3)\n"
      "print(sorted(t[2:])[len(t[2:]) // 2])\n";
  const std::string command =
      "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=/usr/lib/python3/dist-packages /usr/bin/python3 -c \"" +
      script + "\"";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return -1;
  }
  double ms = -1;
  if (std::fscanf(pipe, "%lf", &ms) != 1) {
    ms = -1;
  }
  pclose(pipe);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace nuvec;
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  struct Row {
    std::string subscripts;
    Shape x;
    Shape y;
    std::function<array(const array&, const array&)> matmul_form;
  };
  const std::vector<Row> rows{
      {"bij,bjk->bik", {32, 256, 256}, {32, 256, 256}, [](const array& x, const array& y) { return matmul(x, y); }},
      {"bhqd,bhkd->bhqk",
       {4, 8, 512, 64},
       {4, 8, 512, 64},
       [](const array& x, const array& y) { return matmul(x, swapaxes(y, -1, -2)); }},
  };
  std::printf("%-18s %-34s %10s %10s %10s %14s %14s\n", "subscripts", "shapes", "einsum_ms", "matmul_ms", "numpy_ms",
              "einsum/matmul", "einsum/numpy");
  for (const auto& row : rows) {
    const auto x = uniform(row.x, 1);
    const auto y = uniform(row.y, 2);
    auto times = alternate({[&] { einsum(row.subscripts, {x, y}).eval(); }, [&] { row.matmul_form(x, y).eval(); }},
                           reps);
    const double np_ms = numpy_ms(row.subscripts, row.x, row.y, reps);
    std::printf("%-18s %-34s %10.3f %10.3f %10.3f %14.3f %14.3f\n", row.subscripts.c_str(),
                (shape_string(row.x) + " " + shape_string(row.y)).c_str(), times[0], times[1], np_ms,
                times[0] / times[1], np_ms > 0 ? times[0] / np_ms : 0.0);
  }
  return 0;
}
