// The generated kernels' element loops: marked for the vectorizer, and equal to eager over the sizes where the flat
// entry changes course (its lines, its blocks, the streaming threshold), with inputs of one value broadcast
// everywhere, traced one-element inputs and outputs of several widths.

#include <functional>
#include <random>
#include <string>

#include "nuvec/core/fused.h"
#include "tests/compile/compile_support.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using V = std::vector<array>;
using test::count_primitives;
using test::same_values;

class FlatEntry : public ::testing::Test {
 protected:
  void SetUp() override { test::test_kernel_cache(); }
};

/// The source of the Compiled node behind `y` (unevaluated).
const std::string& source_of(const array& y) { return std::get<Compiled>(y.primitive()).kernel->source; }

/// The line of `text` before the one starting at `at`, without its indentation.
std::string line_before(const std::string& text, size_t at) {
  const size_t end = text.rfind('\n', at - 1);
  const size_t begin = text.rfind('\n', end - 1) + 1;
  const std::string line = text.substr(begin, end - begin);
  return line.substr(line.find_first_not_of(' '));
}

/// How many loops over the elements of a line or block (`for (int64_t l = ...`) call the body, and how many of
/// them lack the simd pragma: a short loop without it (a line of 16 floats) was unrolled before the vectorizer saw
/// it, into scalar code with one libm call per element.
std::pair<int, int> body_loops(const std::string& source) {
  int loops = 0;
  int unmarked = 0;
  for (size_t at = source.find("nv_body("); at != std::string::npos; at = source.find("nv_body(", at + 1)) {
    const size_t start = source.rfind('\n', at) + 1;
    const std::string header = line_before(source, start);
    if (header.rfind("for (int64_t l = 0;", 0) != 0) {
      continue;  // the definition, or a loop up to the first line boundary (fewer than a line of elements)
    }
    ++loops;
    unmarked += line_before(source, source.rfind('\n', start - 2) + 1) == "_Pragma(\"omp simd\")" ? 0 : 1;
  }
  return {loops, unmarked};
}

TEST_F(FlatEntry, EveryLoopOverElementsIsMarkedForTheVectorizer) {
  auto x = random::uniform(-2.0F, 2.0F, {64, 600}, float32, random::key(1));
  auto t = transpose(random::uniform(-2.0F, 2.0F, {600, 64}, float32, random::key(2)));
  eval(x, t);
  const std::vector<std::pair<std::string, std::function<V(const V&)>>> chains = {
      {"float32", [](const V& xs) { return V{exp(xs[0]) * xs[1]}; }},
      {"float64", [](const V& xs) { return V{exp(astype(xs[0], float64)) * astype(xs[1], float64)}; }},
      {"three widths", [](const V& xs) {
         return V{xs[0] * 2.0F, astype(xs[1], float16), greater(xs[0], xs[1])};
       }}};
  for (const auto& [what, f] : chains) {
    auto y = compile(f)({x, t});
    ASSERT_EQ(count_primitives(y, "Compiled"), 1) << what;
    const auto [loops, unmarked] = body_loops(source_of(y[0]));
    EXPECT_GE(loops, 6) << what;  // the flat entry's line and block loops, the strided entry's runs and tiles
    EXPECT_EQ(unmarked, 0) << what << ":\n" << source_of(y[0]);
  }
}

TEST_F(FlatEntry, EqualsEagerAroundLinesBlocksAndTheStreamingThreshold) {
  // Sizes around a line (8, 16, 32 or 64 elements by the narrowest output), a block of 512 and past 2^20 elements
  // per thread (streamed), odd so that each thread's range starts and ends inside lines; the input read from an
  // odd offset of its buffer, so that it is not aligned as the outputs are.
  auto chain = [](const V& xs) {
    auto y = xs[0] * xs[1] + xs[2] * xs[3];
    return V{y, exp(xs[2]) - xs[1], greater(y, xs[3])};
  };
  std::mt19937 rng(41);
  for (Dtype d : {float32, float64, float16}) {
    for (int n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 511, 512, 513, 1537, (1 << 22) + 37}) {
      const Shape shape{n};
      const auto wide = test::random_array({n + 3}, d, rng, -3.0, 3.0);
      const auto dense = slice(wide, {3}, {n + 3});
      const auto one = broadcast_to(astype(array(0.75F), d), shape);
      const auto scalar = astype(array(2.5F), d);
      for (const V& inputs : {V{dense, one, dense, one}, V{one, dense, one, dense}, V{dense, scalar, one, dense},
                              V{dense, dense, dense, dense}}) {
        auto compiled = compile(chain)(inputs);
        auto eager = chain(inputs);
        ASSERT_EQ(count_primitives(compiled, "Compiled"), 1);
        for (size_t i = 0; i < compiled.size(); ++i) {
          EXPECT_TRUE(same_values(compiled[i], eager[i], d == float16 ? 2e-3 : 2e-6))
              << dtype_name(d) << " " << n << " output " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace nuvec
