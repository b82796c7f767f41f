// Calls MLX rejects, which nuvec rejects too (issue 19).

#include <gtest/gtest.h>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

using V = std::vector<array>;

TEST(MlxErrors, UnflattenInfersOneDimensionOnly) {
  auto x = zeros({2, 12});
  EXPECT_EQ(unflatten(x, 1, {3, -1}).shape(), (Shape{2, 3, 4}));
  EXPECT_THROW((void)unflatten(x, 1, {-1, -1}), std::invalid_argument);
  EXPECT_THROW((void)unflatten(x, 1, {-1, 2, -1}), std::invalid_argument);
}

TEST(MlxErrors, VmapRejectsAxesOutOfRange) {
  Function f = [](const V& xs) { return V{xs[0] * 2.0F}; };
  auto x = zeros({2, 3});
  EXPECT_THROW((void)vmap(f, {2})({x}), std::invalid_argument);
  EXPECT_THROW((void)vmap(f, {-2})({x}), std::invalid_argument);
  EXPECT_THROW((void)vmap(f, {0}, {3})({x}), std::invalid_argument);
  EXPECT_THROW((void)vmap(f, {0}, {-2})({x}), std::invalid_argument);
  EXPECT_THROW((void)vmap(f, {0})({array(1.0F)}), std::invalid_argument);
  EXPECT_EQ(vmap(f, {1}, {1})({x})[0].shape(), (Shape{2, 3}));
}

TEST(MlxErrors, VmapRejectsEvalInsideTheFunction) {
  Function evaluates = [](const V& xs) {
    auto y = xs[0] + 1.0F;
    y.eval();
    return V{y};
  };
  Function reads = [](const V& xs) { return V{xs[0] * sum(xs[0]).item<float>()}; };
  Function async = [](const V& xs) {
    auto y = exp(xs[0]);
    async_eval(y);
    return V{y};
  };
  auto x = ones({3, 2});
  for (const auto& f : {evaluates, reads, async}) {
    try {
      (void)vmap(f)({x});
      FAIL() << "expected an error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("during function transformations"), std::string::npos) << e.what();
    }
  }
  // Values that do not depend on the mapped inputs may still be evaluated, and after vmap everything may.
  auto out = vmap(Function([](const V& xs) {
    auto c = full({2}, 3.0F);
    c.eval();
    return V{xs[0] * c};
  }))({x});
  out[0].eval();
  EXPECT_TRUE(array_equal(out[0], full({3, 2}, 3.0F)).item<bool>());
}

TEST(MlxErrors, JvpRejectsTangentsForIndices) {
  Function f = [](const V& xs) { return V{take(xs[0], xs[1], 0)}; };
  auto x = array({1.0F, 2.0F, 3.0F});
  auto idx = array({2, 0});
  EXPECT_THROW((void)jvp(f, {x, idx}, {ones({3}), array({1, 1})}), std::invalid_argument);
  Function g = [](const V& xs) { return V{take_along_axis(xs[0], xs[1], 0)}; };
  EXPECT_THROW((void)jvp(g, {x, idx}, {ones({3}), array({1, 1})}), std::invalid_argument);
  EXPECT_THROW((void)vjp(g, {x, idx}, {ones({2})}), std::invalid_argument);
  // The array's own tangent is fine when the indices are closed over.
  auto [outs, tans] = jvp([&](const V& xs) { return V{take(xs[0], idx, 0)}; }, {x}, {array({1.0F, 10.0F, 100.0F})});
  EXPECT_TRUE(array_equal(tans[0], array({100.0F, 1.0F})).item<bool>());
}

}  // namespace
}  // namespace nuvec
