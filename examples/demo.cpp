// nuvec's first demo: arrays, lazy evaluation, failed arrays, and a speed table
// measured on this machine against its memory bandwidth.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <iomanip>
#include <iostream>
#include <vector>

#include "nuvec/nuvec.h"

namespace nv = nuvec;

namespace {

double median_ms(const std::function<void()>& run, int reps) {
  run();  // warm-up: allocator cache, thread pool, page faults
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[reps / 2];
}

/// Bytes per second of a plain copy between two large buffers (the floor for memory-bound ops).
double copy_bandwidth() {
  const size_t n = size_t{1} << 27;  // 128 MiB
  std::vector<char> a(n, 1);
  std::vector<char> b(n, 2);
  double ms = median_ms([&] { std::memcpy(b.data(), a.data(), n); }, 5);
  return 2.0 * static_cast<double>(n) / (ms * 1e-3);
}

void show_arrays() {
  std::cout << "== Arrays ==\n";
  auto a = nv::array({1, 2, 3, 4, 5, 6}, {2, 3});
  std::cout << "a = " << a << "\n";
  std::cout << "a.T = " << nv::transpose(a) << "\n";
  std::cout << "a * 1.5f = " << a * 1.5F << "\n";
  std::cout << "sum(a, 0) = " << nv::sum(a, 0) << "\n";
  std::cout << "bf16 of a = " << nv::astype(a, nv::bfloat16) << "\n\n";
}

void show_laziness() {
  std::cout << "== Lazy evaluation ==\n";
  auto x = nv::random::normal({1000});
  auto y = nv::exp(x) * 2.0F + nv::sin(x);
  auto loss = nv::mean(y);
  std::cout << "Built a graph; nodes waiting to run: " << nv::schedule({loss}).size() << "\n";
  nv::eval(loss);
  std::cout << "After eval: mean = " << loss.item<float>() << ", graph detached: " << std::boolalpha
            << !loss.has_primitive() << "\n\n";
}

void show_failed_arrays() {
  std::cout << "== Failed arrays ==\n";
  auto previous = nv::set_memory_limit(nv::get_active_memory() + (16U << 20));
  auto huge = nv::exp(nv::full({1 << 26}, 1.0F));  // needs 256 MiB
  auto status = nv::try_eval({huge});
  std::cout << "Evaluating past a 16 MiB memory limit: " << status.message() << "\n";
  nv::set_memory_limit(previous);
  std::cout << "The process is fine: sum(arange(10)) = " << nv::sum(nv::arange(10)).item<int>() << "\n\n";
}

void show_speed() {
  std::cout << "== Speed on this machine ==\n";
  const double bandwidth = copy_bandwidth();
  const int n = 1 << 24;
  auto x = nv::random::uniform({n});
  auto y = nv::random::uniform({n});
  auto m = nv::random::uniform({4096, 4096});
  auto a = nv::random::uniform({1024, 1024});
  nv::eval(x, y, m, a);

  struct Row {
    const char* name;
    std::function<nv::array()> op;
    double bytes;  // memory traffic, for memory-bound rows
    double flops;  // for compute-bound rows
  };
  const double f = 4.0 * n;
  std::vector<Row> rows = {
      {"x + y (2^24 f32)", [&] { return x + y; }, 3 * f, 0},
      {"exp(x)", [&] { return nv::exp(x); }, 2 * f, 0},
      {"tanh(x)", [&] { return nv::tanh(x); }, 2 * f, 0},
      {"sum(x)", [&] { return nv::sum(x); }, f, 0},
      {"softmax rows 4096^2", [&] { return nv::softmax(m, -1); }, 2 * f, 0},
      {"transpose copy 4096^2", [&] { return nv::contiguous(nv::transpose(m)); }, 2 * f, 0},
      {"astype bf16", [&] { return nv::astype(x, nv::bfloat16); }, f + f / 2, 0},
      {"matmul 1024 f32", [&] { return nv::matmul(a, a); }, 0, 2.0 * 1024 * 1024 * 1024},
  };
  std::cout << std::left << std::setw(24) << "op" << std::right << std::setw(10) << "ms" << std::setw(14)
            << "GB/s|GFLOP/s" << std::setw(16) << "of bandwidth"
            << "\n";
  for (const auto& row : rows) {
    double ms = median_ms([&] { nv::eval(row.op()); }, 7);
    std::cout << std::left << std::setw(24) << row.name << std::right << std::setw(10) << std::fixed
              << std::setprecision(2) << ms;
    if (row.bytes > 0) {
      double rate = row.bytes / (ms * 1e-3);
      std::cout << std::setw(14) << rate / 1e9 << std::setw(15) << std::setprecision(0) << 100 * rate / bandwidth
                << "%";
    } else {
      std::cout << std::setw(14) << row.flops / (ms * 1e-3) / 1e9 << std::setw(16) << "";
    }
    std::cout << "\n";
  }
  std::cout << "(memory copy bandwidth here: " << std::setprecision(1) << bandwidth / 1e9
            << " GB/s; `make bench` compares with NumPy side by side)\n";
}

}  // namespace

int main() {
  try {
    show_arrays();
    show_laziness();
    show_failed_arrays();
    show_speed();
  } catch (const std::exception& e) {
    std::cerr << "demo failed: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
