#include "nuvec/nn/linear.h"

#include <cmath>

#include "nuvec/core/ops.h"
#include "nuvec/core/random.h"
#include "nuvec/core/transforms.h"

namespace nuvec::nn {

namespace {

// x @ w.T (+ b) for a 2-d x with PyTorch's backward: dx = dy @ w, dw = dy.T @ x, db = sum(dy). The weight gradient
// comes out in the weight's own row-major layout; the generic product rule gives a transposed view, which every
// element-wise op of the optimizer then reads through the slow strided path.
std::vector<array> linear_vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                              const std::vector<array>&) {
  const auto& dy = cotangents[0];
  std::vector<array> grads{matmul(dy, primals[1]), matmul(transpose(dy), primals[0])};
  if (primals.size() == 3) {
    grads.push_back(sum(dy, 0));
  }
  return grads;
}

const Function& linear_with_bias() {
  static const Function fn = custom_vjp(
      [](const std::vector<array>& in) -> std::vector<array> { return {addmm(in[2], in[0], transpose(in[1]))}; },
      linear_vjp);
  return fn;
}

const Function& linear_without_bias() {
  static const Function fn = custom_vjp(
      [](const std::vector<array>& in) -> std::vector<array> { return {matmul(in[0], transpose(in[1]))}; },
      linear_vjp);
  return fn;
}

}  // namespace

Linear::Linear(int input_dims, int output_dims, bool bias)
    : weight(random::uniform(-1.0 / std::sqrt(input_dims), 1.0 / std::sqrt(input_dims), {output_dims, input_dims})),
      input_dims_(input_dims),
      output_dims_(output_dims) {
  if (bias) {
    double scale = 1.0 / std::sqrt(input_dims);
    this->bias = random::uniform(-scale, scale, {output_dims});
  }
  register_parameter("weight", weight);
  register_parameter("bias", this->bias);
}

array Linear::forward(const array& x) {
  check_input(x, 1, input_dims_);
  return affine(x, true);
}

array Linear::affine(const array& x, bool with_bias) const {
  // A 2-d product avoids broadcasting the weight over batch axes; reshaping x is a view.
  Shape out_shape = x.shape();
  out_shape.back() = output_dims_;
  auto x2 = x.ndim() == 2 ? x : reshape(x, {-1, input_dims_});
  auto y = bias && with_bias ? linear_with_bias()({x2, weight, *bias})[0] : linear_without_bias()({x2, weight})[0];
  return x.ndim() == 2 ? y : reshape(y, out_shape);
}

Bilinear::Bilinear(int input1_dims, int input2_dims, int output_dims, bool bias)
    : weight(random::uniform(-1.0 / std::sqrt(input1_dims), 1.0 / std::sqrt(input1_dims),
                             {output_dims, input2_dims, input1_dims})) {
  if (bias) {
    double scale = 1.0 / std::sqrt(input1_dims);
    this->bias = random::uniform(-scale, scale, {output_dims});
  }
  register_parameter("weight", weight);
  register_parameter("bias", this->bias);
}

array Bilinear::forward(const array& x1, const array& x2) {
  int out = weight.shape(0);
  int in2 = weight.shape(1);
  int in1 = weight.shape(2);
  check_input(x1, 1, in1, "first input");
  check_input(x2, 1, in2, "second input");
  Shape batch(x1.shape().begin(), x1.shape().end() - 1);
  if (Shape(x2.shape().begin(), x2.shape().end() - 1) != batch) {
    fail("expected inputs with the same leading axes; given shapes " + shape_string(x1.shape()) + " and " +
         shape_string(x2.shape()) + ".");
  }
  // (N, in1) @ (out * in2, in1).T -> (N, out, in2), then contract in2 with x2.
  auto w = reshape(weight, {out * in2, in1});
  auto t = reshape(matmul(reshape(x1, {-1, in1}), transpose(w)), {-1, out, in2});
  auto y = squeeze(matmul(t, expand_dims(reshape(x2, {-1, in2}), -1)), -1);
  if (bias) {
    y = y + *bias;
  }
  batch.push_back(out);
  return reshape(y, batch);
}

Embedding::Embedding(int num_embeddings, int dims)
    : weight(random::normal({num_embeddings, dims}, 0.0F, static_cast<float>(1.0 / std::sqrt(dims)))),
      num_embeddings_(num_embeddings),
      dims_(dims) {
  register_parameter("weight", weight);
}

void Embedding::check_indices(const array& x) const {
  if (!is_integer(x.dtype())) {
    fail("expected integer indices; given dtype " + std::string(dtype_name(x.dtype())) + ".");
  }
}

array Embedding::forward(const array& x) {
  check_indices(x);
  return take(weight, x, 0);
}

array Embedding::as_linear(const array& x) {
  check_input(x, 1, dims_);
  return matmul(x, transpose(weight));
}

}  // namespace nuvec::nn
