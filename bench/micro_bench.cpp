// nuvec_micro: Google Benchmark micro-benchmarks for what the core table only samples: the cost of building and
// evaluating a node (dispatch overhead) and how an element-wise op scales from L1-sized to DRAM-sized arrays.
// Run: build/release/bench/nuvec_micro [--benchmark_filter=REGEX]. Times are wall-clock (UseRealTime): kernels run on
// the thread pool, whose work the main thread's CPU time would miss.

#include <benchmark/benchmark.h>
#include <nuvec/nuvec.h>

#include <exception>
#include <random>
#include <vector>

namespace {

using nuvec::array;

/// An evaluated float32 vector of n random values in [-2, 2).
array random_vector(int n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-2.0F, 2.0F);
  std::vector<float> host(static_cast<size_t>(n));
  for (auto& v : host) {
    v = dist(gen);
  }
  array a(host.begin(), {n}, nuvec::float32);
  nuvec::eval(a);
  return a;
}

/// Runs `body` once outside timing; on an error (an op still pending, ...) marks the benchmark skipped instead of
/// ending the whole run.
template <class F>
bool runs(benchmark::State& state, F&& body) {
  try {
    body();
    return true;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

/// Building one binary node, without evaluating it.
void build_node(benchmark::State& state) {
  array x = random_vector(1024, 1);
  array y = random_vector(1024, 2);
  for (auto _ : state) {
    array out = x + y;
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(build_node)->UseRealTime();

/// Building one unary node: the least an op call costs (its checks, its output rules, the node).
void build_unary_node(benchmark::State& state) {
  array x = random_vector(4, 1);
  for (auto _ : state) {
    array out = nuvec::exp(x);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(build_unary_node)->UseRealTime();

/// Building a full reduction: the Reduce node and the reshape that drops the reduced axis.
void build_sum_node(benchmark::State& state) {
  array x = random_vector(4, 1);
  for (auto _ : state) {
    array out = nuvec::sum(x);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(build_sum_node)->UseRealTime();

/// A chain of range(0) ops (alternating * 1.0001f and + 0.5f) over 1024 elements, then one eval.
void chain_eval(benchmark::State& state) {
  array x = random_vector(1024, 3);
  const auto ops = state.range(0);
  auto chain = [&] {
    array y = x;
    for (int64_t i = 0; i < ops; ++i) {
      y = i % 2 == 0 ? y * 1.0001F : y + 0.5F;
    }
    nuvec::eval(y);
  };
  if (!runs(state, chain)) {
    return;
  }
  for (auto _ : state) {
    chain();
  }
  state.counters["per_op"] = benchmark::Counter(
      static_cast<double>(ops), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(chain_eval)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();

/// x + y from L1-sized to DRAM-sized float32 vectors; bytes_per_second counts both reads and the write.
void add(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  array x = random_vector(n, 4);
  array y = random_vector(n, 5);
  auto run = [&] { nuvec::eval(x + y); };
  if (!runs(state, run)) {
    return;
  }
  for (auto _ : state) {
    run();
  }
  state.SetBytesProcessed(state.iterations() * int64_t{3} * n * 4);
}
BENCHMARK(add)->RangeMultiplier(16)->Range(1 << 8, 1 << 24)->Unit(benchmark::kMicrosecond)->UseRealTime();

/// exp(x) over the same sizes (a compute-heavier unary op).
void exp_op(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  array x = random_vector(n, 6);
  auto run = [&] { nuvec::eval(nuvec::exp(x)); };
  if (!runs(state, run)) {
    return;
  }
  for (auto _ : state) {
    run();
  }
  state.SetBytesProcessed(state.iterations() * int64_t{2} * n * 4);
}
BENCHMARK(exp_op)->RangeMultiplier(16)->Range(1 << 8, 1 << 24)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
