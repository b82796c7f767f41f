// nuvec_bench: times nuvec on the rows of the core benchmark and prints one machine-readable line per event,
// for bench/run_core.py to join with NumPy's figures:
//
//   bandwidth copy_1t_gbs=G copy_2t_gbs=G ...          STREAM-like copy (best of several), the floor's bandwidth
//   start NAME bytes=B flops=F elems=N                  before a row runs (bytes: what an ideal kernel reads+writes)
//   row NAME median_ms=T min_ms=T reps=R check=ok       a row that ran (check: sampled results against the host)
//   error NAME MESSAGE                                  a row that threw; the other rows go on
//
// Options: --rows a,b,c (default: every row), --list (one row a line: NAME bytes=B flops=F), --no-bandwidth.
// Each rep builds the graph and evaluates it (eval(out)); inputs are random, pre-evaluated, and shared by rows.

#include <nuvec/cpu/thread_pool.h>
#include <nuvec/nuvec.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using nuvec::array;
using Clock = std::chrono::steady_clock;

constexpr int64_t vec_n = int64_t{1} << 24;  // element-wise rows: 2^24 float32 (64 MiB per array)
constexpr int square_side = 4096;            // reductions, softmax, transpose: 4096 x 4096 float32
constexpr int chain_n = 1024;                // dispatch-overhead row
constexpr int chain_steps = 50;              // each step is two ops: y * 1.0001f, then + 0.5f
constexpr int vocab = 32000;                 // embedding row: take 4096 rows of a 32000 x 4096 float32 table
constexpr int embed_dim = 4096;
constexpr int embed_rows = 4096;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// ---------------------------------------------------------------- the floor's bandwidth

/// Owns a page-aligned, pre-faulted host buffer.
struct HostBuffer {
  explicit HostBuffer(size_t bytes) : size(bytes), ptr(static_cast<char*>(std::aligned_alloc(4096, bytes))) {
    if (ptr == nullptr) {
      throw std::bad_alloc();
    }
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { std::free(ptr); }
  size_t size;
  char* ptr;
};

/// Copies the first `bytes` of src to dst split across `threads` threads; returns the elapsed milliseconds.
double timed_copy(const HostBuffer& src, HostBuffer& dst, size_t bytes, int threads) {
  const size_t chunk = bytes / static_cast<size_t>(threads);
  auto t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) {
    workers.emplace_back([&, t] { std::memcpy(dst.ptr + t * chunk, src.ptr + t * chunk, chunk); });
  }
  std::memcpy(dst.ptr, src.ptr, chunk);
  for (auto& w : workers) {
    w.join();
  }
  return ms_since(t0);
}

/// The best copy bandwidth (GB/s, read + write counted) of `bytes` with `threads` threads over `reps` reps.
double copy_gbs(const HostBuffer& src, HostBuffer& dst, size_t bytes, int threads, int reps) {
  double best = 1e30;
  for (int rep = 0; rep < reps; ++rep) {
    best = std::min(best, timed_copy(src, dst, bytes, threads));
  }
  return 2.0 * static_cast<double>(bytes) / (best * 1e-3) / 1e9;
}

/// STREAM-like copy of 512 MiB (counted as 1 GiB moved: read + write), best of 7, with 1 and 2 threads: the floor.
/// Also a 64 MiB copy with 2 threads, the working set of the element-wise rows: on a machine whose last-level cache
/// holds part of it, rows can beat the DRAM floor, and this figure shows by how much.
void measure_bandwidth() {
  constexpr size_t bytes = size_t{512} << 20;
  constexpr size_t row_bytes = size_t{64} << 20;
  HostBuffer src(bytes);
  HostBuffer dst(bytes);
  std::memset(src.ptr, 1, bytes);  // fault the pages in before timing
  std::memset(dst.ptr, 2, bytes);
  const double one = copy_gbs(src, dst, bytes, 1, 7);
  const double two = copy_gbs(src, dst, bytes, 2, 7);
  const double row_two = copy_gbs(src, dst, row_bytes, 2, 15);
  std::printf("bandwidth copy_1t_gbs=%.2f copy_2t_gbs=%.2f copy_64mib_2t_gbs=%.2f bytes=%zu\n", one, two, row_two,
              2 * bytes);
  std::fflush(stdout);
}

// ---------------------------------------------------------------- inputs

/// Host values uniform in [lo, hi), reproducible per seed.
std::vector<float> host_uniform(size_t n, uint32_t seed, float lo = -2.0F, float hi = 2.0F) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& e : v) {
    e = dist(gen);
  }
  return v;
}

/// An evaluated nuvec array holding `host` (copied) and the host values kept for checks.
struct Input {
  std::vector<float> host;
  array dev;
};

std::shared_ptr<Input> make_input(size_t n, uint32_t seed, const nuvec::Shape& shape) {
  auto host = host_uniform(n, seed);
  array dev(host.begin(), shape, nuvec::float32);
  nuvec::eval(dev);
  return std::make_shared<Input>(Input{std::move(host), dev});
}

/// Inputs are created on first use and shared by the rows that need them.
struct Inputs {
  std::shared_ptr<Input> x, y, square, chain, table;
  std::shared_ptr<Input> mat_a[2], mat_b[2];  // 1024 and 2048

  const Input& vec_x() { return get(x, vec_n, 1, {static_cast<int>(vec_n)}); }
  const Input& vec_y() { return get(y, vec_n, 2, {static_cast<int>(vec_n)}); }
  const Input& sq() { return get(square, int64_t{square_side} * square_side, 3, {square_side, square_side}); }
  const Input& chain_x() { return get(chain, chain_n, 4, {chain_n}); }
  const Input& embeddings() { return get(table, int64_t{vocab} * embed_dim, 9, {vocab, embed_dim}); }
  const Input& a(int n) { return get(mat_a[n == 2048 ? 1 : 0], int64_t{n} * n, n == 2048 ? 6U : 5U, {n, n}); }
  const Input& b(int n) { return get(mat_b[n == 2048 ? 1 : 0], int64_t{n} * n, n == 2048 ? 8U : 7U, {n, n}); }

 private:
  static const Input& get(std::shared_ptr<Input>& slot, int64_t n, uint32_t seed, const nuvec::Shape& shape) {
    if (!slot) {
      slot = make_input(static_cast<size_t>(n), seed, shape);
    }
    return *slot;
  }
};

// ---------------------------------------------------------------- checks

/// Element `flat` (row-major index) of an evaluated float32 or bfloat16 array, as double.
double element(const array& a, int64_t flat) {
  int64_t offset = 0;
  for (int ax = a.ndim() - 1; ax >= 0; --ax) {
    const int64_t dim = a.shape(ax);
    offset += (flat % dim) * a.strides(ax);
    flat /= dim;
  }
  if (a.dtype() == nuvec::float32) {
    return a.data<float>()[offset];
  }
  if (a.dtype() == nuvec::bfloat16) {
    return static_cast<float>(a.data<nuvec::bfloat16_t>()[offset]);
  }
  throw std::runtime_error("check reads float32 or bfloat16 only");
}

/// Compares `samples` spread-out elements of `out` with expected(i); "ok" or a description of the first mismatch.
std::string check_samples(const array& out, nuvec::Dtype dtype, const nuvec::Shape& shape, int samples,
                          const std::function<double(int64_t)>& expected,
                          const std::function<double(int64_t)>& tolerance) {
  if (out.dtype() != dtype || out.shape() != shape) {
    return "bad_shape_or_dtype";
  }
  const int64_t n = static_cast<int64_t>(out.size());
  std::mt19937_64 gen(42);
  for (int s = 0; s < samples; ++s) {
    const int64_t i = s == 0 ? 0 : s == 1 ? n - 1 : static_cast<int64_t>(gen() % static_cast<uint64_t>(n));
    const double got = element(out, i);
    const double want = expected(i);
    if (!(std::abs(got - want) <= tolerance(i))) {  // also catches NaN
      std::ostringstream msg;
      msg << "FAIL(at=" << i << ",got=" << got << ",want=" << want << ")";
      return msg.str();
    }
  }
  return "ok";
}

std::function<double(int64_t)> relative(double rtol, double atol, const std::function<double(int64_t)>& expected) {
  return [=](int64_t i) { return atol + rtol * std::abs(expected(i)); };
}

// ---------------------------------------------------------------- rows

/// A benchmark row: `prepare` creates the inputs and returns the timed body and a check of its last output.
struct Case {
  std::function<array()> run;
  std::function<std::string(const array&)> check;
};

struct Row {
  std::string name;
  double bytes;  // what an ideal kernel reads and writes (0: no bandwidth floor)
  double flops;  // 0 unless compute-bound
  int64_t elems;
  std::function<Case(Inputs&)> prepare;
};

/// `magnitude(x, y)` bounds the terms of the expression, so cancellation does not fail a correct kernel.
Case elementwise_case(Inputs& in, int inputs, const std::function<array(const array&, const array&)>& op,
                      const std::function<double(float, float)>& host_op,
                      const std::function<double(float, float)>& magnitude, double rtol) {
  const Input& x = in.vec_x();
  const Input& y = inputs > 1 ? in.vec_y() : x;
  array xd = x.dev;
  array yd = y.dev;
  auto expected = [&x, &y, host_op](int64_t i) { return host_op(x.host[i], y.host[i]); };
  auto tolerance = [&x, &y, magnitude, rtol](int64_t i) { return 1e-7 + rtol * magnitude(x.host[i], y.host[i]); };
  return {[=] { return op(xd, yd); },
          [=](const array& out) {
            return check_samples(out, nuvec::float32, {static_cast<int>(vec_n)}, 256, expected, tolerance);
          }};
}

/// Row-wise (axis = -1) or column-wise (axis = 0) reduction checks of the 4096 x 4096 input.
Case reduce_case(Inputs& in, int axis, bool is_max) {
  const Input& x = in.sq();
  array xd = x.dev;
  auto expected = [&x, axis, is_max](int64_t k) {
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t j = 0; j < square_side; ++j) {
      const float v = axis == -1 ? x.host[k * square_side + j] : x.host[j * square_side + k];
      acc = is_max ? std::max(acc, static_cast<double>(v)) : acc + v;
    }
    return acc;
  };
  return {[=] { return is_max ? nuvec::max(xd, axis) : nuvec::sum(xd, axis); },
          [=](const array& out) {
            return check_samples(out, nuvec::float32, {square_side}, 16, expected,
                                 [is_max](int64_t) { return is_max ? 0.0 : 2e-3; });
          }};
}

Case matmul_case(Inputs& in, int n, nuvec::Dtype dtype) {
  const Input& a = in.a(n);
  const Input& b = in.b(n);
  array ad = a.dev;
  array bd = b.dev;
  const bool bf16 = dtype == nuvec::bfloat16;
  if (bf16) {
    ad = nuvec::astype(ad, dtype);
    bd = nuvec::astype(bd, dtype);
    nuvec::eval(ad, bd);
  }
  auto round = [bf16](float v) { return bf16 ? static_cast<double>(static_cast<float>(nuvec::bfloat16_t(v))) : v; };
  auto dot = [&a, &b, n, round](int64_t k, bool magnitude) {
    const int64_t i = k / n;
    const int64_t j = k % n;
    double acc = 0;
    for (int64_t p = 0; p < n; ++p) {
      const double t = round(a.host[i * n + p]) * round(b.host[p * n + j]);
      acc += magnitude ? std::abs(t) : t;
    }
    return acc;
  };
  const double rtol = bf16 ? 1e-2 : 1e-5;  // relative to sum |a_ip b_pj|; bf16 also rounds its output
  return {[=] { return nuvec::matmul(ad, bd); },
          [=](const array& out) {
            return check_samples(
                out, dtype, {n, n}, 16, [dot](int64_t k) { return dot(k, false); },
                [dot, rtol](int64_t k) { return 1e-6 + rtol * dot(k, true); });
          }};
}

std::vector<Row> make_rows() {
  const double vec_bytes = 4.0 * vec_n;
  const double sq_bytes = 4.0 * square_side * square_side;
  std::vector<Row> rows;
  rows.push_back({"add", 3 * vec_bytes, 0, vec_n, [](Inputs& in) {
                    return elementwise_case(
                        in, 2, [](const array& x, const array& y) { return x + y; },
                        [](float x, float y) { return x + y; }, [](float x, float y) { return std::abs(x + y); }, 1e-6);
                  }});
  rows.push_back({"mul_add", 3 * vec_bytes, 0, vec_n, [](Inputs& in) {
                    return elementwise_case(
                        in, 2, [](const array& x, const array& y) { return x * y + x; },
                        [](float x, float y) { return static_cast<double>(x) * y + x; },
                        [](float x, float y) { return std::abs(static_cast<double>(x) * y) + std::abs(x); }, 1e-6);
                  }});
  rows.push_back({"exp", 2 * vec_bytes, 0, vec_n, [](Inputs& in) {
                    return elementwise_case(
                        in, 1, [](const array& x, const array&) { return nuvec::exp(x); },
                        [](float x, float) { return std::exp(static_cast<double>(x)); },
                        [](float x, float) { return std::exp(static_cast<double>(x)); }, 1e-5);
                  }});
  rows.push_back({"tanh", 2 * vec_bytes, 0, vec_n, [](Inputs& in) {
                    return elementwise_case(
                        in, 1, [](const array& x, const array&) { return nuvec::tanh(x); },
                        [](float x, float) { return std::tanh(static_cast<double>(x)); },
                        [](float x, float) { return std::abs(std::tanh(static_cast<double>(x))); }, 1e-5);
                  }});
  rows.push_back({"sum_all", sq_bytes, 0, int64_t{square_side} * square_side, [](Inputs& in) {
                    const Input& x = in.sq();
                    array xd = x.dev;
                    double total = 0;
                    double magnitude = 0;
                    for (float v : x.host) {
                      total += v;
                      magnitude += std::abs(v);
                    }
                    return Case{[=] { return nuvec::sum(xd); },
                                [=](const array& out) {
                                  return check_samples(
                                      out, nuvec::float32, {}, 1, [total](int64_t) { return total; },
                                      [magnitude](int64_t) { return 1e-5 * magnitude; });
                                }};
                  }});
  rows.push_back({"sum_rows", sq_bytes + 4.0 * square_side, 0, int64_t{square_side} * square_side,
                  [](Inputs& in) { return reduce_case(in, -1, false); }});
  rows.push_back({"sum_cols", sq_bytes + 4.0 * square_side, 0, int64_t{square_side} * square_side,
                  [](Inputs& in) { return reduce_case(in, 0, false); }});
  rows.push_back({"max_rows", sq_bytes + 4.0 * square_side, 0, int64_t{square_side} * square_side,
                  [](Inputs& in) { return reduce_case(in, -1, true); }});
  rows.push_back({"softmax_rows", 2 * sq_bytes, 0, int64_t{square_side} * square_side, [](Inputs& in) {
                    const Input& x = in.sq();
                    array xd = x.dev;
                    auto expected = [&x](int64_t k) {
                      const float* row = x.host.data() + (k / square_side) * square_side;
                      const double m = *std::max_element(row, row + square_side);
                      double denom = 0;
                      for (int j = 0; j < square_side; ++j) {
                        denom += std::exp(row[j] - m);
                      }
                      return std::exp(row[k % square_side] - m) / denom;
                    };
                    return Case{[=] { return nuvec::softmax(xd, -1); },
                                [=](const array& out) {
                                  return check_samples(out, nuvec::float32, {square_side, square_side}, 16, expected,
                                                       relative(1e-4, 1e-9, expected));
                                }};
                  }});
  rows.push_back({"transpose_copy", 2 * sq_bytes, 0, int64_t{square_side} * square_side, [](Inputs& in) {
                    const Input& x = in.sq();
                    array xd = x.dev;
                    auto expected = [&x](int64_t k) {
                      return static_cast<double>(x.host[(k % square_side) * square_side + k / square_side]);
                    };
                    return Case{[=] { return nuvec::contiguous(nuvec::transpose(xd)); },
                                [=](const array& out) {
                                  if (!out.flags().row_contiguous) {
                                    return std::string("FAIL(not_row_contiguous)");
                                  }
                                  return check_samples(out, nuvec::float32, {square_side, square_side}, 256, expected,
                                                       [](int64_t) { return 0.0; });
                                }};
                  }});
  for (int n : {1024, 2048}) {
    rows.push_back({"matmul_f32_" + std::to_string(n), 3 * 4.0 * n * n, 2.0 * n * n * n, int64_t{n} * n,
                    [n](Inputs& in) { return matmul_case(in, n, nuvec::float32); }});
  }
  rows.push_back({"matmul_bf16_1024", 3 * 2.0 * 1024 * 1024, 2.0 * 1024 * 1024 * 1024, int64_t{1024} * 1024,
                  [](Inputs& in) { return matmul_case(in, 1024, nuvec::bfloat16); }});
  rows.push_back({"astype_bf16", vec_bytes + vec_bytes / 2, 0, vec_n, [](Inputs& in) {
                    const Input& x = in.vec_x();
                    array xd = x.dev;
                    auto expected = [&x](int64_t i) {
                      return static_cast<double>(static_cast<float>(nuvec::bfloat16_t(x.host[i])));
                    };
                    return Case{[=] { return nuvec::astype(xd, nuvec::bfloat16); },
                                [=](const array& out) {
                                  return check_samples(out, nuvec::bfloat16, {static_cast<int>(vec_n)}, 256, expected,
                                                       [](int64_t) { return 0.0; });
                                }};
                  }});
  rows.push_back(
      {"embedding_take", 2 * 4.0 * embed_rows * embed_dim, 0, int64_t{embed_rows} * embed_dim, [](Inputs& in) {
         const Input& t = in.embeddings();
         array td = t.dev;
         // Token ids: the same formula as run_core.py's NumPy side.
         std::vector<int32_t> host_ids(embed_rows);
         for (int i = 0; i < embed_rows; ++i) {
           host_ids[i] = static_cast<int32_t>((int64_t{i} * 7919 + 13) % vocab);
         }
         array ids(host_ids.begin(), {embed_rows}, nuvec::int32);
         nuvec::eval(ids);
         auto expected = [&t, host_ids](int64_t k) {
           return static_cast<double>(t.host[int64_t{host_ids[k / embed_dim]} * embed_dim + k % embed_dim]);
         };
         return Case{[=] { return nuvec::take(td, ids, 0); },
                     [=](const array& out) {
                       return check_samples(out, nuvec::float32, {embed_rows, embed_dim}, 256, expected,
                                            [](int64_t) { return 0.0; });
                     }};
       }});
  rows.push_back({"chain_100", 0, 0, chain_n, [](Inputs& in) {
                    const Input& x = in.chain_x();
                    array xd = x.dev;
                    auto expected = [&x](int64_t i) {
                      float y = x.host[i];
                      for (int s = 0; s < chain_steps; ++s) {
                        y = y * 1.0001F;
                        y = y + 0.5F;
                      }
                      return static_cast<double>(y);
                    };
                    return Case{[=] {
                                  array y = xd;
                                  for (int s = 0; s < chain_steps; ++s) {
                                    y = y * 1.0001F + 0.5F;
                                  }
                                  return y;
                                },
                                [=](const array& out) {
                                  return check_samples(out, nuvec::float32, {chain_n}, 64, expected,
                                                       relative(1e-5, 1e-5, expected));
                                }};
                  }});
  return rows;
}

// ---------------------------------------------------------------- timing

/// Warm-up reps, then the rep count that fits the row's speed: many for tiny rows, 15 for the usual, fewer when slow.
int reps_for(double warm_ms) {
  if (warm_ms < 1.0) {
    return 201;
  }
  if (warm_ms < 100.0) {
    return 15;
  }
  if (warm_ms < 500.0) {
    return 7;
  }
  return 3;
}

void run_row(const Row& row, Inputs& inputs) {
  std::printf("start %s bytes=%.0f flops=%.0f elems=%lld\n", row.name.c_str(), row.bytes, row.flops,
              static_cast<long long>(row.elems));
  std::fflush(stdout);
  try {
    Case c = row.prepare(inputs);
    double warm_ms = 0;
    for (int w = 0; w < 2; ++w) {
      auto t0 = Clock::now();
      array out = c.run();
      nuvec::eval(out);
      warm_ms = ms_since(t0);
    }
    const int reps = reps_for(warm_ms);
    std::vector<double> times;
    times.reserve(static_cast<size_t>(reps));
    array last(0.0F);
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      array out = c.run();
      nuvec::eval(out);
      times.push_back(ms_since(t0));
      last = std::move(out);  // the previous output is freed here, outside the timed region
    }
    const std::string check = c.check(last);
    std::printf("row %s median_ms=%.6f min_ms=%.6f reps=%d check=%s\n", row.name.c_str(), median(times),
                *std::min_element(times.begin(), times.end()), reps, check.c_str());
  } catch (const std::exception& e) {
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::printf("error %s %s\n", row.name.c_str(), message.c_str());
  }
  std::fflush(stdout);
  nuvec::clear_cache();  // rows start from the same allocator state
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) {
      out.push_back(item);
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Row> rows = make_rows();
  std::vector<std::string> selected;
  bool bandwidth = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--list") {
      for (const Row& r : rows) {
        std::printf("%s bytes=%.0f flops=%.0f\n", r.name.c_str(), r.bytes, r.flops);
      }
      return 0;
    }
    if (arg == "--rows" && i + 1 < argc) {
      selected = split_commas(argv[++i]);
    } else if (arg == "--no-bandwidth") {
      bandwidth = false;
    } else {
      std::fprintf(stderr, "usage: %s [--list] [--rows a,b,c] [--no-bandwidth]\n", argv[0]);
      return 2;
    }
  }
  for (const std::string& name : selected) {
    if (std::none_of(rows.begin(), rows.end(), [&](const Row& r) { return r.name == name; })) {
      std::fprintf(stderr, "unknown row '%s' (see --list)\n", name.c_str());
      return 2;
    }
  }
  std::printf("nuvec threads=%d hardware_concurrency=%u\n", nuvec::cpu::num_threads(),
              std::thread::hardware_concurrency());
  if (bandwidth) {
    measure_bandwidth();
  }
  Inputs inputs;
  for (const Row& row : rows) {
    if (selected.empty() || std::find(selected.begin(), selected.end(), row.name) != selected.end()) {
      run_row(row, inputs);
    }
  }
  return 0;
}
