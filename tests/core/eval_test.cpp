#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "nuvec/core/eval_small.h"
#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

TEST(Eval, IsLazyUntilEvaluated) {
  auto x = array({1.0F, 2.0F, 3.0F});
  auto y = exp(x) * 2.0F;
  EXPECT_EQ(y.status(), Status::unscheduled);
  EXPECT_TRUE(y.has_primitive());
  EXPECT_THROW((void)y.data<float>(), std::invalid_argument);
  eval(y);
  EXPECT_TRUE(y.is_available());
  EXPECT_FALSE(y.has_primitive()) << "evaluated arrays are detached from their graph";
  EXPECT_FLOAT_EQ(y.data<float>()[1], 2.0F * std::exp(2.0F));
}

TEST(Eval, OneNodeOverComputedInputsRunsAlone) {
  // The eager-style case (one new op over computed arrays) runs without a graph: it must still detach the node,
  // release its inputs and compute every sibling of a multi-output node.
  auto x = array({7.0F, -7.0F});
  auto y = x + 1.0F;
  EXPECT_EQ(x.use_count(), 2) << "y's node holds x";
  eval(y);
  EXPECT_FALSE(y.has_primitive());
  EXPECT_EQ(x.use_count(), 1) << "the detached node released x";
  EXPECT_FLOAT_EQ(y.data<float>()[1], -6.0F);
  auto m = array({3.0F, 0.0F, 4.0F, 5.0F}, {2, 2});
  auto [q, r] = linalg::qr(m, Device::cpu);
  eval(q);
  ASSERT_TRUE(r.is_available()) << "a sibling is computed with the output asked for";
  EXPECT_NEAR(std::abs(r.data<float>()[0]), 5.0F, 1e-5F);  // |R00| is the first column's norm, |(3, 4)|
}

TEST(Eval, SmallGraphsRunAtOnceWithoutWaitingForTheLock) {
  // detail::try_eval_small_node, Python's path while it holds the GIL: a few small nodes run in dependency order
  // (a shared one once) and detach; a graph past the bounds, or an evaluation already running, leaves it to eval.
  auto x = array({1.0F, 2.0F});
  auto shared = x + 1.0F;
  auto y = shared * shared - x;  // (x + 1)^2 - x = {3, 7}
  ASSERT_TRUE(detail::try_eval_small_node(y, 1024));
  EXPECT_FALSE(y.has_primitive());
  EXPECT_TRUE(shared.is_available()) << "computed on the way, once";
  EXPECT_FLOAT_EQ(y.data<float>()[0], 3.0F);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 7.0F);
  EXPECT_FALSE(detail::try_eval_small_node(y, 1024)) << "nothing left to compute";

  auto big = exp(zeros({1024}));  // 4 KiB out, 4 KiB in
  EXPECT_FALSE(detail::try_eval_small_node(big, 1024));
  EXPECT_EQ(big.status(), Status::unscheduled);
  auto deep = x;
  for (int i = 0; i < 9; ++i) {
    deep = deep + 1.0F;
  }
  EXPECT_FALSE(detail::try_eval_small_node(deep, 1 << 20)) << "nine nodes are past the bound";
  eval(deep);
  EXPECT_FLOAT_EQ(deep.data<float>()[0], 10.0F);

  // A failed small node throws as eval does.
  auto failed = x * 3.0F;  // built before the limit: the scalar's buffer is allocated with it
  auto previous = set_memory_limit(1);
  EXPECT_THROW(detail::try_eval_small_node(failed, 1024), nuvec::error);
  set_memory_limit(previous);
  EXPECT_EQ(failed.status(), Status::failed);
}

TEST(Eval, ScheduleIsBreadthFirstFromTheOutputs) {
  auto x = array({1.0F, 2.0F});
  auto a = exp(x);
  auto b = sin(x);
  auto c = a + b;
  auto order = schedule({c});
  ASSERT_EQ(order.size(), 3U);
  // The two independent nodes (depth 1) come before their consumer and next to each other.
  EXPECT_EQ(order[2].id(), c.id());
  EXPECT_TRUE((order[0].id() == a.id() && order[1].id() == b.id()) ||
              (order[0].id() == b.id() && order[1].id() == a.id()));
  EXPECT_EQ(c.status(), Status::unscheduled) << "schedule does not evaluate";
}

TEST(Eval, SharedSubgraphIsComputedOnce) {
  auto x = array({1.0F, 2.0F});
  auto shared = exp(x);
  auto a = shared + 1.0F;
  auto b = shared * 2.0F;
  auto order = schedule({a, b});
  int shared_count = 0;
  for (const auto& node : order) {
    shared_count += node.id() == shared.id() ? 1 : 0;
  }
  EXPECT_EQ(shared_count, 1);
  eval(a, b);
  EXPECT_FLOAT_EQ(a.data<float>()[0], std::exp(1.0F) + 1.0F);
  EXPECT_FLOAT_EQ(b.data<float>()[0], 2.0F * std::exp(1.0F));
}

TEST(Eval, DeepChainNeedsNoRecursion) {
  // A chain this deep would overflow the stack if the graph were walked or freed recursively.
  auto x = array(0.0F);
  for (int i = 0; i < 200000; ++i) {
    x = x + 1.0F;
  }
  EXPECT_FLOAT_EQ(x.item<float>(), 200000.0F);
  auto y = array(0.0F);
  for (int i = 0; i < 200000; ++i) {
    y = y + 1.0F;
  }
  // Dropped without evaluation: freeing must not recurse either.
}

TEST(Eval, IntermediatesAreFreedEarly) {
  clear_cache();
  const Shape shape{1 << 20};  // 4 MiB per float32 array
  auto x = full(shape, 1.0F);
  x = copy(x);
  eval(x);
  reset_peak_memory();
  auto base = get_active_memory();
  auto y = x;
  for (int i = 0; i < 20; ++i) {
    y = exp(y) * 0.5F;
  }
  eval(y);
  // With early freeing (and donation) a few buffers are alive at a time, never all 40.
  EXPECT_LT(get_peak_memory() - base, 5 * (4U << 20));
}

TEST(Eval, FailedAllocationGivesFailedArrayAndProcessStaysUsable) {
  clear_cache();
  auto previous = set_memory_limit(get_active_memory() + (64U << 20));
  auto big = full({1 << 26}, 1.0F);  // 256 MiB once made dense
  auto out = exp(big) + 1.0F;
  auto status = try_eval({out});
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.kind(), ErrorKind::out_of_memory);
  EXPECT_NE(status.message().find("[malloc]"), std::string::npos) << status.message();
  EXPECT_EQ(out.status(), Status::failed);
  EXPECT_THROW(eval(out), nuvec::error);
  EXPECT_THROW((void)out.data<float>(), nuvec::error);

  // Consumers of a failed array fail with the same error.
  auto consumer = out * 2.0F;
  try {
    eval(consumer);
    FAIL() << "expected the original error";
  } catch (const nuvec::error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory);
  }
  set_memory_limit(previous);

  // Unrelated work still runs.
  auto fine = sum(exp(array({0.0F, 0.0F})));
  EXPECT_FLOAT_EQ(fine.item<float>(), 2.0F);
}

TEST(Eval, AsyncEvalThenEval) {
  auto x = array({1.0F, 2.0F, 3.0F});
  auto y = exp(x) + x;
  async_eval(y);
  eval(y);
  EXPECT_TRUE(y.is_available());
  EXPECT_FLOAT_EQ(y.data<float>()[0], std::exp(1.0F) + 1.0F);
}

TEST(Eval, ThreadsBuildAndEvaluateGraphsConcurrently) {
  // A subgraph shared by every thread, plus each thread's own work.
  auto shared_input = array({0.5F, 1.5F, 2.5F, 3.5F});
  auto shared = exp(shared_input) * 2.0F;
  constexpr int threads = 8;
  std::vector<std::thread> workers;
  std::atomic<int> failures{0};
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      try {
        for (int i = 0; i < 50; ++i) {
          auto own = full({64}, static_cast<float>(t));
          auto result = sum(own * 2.0F) + sum(shared);
          float expected = 64.0F * 2.0F * static_cast<float>(t);
          float shared_sum = 0;
          for (float v : {0.5F, 1.5F, 2.5F, 3.5F}) {
            shared_sum += 2.0F * std::exp(v);
          }
          float got = result.item<float>();
          if (std::abs(got - (expected + shared_sum)) > 1e-3F * (1.0F + std::abs(got))) {
            ++failures;
          }
        }
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  for (auto& w : workers) {
    w.join();
  }
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace nuvec
