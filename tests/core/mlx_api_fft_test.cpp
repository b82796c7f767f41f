// MLX's fft.h, called as MLX code calls it (norms, defaults, trailing streams): a declaration that changes or goes
// missing fails to compile here.

#include <gtest/gtest.h>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

using fft::FFTNorm;

TEST(MlxApiFft, EveryTransformWithAndWithoutNorm) {
  const Stream s = default_stream(Device::cpu);
  auto x = ones({4, 6});
  EXPECT_EQ(fft::fftn(x, {4, 8}, {0, 1}, FFTNorm::Ortho, s).shape(), (Shape{4, 8}));
  EXPECT_EQ(fft::fftn(x, {0, 1}).shape(), (Shape{4, 6}));
  EXPECT_EQ(fft::fftn(x, FFTNorm::Forward).shape(), (Shape{4, 6}));
  EXPECT_EQ(fft::fftn(x).shape(), (Shape{4, 6}));
  EXPECT_EQ(fft::ifftn(x, {4, 8}, {0, 1}, FFTNorm::Backward, s).shape(), (Shape{4, 8}));
  EXPECT_EQ(fft::ifftn(x, {1}, FFTNorm::Ortho).shape(), (Shape{4, 6}));
  EXPECT_EQ(fft::ifftn(x).shape(), (Shape{4, 6}));
  EXPECT_EQ(fft::fft(x, 8, 1, FFTNorm::Ortho, s).shape(), (Shape{4, 8}));
  EXPECT_EQ(fft::fft(x, 0).shape(), (Shape{4, 6}));
  EXPECT_EQ(fft::fft(x).shape(), (Shape{4, 6}));
  EXPECT_EQ(fft::ifft(x, 3, 0, FFTNorm::Forward).shape(), (Shape{3, 6}));
  EXPECT_EQ(fft::ifft(x, -1, FFTNorm::Ortho, s).shape(), (Shape{4, 6}));
  EXPECT_EQ(fft::fft2(x, {2, 2}, {0, 1}, FFTNorm::Ortho, s).shape(), (Shape{2, 2}));
  EXPECT_EQ(fft::fft2(x).shape(), (Shape{4, 6}));
  EXPECT_EQ(fft::ifft2(x, {2, 2}, {0, 1}).shape(), (Shape{2, 2}));
  EXPECT_EQ(fft::ifft2(x, {-2, -1}, FFTNorm::Forward).shape(), (Shape{4, 6}));
  EXPECT_EQ(fft::rfftn(x, {4, 8}, {0, 1}, FFTNorm::Ortho, s).shape(), (Shape{4, 5}));
  EXPECT_EQ(fft::rfftn(x, {1}).shape(), (Shape{4, 4}));
  EXPECT_EQ(fft::rfftn(x).shape(), (Shape{4, 4}));
  EXPECT_EQ(fft::irfftn(x, {4, 8}, {0, 1}, FFTNorm::Forward, s).shape(), (Shape{4, 8}));
  EXPECT_EQ(fft::irfftn(x, {1}).shape(), (Shape{4, 10}));
  EXPECT_EQ(fft::irfftn(x).shape(), (Shape{4, 10}));
  EXPECT_EQ(fft::rfft(x, 8, 1, FFTNorm::Ortho, s).shape(), (Shape{4, 5}));
  EXPECT_EQ(fft::rfft(x).shape(), (Shape{4, 4}));
  EXPECT_EQ(fft::irfft(x, 8, 1).shape(), (Shape{4, 8}));
  EXPECT_EQ(fft::irfft(x, -1, FFTNorm::Ortho).shape(), (Shape{4, 10}));
  EXPECT_EQ(fft::rfft2(x, {4, 4}, {0, 1}, FFTNorm::Backward, s).shape(), (Shape{4, 3}));
  EXPECT_EQ(fft::rfft2(x).shape(), (Shape{4, 4}));
  EXPECT_EQ(fft::irfft2(x, {4, 4}, {0, 1}).shape(), (Shape{4, 4}));
  EXPECT_EQ(fft::irfft2(x, {-2, -1}, FFTNorm::Forward).shape(), (Shape{4, 10}));
  EXPECT_EQ(fft::fftfreq(8, 0.5, s).shape(), Shape{8});
  EXPECT_EQ(fft::rfftfreq(8).shape(), Shape{5});
  EXPECT_EQ(fft::fftshift(x, s).shape(), x.shape());
  EXPECT_EQ(fft::fftshift(x, {1}).shape(), x.shape());
  EXPECT_EQ(fft::ifftshift(x).shape(), x.shape());
  EXPECT_EQ(fft::ifftshift(x, {0}, s).shape(), x.shape());
}

}  // namespace
}  // namespace nuvec
