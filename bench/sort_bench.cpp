// nuvec_sort_bench: times nuvec's sort and topk for bench/sort_vs_numpy.py, one line per row:
//
//   row NAME median_ms=T min_ms=T reps=R check=ok|FAILED
//
// Rows (float32, uniform in [-2, 2)): sort_vec (sort of 2^24 values), sort_rows (sort(x, -1) of 4096 x 4096),
// argsort_rows (argsort(x, -1) of 4096 x 4096), topk_vec (topk(x, 100) of 2^24), topk_rows (topk(x, 100, -1) of
// 4096 x 4096). Options: --rows a,b (default: all). Each rep builds the graph and evaluates it; the median of the
// reps after two warm-up reps is reported (7 reps, 3 when a rep takes over 500 ms).

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
using Clock = std::chrono::steady_clock;

constexpr int vec_n = 1 << 24;
constexpr int side = 4096;
constexpr int top_k = 100;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

array uniform_input(const nuvec::Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-2.0F, 2.0F);
  std::vector<float> v(nuvec::shape_size(shape));
  for (auto& e : v) {
    e = dist(gen);
  }
  array a(v.begin(), shape, nuvec::float32);
  nuvec::eval(a);
  return a;
}

/// Every row of `out` (rows of `n`) is non-decreasing.
bool rows_sorted(const array& out, size_t n) {
  const auto* y = out.data<float>();
  for (size_t i = 1; i < out.size(); ++i) {
    if (i % n != 0 && y[i - 1] > y[i]) {
      return false;
    }
  }
  return true;
}

/// Each row of `idx` (rows of `n`) orders the matching row of `x`.
bool indices_sort(const array& x, const array& idx, size_t n) {
  const auto* v = x.data<float>();
  const auto* p = idx.data<uint32_t>();
  for (size_t i = 1; i < idx.size(); ++i) {
    if (i % n != 0 && v[(i / n) * n + p[i - 1]] > v[(i / n) * n + p[i]]) {
      return false;
    }
  }
  return true;
}

/// Each row of `top` (k values) holds values no input value of its row (n values) exceeds more than k times.
bool is_topk(const array& x, const array& top, size_t n, size_t k) {
  const auto* v = x.data<float>();
  const auto* t = top.data<float>();
  for (size_t r = 0; r < x.size() / n; ++r) {
    const float smallest = *std::min_element(t + r * k, t + (r + 1) * k);
    const auto above = std::count_if(v + r * n, v + (r + 1) * n, [&](float e) { return e > smallest; });
    if (static_cast<size_t>(above) >= k) {
      return false;
    }
  }
  return true;
}

/// An evaluated row-major copy (topk returns a strided slice).
array dense(const array& a) {
  auto c = nuvec::contiguous(a);
  nuvec::eval(c);
  return c;
}

struct Row {
  std::string name;
  std::function<array()> run;
  std::function<bool(const array&)> check;
};

void time_row(const Row& row) {
  try {
    double warm_ms = 0;
    for (int w = 0; w < 2; ++w) {
      auto t0 = Clock::now();
      auto out = row.run();
      nuvec::eval(out);
      warm_ms = ms_since(t0);
    }
    const int reps = warm_ms > 500.0 ? 3 : 7;
    std::vector<double> times;
    array last(0.0F);
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      auto out = row.run();
      nuvec::eval(out);
      times.push_back(ms_since(t0));
      last = std::move(out);
    }
    std::sort(times.begin(), times.end());
    std::printf("row %s median_ms=%.3f min_ms=%.3f reps=%d check=%s\n", row.name.c_str(), times[times.size() / 2],
                times.front(), reps, row.check(last) ? "ok" : "FAILED");
  } catch (const std::exception& e) {
    std::printf("error %s %s\n", row.name.c_str(), e.what());
  }
  std::fflush(stdout);
  nuvec::clear_cache();
}

}  // namespace

int main(int argc, char** argv) {
  std::string wanted;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--rows") {
      wanted = std::string(argv[i + 1]).append(",").insert(0, 1, ',');
    }
  }
  const auto vec = uniform_input({vec_n}, 1);
  const auto square = uniform_input({side, side}, 3);
  const std::vector<Row> rows = {
      {"sort_vec", [&] { return nuvec::sort(vec); }, [](const array& o) { return rows_sorted(o, vec_n); }},
      {"sort_rows", [&] { return nuvec::sort(square, -1); }, [](const array& o) { return rows_sorted(o, side); }},
      {"argsort_rows", [&] { return nuvec::argsort(square, -1); },
       [&](const array& o) { return indices_sort(square, o, side); }},
      {"topk_vec", [&] { return nuvec::topk(vec, top_k); },
       [&](const array& o) { return is_topk(vec, dense(o), vec_n, top_k); }},
      {"topk_rows", [&] { return nuvec::topk(square, top_k, -1); },
       [&](const array& o) { return is_topk(square, dense(o), side, top_k); }},
  };
  for (const auto& row : rows) {
    if (wanted.empty() || wanted.find(std::string(1, ',').append(row.name).append(",")) != std::string::npos) {
      time_row(row);
    }
  }
  return 0;
}
