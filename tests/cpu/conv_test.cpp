// Convolutions against PyTorch (torch.nn.functional.conv{1,2,3}d and conv_transpose{1,2,3}d in float64, run by
// the NumPy oracle with the layouts permuted from channels last to NCHW): conv_general over random shapes,
// strides, asymmetric and negative padding, kernel and input dilation, groups and flip, in float32, float64,
// float16 and bfloat16, through each implementation (oneDNN, im2col + GEMM, the depthwise loop); conv1d/2d/3d and
// the transposed convolutions; non-contiguous operands; empty and size-1 axes; dtype promotion; error messages.

#include "nuvec/cpu/conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::matches;
using test::numpy_ref;

using test::error_of;

std::string py_list(const std::vector<int>& v) {
  std::string s = "[";
  for (int x : v) {
    s += std::to_string(x) + ",";
  }
  return s + "]";
}

/// The parameters of one conv_general call, each with one value per spatial axis.
struct ConvCase {
  std::vector<int> stride;
  std::vector<int> lo;
  std::vector<int> hi;
  std::vector<int> kernel_dilation;
  std::vector<int> input_dilation;
  int groups = 1;
  bool flip = false;

  [[nodiscard]] std::string describe() const {
    return "stride=" + py_list(stride) + " lo=" + py_list(lo) + " hi=" + py_list(hi) +
           " kdil=" + py_list(kernel_dilation) + " idil=" + py_list(input_dilation) +
           " groups=" + std::to_string(groups) + " flip=" + (flip ? "1" : "0");
  }
};

/// PyTorch's conv_general: input dilation by scattering into zeros, padding (negative crops) by F.pad, the flip
/// by torch.flip, then F.conv{n}d in float64. `a` is the input, `b` the weight, both channels last.
std::string torch_conv_general(const ConvCase& c) {
  const std::string params = "stride = " + py_list(c.stride) + "\nlo = " + py_list(c.lo) + "\nhi = " + py_list(c.hi) +
                             "\nkdil = " + py_list(c.kernel_dilation) + "\nidil = " + py_list(c.input_dilation) +
                             "\ngroups = " + std::to_string(c.groups) + "\nflip = " + (c.flip ? "True" : "False") +
                             "\n";
  return params + R"(
import torch
import torch.nn.functional as F
x = torch.from_numpy(np.asarray(a, dtype=np.float64))
w = torch.from_numpy(np.asarray(b, dtype=np.float64))
nd = x.dim() - 2
shape = [x.shape[0]] + [(s - 1) * d + 1 if s > 0 else 0 for s, d in zip(x.shape[1:-1], idil)] + [x.shape[-1]]
xd = torch.zeros(shape, dtype=torch.float64)
xd[(slice(None),) + tuple(slice(None, None, d) for d in idil)] = x
if flip:
    w = torch.flip(w, dims=list(range(1, nd + 1)))
perm = [0, nd + 1] + list(range(1, nd + 1))
xd = xd.permute(perm)
w = w.permute(perm)
pad = []
for i in reversed(range(nd)):
    pad += [lo[i], hi[i]]
xd = F.pad(xd, pad)
conv = [F.conv1d, F.conv2d, F.conv3d][nd - 1]
y = conv(xd, w, stride=stride, dilation=kdil, groups=groups)
out = y.permute([0] + list(range(2, nd + 2)) + [1]).numpy()
)";
}

/// PyTorch's transposed convolution: the weight (C_out, k..., C_in / groups) becomes torch's
/// (C_in, C_out / groups, k...).
std::string torch_conv_transpose(const std::vector<int>& stride, const std::vector<int>& padding,
                                 const std::vector<int>& dilation, const std::vector<int>& output_padding, int groups) {
  const std::string params = "stride = " + py_list(stride) + "\npadding = " + py_list(padding) +
                             "\ndilation = " + py_list(dilation) + "\noutput_padding = " + py_list(output_padding) +
                             "\ng = " + std::to_string(groups) + "\n";
  return params + R"(
import torch
import torch.nn.functional as F
x = torch.from_numpy(np.asarray(a, dtype=np.float64))
w = np.asarray(b, dtype=np.float64)
nd = x.dim() - 2
cog = w.shape[0] // g
wg = np.moveaxis(w.reshape((g, cog) + w.shape[1:]), -1, 1)
wt = torch.from_numpy(np.ascontiguousarray(wg.reshape((g * w.shape[-1], cog) + w.shape[1:-1])))
x = x.permute([0, nd + 1] + list(range(1, nd + 1)))
conv = [F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][nd - 1]
y = conv(x, wt, stride=stride, padding=padding, output_padding=output_padding, groups=g, dilation=dilation)
out = y.permute([0] + list(range(2, nd + 2)) + [1]).numpy()
)";
}

class ConvTest : public ::testing::Test {
 protected:
  void TearDown() override { cpu::set_conv_backend(cpu::ConvBackend::automatic); }

  array rand(const Shape& shape, Dtype dtype) { return test::random_array(shape, dtype, rng_, -1.0, 1.0); }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin() { return uniform(0, 1) == 1; }

  /// Tolerances for a sum of `terms` products of values in [-1, 1].
  static double atol(Dtype dtype, int64_t terms) {
    const double scale = std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1)));
    if (dtype == bfloat16) {
      return 1.6e-2 * scale;
    }
    if (dtype == float16) {
      return 2e-3 * scale;
    }
    return (dtype == float64 ? 1e-13 : 2e-6) * scale;
  }

  /// Evaluates `make` under each implementation and compares with `expected`.
  void check_backends(const std::function<array()>& make, const test::HostArray& expected, Dtype dtype, int64_t terms) {
    for (auto backend : {cpu::ConvBackend::automatic, cpu::ConvBackend::onednn, cpu::ConvBackend::gemm}) {
      SCOPED_TRACE("backend " + std::to_string(static_cast<int>(backend)));
      cpu::set_conv_backend(backend);
      auto y = make();
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_TRUE(matches(y, expected, test::default_rtol(dtype), atol(dtype, terms), false));
    }
    cpu::set_conv_backend(cpu::ConvBackend::automatic);
  }

  std::mt19937 rng_{20240611};
};

TEST_F(ConvTest, ConvGeneralMatchesTorch) {
  const Dtype dtypes[] = {float32, float64, bfloat16, float16};
  int checked = 0;
  for (int trial = 0; trial < 48; ++trial) {
    const int nd = 1 + trial % 3;
    const Dtype dtype = dtypes[(trial / 3) % 4];
    ConvCase c;
    c.groups = uniform(1, 3);
    const int cig = uniform(1, 4);
    const int cog = uniform(1, 3);
    c.flip = coin();
    Shape x_shape{uniform(1, 2)};
    Shape w_shape{c.groups * cog};
    for (int i = 0; i < nd; ++i) {
      x_shape.push_back(uniform(1, nd == 3 ? 5 : 9));
      w_shape.push_back(uniform(1, 3));
      c.stride.push_back(uniform(1, 3));
      c.kernel_dilation.push_back(uniform(1, 2));
      c.input_dilation.push_back(trial % 4 == 0 ? uniform(1, 3) : 1);
      c.lo.push_back(uniform(-1, 2));
      c.hi.push_back(uniform(-1, 2));
    }
    x_shape.push_back(c.groups * cig);
    w_shape.push_back(cig);
    auto x = rand(x_shape, dtype);
    auto w = rand(w_shape, dtype);
    SCOPED_TRACE(std::string(dtype_name(dtype)) + " x" + shape_string(x_shape) + " w" + shape_string(w_shape) + " " +
                 c.describe());
    auto make = [&] {
      return conv_general(x, w, c.stride, c.lo, c.hi, c.kernel_dilation, c.input_dilation, c.groups, c.flip);
    };
    if (error_of([&] { make(); }).find("Spatial dimensions") != std::string::npos) {
      continue;  // the kernel does not fit in the padded input: tested in Errors
    }
    check_backends(make, numpy_ref(torch_conv_general(c), {x, w}), dtype, static_cast<int64_t>(w.size()));
    ++checked;
  }
  EXPECT_GT(checked, 30);
}

TEST_F(ConvTest, Conv1d2d3dMatchTorch) {
  for (Dtype dtype : {float32, float64, bfloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto x1 = rand({2, 11, 6}, dtype);
    auto w1 = rand({4, 3, 3}, dtype);
    ConvCase c1{{2}, {1}, {1}, {2}, {1}, 2, false};
    check_backends([&] { return conv1d(x1, w1, 2, 1, 2, 2); }, numpy_ref(torch_conv_general(c1), {x1, w1}), dtype, 9);
    auto x2 = rand({2, 9, 8, 4}, dtype);
    auto w2 = rand({6, 3, 2, 4}, dtype);
    ConvCase c2{{1, 2}, {2, 0}, {2, 0}, {1, 3}, {1, 1}, 1, false};
    check_backends(
        [&] {
          return conv2d(x2, w2, {1, 2}, {2, 0}, {1, 3});
        },
        numpy_ref(torch_conv_general(c2), {x2, w2}), dtype, 24);
    auto x3 = rand({1, 5, 6, 4, 6}, dtype);
    auto w3 = rand({4, 2, 3, 2, 3}, dtype);
    ConvCase c3{{2, 1, 1}, {1, 1, 0}, {1, 1, 0}, {1, 1, 2}, {1, 1, 1}, 2, false};
    check_backends(
        [&] {
          return conv3d(x3, w3, {2, 1, 1}, {1, 1, 0}, {1, 1, 2}, 2);
        },
        numpy_ref(torch_conv_general(c3), {x3, w3}), dtype, 36);
  }
}

TEST_F(ConvTest, DepthwiseMatchesTorch) {
  // One input channel per group, with channel multipliers 1 and 2: oneDNN's depthwise kernels and nuvec's loop.
  for (Dtype dtype : {float32, float64, float16, bfloat16}) {
    for (int multiplier : {1, 2}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " multiplier " + std::to_string(multiplier));
      auto x = rand({2, 10, 9, 12}, dtype);
      auto w = rand({12 * multiplier, 3, 3, 1}, dtype);
      ConvCase c{{2, 1}, {1, 1}, {1, 1}, {1, 2}, {1, 1}, 12, false};
      check_backends(
          [&] {
            return conv2d(x, w, {2, 1}, {1, 1}, {1, 2}, 12);
          },
          numpy_ref(torch_conv_general(c), {x, w}), dtype, 9);
    }
  }
}

TEST_F(ConvTest, ConvTransposeMatchesTorch) {
  for (Dtype dtype : {float32, float64, bfloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto x1 = rand({2, 7, 4}, dtype);
    auto w1 = rand({6, 3, 2}, dtype);  // C_in = 2 groups x 2
    check_backends([&] { return conv_transpose1d(x1, w1, 2, 1, 1, 1, 2); },
                   numpy_ref(torch_conv_transpose({2}, {1}, {1}, {1}, 2), {x1, w1}), dtype, 6);
    auto x2 = rand({2, 5, 4, 3}, dtype);
    auto w2 = rand({5, 3, 2, 3}, dtype);
    check_backends(
        [&] {
          return conv_transpose2d(x2, w2, {2, 3}, {1, 0}, {2, 1}, {1, 2});
        },
        numpy_ref(torch_conv_transpose({2, 3}, {1, 0}, {2, 1}, {1, 2}, 1), {x2, w2}), dtype, 18);
    // The usual upsampling layer (oneDNN computes it as a deconvolution), grouped.
    auto x2u = rand({2, 5, 6, 4}, dtype);
    auto w2u = rand({6, 3, 3, 2}, dtype);
    check_backends(
        [&] {
          return conv_transpose2d(x2u, w2u, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 2);
        },
        numpy_ref(torch_conv_transpose({2, 2}, {1, 1}, {1, 1}, {1, 1}, 2), {x2u, w2u}), dtype, 18);
    auto x3u = rand({1, 3, 4, 3, 3}, dtype);
    auto w3u = rand({2, 2, 3, 2, 3}, dtype);
    check_backends(
        [&] {
          return conv_transpose3d(x3u, w3u, {2, 2, 1}, {0, 1, 0}, {1, 1, 2}, {1, 1, 0});
        },
        numpy_ref(torch_conv_transpose({2, 2, 1}, {0, 1, 0}, {1, 1, 2}, {1, 1, 0}, 1), {x3u, w3u}), dtype, 36);
    auto x3 = rand({1, 3, 4, 3, 2}, dtype);
    auto w3 = rand({3, 2, 2, 3, 2}, dtype);
    check_backends(
        [&] {
          return conv_transpose3d(x3, w3, {2, 1, 2}, {0, 1, 1}, {1, 2, 1}, {1, 0, 0});
        },
        numpy_ref(torch_conv_transpose({2, 1, 2}, {0, 1, 1}, {1, 2, 1}, {1, 0, 0}, 1), {x3, w3}), dtype, 24);
  }
}

TEST_F(ConvTest, NonContiguousOperands) {
  for (Dtype dtype : {float32, float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    // A transposed input, a strided slice of a weight, and a weight broadcast along C_out.
    auto xt = transpose(rand({2, 6, 7, 5}, dtype), {0, 2, 1, 3});                            // (2, 7, 6, 5)
    auto ws = slice(rand({8, 3, 3, 10}, dtype), {0, 0, 0, 0}, {8, 3, 3, 10}, {2, 1, 1, 2});  // (4, 3, 3, 5)
    ConvCase c{{1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, true};
    check_backends(
        [&] {
          return conv_general(xt, ws, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, true);
        },
        numpy_ref(torch_conv_general(c), {xt, ws}), dtype, 45);
    auto wb = broadcast_to(rand({1, 1, 2, 5}, dtype), {3, 1, 2, 5});
    ConvCase cb{{1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 1, false};
    check_backends([&] { return conv2d(xt, wb); }, numpy_ref(torch_conv_general(cb), {xt, wb}), dtype, 10);
  }
}

TEST_F(ConvTest, LargerThanOneChunk) {
  // 8 x 32 x 32 output positions of 3x3x64 taps overflow one im2col chunk; a 1x1 convolution reads its input as
  // the im2col matrix; both agree with torch through both libraries.
  auto x = rand({8, 32, 32, 64}, float32);
  auto w = rand({32, 3, 3, 64}, float32);
  ConvCase c{{1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, false};
  check_backends([&] { return conv2d(x, w, {1, 1}, {1, 1}); }, numpy_ref(torch_conv_general(c), {x, w}), float32, 576);
  auto w1 = rand({16, 1, 1, 64}, float32);
  ConvCase c1{{1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 1, false};
  check_backends([&] { return conv2d(x, w1); }, numpy_ref(torch_conv_general(c1), {x, w1}), float32, 64);
}

TEST_F(ConvTest, EmptyAndSizeOneAxes) {
  for (auto backend : {cpu::ConvBackend::onednn, cpu::ConvBackend::gemm}) {
    cpu::set_conv_backend(backend);
    auto empty_batch = conv2d(zeros({0, 5, 5, 3}), ones({4, 3, 3, 3}));
    EXPECT_EQ(empty_batch.shape(), (Shape{0, 3, 3, 4}));
    empty_batch.eval();
    auto no_outputs = conv1d(ones({2, 5, 3}), ones({0, 2, 3}));
    EXPECT_EQ(no_outputs.shape(), (Shape{2, 4, 0}));
    no_outputs.eval();
    // No input channels: every output is an empty sum.
    auto no_channels = conv1d(ones({2, 5, 0}), ones({3, 2, 0}));
    EXPECT_TRUE(matches(no_channels, numpy_ref("np.zeros((2, 4, 3), np.float32)", {})));
    // Size-1 spatial axes and kernels.
    auto x = rand({3, 1, 7, 2}, float32);
    auto w = rand({2, 1, 1, 2}, float32);
    ConvCase c{{1, 2}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 1, false};
    EXPECT_TRUE(matches(conv2d(x, w, {1, 2}), numpy_ref(torch_conv_general(c), {x, w}), 1e-5, 1e-5, false));
  }
  cpu::set_conv_backend(cpu::ConvBackend::automatic);
}

TEST_F(ConvTest, DtypePromotion) {
  auto x = rand({1, 6, 2}, float32);
  EXPECT_EQ(conv1d(x, rand({3, 2, 2}, bfloat16)).dtype(), float32);
  EXPECT_EQ(conv1d(x, rand({3, 2, 2}, float64)).dtype(), float64);
  EXPECT_EQ(conv1d(rand({1, 6, 2}, bfloat16), rand({3, 2, 2}, int32)).dtype(), bfloat16);
  auto w = rand({3, 2, 2}, int8);
  ConvCase c{{1}, {0}, {0}, {1}, {1}, 1, false};
  EXPECT_TRUE(matches(conv1d(x, w), numpy_ref(torch_conv_general(c), {x, w}), 1e-5, 1e-4, false));
}

TEST_F(ConvTest, Errors) {
  auto x = ones({2, 8, 8, 4});
  auto w = ones({6, 3, 3, 4});
  EXPECT_EQ(error_of([&] {
              conv2d(ones({2, 8, 8, 5}), w);
            }),
            "[conv] Expect the input channels in the input and weight array to match but got shapes - input: "
            "(2,8,8,5) and weight: (6,3,3,4).");
  EXPECT_EQ(error_of([&] {
              conv2d(x, ones({6, 3, 3, 2}), {1, 1}, {0, 0}, {1, 1}, 3);
            }),
            "[conv] The input channels must be divisible by the number of groups. Got input with shape (2,8,8,4) "
            "and 3 groups.");
  EXPECT_EQ(error_of([&] {
              conv2d(x, ones({5, 3, 3, 2}), {1, 1}, {0, 0}, {1, 1}, 2);
            }),
            "[conv] The output channels must be divisible by the number of groups. Got 5 output channels and 2 "
            "groups.");
  EXPECT_EQ(error_of([&] {
              conv2d(x, ones({6, 3, 3, 1}), {1, 1}, {0, 0}, {1, 1}, 2);
            }),
            "[conv] Given groups=2 and weights of shape (6,3,3,1), expected to have 2 input channels but got 4 "
            "input channels instead.");
  EXPECT_EQ(error_of([&] {
              conv2d(ones({8, 8, 4}), w);
            }),
            "[conv] Invalid input array with 3 dimensions for 2D convolution. Expected an array with 4 dimensions "
            "following the format [N, ..., C_in].");
  EXPECT_EQ(error_of([&] {
              conv2d(x, ones({6, 3, 4}));
            }),
            "[conv] Invalid weight array with 3 dimensions for 2D convolution. Expected an array with 4 dimensions "
            "following the format [C_out, ..., C_in].");
  EXPECT_EQ(error_of([&] {
              conv_general(ones({2, 4}), ones({2, 4}), {}, {}, {}, {}, {}, 1, false);
            }),
            "[conv] Only works for inputs with 1-3 spatial dimensions. The inputs must be in the format "
            "[N, ..., C_in]; got an input of shape (2,4).");
  EXPECT_EQ(error_of([&] { conv2d(astype(x, int32), w); }),
            "[conv] Invalid input array with type int32 and weight with type float32. Convolution currently only "
            "supports floating point types.");
  EXPECT_EQ(error_of([&] { conv2d(x, w, {0, 1}); }), "[conv] The stride must be positive; got (0,1).");
  EXPECT_EQ(error_of([&] {
              conv2d(x, w, {1, 1}, {0, 0}, {1, 1}, 0);
            }),
            "[conv] The number of groups must be positive; got 0.");
  EXPECT_EQ(error_of([&] {
              conv_general(x, w, {1, 1, 1}, {}, {}, {}, {}, 1, false);
            }),
            "[conv] Expected stride with 1 or 2 values for 2D convolution; got (1,1,1).");
  EXPECT_EQ(error_of([&] {
              conv2d(ones({1, 2, 8, 4}), w);
            }),
            "[conv] Spatial dimensions of input after padding cannot be smaller than weight spatial dimensions. Got "
            "error at axis 1 for input with shape (1,2,8,4), padding low (0,0), padding high (0,0), and weight of "
            "shape (6,3,3,4).");
  EXPECT_EQ(error_of([&] {
              conv_transpose2d(x, w, {2, 2}, {0, 0}, {1, 1}, {2, 0});
            }),
            "[conv_transpose] The output padding must be non-negative and smaller than either the stride or the "
            "dilation; got output_padding=2, stride=2 and dilation=1.");
}

}  // namespace
}  // namespace nuvec
