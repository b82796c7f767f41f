// Every element-wise kernel the CUDA backend generates compiles with NVRTC, for every dtype the generator has:
// compiling needs no GPU, so this runs on any machine with the toolkit. The kernels of one dtype are compiled
// together, each source's names made unique.

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "nuvec/core/compile/codegen.h"
#include "nuvec/cuda/elementwise.h"
#include "nuvec/cuda/jit.h"
#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

/// One source holding the kernel of every unary and binary primitive on operands of `d` (with the first output
/// dtype the generator accepts), and how many kernels it holds.
std::pair<std::string, int> all_kernels(Dtype d) {
  std::string all;
  int count = 0;
  auto add = [&](const Primitive& p, std::vector<Dtype> args) {
    for (Dtype out : {d, bool_, float32}) {
      if (!detail::can_generate(p, args, out)) {
        continue;
      }
      std::vector<array> inputs;
      for (auto a : args) {
        inputs.push_back(zeros({1}, a));
      }
      auto source = cuda::generate_elementwise_source(cuda::single_step(p, inputs, out));
      std::string suffix(1, '_');
      suffix += std::to_string(count++);
      replace_all(source, "nuvec_fused_contiguous", "nuvec_fused_contiguous" + suffix);
      replace_all(source, "nuvec_fused_strided", "nuvec_fused_strided" + suffix);
      replace_all(source, "nv_layout", "nv_layout" + suffix);
      all += source;
      return;
    }
  };
  [&]<size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          using P = std::variant_alternative_t<I, Primitive::Variant>;
          if constexpr (UnaryPrimitive<P>) {
            add(P{}, {d});
          } else if constexpr (BinaryPrimitive<P>) {
            add(P{}, {d, d});
          }
        }(),
        ...);
  }
  (std::make_index_sequence<std::variant_size_v<Primitive::Variant>>{});
  add(Select{}, {bool_, d, d});
  for (Dtype to : all_dtypes) {
    if (to != complex64) {
      add(AsType{to}, {d});
    }
  }
  return {all, count};
}

TEST(CudaNvrtc, EveryElementwiseKernelCompilesForHopper) {
  for (Dtype d : all_dtypes) {
    if (d == complex64) {
      continue;  // the generator has no complex type: complex element-wise nodes run on the host
    }
    auto [source, count] = all_kernels(d);
    SCOPED_TRACE(dtype_name(d));
    EXPECT_GT(count, 10);
    std::string cubin;
    ASSERT_NO_THROW(cubin = cuda::compile_cubin(source, 90));
    EXPECT_GT(cubin.size(), 1000U);
  }
}

TEST(CudaNvrtc, CompileErrorsCarryTheLogAndTheSource) {
  try {
    cuda::compile_cubin("extern \"C\" __global__ void broken() { undeclared_name(); }", 90);
    FAIL() << "a broken source compiled";
  } catch (const nuvec::error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("undeclared_name"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace nuvec
