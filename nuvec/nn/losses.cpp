#include "nuvec/nn/losses.h"

#include <cmath>
#include <string>

#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"
#include "nuvec/nn/scalar.h"

namespace nuvec::nn::losses {

using detail::like;

namespace {

array reduce(const array& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::none:
      return loss;
    case Reduction::mean:
      return mean(loss);
    case Reduction::sum:
      return sum(loss);
  }
  throw_internal("[losses] unknown reduction");
}

void check_same_shape(const char* loss, const array& a, const array& b, const char* a_name, const char* b_name) {
  if (a.shape() != b.shape()) {
    throw_invalid(nuvec::detail::op_prefix(loss) + a_name + " and " + b_name + " must have the same shape; given " +
                  shape_string(a.shape()) + " and " + shape_string(b.shape()) + ".");
  }
}

array apply_weights(const char* loss, const array& value, const std::optional<array>& weights) {
  if (!weights) {
    return value;
  }
  if (weights->shape() != value.shape()) {
    throw_invalid(nuvec::detail::op_prefix(loss) + "weights must have the shape of the per-sample losses " +
                  shape_string(value.shape()) + "; given " + shape_string(weights->shape()) + ".");
  }
  return value * *weights;
}

/// Integer class indices of logits' shape without `axis`, as a take_along_axis index array.
array class_indices(const char* loss, const array& logits, const array& targets, int axis) {
  Shape expected = logits.shape();
  expected.erase(expected.begin() + normalize_axis(axis, logits.ndim(), loss));
  if (targets.shape() != expected) {
    throw_invalid(nuvec::detail::op_prefix(loss) + "class-index targets must have shape " + shape_string(expected) +
                  " (the logits' shape " + shape_string(logits.shape()) + " without axis " + std::to_string(axis) +
                  "); given " + shape_string(targets.shape()) + ".");
  }
  return expand_dims(targets, axis);
}

}  // namespace

array cross_entropy(const array& logits, const array& targets, const std::optional<array>& weights, int axis,
                    float label_smoothing, Reduction reduction) {
  if (label_smoothing < 0.0F || label_smoothing >= 1.0F) {
    throw_invalid("[cross_entropy] label_smoothing must be in [0, 1); given " + std::to_string(label_smoothing) + ".");
  }
  auto lse = logsumexp(logits, axis);
  array loss = lse;
  if (is_integer(targets.dtype())) {
    auto index = class_indices("cross_entropy", logits, targets, axis);
    auto score = squeeze(take_along_axis(logits, index, axis), axis);
    if (label_smoothing > 0.0F) {
      // (1 - s) * (lse - score) + s * mean(lse - logits) over classes.
      loss = lse - like(score, 1.0 - label_smoothing) * score - like(score, label_smoothing) * mean(logits, axis);
    } else {
      loss = lse - score;
    }
  } else {
    check_same_shape("cross_entropy", logits, targets, "logits", "probability targets");
    array probs = targets;
    if (label_smoothing > 0.0F) {
      const double classes = logits.shape(axis);
      probs = probs * like(probs, 1.0 - label_smoothing) + like(probs, label_smoothing / classes);
    }
    loss = lse - sum(probs * logits, axis);
  }
  return reduce(apply_weights("cross_entropy", loss, weights), reduction);
}

array binary_cross_entropy(const array& inputs, const array& targets, const std::optional<array>& weights,
                           bool with_logits, Reduction reduction) {
  check_same_shape("binary_cross_entropy", inputs, targets, "inputs", "targets");
  array loss = inputs;
  if (with_logits) {
    loss = logaddexp(like(inputs, 0.0), inputs) - inputs * targets;
  } else {
    auto log_p = maximum(log(inputs), like(inputs, -100.0));
    auto log_q = maximum(log(like(inputs, 1.0) - inputs), like(inputs, -100.0));
    loss = -(targets * log_p + (like(targets, 1.0) - targets) * log_q);
  }
  return reduce(apply_weights("binary_cross_entropy", loss, weights), reduction);
}

array nll_loss(const array& inputs, const array& targets, int axis, Reduction reduction) {
  auto index = class_indices("nll_loss", inputs, targets, axis);
  return reduce(-squeeze(take_along_axis(inputs, index, axis), axis), reduction);
}

array mse_loss(const array& predictions, const array& targets, Reduction reduction) {
  check_same_shape("mse_loss", predictions, targets, "predictions", "targets");
  return reduce(square(predictions - targets), reduction);
}

array l1_loss(const array& predictions, const array& targets, Reduction reduction) {
  check_same_shape("l1_loss", predictions, targets, "predictions", "targets");
  return reduce(abs(predictions - targets), reduction);
}

array smooth_l1_loss(const array& predictions, const array& targets, float beta, Reduction reduction) {
  check_same_shape("smooth_l1_loss", predictions, targets, "predictions", "targets");
  auto diff = abs(predictions - targets);
  auto loss = where(less(diff, like(diff, beta)), like(diff, 0.5 / beta) * square(diff), diff - like(diff, 0.5 * beta));
  return reduce(loss, reduction);
}

array huber_loss(const array& inputs, const array& targets, float delta, Reduction reduction) {
  check_same_shape("huber_loss", inputs, targets, "inputs", "targets");
  auto diff = abs(inputs - targets);
  auto loss = where(less_equal(diff, like(diff, delta)), like(diff, 0.5) * square(diff),
                    like(diff, delta) * (diff - like(diff, 0.5 * delta)));
  return reduce(loss, reduction);
}

array kl_div_loss(const array& inputs, const array& targets, int axis, Reduction reduction) {
  check_same_shape("kl_div_loss", inputs, targets, "inputs", "targets");
  return reduce(sum(exp(targets) * (targets - inputs), axis), reduction);
}

array log_cosh_loss(const array& inputs, const array& targets, Reduction reduction) {
  check_same_shape("log_cosh_loss", inputs, targets, "inputs", "targets");
  auto d = inputs - targets;
  return reduce(logaddexp(d, -d) - like(d, std::log(2.0)), reduction);
}

array cosine_similarity_loss(const array& x1, const array& x2, int axis, float eps, Reduction reduction) {
  check_same_shape("cosine_similarity_loss", x1, x2, "x1", "x2");
  auto dot = sum(x1 * x2, axis);
  auto norms = sqrt(sum(square(x1), axis)) * sqrt(sum(square(x2), axis));
  return reduce(dot / maximum(norms, like(norms, eps)), reduction);
}

array hinge_loss(const array& inputs, const array& targets, Reduction reduction) {
  check_same_shape("hinge_loss", inputs, targets, "inputs", "targets");
  return reduce(maximum(like(inputs, 1.0) - inputs * targets, like(inputs, 0.0)), reduction);
}

array margin_ranking_loss(const array& inputs1, const array& inputs2, const array& targets, float margin,
                          Reduction reduction) {
  check_same_shape("margin_ranking_loss", inputs1, inputs2, "inputs1", "inputs2");
  check_same_shape("margin_ranking_loss", inputs1, targets, "inputs1", "targets");
  auto loss = maximum(-targets * (inputs1 - inputs2) + like(inputs1, margin), like(inputs1, 0.0));
  return reduce(loss, reduction);
}

array triplet_loss(const array& anchors, const array& positives, const array& negatives, int axis, int p, float margin,
                   float eps, Reduction reduction) {
  check_same_shape("triplet_loss", anchors, positives, "anchors", "positives");
  check_same_shape("triplet_loss", anchors, negatives, "anchors", "negatives");
  if (p < 1) {
    throw_invalid("[triplet_loss] p must be >= 1; given " + std::to_string(p) + ".");
  }
  auto distance = [&](const array& other) {
    auto d = abs(anchors - other);
    auto powered = p == 2 ? square(d) : power(d, like(d, p));
    auto total = sum(powered, axis) + like(d, eps);
    return p == 2 ? sqrt(total) : power(total, like(d, 1.0 / p));
  };
  auto loss = maximum(distance(positives) - distance(negatives) + like(anchors, margin), like(anchors, 0.0));
  return reduce(loss, reduction);
}

array gaussian_nll_loss(const array& inputs, const array& targets, const array& vars, bool full, float eps,
                        Reduction reduction) {
  check_same_shape("gaussian_nll_loss", inputs, targets, "inputs", "targets");
  auto v = maximum(vars, like(vars, eps));
  auto loss = like(v, 0.5) * (log(v) + square(targets - inputs) / v);
  if (full) {
    loss = loss + like(loss, 0.5 * std::log(2.0 * M_PI));
  }
  return reduce(loss, reduction);
}

}  // namespace nuvec::nn::losses
