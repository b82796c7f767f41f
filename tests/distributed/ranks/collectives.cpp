// The multi-rank tests: the same GoogleTest program runs on every rank (nuvec launch for the ring, mpirun for MPI;
// see tests/CMakeLists.txt). Every rank can compute every other rank's input, so each collective is checked
// against the single-process computation over all ranks' inputs (sum, maximum, minimum, concatenation, slices);
// gradients are checked against central differences of a loss every rank computes, perturbing one rank's input at
// a time.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nuvec/nn/average_gradients.h"
#include "nuvec/nuvec.h"

namespace nuvec::distributed {
namespace {

Group world() { return init(true); }

const std::vector<Dtype> all_dtypes{bool_,   uint8,   uint16,  uint32,   uint64,  int8,     int16,
                                    int32,   int64,   float16, float32,  float64, bfloat16, complex64};

int element_count(const Shape& shape) {
  int n = 1;
  for (int d : shape) {
    n *= d;
  }
  return n;
}

/// Rank r's input: small integers (exact in every dtype and in any order of summation), plus r / 4 in the
/// inexact dtypes.
array input(int r, Dtype dtype, const Shape& shape) {
  const array i = reshape(arange(static_cast<double>(element_count(shape))), shape);
  const array v = remainder(i * 3 + array(7.0 * r), array(11.0));
  if (dtype == bool_) {
    return astype(remainder(v, array(2.0)), bool_);
  }
  const bool is_inexact = issubdtype(dtype, inexact);
  return astype(is_inexact ? v - 5 + array(0.25 * r) : (issubdtype(dtype, signedinteger) ? v - 5 : v), dtype);
}

array combine(const array& a, const array& b, CollectiveKind kind) {
  if (a.dtype() == bool_) {
    return kind == CollectiveKind::all_min ? logical_and(a, b) : logical_or(a, b);
  }
  return kind == CollectiveKind::all_sum ? astype(a + b, a.dtype())
         : kind == CollectiveKind::all_max ? maximum(a, b)
                                           : minimum(a, b);
}

array reference(CollectiveKind kind, Dtype dtype, const Shape& shape, int size) {
  array acc = input(0, dtype, shape);
  for (int r = 1; r < size; ++r) {
    acc = combine(acc, input(r, dtype, shape), kind);
  }
  return acc;
}

void expect_same(const array& got, const array& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_TRUE(array_equal(got, want).item<bool>()) << what;
}

const std::vector<Shape> odd_shapes{{1}, {7}, {3, 5}, {2, 3, 7}};

TEST(Collectives, ReductionsOnEveryDtype) {
  const Group g = world();
  for (Dtype dtype : all_dtypes) {
    for (const Shape& shape : odd_shapes) {
      const array x = input(g.rank(), dtype, shape);
      const std::string what = std::string(dtype_name(dtype)).append(" ").append(shape_string(shape));
      expect_same(all_sum(x), reference(CollectiveKind::all_sum, dtype, shape, g.size()), "all_sum " + what);
      if (dtype != complex64) {
        expect_same(all_max(x), reference(CollectiveKind::all_max, dtype, shape, g.size()), "all_max " + what);
        expect_same(all_min(x), reference(CollectiveKind::all_min, dtype, shape, g.size()), "all_min " + what);
      }
    }
  }
}

TEST(Collectives, GatherAndScatterOnEveryDtype) {
  const Group g = world();
  for (Dtype dtype : all_dtypes) {
    for (const Shape& shape : odd_shapes) {
      std::vector<array> parts;
      for (int r = 0; r < g.size(); ++r) {
        parts.push_back(input(r, dtype, shape));
      }
      const std::string what = std::string(dtype_name(dtype)).append(" ").append(shape_string(shape));
      expect_same(all_gather(parts[static_cast<size_t>(g.rank())]), concatenate(parts, 0), "all_gather " + what);
      // sum_scatter needs axis 0 divisible by the group size.
      Shape tall = shape;
      tall[0] *= g.size();
      const array sum = reference(CollectiveKind::all_sum, dtype, tall, g.size());
      Shape start(tall.size(), 0);
      Shape stop = tall;
      start[0] = g.rank() * shape[0];
      stop[0] = start[0] + shape[0];
      expect_same(sum_scatter(input(g.rank(), dtype, tall)), slice(sum, start, stop), "sum_scatter " + what);
    }
  }
}

TEST(Collectives, LargeArraysTakeBothDirectionsOfTheRing) {
  const Group g = world();
  const Shape shape{3, 100003};
  expect_same(all_sum(input(g.rank(), float32, shape)), reference(CollectiveKind::all_sum, float32, shape, g.size()),
              "all_sum");
  std::vector<array> parts;
  for (int r = 0; r < g.size(); ++r) {
    parts.push_back(input(r, int16, shape));
  }
  expect_same(all_gather(parts[static_cast<size_t>(g.rank())]), concatenate(parts, 0), "all_gather");
  const Shape tall{2 * g.size(), 65539};
  const array sum = reference(CollectiveKind::all_sum, float32, tall, g.size());
  expect_same(sum_scatter(input(g.rank(), float32, tall)),
              slice(sum, {2 * g.rank(), 0}, {2 * g.rank() + 2, 65539}), "sum_scatter");
}

TEST(Collectives, LargeOddSizesOnEveryDtypeTakeBothDirections) {
  const Group g = world();
  // From 256 KiB the ring splits an array in two halves, one per direction, and each half in one block per rank:
  // odd counts just past that size leave the halves, and the blocks of 3 or 4 ranks, of different sizes.
  for (Dtype dtype : all_dtypes) {
    const int items = (256 << 10) / static_cast<int>(dtype.size);
    const Shape flat{items + 13};
    const Shape block{items / 2 + 13};
    const std::string what(dtype_name(dtype));
    const array x = input(g.rank(), dtype, flat);
    expect_same(all_sum(x), reference(CollectiveKind::all_sum, dtype, flat, g.size()), "all_sum " + what);
    if (dtype != complex64) {
      expect_same(all_max(x), reference(CollectiveKind::all_max, dtype, flat, g.size()), "all_max " + what);
      expect_same(all_min(x), reference(CollectiveKind::all_min, dtype, flat, g.size()), "all_min " + what);
    }
    std::vector<array> parts;
    for (int r = 0; r < g.size(); ++r) {
      parts.push_back(input(r, dtype, block));
    }
    expect_same(all_gather(parts[static_cast<size_t>(g.rank())]), concatenate(parts, 0), "all_gather " + what);
    const Shape tall{block[0] * g.size()};
    const array sum = reference(CollectiveKind::all_sum, dtype, tall, g.size());
    expect_same(sum_scatter(input(g.rank(), dtype, tall)),
                slice(sum, {g.rank() * block[0]}, {(g.rank() + 1) * block[0]}), "sum_scatter " + what);
  }
}

TEST(Collectives, SumScatterRefusesAnAxisTheGroupDoesNotDivide) {
  const Group g = world();
  if (g.size() == 1) {
    GTEST_SKIP() << "one rank divides every axis";
  }
  try {
    (void)sum_scatter(zeros({g.size() + 1, 2}, float32));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[sum_scatter]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(g.size() + 1)), std::string::npos) << e.what();
  }
}

TEST(Collectives, NaNWinsMaxAndMin) {
  const Group g = world();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const array x = array({g.rank() == 0 ? nan : 1.0f, 2.0f});
  const array m = all_max(x);
  const array n = all_min(x);
  eval(m, n);
  EXPECT_TRUE(std::isnan(m.data<float>()[0]));
  EXPECT_EQ(m.data<float>()[1], 2.0f);
  EXPECT_TRUE(std::isnan(n.data<float>()[0]));
}

TEST(Collectives, EveryRankGetsTheSameBits) {
  // max(+0, -0) and min(+0, -0) depend on the operands' order: each rank must reduce in the same order, so that
  // data-parallel replicas stay bit for bit equal. Small arrays and ones large enough for both directions.
  const Group g = world();
  for (int n : {3, (1 << 19) + 3}) {
    const array zero = full({n}, g.rank() % 2 == 0 ? 0.0f : -0.0f);
    for (const array& y : {all_max(zero), all_min(zero), all_sum(zero)}) {
      const array bits = view(y, uint32);
      const array gathered = reshape(all_gather(bits), {g.size(), n});
      EXPECT_TRUE(all(equal(gathered, broadcast_to(bits, {g.size(), n}))).item<bool>()) << n;
    }
  }
}

TEST(Collectives, SplitGroupsByColorAndKey) {
  const Group g = world();
  // Colors by parity; keys reversed, so the highest rank of a color comes first.
  const Group sub = g.split(g.rank() % 2, g.size() - g.rank());
  std::vector<int> members;
  for (int r = g.size() - 1; r >= 0; --r) {
    if (r % 2 == g.rank() % 2) {
      members.push_back(r);
    }
  }
  ASSERT_EQ(sub.size(), static_cast<int>(members.size()));
  EXPECT_EQ(members[static_cast<size_t>(sub.rank())], g.rank());
  array want = input(members[0], int32, {5});
  std::vector<array> parts{want};
  for (size_t i = 1; i < members.size(); ++i) {
    want = want + input(members[i], int32, {5});
    parts.push_back(input(members[i], int32, {5}));
  }
  expect_same(all_sum(input(g.rank(), int32, {5}), sub), want, "all_sum over the split group");
  expect_same(all_gather(input(g.rank(), int32, {5}), sub), concatenate(parts, 0), "all_gather over the split group");
}

TEST(Collectives, SendAndReceiveAroundTheRingOnEveryDtype) {
  const Group g = world();
  const int right = (g.rank() + 1) % g.size();
  const int left = (g.rank() + g.size() - 1) % g.size();
  for (Dtype dtype : all_dtypes) {
    const array mine = input(g.rank(), dtype, {3, 7});
    // Even ranks send first, odd ranks receive first: with an odd group size the last even rank's send waits for
    // rank 0's receive, which follows rank 0's own send.
    array got = recv_like(mine, left);
    if (g.rank() % 2 == 0) {
      eval(send(mine, right));
      eval(got);
    } else {
      eval(got);
      eval(send(mine, right));
    }
    expect_same(got, input(left, dtype, {3, 7}), std::string("recv ").append(dtype_name(dtype)));
  }
}

TEST(Collectives, MismatchedShapesAreNamedOnEveryRank) {
  const Group g = world();
  const array x = g.rank() == 1 ? zeros({4}, float32) : zeros({3}, float32);
  try {
    eval(all_sum(x));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "[all_sum] rank " + std::to_string(g.rank()) +
                                         ": the ranks' arrays differ: rank 0 has all_sum float32 (3) but rank 1 has "
                                         "all_sum float32 (4).");
  }
  // The group stays usable.
  expect_same(all_sum(ones({2}, int32)), full({2}, g.size(), int32), "all_sum after the mismatch");
}

/// Every rank's loss `f(x)` (equal on every rank); the gradient on this rank against central differences taken by
/// perturbing one element of one rank's x at a time (every rank evaluates each perturbed loss together).
void expect_gradient_matches_differences(const std::function<array(const array&)>& f, const array& x) {
  const Group g = world();
  // Every rank evaluates the gradient (which may hold collectives) at the same point.
  const array gradient = reshape(grad(f)(x), {-1});
  eval(gradient);
  const double eps = 1e-4;
  for (int k = 0; k < g.size(); ++k) {
    for (int i = 0; i < static_cast<int>(x.size()); ++i) {
      const array bump = astype(equal(arange(static_cast<double>(x.size())), array(static_cast<double>(i))), float64) *
                         array(g.rank() == k ? eps : 0.0, float64);
      const double up = f(x + reshape(bump, x.shape())).item<double>();
      const double down = f(x - reshape(bump, x.shape())).item<double>();
      if (g.rank() == k) {
        EXPECT_NEAR(gradient.data<double>()[i], (up - down) / (2 * eps), 1e-6)
            << "element " << i << " of rank " << k;
      }
    }
  }
}

/// Rank-dependent values, distinct across ranks so all_max and all_min have one winner per element.
array values(const Shape& shape, int rank) {
  const array i = reshape(arange(static_cast<double>(element_count(shape))), shape);
  return astype(sin(i * 1.7 + 0.3) * 2.0 + array(0.37 * rank) * cos(i), float64);
}

array weights(const Shape& shape) {
  return astype(reshape(arange(static_cast<double>(element_count(shape))) * 0.5 + 1.0, shape), float64);
}

TEST(Gradients, ThroughEveryCollectiveAgainstFiniteDifferences) {
  const Group g = world();
  const array x = values({2, 2}, g.rank());
  // all_sum and all_gather: the loss after them is the same on every rank.
  expect_gradient_matches_differences([](const array& v) { return sum(square(all_sum(v)) * weights({2, 2})); }, x);
  expect_gradient_matches_differences(
      [&](const array& v) { return sum(square(all_gather(v)) * weights({2 * g.size(), 2})); }, x);
  expect_gradient_matches_differences([](const array& v) { return sum(all_max(v) * weights({2, 2})); }, x);
  expect_gradient_matches_differences([](const array& v) { return sum(all_min(v) * weights({2, 2})); }, x);
  // sum_scatter leaves each rank a different block: the loss is the sum of the ranks' losses.
  expect_gradient_matches_differences(
      [](const array& v) { return all_sum(sum(square(sum_scatter(v)) * weights({1, 2}))); },
      values({g.size(), 2}, g.rank()));
}

TEST(Gradients, ForwardModeOfAllSumIsTheSumOfTangents) {
  const Group g = world();
  const array x = values({3}, g.rank());
  const auto [out, tangent] =
      jvp([](const array& v) { return all_sum(v); }, x, full({3}, static_cast<double>(g.rank() + 1), float64));
  expect_same(tangent, full({3}, g.size() * (g.size() + 1) / 2.0, float64), "jvp of all_sum");
}

TEST(Vmap, AllGatherOverAMappedAxisEqualsALoop) {
  const Group g = world();
  const array x = values({2, 3}, g.rank());
  const array mapped = vmap([](const array& v) { return all_gather(v); }, 1)(x);
  std::vector<array> columns;
  for (int j = 0; j < 3; ++j) {
    columns.push_back(all_gather(reshape(slice(x, {0, j}, {2, j + 1}), {2})));
  }
  expect_same(mapped, stack(columns, 0), "vmap of all_gather");
}

TEST(AverageGradients, BucketsGiveTheMeanOverRanks) {
  const Group g = world();
  const auto gradients_of = [](int rank) {
    return nn::Params{{"a", values({3}, rank)},
                      {"b", astype(values({2, 3}, rank), float32)},
                      {"c", values({2, 2}, rank)},
                      {"d", astype(values({5}, rank), float16)}};
  };
  std::vector<nn::Params> all;
  for (int r = 0; r < g.size(); ++r) {
    all.push_back(gradients_of(r));
  }
  // Buckets of 40 bytes: a and c share float64 buckets with a split between them; 0: one all_sum per gradient.
  for (std::ptrdiff_t bucket : {std::ptrdiff_t{40}, std::ptrdiff_t{0}, std::ptrdiff_t{32} << 20}) {
    const nn::Params averaged = nn::average_gradients(gradients_of(g.rank()), g, bucket);
    ASSERT_EQ(averaged.size(), all[0].size());
    for (size_t i = 0; i < averaged.size(); ++i) {
      array sum = astype(all[0][i].second, float64);
      for (int r = 1; r < g.size(); ++r) {
        sum = sum + astype(all[static_cast<size_t>(r)][i].second, float64);
      }
      const array& got = averaged[i].second;
      EXPECT_EQ(averaged[i].first, all[0][i].first);
      EXPECT_EQ(got.dtype(), all[0][i].second.dtype());
      EXPECT_TRUE(allclose(astype(got, float64), sum / g.size(), 1e-3, 1e-3).item<bool>())
          << averaged[i].first << " with buckets of " << bucket << " bytes";
    }
  }
}

}  // namespace
}  // namespace nuvec::distributed

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Every rank prints its own results (nuvec launch and mpirun --tag-output put the rank in front).
  nuvec::distributed::init(true);
  return RUN_ALL_TESTS();
}
