// Tracing, the cache, simplification, modes, the fallback without a compiler, the on-disk kernel cache,
// concurrency, composition with the transforms and stateful functions.

#include <atomic>
#include <filesystem>
#include <thread>

#include "tests/compile/compile_support.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using V = std::vector<array>;
using test::count_primitives;
using test::same_values;

class Compile : public ::testing::Test {
 protected:
  void SetUp() override {
    test::test_kernel_cache();
    set_compile_mode(CompileMode::enabled);
    set_compile_cache_limit(64);
  }
  void TearDown() override {
    set_compile_mode(CompileMode::enabled);
    set_compile_cache_limit(64);
  }
};

TEST_F(Compile, TracesOncePerSignature) {
  int traces = 0;
  auto f = compile([&](const V& xs) {
    ++traces;
    return V{xs[0] * 2.0F + xs[1]};
  });
  auto a = array({1.0F, 2.0F, 3.0F});
  auto b = array({4.0F, 5.0F, 6.0F});
  EXPECT_TRUE(array_equal(f({a, b})[0], array({6.0F, 9.0F, 12.0F})).item<bool>());
  f({b, a});
  EXPECT_EQ(traces, 1);  // same shapes and dtypes: replayed
  f({array({1.0F, 2.0F}), array({1.0F, 2.0F})});
  EXPECT_EQ(traces, 2);  // new shape
  f({array({1, 2, 3}), array({1, 2, 3})});
  EXPECT_EQ(traces, 3);  // new dtype
  f({array({1.0F, 2.0F}), array({3.0F, 4.0F})});
  f({a, b});
  EXPECT_EQ(traces, 3);  // both signatures are still cached
  auto r = f({array({1.0F}, {1, 1}), array({2.0F}, {1, 1})});
  EXPECT_EQ(traces, 4);  // new rank
  EXPECT_EQ(r[0].item<float>(), 4.0F);
}

TEST_F(Compile, ConstantsJoinTheSignature) {
  int traces = 0;
  auto f = compile([&](const V& xs, const std::vector<double>& c) {
    ++traces;
    return V{xs[0] * static_cast<float>(c[0])};
  });
  auto x = array({1.0F, 2.0F});
  EXPECT_TRUE(array_equal(f({x}, {3.0})[0], array({3.0F, 6.0F})).item<bool>());
  EXPECT_TRUE(array_equal(f({x}, {3.0})[0], array({3.0F, 6.0F})).item<bool>());
  EXPECT_EQ(traces, 1);
  EXPECT_TRUE(array_equal(f({x}, {0.5})[0], array({0.5F, 1.0F})).item<bool>());
  EXPECT_EQ(traces, 2);
}

TEST_F(Compile, CacheEvictsTheLeastRecentlyUsed) {
  set_compile_cache_limit(2);
  int traces = 0;
  auto f = compile([&](const V& xs) {
    ++traces;
    return V{xs[0] + 1.0F};
  });
  auto s1 = zeros({1});
  auto s2 = zeros({2});
  auto s3 = zeros({3});
  f({s1});
  f({s2});
  f({s1});  // s1 most recent
  f({s3});  // evicts s2
  EXPECT_EQ(traces, 3);
  f({s1});
  EXPECT_EQ(traces, 3);
  f({s2});
  EXPECT_EQ(traces, 4);
  EXPECT_THROW(set_compile_cache_limit(0), nuvec::error);
}

TEST_F(Compile, ShapelessReplaysOnNewShapes) {
  int traces = 0;
  auto f = compile(
      [&](const V& xs) {
        ++traces;
        return V{exp(xs[0]) * xs[1] + 1.0F, sum(xs[0] * xs[0], -1, true)};
      },
      true);
  for (const Shape& shape : {Shape{4, 8}, Shape{3, 5}, Shape{1, 1}, Shape{7, 2}}) {
    auto x = random::normal(shape);
    auto bias = random::normal({shape.back()});
    auto out = f({x, bias});
    EXPECT_TRUE(same_values(out[0], exp(x) * bias + 1.0F, 2e-6)) << shape_string(shape);
    EXPECT_TRUE(same_values(out[1], sum(x * x, -1, true), 1e-6)) << shape_string(shape);
  }
  EXPECT_EQ(traces, 1);
  // An input of one element when traced may have more later.
  auto h = compile([](const V& xs) { return V{xs[0] * xs[1] + 2.0F}; }, true);
  auto big = random::normal({3, 4});
  EXPECT_TRUE(same_values(h({big, full({1, 1}, 2.0F)})[0], big * 2.0F + 2.0F, 1e-6));
  EXPECT_TRUE(same_values(h({big, big})[0], big * big + 2.0F, 1e-6));
  // A rank change retraces; a reshape to a traced shape cannot follow new shapes.
  f({random::normal({2, 2, 2}), random::normal({2})});
  EXPECT_EQ(traces, 2);
  auto g = compile([](const V& xs) { return V{reshape(xs[0], {-1})}; }, true);
  g({zeros({2, 3})});
  EXPECT_NE(test::error_of([&] { g({zeros({2, 5})}); }).find("shapeless"), std::string::npos);
}

TEST_F(Compile, SimplifiesCommonSubexpressionsNoOpsAndConstants) {
  set_compile_mode(CompileMode::no_fuse);
  auto x = array({0.5F, 1.5F});
  auto f = compile([](const V& xs) {
    auto same = array(xs[0].shape(), float32, AsType{float32}, {xs[0]}, default_stream(default_device()));
    auto wide = array(xs[0].shape(), float32, Broadcast{xs[0].shape()}, {same}, default_stream(default_device()));
    auto c = exp(array(1.0F)) * 2.0F;  // depends on no input: folded
    return V{exp(wide) + exp(xs[0]) * c};
  });
  auto out = f({x});
  EXPECT_EQ(count_primitives(out, "Exp"), 1);
  EXPECT_EQ(count_primitives(out, "AsType"), 0);
  EXPECT_EQ(count_primitives(out, "Broadcast"), 0);
  EXPECT_EQ(count_primitives(out, "Multiply"), 1);
  EXPECT_TRUE(same_values(out[0], exp(x) + exp(x) * (std::exp(1.0F) * 2.0F), 1e-6));

  set_compile_mode(CompileMode::no_simplify);
  auto g = compile([](const V& xs) { return V{exp(xs[0]) + exp(xs[0])}; });
  EXPECT_EQ(count_primitives(g({x}), "Exp"), 2);
}

TEST_F(Compile, DropsNoOpViewsAndCopies) {
  // As MLX's simplification: nodes that return their argument unchanged leave the compiled graph.
  set_compile_mode(CompileMode::no_fuse);
  auto x = reshape(arange(6.0F), {2, 3});
  x.eval();
  const Stream s = default_stream(default_device());
  auto f = compile([s](const V& xs) {
    const auto& in = xs[0];
    auto same_shape = array(in.shape(), float32, Reshape{in.shape()}, {in}, s);
    auto identity_perm = array(in.shape(), float32, Transpose{{0, 1}}, {same_shape}, s);
    auto full_slice = array(in.shape(), float32, Slice{{0, 0}, {1, 1}, in.shape()}, {identity_perm}, s);
    auto copied = copy(full_slice);
    return V{exp(copied), exp(slice(in, {0, 1}, {2, 3}))};
  });
  auto out = f({x});
  for (const char* name : {"Reshape", "Transpose", "Copy"}) {
    EXPECT_EQ(count_primitives(out, name), 0) << name;
  }
  // The one slice left is the real one.
  EXPECT_EQ(count_primitives(out, "Slice"), 1);
  EXPECT_TRUE(same_values(out[0], exp(x), 1e-6));
  EXPECT_TRUE(same_values(out[1], exp(slice(x, {0, 1}, {2, 3})), 1e-6));
}

TEST_F(Compile, DisabledRunsTheFunctionEveryCall) {
  int calls = 0;
  auto f = compile([&](const V& xs) {
    ++calls;
    return V{xs[0] + xs[0]};
  });
  disable_compile();
  EXPECT_EQ(compile_mode(), CompileMode::disabled);
  f({array({1.0F})});
  f({array({1.0F})});
  EXPECT_EQ(calls, 2);
  enable_compile();
  f({array({1.0F})});
  f({array({1.0F})});
  EXPECT_EQ(calls, 3);
}

TEST_F(Compile, KernelsAreCachedOnDisk) {
  const auto dir = std::filesystem::path(test::test_kernel_cache());
  auto f = compile([](const V& xs) { return V{cosh(xs[0]) * 3.25F - 0.125F}; });
  auto x = array({1.0F, 2.0F});
  auto out = f({x});
  EXPECT_TRUE(same_values(out[0], cosh(x) * 3.25F - 0.125F, 1e-6));
  int libraries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    libraries += e.path().extension() == ".so" ? 1 : 0;
  }
  EXPECT_GE(libraries, 1);
}

TEST_F(Compile, FallsBackWithoutACompiler) {
  ::setenv("NUVEC_CXX", "/nonexistent/nuvec-test-cxx", 1);
  auto f = compile([](const V& xs) { return V{sigmoid(xs[0]) * xs[0] + 1.0F}; });
  auto x = array({-1.0F, 0.0F, 2.0F});
  ::testing::internal::CaptureStderr();
  auto out = f({x});
  auto log = ::testing::internal::GetCapturedStderr();
  ::unsetenv("NUVEC_CXX");
  EXPECT_EQ(count_primitives(out, "Compiled"), 0);
  EXPECT_TRUE(same_values(out[0], sigmoid(x) * x + 1.0F));
  EXPECT_NE(log.find("no C++ compiler"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1);
}

TEST_F(Compile, FallsBackWhenTheKernelCacheIsNotWritable) {
  ::setenv("NUVEC_KERNEL_CACHE", "/proc/nuvec-compile-test-cannot-write", 1);
  auto f = compile([](const V& xs) { return V{exp(xs[0]) * 7.3125F - xs[0]}; });
  auto x = array({0.5F, -1.0F});
  ::testing::internal::CaptureStderr();
  auto out = f({x});
  auto log = ::testing::internal::GetCapturedStderr();
  ::setenv("NUVEC_KERNEL_CACHE", test::test_kernel_cache().c_str(), 1);
  EXPECT_EQ(count_primitives(out, "Compiled"), 0);
  EXPECT_TRUE(same_values(out[0], exp(x) * 7.3125F - x));
  EXPECT_NE(log.find("cannot write kernels"), std::string::npos) << log;
}

TEST_F(Compile, ErrorsNameTheProblem) {
  auto f = compile([](const V& xs) { return V{xs[0] + 1.0F}; },
                   CompileState([] { return std::vector<array*>{nullptr}; }));
  EXPECT_NE(test::error_of([&] { f({array(1.0F)}); }).find("null array pointer"), std::string::npos);
  // An error inside the function reaches the caller, and nothing is cached: the next call traces again.
  int traces = 0;
  auto g = compile([&](const V& xs) {
    ++traces;
    return V{matmul(xs[0], xs[0])};
  });
  EXPECT_NE(test::error_of([&] { g({zeros({2, 3})}); }), "(no error)");
  EXPECT_NE(test::error_of([&] { g({zeros({2, 3})}); }), "(no error)");
  EXPECT_EQ(traces, 2);
}

TEST_F(Compile, ConcurrentCallsFromSeveralThreads) {
  std::atomic<int> traces = 0;
  auto f = compile([&](const V& xs) {
    ++traces;
    return V{tanh(xs[0]) * 0.5F + xs[0]};
  });
  std::atomic<int> failures = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto x = full({(t % 2) + 3, 50}, static_cast<float>(t + i) * 0.1F);
        auto out = f({x})[0];
        if (!allclose(out, tanh(x) * 0.5F + x, 1e-6, 1e-6).item<bool>()) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(traces.load(), 2);  // two shapes
}

TEST_F(Compile, ComposesWithGradAndVmap) {
  auto f = [](const V& xs) { return V{sum(tanh(xs[0]) * xs[1] + square(xs[0]))}; };
  auto x = array({0.3F, -1.2F, 2.0F});
  auto y = array({1.5F, 0.5F, -2.0F});
  auto loss = [&](const V& xs) { return f(xs)[0]; };
  auto expected = grad(loss, std::vector<int>{0, 1})({x, y});
  // grad of compile: the vjp goes through the fused node's tape.
  auto compiled = compile(f);
  auto g1 = grad([&](const V& xs) { return compiled(xs)[0]; }, std::vector<int>{0, 1})({x, y});
  // compile of grad.
  auto g2 = compile(grad(loss, std::vector<int>{0, 1}))({x, y});
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(same_values(g1[i], expected[i], 1e-5)) << i;
    EXPECT_TRUE(same_values(g2[i], expected[i], 1e-5)) << i;
  }
  // jvp and vmap of a fused chain.
  auto h = compile([](const V& xs) { return V{exp(xs[0]) * xs[0] - 1.0F}; });
  auto [outs, tans] = jvp(h, {x}, {ones_like(x)});
  EXPECT_TRUE(same_values(tans[0], exp(x) * x + exp(x), 1e-5));
  auto batch = reshape(arange(6.0F), {2, 3});
  auto mapped = vmap(h)({batch});
  EXPECT_TRUE(same_values(mapped[0], exp(batch) * batch - 1.0F, 1e-6));
}

TEST_F(Compile, StatefulTrainingStep) {
  // SGD with momentum on a linear model: parameters and momentum are read and replaced by the step.
  struct Model {
    array w = array({0.5F, -0.25F, 1.0F});
    array velocity = zeros({3});
  };
  auto step_fn = [](Model& m) {
    return [&m](const V& xs) {
      auto loss_grad = grad([&](const V& ps) { return mean(square(matmul(xs[0], ps[0]) - xs[1])); });
      auto g = loss_grad({m.w})[0];
      m.velocity = 0.9F * m.velocity + g;
      m.w = m.w - 0.1F * m.velocity;
      return V{mean(square(matmul(xs[0], m.w) - xs[1]))};
    };
  };
  auto data = random::normal({8, 3}, float32, random::key(1));
  auto target = random::normal({8}, float32, random::key(2));
  Model eager_model;
  Model compiled_model;
  int traces = 0;
  auto eager_step = step_fn(eager_model);
  auto traced_step = step_fn(compiled_model);
  auto compiled_step = compile(
      [&](const V& xs) {
        ++traces;
        return traced_step(xs);
      },
      CompileState([&] { return std::vector<array*>{&compiled_model.w, &compiled_model.velocity}; }));
  for (int i = 0; i < 5; ++i) {
    auto l1 = eager_step({data, target})[0];
    auto l2 = compiled_step({data, target})[0];
    EXPECT_TRUE(same_values(l2, l1, 1e-5)) << i;
  }
  EXPECT_EQ(traces, 1);
  EXPECT_TRUE(same_values(compiled_model.w, eager_model.w, 1e-5));
  EXPECT_TRUE(same_values(compiled_model.velocity, eager_model.velocity, 1e-5));
}

}  // namespace
}  // namespace nuvec
