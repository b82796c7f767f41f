// MLX's ops.h, declaration by declaration, called as MLX code calls them (brace lists, defaults, trailing streams):
// a declaration that changes or goes missing fails to compile here. The calls build lazy graphs; shapes are checked.

#include <gtest/gtest.h>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

TEST(MlxApiOps, Creation) {
  const Stream s = default_stream(Device::cpu);
  EXPECT_EQ(arange(0.0, 10.0, 2.0, float32, s).shape(), Shape{5});
  EXPECT_EQ(arange(0.0, 10.0, 2.0, s).shape(), Shape{5});
  EXPECT_EQ(arange(0.0, 4.0, int32, s).shape(), Shape{4});
  EXPECT_EQ(arange(0.0, 4.0).shape(), Shape{4});
  EXPECT_EQ(arange(4.0, float16).dtype(), float16);
  EXPECT_EQ(arange(4.0).shape(), Shape{4});
  EXPECT_EQ(arange(0, 10, 3).dtype(), int32);
  EXPECT_EQ(arange(1, 4).shape(), Shape{3});
  EXPECT_EQ(arange(4, s).shape(), Shape{4});
  EXPECT_EQ(linspace(0.0, 1.0, 5, false, float32, s).shape(), Shape{5});
  EXPECT_EQ(linspace(0.0, 1.0).shape(), Shape{50});
  EXPECT_EQ(linspace(0.0, 1.0, 3, float16).dtype(), float16);
  EXPECT_EQ(astype(array({1, 2}), float32, s).dtype(), float32);
  EXPECT_EQ(as_strided(arange(6.0F), {2, 2}, {2, 1}, 0, s).shape(), (Shape{2, 2}));
  EXPECT_EQ(copy(array({1}), s).shape(), Shape{1});
  EXPECT_EQ(full({2, 3}, array(1.0F), int32, s).dtype(), int32);
  EXPECT_EQ(full({2, 3}, array(1.0F), s).dtype(), float32);
  EXPECT_EQ(full({2}, 3, float16).dtype(), float16);
  EXPECT_EQ(full({2}, 3.0F).dtype(), float32);
  auto a = ones({2, 3});
  EXPECT_EQ(full_like(a, array(2), int32, s).dtype(), int32);
  EXPECT_EQ(full_like(a, array(2)).dtype(), float32);
  EXPECT_EQ(full_like(a, 2, int16).dtype(), int16);
  EXPECT_EQ(full_like(a, 2.5).dtype(), float32);
  EXPECT_EQ(zeros({2}, int32, s).dtype(), int32);
  EXPECT_EQ(zeros({2}).dtype(), float32);
  EXPECT_EQ(zeros_like(a, s).shape(), a.shape());
  EXPECT_EQ(zeros_like(a, int8, s).dtype(), int8);
  EXPECT_EQ(ones({2}, bool_, s).dtype(), bool_);
  EXPECT_EQ(ones_like(a).shape(), a.shape());
  EXPECT_EQ(ones_like(a, uint8).dtype(), uint8);
  EXPECT_EQ(eye(3, 4, 1, float16, s).shape(), (Shape{3, 4}));
  EXPECT_EQ(eye(3, int32).dtype(), int32);
  EXPECT_EQ(eye(3, 4).shape(), (Shape{3, 4}));
  EXPECT_EQ(eye(3, 4, -1).shape(), (Shape{3, 4}));
  EXPECT_EQ(eye(3).shape(), (Shape{3, 3}));
  EXPECT_EQ(identity(3, int32, s).dtype(), int32);
  EXPECT_EQ(identity(3).shape(), (Shape{3, 3}));
  EXPECT_EQ(tri(3, 4, 0, float32, s).shape(), (Shape{3, 4}));
  EXPECT_EQ(tri(3, float32).shape(), (Shape{3, 3}));
  EXPECT_EQ(tril(a).shape(), a.shape());
  EXPECT_EQ(triu(a, 1, s).shape(), a.shape());
  EXPECT_EQ(hanning(5).shape(), Shape{5});
  EXPECT_EQ(hamming(5, s).shape(), Shape{5});
  EXPECT_EQ(bartlett(5).shape(), Shape{5});
  EXPECT_EQ(blackman(5).shape(), Shape{5});
  auto grids = meshgrid({arange(3.0F), arange(2.0F)}, false, "ij", s);
  EXPECT_EQ(grids[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(meshgrid({arange(3.0F), arange(2.0F)})[0].shape(), (Shape{2, 3}));
}

TEST(MlxApiOps, ShapesAndLayout) {
  const Stream s = default_stream(Device::cpu);
  auto a = reshape(arange(24.0F), {2, 3, 4}, s);
  EXPECT_EQ(unflatten(a, 2, {2, 2}, s).shape(), (Shape{2, 3, 2, 2}));
  EXPECT_EQ(flatten(a, 1, 2, s).shape(), (Shape{2, 12}));
  EXPECT_EQ(flatten(a, 1).shape(), (Shape{2, 12}));
  EXPECT_EQ(flatten(a).shape(), Shape{24});
  EXPECT_EQ(hadamard_transform(ones({4, 8})).shape(), (Shape{4, 8}));
  EXPECT_EQ(hadamard_transform(ones({4, 8}), 0.5F, s).shape(), (Shape{4, 8}));
  auto b = ones({1, 3, 1});
  EXPECT_EQ(squeeze(b, {0, 2}, s).shape(), Shape{3});
  EXPECT_EQ(squeeze(b, 0).shape(), (Shape{3, 1}));
  EXPECT_EQ(squeeze(b).shape(), Shape{3});
  EXPECT_EQ(expand_dims(a, {0, 2}, s).shape(), (Shape{1, 2, 1, 3, 4}));
  EXPECT_EQ(expand_dims(a, -1).shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(flip(a, {0, 1}, s).shape(), a.shape());
  EXPECT_EQ(flip(a, 1).shape(), a.shape());
  EXPECT_EQ(flip(a).shape(), a.shape());
  EXPECT_EQ(slice(a, {0, 1, 0}, {2, 3, 4}, {1, 1, 2}, s).shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(slice(a, {0, 0, 0}, {1, 2, 3}).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(slice(a, array({1}), {1}, {2, 2, 4}, s).shape(), (Shape{2, 2, 4}));
  auto u = zeros({1, 2, 2});
  EXPECT_EQ(slice_update(a, u, {0, 0, 0}, {1, 2, 4}, {1, 1, 2}, s).shape(), a.shape());
  EXPECT_EQ(slice_update(a, u, {0, 0, 0}, {1, 2, 2}).shape(), a.shape());
  EXPECT_EQ(slice_update(a, ones({2, 2, 4}), array({1}), {1}, s).shape(), a.shape());
  for (auto x :
       {slice_update_add(a, u, {0, 0, 0}, {1, 2, 4}, {1, 1, 2}, s), slice_update_add(a, u, {0, 0, 0}, {1, 2, 2}),
        slice_update_prod(a, u, {0, 0, 0}, {1, 2, 4}, {1, 1, 2}), slice_update_prod(a, u, {0, 0, 0}, {1, 2, 2}),
        slice_update_max(a, u, {0, 0, 0}, {1, 2, 4}, {1, 1, 2}), slice_update_max(a, u, {0, 0, 0}, {1, 2, 2}),
        slice_update_min(a, u, {0, 0, 0}, {1, 2, 4}, {1, 1, 2}), slice_update_min(a, u, {0, 0, 0}, {1, 2, 2}, s)}) {
    EXPECT_EQ(x.shape(), a.shape());
  }
  EXPECT_EQ(split(a, 2, 2, s).size(), 2U);
  EXPECT_EQ(split(a, 2).size(), 2U);
  EXPECT_EQ(split(a, {1, 2}, 2, s).size(), 3U);
  EXPECT_EQ(split(a, {1, 2}).size(), 3U);
  EXPECT_EQ(unstack(a, 1, s).size(), 3U);
  EXPECT_EQ(unstack(a).size(), 2U);
  EXPECT_EQ(clip(a, array(0.0F), array(1.0F), s).shape(), a.shape());
  EXPECT_EQ(clip(a, std::nullopt, array(1.0F)).shape(), a.shape());
  EXPECT_EQ(concatenate({a, a}, 1, s).shape(), (Shape{2, 6, 4}));
  EXPECT_EQ(concatenate({a, a}).shape(), Shape{48});
  EXPECT_EQ(stack({a, a}, 1, s).shape(), (Shape{2, 2, 3, 4}));
  EXPECT_EQ(stack({a, a}).shape(), (Shape{2, 2, 3, 4}));
  EXPECT_EQ(repeat(a, 2, 1, s).shape(), (Shape{2, 6, 4}));
  EXPECT_EQ(repeat(a, 2).shape(), Shape{48});
  EXPECT_EQ(tile(a, {2, 1, 1}, s).shape(), (Shape{4, 3, 4}));
  EXPECT_EQ(transpose(a, {2, 0, 1}, s).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(transpose(a, std::vector<int>{1, 0, 2}).shape(), (Shape{3, 2, 4}));
  EXPECT_EQ(transpose(a).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(swapaxes(a, 0, 2, s).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(moveaxis(a, 0, -1, s).shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(pad(a, {1}, {1}, {2}, array(0.0F), "constant", s).shape(), (Shape{2, 6, 4}));
  EXPECT_EQ(pad(a, {{0, 0}, {1, 1}, {2, 2}}).shape(), (Shape{2, 5, 8}));
  EXPECT_EQ(pad(a, {1, 1}, array(0.0F), "edge").shape(), (Shape{4, 5, 6}));
  EXPECT_EQ(pad(a, 1, array(0.0F), "reflect", s).shape(), (Shape{4, 5, 6}));
  EXPECT_EQ(pad(a, 2, array(0.0F), "symmetric").shape(), (Shape{6, 7, 8}));
  EXPECT_EQ(broadcast_to(array(1.0F), {2, 2}, s).shape(), (Shape{2, 2}));
  EXPECT_EQ(broadcast_arrays({ones({2, 1}), ones({3})}, s)[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(diagonal(a, 0, 1, 2, s).shape(), (Shape{2, 3}));
  EXPECT_EQ(diagonal(ones({3, 3})).shape(), Shape{3});
  EXPECT_EQ(diag(ones({3}), 1, s).shape(), (Shape{4, 4}));
  EXPECT_EQ(trace(ones({3, 3}), 0, 0, 1, int32, s).dtype(), int32);
  EXPECT_EQ(trace(ones({3, 3}), 1, 0, 1).ndim(), 0);
  EXPECT_EQ(trace(ones({3, 3})).ndim(), 0);
  EXPECT_EQ(atleast_1d(array(1.0F), s).shape(), Shape{1});
  EXPECT_EQ(atleast_2d(std::vector<array>{array(1.0F)})[0].shape(), (Shape{1, 1}));
  EXPECT_EQ(atleast_3d(ones({2})).shape(), (Shape{1, 2, 1}));
  EXPECT_EQ(number_of_elements(a, {0, 1}, false, int32, s).dtype(), int32);
  EXPECT_EQ(roll(a, 1, s).shape(), a.shape());
  EXPECT_EQ(roll(a, Shape{1, 2}, s).shape(), a.shape());
  EXPECT_EQ(roll(a, 1, 2).shape(), a.shape());
  EXPECT_EQ(roll(a, 1, {0, 1}).shape(), a.shape());
  EXPECT_EQ(roll(a, Shape{1}, 2).shape(), a.shape());
  EXPECT_EQ(roll(a, Shape{1, 2}, {1, 2}, s).shape(), a.shape());
  EXPECT_EQ(view(a, int32, s).dtype(), int32);
  EXPECT_EQ(contiguous(a, false, s).shape(), a.shape());
  EXPECT_EQ(stop_gradient(a, s).shape(), a.shape());
  auto deps = depends({a}, {ones({2})});
  EXPECT_EQ(deps.size(), 1U);
}

TEST(MlxApiOps, ElementwiseAndComparisons) {
  const Stream s = default_stream(Device::cpu);
  auto a = ones({2, 3});
  auto b = full({2, 3}, 2.0F);
  auto i = array({1, 2});
  for (auto x : {equal(a, b, s),
                 not_equal(a, b),
                 greater(a, b),
                 greater_equal(a, b),
                 less(a, b),
                 less_equal(a, b),
                 a == b,
                 a != b,
                 a > b,
                 a >= b,
                 a<b, a <= b, a == 1.0F, 1.0F == a, a != 1, 1 != a, a> 1,
                 2 > a,
                 a >= 1,
                 2 >= a,
                 a < 1,
                 2 < a,
                 a <= 1,
                 2 <= a,
                 isnan(a, s),
                 isinf(a),
                 isposinf(a),
                 isneginf(a),
                 logical_not(a, s),
                 logical_and(a, b, s),
                 logical_or(a, b),
                 a && b,
                 a || b}) {
    EXPECT_EQ(x.dtype(), bool_);
  }
  EXPECT_EQ(array_equal(a, b, true, s).ndim(), 0);
  EXPECT_EQ(array_equal(a, b).ndim(), 0);
  EXPECT_EQ(where(a > b, a, b, s).shape(), a.shape());
  EXPECT_EQ(nan_to_num(a, 0.0F, 1e5F, -1e5F, s).shape(), a.shape());
  EXPECT_EQ(nan_to_num(a).shape(), a.shape());
  EXPECT_EQ(allclose(a, b, 1e-5, 1e-8, false, s).ndim(), 0);
  EXPECT_EQ(isclose(a, b).shape(), a.shape());
  for (auto x : {abs(a, s),
                 negative(a, s),
                 -a,
                 sign(a),
                 reciprocal(a),
                 add(a, b, s),
                 a + b,
                 a + 1.0F,
                 1.0F + a,
                 subtract(a, b),
                 a - b,
                 a - 1.0F,
                 1.0F - a,
                 multiply(a, b),
                 a * b,
                 a * 2.0F,
                 2.0F * a,
                 divide(a, b),
                 a / b,
                 1.0 / a,
                 a / 2.0,
                 floor_divide(a, b),
                 remainder(a, b),
                 a % b,
                 a % 2.0F,
                 2.0F % a,
                 maximum(a, b),
                 minimum(a, b),
                 floor(a),
                 ceil(a),
                 square(a),
                 exp(a),
                 sin(a),
                 cos(a),
                 tan(a),
                 arcsin(a),
                 arccos(a),
                 arctan(a),
                 arctan2(a, b),
                 sinh(a),
                 cosh(a),
                 tanh(a),
                 arcsinh(a),
                 arccosh(a),
                 arctanh(a),
                 degrees(a),
                 radians(a),
                 log(a),
                 log2(a),
                 log10(a),
                 log1p(a),
                 logaddexp(a, b),
                 sigmoid(a),
                 erf(a),
                 erfinv(a),
                 expm1(a),
                 round(a, 2, s),
                 round(a),
                 sqrt(a),
                 rsqrt(a),
                 power(a, b),
                 conjugate(a),
                 real(a),
                 imag(a)}) {
    EXPECT_EQ(x.shape(), a.shape());
  }
  EXPECT_EQ(divmod(a, b, s).size(), 2U);
  for (auto x : {positive(a, s), trunc(a)}) {
    EXPECT_EQ(x.dtype(), float32);
  }
  EXPECT_EQ(isfinite(a, s).dtype(), bool_);
  EXPECT_EQ(logical_xor(a, b, s).dtype(), bool_);
  EXPECT_EQ(to_fp8(a, s).dtype(), uint8);
  EXPECT_EQ(from_fp8(to_fp8(a), bfloat16, s).dtype(), bfloat16);
  for (auto x : {bitwise_and(i, i, s), bitwise_or(i, i), bitwise_xor(i, i), left_shift(i, i), right_shift(i, i), i & i,
                 i | i, i ^ i, i << i, i >> i, bitwise_invert(i), ~i}) {
    EXPECT_EQ(x.dtype(), int32);
  }
}

TEST(MlxApiOps, Reductions) {
  const Stream s = default_stream(Device::cpu);
  auto a = ones({2, 3, 4});
  for (auto x : {all(a, true, s), any(a, true), sum(a, true), mean(a, true), var(a, true, 1), std(a, true, 0, s),
                 prod(a, true), max(a, true), min(a, true), logsumexp(a, true), median(a, true)}) {
    EXPECT_EQ(x.shape(), (Shape{1, 1, 1}));
  }
  for (auto x : {all(a), any(a), sum(a), mean(a), var(a), std(a), prod(a), max(a), min(a), logsumexp(a), median(a),
                 argmin(a), argmax(a, s)}) {
    EXPECT_EQ(x.ndim(), 0);
  }
  for (auto x :
       {all(a, {0, 2}), any(a, {0, 2}, false, s), sum(a, {0, 2}), mean(a, {0, 2}), var(a, {0, 2}, false, 1),
        std(a, {0, 2}), prod(a, {0, 2}), max(a, {0, 2}), min(a, {0, 2}), logsumexp(a, {0, 2}), median(a, {0, 2})}) {
    EXPECT_EQ(x.shape(), Shape{3});
  }
  for (auto x : {all(a, 1), any(a, 1, false, s), sum(a, 1), mean(a, 1), var(a, 1), std(a, 1), prod(a, 1), max(a, 1),
                 min(a, 1), logsumexp(a, 1), median(a, 1), argmin(a, 1), argmax(a, 1, false, s)}) {
    EXPECT_EQ(x.shape(), (Shape{2, 4}));
  }
  EXPECT_EQ(count_nonzero(a, true, s).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(count_nonzero(a, 1).shape(), (Shape{2, 4}));
  EXPECT_EQ(count_nonzero(a, {0, 1}, false, s).shape(), Shape{4});
  EXPECT_EQ(argmin(a, true).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(argmax(a, true, s).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(sort(a, s).shape(), Shape{24});  // without an axis: the flattened array
  EXPECT_EQ(sort(a, 1).shape(), a.shape());
  EXPECT_EQ(argsort(a).shape(), Shape{24});
  EXPECT_EQ(argsort(a, 0, s).shape(), a.shape());
  EXPECT_EQ(partition(a, 1).shape(), Shape{24});
  EXPECT_EQ(partition(a, 1, 1, s).shape(), a.shape());
  EXPECT_EQ(argpartition(a, 1).shape(), Shape{24});
  EXPECT_EQ(argpartition(a, 1, 0).shape(), a.shape());
  EXPECT_EQ(topk(a, 2, s).shape(), Shape{2});
  EXPECT_EQ(topk(a, 1, 1).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(searchsorted(arange(4.0F), array({1.5F}), "right", s).shape(), Shape{1});
  EXPECT_EQ(searchsorted(arange(4.0F), array({1.5F})).shape(), Shape{1});
  EXPECT_EQ(logcumsumexp(a).shape(), Shape{24});
  EXPECT_EQ(logcumsumexp(a, 1, true, false, s).shape(), a.shape());
  EXPECT_EQ(cumsum(a).shape(), Shape{24});
  EXPECT_EQ(cumsum(a, 1, true, false, s).shape(), a.shape());
  EXPECT_EQ(cumsum(a, 1, false, true, int32, s).dtype(), int32);
  EXPECT_EQ(cumprod(a, 2).shape(), a.shape());
  EXPECT_EQ(cummax(a, 0, false, true, s).shape(), a.shape());
  EXPECT_EQ(cummin(a).shape(), Shape{24});
  EXPECT_EQ(softmax(a, {1, 2}, true, s).shape(), a.shape());
  EXPECT_EQ(softmax(a).shape(), a.shape());
  EXPECT_EQ(softmax(a, -1, false).shape(), a.shape());
  EXPECT_EQ(diff(a, 1, -1, s).shape(), (Shape{2, 3, 3}));
}

TEST(MlxApiOps, IndexingAndProducts) {
  const Stream s = default_stream(Device::cpu);
  auto a = ones({4, 3});
  auto idx = array({0, 2});
  EXPECT_EQ(gather(a, {idx}, {0}, {1, 3}, s).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(gather(a, idx, 0, {1, 3}).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(take(a, idx, 0, s).shape(), (Shape{2, 3}));
  EXPECT_EQ(take(a, 1, 1).shape(), Shape{4});
  EXPECT_EQ(take(a, idx).shape(), Shape{2});
  EXPECT_EQ(take(a, 5).ndim(), 0);
  auto col = array({0, 1, 2, 0}, {4, 1});
  EXPECT_EQ(take_along_axis(a, col, 1, s).shape(), (Shape{4, 1}));
  EXPECT_EQ(put_along_axis(a, col, zeros({4, 1}), 1, s).shape(), a.shape());
  EXPECT_EQ(scatter_add_axis(a, col, zeros({4, 1}), 1).shape(), a.shape());
  auto updates = zeros({2, 1, 3});
  for (auto x :
       {scatter(a, {idx}, updates, {0}, s), scatter_add(a, {idx}, updates, {0}), scatter_prod(a, {idx}, updates, {0}),
        scatter_max(a, {idx}, updates, {0}), scatter_min(a, {idx}, updates, {0}), scatter(a, idx, updates, 0),
        scatter_add(a, idx, updates, 0), scatter_prod(a, idx, updates, 0), scatter_max(a, idx, updates, 0),
        scatter_min(a, idx, updates, 0, s), masked_scatter(a, a > 0.0F, zeros({12}), s)}) {
    EXPECT_EQ(x.shape(), a.shape());
  }
  EXPECT_EQ(matmul(a, ones({3, 2}), s).shape(), (Shape{4, 2}));
  EXPECT_EQ(kron(a, a, s).shape(), (Shape{16, 9}));
  EXPECT_EQ(tensordot(a, ones({3, 2}), 1, s).shape(), (Shape{4, 2}));
  EXPECT_EQ(tensordot(a, ones({3, 2}), {1}, {0}).shape(), (Shape{4, 2}));
  EXPECT_EQ(outer(ones({2}), ones({3}), s).shape(), (Shape{2, 3}));
  EXPECT_EQ(inner(ones({2, 3}), ones({3})).shape(), Shape{2});
  EXPECT_EQ(vecdot(a, a).shape(), Shape{4});
  EXPECT_EQ(addmm(ones({4, 2}), a, ones({3, 2}), 1.0F, 1.0F, s).shape(), (Shape{4, 2}));
  EXPECT_EQ(block_masked_mm(ones({64, 64}), ones({64, 64}), 32).shape(), (Shape{64, 64}));
  EXPECT_EQ(gather_mm(ones({2, 4, 3}), ones({2, 3, 5})).shape(), (Shape{2, 4, 5}));
  EXPECT_EQ(segmented_mm(ones({4, 6}), ones({6, 5}), array({0, 3, 3, 6}, {2, 2}), s).shape(), (Shape{2, 4, 5}));
  auto x = ones({1, 8, 4});
  auto w = ones({2, 3, 4});
  EXPECT_EQ(conv1d(x, w, 1, 0, 1, 1, s).shape(), (Shape{1, 6, 2}));
  EXPECT_EQ(conv1d(x, w).shape(), (Shape{1, 6, 2}));
  EXPECT_EQ(conv2d(ones({1, 5, 5, 2}), ones({3, 2, 2, 2}), {1, 1}, {0, 0}, {1, 1}, 1, s).shape(), (Shape{1, 4, 4, 3}));
  EXPECT_EQ(conv3d(ones({1, 3, 3, 3, 1}), ones({1, 2, 2, 2, 1})).shape(), (Shape{1, 2, 2, 2, 1}));
  EXPECT_EQ(conv_transpose1d(x, ones({2, 3, 4}), 1, 0, 1, 0, 1, s).shape(), (Shape{1, 10, 2}));
  EXPECT_EQ(conv_transpose2d(ones({1, 4, 4, 2}), ones({3, 2, 2, 2})).shape(), (Shape{1, 5, 5, 3}));
  EXPECT_EQ(conv_transpose3d(ones({1, 2, 2, 2, 1}), ones({1, 2, 2, 2, 1})).shape(), (Shape{1, 3, 3, 3, 1}));
  EXPECT_EQ(conv_general(x, w, {1}, {0}, {0}, {1}, {1}, 1, false, s).shape(), (Shape{1, 6, 2}));
  auto weights = ones({8, 64});
  auto q = quantize(weights);
  EXPECT_EQ(q.size(), 3U);
  EXPECT_EQ(dequantize(q[0], q[1], q[2]).shape(), weights.shape());
  EXPECT_EQ(dequantize(q[0], q[1], q[2], 64, 4, "affine", std::nullopt, float32, s).shape(), weights.shape());
  EXPECT_EQ(quantized_matmul(ones({2, 64}), q[0], q[1], q[2]).shape(), (Shape{2, 8}));
  EXPECT_EQ(quantized_matmul(ones({2, 64}), q[0], q[1], q[2], true, 64, 4, "affine", s).shape(), (Shape{2, 8}));
  EXPECT_EQ(gather_qmm(ones({2, 64}), q[0], q[1], q[2]).shape(), (Shape{2, 8}));
}

TEST(MlxApiOps, FullArgumentForms) {
  // The forms the tests above leave at their defaults: every argument given, in MLX's order.
  const Stream s = default_stream(Device::cpu);
  auto a = ones({2, 3, 4});
  EXPECT_EQ(cumsum(a, true, false, s).shape(), Shape{24});
  EXPECT_EQ(cumsum(a, false, true, float32, s).dtype(), float32);
  EXPECT_EQ(cumprod(a, true, false, s).shape(), Shape{24});
  EXPECT_EQ(cumprod(a, 1, true, false, s).shape(), a.shape());
  EXPECT_EQ(cumprod(a, 1, false, true, int32, s).dtype(), int32);
  EXPECT_EQ(cummax(a, true, false, s).shape(), Shape{24});
  EXPECT_EQ(cummin(a, 2, true, false, s).shape(), a.shape());
  EXPECT_EQ(logcumsumexp(a, true, false, s).shape(), Shape{24});
  EXPECT_EQ(softmax(a, true, s).shape(), a.shape());
  EXPECT_EQ(softmax(a, 1, true, s).shape(), a.shape());
  auto lhs = array({0, 1});
  auto rhs = array({1, 1});
  EXPECT_EQ(gather_mm(ones({2, 4, 3}), ones({2, 3, 5}), lhs, rhs, true, s).shape(), (Shape{2, 4, 5}));
  auto m = ones({2, 2}, bool_);
  EXPECT_EQ(block_masked_mm(ones({64, 64}), ones({64, 64}), 32, m, m, m, s).shape(), (Shape{64, 64}));
  EXPECT_EQ(conv2d(ones({1, 5, 5, 2}), ones({3, 2, 2, 2}), {1, 1}, {1, 1}, {1, 1}, 1, s).shape(), (Shape{1, 6, 6, 3}));
  EXPECT_EQ(conv3d(ones({1, 3, 3, 3, 1}), ones({1, 2, 2, 2, 1}), {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1, s).shape(),
            (Shape{1, 2, 2, 2, 1}));
  EXPECT_EQ(conv_transpose2d(ones({1, 4, 4, 2}), ones({3, 2, 2, 2}), {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, s).shape(),
            (Shape{1, 5, 5, 3}));
  EXPECT_EQ(
      conv_transpose3d(ones({1, 2, 2, 2, 1}), ones({1, 2, 2, 2, 1}), {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1, s)
          .shape(),
      (Shape{1, 3, 3, 3, 1}));
  EXPECT_EQ(conv_general(ones({1, 8, 4}), ones({2, 3, 4}), {1}, {1}, {1}, {1}, 1, false, s).shape(), (Shape{1, 8, 2}));
  auto weights = ones({8, 64});
  auto q = quantize(weights, 32, 8, "affine", std::nullopt, s);
  EXPECT_EQ(q[1].shape(), (Shape{8, 2}));
  EXPECT_EQ(dequantize(q[0], q[1], q[2], 32, 8, "affine", std::nullopt, bfloat16, s).dtype(), bfloat16);
  EXPECT_EQ(
      gather_qmm(ones({2, 64}), q[0], q[1], q[2], array({0}), std::nullopt, true, 32, 8, "affine", false, s).shape(),
      (Shape{1, 2, 8}));
  auto x = ones({2, 64});
  EXPECT_EQ(qqmm(x, weights, std::nullopt, 64, 4, "affine", std::nullopt, std::nullopt, s).shape(), (Shape{2, 8}));
  EXPECT_EQ(qqmm(x, weights, {}, 32, 8, "affine").shape(), (Shape{2, 8}));
  EXPECT_EQ(gather_qqmm(ones({2, 2, 64}), ones({3, 8, 64}), std::nullopt, array({0, 1}), array({2, 0}), 64, 4, "affine",
                        std::nullopt, std::nullopt, true, s)
                .shape(),
            (Shape{2, 2, 8}));
  EXPECT_EQ(gather_qqmm(ones({2, 64}), weights, {}, {}, {}, 64, 4, "affine").shape(), (Shape{2, 8}));
}

}  // namespace
}  // namespace nuvec
