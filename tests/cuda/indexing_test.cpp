// Gather, scatter, slice-update, dynamic-slice and pad kernels on the GPU against the CPU backend: value and index
// dtypes, negative and out-of-range indices (gathers clamp, scatters drop), duplicate scatter indices (the last
// wins for scatter, all combine for the reductions: integer-valued updates, so any order sums exactly), views as
// inputs, empty index arrays, an embedding lookup and a KV-cache update.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::same_values;

const Device gpu = Device::gpu;
const Device cpu = Device::cpu;

const std::vector<Dtype> dtypes = {float32, float16, bfloat16, int32, int64, uint8, bool_};
const std::vector<Dtype> index_dtypes = {int32, int64, uint32, int8, uint16};

/// The op on both devices: the GPU's result matches the CPU's and, unless the rule runs on the host, lives on the
/// GPU.
template <class F>
void compare(const std::string& what, F&& op, bool on_gpu = true) {
  auto expected = op(cpu);
  auto actual = op(gpu);
  EXPECT_TRUE(same_values(actual, expected)) << what;
  if (on_gpu) {
    EXPECT_EQ(actual.data_device(), gpu) << what;
  }
}

/// Indices into an axis of size n, converted (wrapping, as astype does) to `d`: in range, negative, past either
/// end, and repeated.
array indices_for(int n, Dtype d, Shape shape = {8}) {
  auto values = array({0, 2, -1, n - 1, n + 3, -n - 2, 1, 2}, shape);
  return astype(values, d, cpu);
}

/// Integers in [-2, 2] as `d` (bools where d is bool): sums and products of a few of them are exact in every order,
/// even in bfloat16.
array integer_values(const Shape& shape, Dtype d, std::mt19937& rng) {
  auto small = subtract(remainder(test::random_array(shape, int32, rng), array(5), cpu), array(2), cpu);
  return astype(small, d, cpu);
}

std::string name_of(Dtype d, Dtype index) {
  return std::string(dtype_name(d)) + " indexed by " + std::string(dtype_name(index));
}

TEST(CudaIndexing, TakeMatchesTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(21);
  for (Dtype d : dtypes) {
    auto a = test::random_array({9, 16}, d, rng);
    auto odd = test::random_array({9, 5}, d, rng);
    auto t = transpose(test::random_array({16, 9}, d, rng), cpu);
    for (Dtype i : index_dtypes) {
      const auto what = name_of(d, i);
      auto rows = indices_for(9, i);
      auto columns = indices_for(16, i, {2, 4});
      compare(what + " rows", [&](Device dev) { return take(a, rows, 0, dev); });
      compare(what + " rows of 5", [&](Device dev) { return take(odd, rows, 0, dev); });
      compare(what + " columns", [&](Device dev) { return take(a, columns, 1, dev); });
      compare(what + " flat", [&](Device dev) { return take(a, columns, dev); });
      compare(what + " rows of a transposed view", [&](Device dev) { return take(t, columns, 0, dev); });
      compare(what + " columns of a transposed view", [&](Device dev) { return take(t, rows, 1, dev); });
      compare(what + " empty indices", [&](Device dev) { return take(a, zeros({0}, i, cpu), 0, dev); });
    }
  }
}

TEST(CudaIndexing, GatherOnSeveralAxesMatchesTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(22);
  for (Dtype d : dtypes) {
    auto a = test::random_array({6, 7, 8}, d, rng);
    // Index arrays of two dtypes broadcast together to (8, 8): views with zero strides.
    auto first = reshape(indices_for(6, int32, {8}), {8, 1}, cpu);
    auto second = reshape(indices_for(8, uint32, {8}), {1, 8}, cpu);
    compare(std::string(dtype_name(d)) + " slices", [&](Device dev) {
      return gather(a, {first, second}, {0, 2}, {2, 7, 3}, dev);
    });
    compare(std::string(dtype_name(d)) + " no axes", [&](Device dev) {
      return gather(a, std::vector<array>{}, std::vector<int>{}, {2, 3, 4}, dev);
    });
    compare(std::string(dtype_name(d)) + " of a view", [&](Device dev) {
      return gather(transpose(a, {2, 0, 1}, cpu), {second}, {1}, {8, 1, 7}, dev);
    });
  }
}

TEST(CudaIndexing, TakeAlongAxisMatchesTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(23);
  for (Dtype d : dtypes) {
    auto a = test::random_array({5, 9}, d, rng);
    auto row = test::random_array({1, 9}, d, rng);
    auto t = transpose(test::random_array({9, 5}, d, rng), cpu);
    for (Dtype i : index_dtypes) {
      const auto what = name_of(d, i);
      auto idx = astype(array({0, 2, -1, 8, 12, -11, 4, 4}, {1, 8}), i, cpu);
      auto down = astype(array({0, -1, 4, 7, -6, 2}, {6, 1}), i, cpu);
      compare(what + " axis 1, indices broadcast", [&](Device dev) { return take_along_axis(a, idx, 1, dev); });
      compare(what + " axis 0", [&](Device dev) { return take_along_axis(a, down, 0, dev); });
      compare(what + " broadcast source", [&](Device dev) { return take_along_axis(row, down, 0, dev); });
      compare(what + " transposed", [&](Device dev) { return take_along_axis(t, idx, 1, dev); });
    }
  }
}

TEST(CudaIndexing, ScatterAlongAxisMatchesTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(24);
  for (Dtype d : dtypes) {
    auto a = integer_values({5, 9}, d, rng);
    auto t = transpose(integer_values({9, 5}, d, rng), cpu);
    auto values = integer_values({5, 8}, d, rng);
    auto values_view = transpose(integer_values({8, 5}, d, rng), cpu);
    for (Dtype i : index_dtypes) {
      const auto what = name_of(d, i);
      // Repeated positions along the axis: put keeps the last, the sum adds them all; 12 and -11 are dropped.
      auto idx = astype(array({0, 2, -1, 8, 12, -11, 2, 2}, {1, 8}), i, cpu);
      compare(what + " put", [&](Device dev) { return put_along_axis(a, idx, values, 1, dev); });
      compare(what + " add", [&](Device dev) { return scatter_add_axis(a, idx, values, 1, dev); });
      compare(what + " put into a view", [&](Device dev) { return put_along_axis(t, idx, values, 1, dev); });
      compare(what + " add a view", [&](Device dev) { return scatter_add_axis(a, idx, values_view, 1, dev); });
      compare(what + " empty", [&](Device dev) {
        return put_along_axis(a, zeros({5, 0}, i, cpu), zeros({5, 0}, d, cpu), 1, dev);
      });
    }
  }
}

TEST(CudaIndexing, ScatterMatchesTheCpuForEveryType) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(25);
  using ScatterFn =
      array (*)(const array&, const std::vector<array>&, const array&, const std::vector<int>&, StreamOrDevice);
  const std::vector<std::pair<const char*, ScatterFn>> scatters = {
      {"scatter", scatter}, {"add", scatter_add}, {"prod", scatter_prod}, {"max", scatter_max}, {"min", scatter_min}};
  for (Dtype d : dtypes) {
    auto a = integer_values({6, 5}, d, rng);
    auto t = transpose(integer_values({5, 6}, d, rng), cpu);
    auto rows = integer_values({8, 1, 5}, d, rng);
    auto windows = integer_values({8, 3, 5}, d, rng);  // overlapping 3-row slices
    auto cells = integer_values({8, 1, 1}, d, rng);
    auto rows_view = transpose(integer_values({5, 1, 8}, d, rng), {2, 1, 0}, cpu);
    for (Dtype i : index_dtypes) {
      auto idx = indices_for(6, i);  // 1 and 2 repeat, 9 and -8 are dropped (unsigned: so are the negatives)
      auto columns = indices_for(5, i);
      for (const auto& [name, f] : scatters) {
        const auto what = name_of(d, i) + " " + name;
        compare(what + " rows", [&](Device dev) { return f(a, {idx}, rows, {0}, dev); });
        compare(what + " windows", [&](Device dev) { return f(a, {idx}, windows, {0}, dev); });
        compare(what + " cells", [&](Device dev) { return f(a, {idx, columns}, cells, {0, 1}, dev); });
        compare(what + " into a view", [&](Device dev) { return f(t, {idx}, rows, {0}, dev); });
        compare(what + " from a view", [&](Device dev) { return f(a, {idx}, rows_view, {0}, dev); });
        compare(what + " no indices", [&](Device dev) {
          return f(a, {zeros({0}, i, cpu)}, zeros({0, 1, 5}, d, cpu), {0}, dev);
        });
      }
    }
  }
}

TEST(CudaIndexing, ScatterAddOfFloatsMatchesTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(26);
  // Many duplicates of non-integer values: the GPU adds them in another order, within the tolerance.
  auto a = test::random_array({50, 64}, float32, rng);
  auto idx = astype(test::random_array({2000}, float32, rng, -60, 60), int32, cpu);  // some out of range
  auto updates = test::random_array({2000, 1, 64}, float32, rng);
  compare("float32 embedding gradient", [&](Device dev) { return scatter_add(a, {idx}, updates, {0}, dev); });
}

TEST(CudaIndexing, SliceUpdatesMatchTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(27);
  for (Dtype d : dtypes) {
    auto a = integer_values({6, 9}, d, rng);
    auto t = transpose(integer_values({9, 6}, d, rng), cpu);
    auto u = integer_values({2, 3}, d, rng);
    auto ut = transpose(integer_values({3, 2}, d, rng), cpu);
    const std::string what(dtype_name(d));
    compare(what + " set", [&](Device dev) { return slice_update(a, u, {1, 2}, {3, 5}, dev); });
    compare(what + " set strided", [&](Device dev) { return slice_update(a, u, {0, 8}, {4, 0}, {3, -3}, dev); });
    compare(what + " set into a view", [&](Device dev) { return slice_update(t, ut, {1, 2}, {3, 5}, dev); });
    compare(what + " set a broadcast", [&](Device dev) {
      return slice_update(a, astype(array(1), d, cpu), {1, 2}, {3, 5}, dev);
    });
    compare(what + " add", [&](Device dev) { return slice_update_add(a, u, {1, 2}, {3, 5}, dev); });
    compare(what + " prod strided", [&](Device dev) { return slice_update_prod(a, ut, {5, 0}, {1, 9}, {-2, 3}, dev); });
    compare(what + " max", [&](Device dev) { return slice_update_max(t, u, {1, 2}, {3, 5}, dev); });
    compare(what + " min", [&](Device dev) { return slice_update_min(a, u, {4, 6}, {6, 9}, dev); });
  }
}

TEST(CudaIndexing, DynamicSlicesMatchTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(28);
  for (Dtype d : dtypes) {
    auto a = test::random_array({6, 7, 8}, d, rng);
    auto t = transpose(test::random_array({8, 7, 6}, d, rng), cpu);
    auto u = test::random_array({2, 7, 4}, d, rng);
    auto u_view = transpose(test::random_array({4, 7, 2}, d, rng), cpu);
    for (Dtype i : index_dtypes) {
      const auto what = name_of(d, i);
      // Starts past the end and negative ones are clamped so the slice fits.
      for (const auto& start : {array({2, 3}), array({-1, 9}), array({5, -30})}) {
        auto s = astype(start, i, cpu);
        compare(what + " slice", [&](Device dev) { return slice(a, s, {0, 2}, {2, 7, 4}, dev); });
        compare(what + " slice of a view", [&](Device dev) { return slice(t, s, {0, 2}, {2, 7, 4}, dev); });
        compare(what + " update", [&](Device dev) { return slice_update(a, u, s, {0, 2}, dev); });
        compare(what + " update a view", [&](Device dev) { return slice_update(t, u, s, {0, 2}, dev); });
        compare(what + " update from a view", [&](Device dev) { return slice_update(a, u_view, s, {0, 2}, dev); });
      }
      compare(what + " scalar start", [&](Device dev) {
        return slice(a, astype(array(4), i, cpu), {1}, {6, 2, 8}, dev);
      });
    }
  }
}

TEST(CudaIndexing, PadMatchesTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(29);
  for (Dtype d : dtypes) {
    auto a = test::random_array({4, 5, 3}, d, rng);
    auto t = transpose(test::random_array({3, 5, 4}, d, rng), cpu);
    const std::string what(dtype_name(d));
    compare(what + " every axis", [&](Device dev) {
      return pad(a, {{1, 2}, {0, 3}, {2, 2}}, array(3), "constant", dev);
    });
    compare(what + " some axes", [&](Device dev) {
      return pad(a, {1, 2}, {1, 0}, {0, 2}, array(-1), "constant", dev);
    });
    compare(what + " a view", [&](Device dev) { return pad(t, {{1, 1}, {2, 0}, {0, 1}}, array(0), "constant", dev); });
    compare(what + " empty", [&](Device dev) {
      return pad(zeros({0, 3}, d, cpu), {{1, 1}, {0, 0}}, array(2), "constant", dev);
    });
  }
}

TEST(CudaIndexing, EmbeddingRowsOfALargeTableMatchTheCpu) {
  NUVEC_REQUIRE_GPU();
  // (50000, 4096) bfloat16 with every value an exact small integer: row r is (r mod 251) + (column mod 6).
  auto rows = astype(remainder(arange(50000, int32, cpu), array(251), cpu), bfloat16, cpu);
  auto columns = astype(remainder(arange(4096, int32, cpu), array(6), cpu), bfloat16, cpu);
  auto table = add(reshape(rows, {50000, 1}, cpu), reshape(columns, {1, 4096}, cpu), cpu);
  table.eval();
  auto tokens = array({17, 49999, -1, 0, 123, 60000, -50001, 31337, 251, 502, 17, 4242}, {2, 6});
  compare("embedding", [&](Device dev) { return take(table, tokens, 0, dev); });
}

TEST(CudaIndexing, KvCacheUpdatesMatchTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(30);
  auto cache = test::random_array({1, 8, 4096, 128}, bfloat16, rng);
  auto token = test::random_array({1, 8, 1, 128}, bfloat16, rng);
  auto block = test::random_array({1, 8, 16, 128}, bfloat16, rng);
  for (int position : {17, 4095, -1, 10000}) {
    auto at = array({position});
    compare("token at " + std::to_string(position),
            [&](Device dev) { return slice_update(cache, token, at, {2}, dev); });
    compare("block at " + std::to_string(position),
            [&](Device dev) { return slice_update(cache, block, at, {2}, dev); });
    compare("read at " + std::to_string(position), [&](Device dev) {
      return slice(cache, at, {2}, {1, 8, 16, 128}, dev);
    });
  }
  // A decode loop: each step writes into the previous step's result (donated where nothing else holds it).
  auto decode = [&](Device dev) {
    auto c = cache;
    for (int step = 0; step < 4; ++step) {
      auto value = multiply(token, array(static_cast<float>(step + 1), bfloat16), dev);
      c = slice_update(c, value, array({100 + step}), {2}, dev);
    }
    return c;
  };
  compare("decode loop", decode);
}

TEST(CudaIndexing, ComplexReductionsRunOnTheHost) {
  NUVEC_REQUIRE_GPU();
  array z(std::vector<complex64_t>{{1, 2}, {3, -4}, {0, 1}}.begin(), {3}, complex64);
  array u(std::vector<complex64_t>{{1, 1}, {2, 2}}.begin(), {2, 1}, complex64);
  auto idx = array({2, 2});
  auto expected = scatter_add(z, {idx}, u, {0}, cpu);
  auto actual = scatter_add(z, {idx}, u, {0}, gpu);
  EXPECT_TRUE(array_equal(actual, expected, false, cpu).item<bool>());
  auto moved = scatter(z, {idx}, u, {0}, gpu);
  EXPECT_TRUE(array_equal(moved, scatter(z, {idx}, u, {0}, cpu), false, cpu).item<bool>());
  EXPECT_EQ(moved.data_device(), gpu);
}

}  // namespace
}  // namespace nuvec
