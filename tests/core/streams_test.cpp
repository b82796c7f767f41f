// Streams and devices: evaluation routes each node by its stream's device, and every op puts its nodes on the
// stream or device its trailing argument names. Without a usable GPU (no CUDA backend, driver or device) GPU nodes
// fail with a clear error, so an op given a GPU stream that still evaluates has put some node on another stream. On
// a machine with a GPU these tests skip: the GPU suite (tests/cuda) runs the nodes there.

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

const Stream gpu_stream{3, Device::gpu};

/// The primitives in the unevaluated graph of `y` whose nodes are not on `stream`.
std::vector<std::string> nodes_off_stream(const array& y, const Stream& stream) {
  std::vector<std::string> off;
  std::vector<array> todo{y};
  std::set<uintptr_t> seen;
  while (!todo.empty()) {
    array a = todo.back();
    todo.pop_back();
    if (!a.has_primitive() || !seen.insert(a.node_id()).second) {
      continue;
    }
    if (a.stream() != stream) {
      off.emplace_back(name(a.primitive()));
    }
    for (const auto& in : a.inputs()) {
      todo.push_back(in);
    }
  }
  return off;
}

bool fails_for_lack_of_gpu(array y) {
  try {
    y.eval();
  } catch (const nuvec::error& e) {
    return std::string(e.what()).find("no usable GPU") != std::string::npos;
  }
  return false;
}

TEST(Streams, GpuNodesFailWithAClearErrorWithoutAGpu) {
  if (is_available(Device::gpu)) {
    GTEST_SKIP() << "this machine has a GPU";
  }
  auto x = array({1.0F, 2.0F});
  auto y = exp(x, gpu_stream);
  EXPECT_EQ(y.stream(), gpu_stream);
  try {
    y.eval();
    FAIL() << "evaluated on a GPU stream";
  } catch (const nuvec::error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("Exp is on GPU stream 3: no usable GPU"), std::string::npos)
        << e.what();
  }
  // The failure stays with that node and its consumers; the CPU still computes the rest.
  auto z = add(y, x);
  EXPECT_TRUE(fails_for_lack_of_gpu(z));
  EXPECT_EQ(sum(add(x, x)).item<float>(), 6.0F);
  EXPECT_FALSE(is_available(Device::gpu));
  EXPECT_THROW(set_default_device(Device::gpu), nuvec::error);
  EXPECT_THROW(new_stream(Device::gpu), nuvec::error);
}

TEST(Streams, OpsPutTheirNodesOnTheStreamTheyAreGiven) {
  if (is_available(Device::gpu)) {
    GTEST_SKIP() << "this machine has a GPU";
  }
  // Inputs made and evaluated on the CPU first: the ops' own nodes are what is checked.
  auto x = reshape(arange(24.0, float32), {2, 3, 4}) * 0.1F;
  auto m = reshape(arange(12.0, float32), {3, 4}) * 0.1F;
  const auto idx = array({0, 2, 1}, int32);
  const auto key = random::key(1);
  const auto ones4 = ones({4});
  const auto zeros4 = zeros({4});
  const auto ones44 = ones({4, 4});
  const auto zeros14 = zeros({1, 4});
  const auto zeros31 = zeros({3, 1}, int32);
  const auto weight = ones({2, 2, 4});
  const auto eye3 = eye(3) * 2.0F;
  const auto w64 = ones({64, 64});
  const auto x64 = ones({2, 64});
  const auto h8 = ones({2, 8});
  eval({x, m, idx, key, ones4, zeros4, ones44, zeros14, zeros31, weight, eye3, w64, x64, h8});
  using Op = std::function<array(StreamOrDevice)>;
  const std::vector<std::pair<std::string, Op>> ops = {
      {"add", [&](StreamOrDevice s) { return add(x, x, s); }},
      {"multiply scalar", [&](StreamOrDevice s) { return multiply(x, array(2.0F), s); }},
      {"where", [&](StreamOrDevice s) { return where(greater(x, array(1.0F), s), x, zeros_like(x, s), s); }},
      {"astype", [&](StreamOrDevice s) { return astype(x, int32, s); }},
      {"softmax", [&](StreamOrDevice s) { return softmax(x, -1, false, s); }},
      {"logsumexp", [&](StreamOrDevice s) { return logsumexp(x, -1, false, s); }},
      {"sum", [&](StreamOrDevice s) { return sum(x, 1, false, s); }},
      {"mean", [&](StreamOrDevice s) { return mean(x, -1, true, s); }},
      {"var", [&](StreamOrDevice s) { return var(x, -1, false, 0, s); }},
      {"std", [&](StreamOrDevice s) { return nuvec::std(x, -1, false, 0, s); }},
      {"argmax", [&](StreamOrDevice s) { return argmax(x, 1, false, s); }},
      {"cumsum", [&](StreamOrDevice s) { return cumsum(x, 2, false, true, s); }},
      {"sort", [&](StreamOrDevice s) { return sort(x, -1, s); }},
      {"topk", [&](StreamOrDevice s) { return topk(x, 2, -1, s); }},
      {"matmul", [&](StreamOrDevice s) { return matmul(x, transpose(m, s), s); }},
      {"addmm", [&](StreamOrDevice s) { return addmm(m, m, ones44, 1.0F, 1.0F, s); }},
      {"transpose copy", [&](StreamOrDevice s) { return contiguous(transpose(x, s), false, s); }},
      {"concatenate", [&](StreamOrDevice s) { return concatenate({x, x}, 0, s); }},
      {"stack", [&](StreamOrDevice s) { return stack({m, m}, 0, s); }},
      {"pad", [&](StreamOrDevice s) { return pad(m, 1, array(0.0F), "constant", s); }},
      {"take", [&](StreamOrDevice s) { return take(m, idx, 0, s); }},
      {"take_along_axis", [&](StreamOrDevice s) { return take_along_axis(m, zeros31, 1, s); }},
      {"slice", [&](StreamOrDevice s) { return slice(x, {0, 1, 0}, {2, 3, 4}, s); }},
      {"slice_update", [&](StreamOrDevice s) { return slice_update(m, zeros14, {0, 0}, {1, 4}, s); }},
      {"flatten", [&](StreamOrDevice s) { return flatten(x, 0, -1, s); }},
      {"tile", [&](StreamOrDevice s) { return tile(m, {2, 1}, s); }},
      {"repeat", [&](StreamOrDevice s) { return repeat(m, 2, 0, s); }},
      {"clip", [&](StreamOrDevice s) { return clip(x, array(0.5F), array(1.5F), s); }},
      {"arange", [&](StreamOrDevice s) { return arange(0.0, 5.0, 1.0, float32, s); }},
      {"zeros", [&](StreamOrDevice s) { return add(zeros({3}, float32, s), array(1.0F), s); }},
      {"full", [&](StreamOrDevice s) { return add(full({3}, array(2.0F), s), array(1.0F), s); }},
      {"eye", [&](StreamOrDevice s) { return eye(3, 3, 0, float32, s); }},
      {"tril", [&](StreamOrDevice s) { return tril(m, 0, s); }},
      {"linspace", [&](StreamOrDevice s) { return linspace(0.0, 1.0, 5, float32, s); }},
      {"uniform", [&](StreamOrDevice s) { return random::uniform(0.0F, 1.0F, {4}, float32, key, s); }},
      {"normal", [&](StreamOrDevice s) { return random::normal({4}, float32, 0.0F, 1.0F, key, s); }},
      {"rms_norm", [&](StreamOrDevice s) { return fast::rms_norm(m, ones4, 1e-5F, s); }},
      {"layer_norm", [&](StreamOrDevice s) { return fast::layer_norm(m, ones4, zeros4, 1e-5F, s); }},
      {"rope", [&](StreamOrDevice s) { return fast::rope(x, 4, false, 10000.0F, 1.0F, 0, std::nullopt, s); }},
      {"attention",
       [&](StreamOrDevice s) {
         auto q = reshape(x, {1, 2, 3, 4}, s);
         return fast::scaled_dot_product_attention(q, q, q, 0.5F, "", std::nullopt, std::nullopt, false, s);
       }},
      {"fft", [&](StreamOrDevice s) { return fft::rfft(m, -1, fft::FFTNorm::Backward, s); }},
      {"inv", [&](StreamOrDevice s) { return linalg::inv(eye3, s); }},
      {"conv1d", [&](StreamOrDevice s) { return conv1d(reshape(m, {1, 3, 4}, s), weight, 1, 0, 1, 1, s); }},
      {"quantized_matmul",
       [&](StreamOrDevice s) {
         auto q = quantize(w64, 64, 4, "affine", std::nullopt, s);
         return quantized_matmul(x64, q[0], q[1], q[2], true, 64, 4, "affine", s);
       }},
      {"einsum", [&](StreamOrDevice s) { return einsum("ij,kj->ik", {m, m}, s); }},
      {"tensordot", [&](StreamOrDevice s) { return tensordot(m, m, {1}, {1}, s); }},
      {"outer", [&](StreamOrDevice s) { return outer(array({1.0F, 2.0F}), array({3.0F}), s); }},
      {"diagonal", [&](StreamOrDevice s) { return add(diagonal(m, 0, 0, 1, s), array(1.0F), s); }},
      {"isclose", [&](StreamOrDevice s) { return isclose(x, x, 1e-5, 1e-8, false, s); }},
      {"logcumsumexp", [&](StreamOrDevice s) { return logcumsumexp(m, 1, false, true, s); }},
      {"hadamard", [&](StreamOrDevice s) { return hadamard_transform(h8, std::nullopt, s); }},
  };
  for (const auto& [label, op] : ops) {
    array y = [&] {
      try {
        return op(gpu_stream);
      } catch (const std::exception& e) {
        ADD_FAILURE() << label << ": building the graph threw " << e.what();
        return array(0.0F);
      }
    }();
    const auto off = nodes_off_stream(y, gpu_stream);
    EXPECT_TRUE(off.empty()) << label << ": " << off.size() << " nodes not on the given stream, the first "
                             << (off.empty() ? std::string() : off.front());
    EXPECT_TRUE(fails_for_lack_of_gpu(y)) << label;
    // The same graph on the CPU device computes.
    EXPECT_NO_THROW(op(Device::cpu).eval()) << label;
  }
}

}  // namespace
}  // namespace nuvec
