// linalg_bench: LAPACK-backed linalg ops on small and medium matrices, where the cost of OpenBLAS's threads shows.
//
//   row OP n=N batch=B median_us=T min_us=M      one line per op and shape; random float32 input (symmetric for
//                                                 eigh and eigvalsh), evaluated before timing
//
// Options: --reps N (default 200 up to n = 64, a tenth of it above), --sizes a,b,c (default 8,32,64,128,256,512).

#include <nuvec/nuvec.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nuvec::array;
using Clock = std::chrono::steady_clock;

struct Timing {
  double median_us;
  double min_us;
};

Timing time_us(int reps, const std::function<std::vector<array>()>& fn) {
  nuvec::eval(fn());  // warm up: workspace queries, library threads
  std::vector<double> times;
  for (int rep = 0; rep < reps; ++rep) {
    auto t0 = Clock::now();
    nuvec::eval(fn());
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front()};
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 200;
  std::vector<int> sizes{8, 32, 64, 128, 256, 512};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (arg == "--sizes" && i + 1 < argc) {
      sizes.clear();
      std::stringstream list(argv[++i]);
      for (std::string item; std::getline(list, item, ',');) {
        sizes.push_back(std::stoi(item));
      }
    } else {
      std::fprintf(stderr, "usage: %s [--reps N] [--sizes a,b,c]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1 || sizes.empty()) {
    std::fprintf(stderr, "%s: --reps must be at least 1 and --sizes must name a size\n", argv[0]);
    return 2;
  }
  using Op = std::function<std::vector<array>(const array&)>;
  const std::vector<std::pair<std::string, Op>> ops{
      {"eigh",
       [](const array& a) {
         auto [w, v] = nuvec::linalg::eigh(a);
         return std::vector<array>{w, v};
       }},
      {"eigvalsh", [](const array& a) { return std::vector<array>{nuvec::linalg::eigvalsh(a)}; }},
      {"svd", [](const array& a) { return nuvec::linalg::svd(a); }},
      {"inv", [](const array& a) { return std::vector<array>{nuvec::linalg::inv(a)}; }},
  };
  std::vector<std::pair<int, int>> shapes;  // (batch, n)
  for (int n : sizes) {
    shapes.emplace_back(1, n);
  }
  shapes.emplace_back(64, 32);
  for (auto [batch, n] : shapes) {
    auto a = nuvec::random::normal({batch, n, n});
    auto sym = nuvec::add(a, nuvec::swapaxes(a, -1, -2));
    nuvec::eval({a, sym});
    const int op_reps = n <= 64 ? reps : std::max(1, reps / 10);
    for (const auto& [name, op] : ops) {
      const array& input = name.rfind("eig", 0) == 0 ? sym : a;
      const auto t = time_us(op_reps, [&] { return op(input); });
      std::printf("row %s n=%d batch=%d median_us=%.1f min_us=%.1f\n", name.c_str(), n, batch, t.median_us, t.min_us);
      std::fflush(stdout);
    }
  }
  return 0;
}
