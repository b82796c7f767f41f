#pragma once

// Loss functions (mlx.nn.losses' names, arguments and defaults). Each reduces its per-element losses by
// `reduction`: none (the per-element losses), mean or sum (a 0-d result). Inputs that must match in shape (stated
// per loss) throw nuvec::error when they do not; nothing broadcasts there.

#include <optional>

#include "nuvec/core/array.h"

namespace nuvec::nn::losses {

/// How a loss reduces its per-element values.
enum class Reduction { none, mean, sum };

/// Cross entropy of logits against class indices (integer targets, logits' shape without `axis`) or class
/// probabilities (floating targets of logits' shape); the kind is chosen by the targets' dtype (MLX chooses by their
/// rank). `weights` (the per-sample losses' shape) multiply the per-sample losses; label smoothing in [0, 1) mixes
/// the targets with the uniform distribution (as PyTorch's label_smoothing). Other shapes or smoothing throw.
array cross_entropy(const array& logits, const array& targets, const std::optional<array>& weights = std::nullopt,
                    int axis = -1, float label_smoothing = 0.0F, Reduction reduction = Reduction::none);

/// Binary cross entropy of logits (with_logits, the default) or probabilities against targets in [0, 1] of the
/// same shape; log terms of probabilities are clamped at -100 as PyTorch's. `weights` (that shape) multiply the
/// per-element losses.
array binary_cross_entropy(const array& inputs, const array& targets,
                           const std::optional<array>& weights = std::nullopt, bool with_logits = true,
                           Reduction reduction = Reduction::mean);

/// Negative log likelihood of log-probabilities at the integer targets along `axis`; targets have the inputs' shape
/// without `axis`.
array nll_loss(const array& inputs, const array& targets, int axis = -1, Reduction reduction = Reduction::none);

/// (predictions - targets)^2, of the same shape.
array mse_loss(const array& predictions, const array& targets, Reduction reduction = Reduction::mean);
/// |predictions - targets|, of the same shape.
array l1_loss(const array& predictions, const array& targets, Reduction reduction = Reduction::mean);
/// 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere, d = predictions - targets of the same shape.
array smooth_l1_loss(const array& predictions, const array& targets, float beta = 1.0F,
                     Reduction reduction = Reduction::mean);
/// 0.5 d^2 where |d| <= delta, delta (|d| - 0.5 delta) elsewhere, d = inputs - targets of the same shape.
array huber_loss(const array& inputs, const array& targets, float delta = 1.0F, Reduction reduction = Reduction::none);
/// sum(exp(targets) * (targets - inputs)) along `axis`: both are log-probabilities of the same shape.
array kl_div_loss(const array& inputs, const array& targets, int axis = -1, Reduction reduction = Reduction::none);
/// log(cosh(inputs - targets)) of the same shape, computed without overflow.
array log_cosh_loss(const array& inputs, const array& targets, Reduction reduction = Reduction::none);
/// x1 . x2 / max(|x1| |x2|, eps) along `axis` (default 1, as MLX) of the same shape: a similarity, 1 for parallel
/// vectors.
array cosine_similarity_loss(const array& x1, const array& x2, int axis = 1, float eps = 1e-8F,
                             Reduction reduction = Reduction::none);
/// max(1 - inputs * targets, 0), targets in {-1, 1} of the inputs' shape.
array hinge_loss(const array& inputs, const array& targets, Reduction reduction = Reduction::none);
/// max(0, -targets * (inputs1 - inputs2) + margin), all three of one shape, targets in {-1, 1}.
array margin_ranking_loss(const array& inputs1, const array& inputs2, const array& targets, float margin = 0.0F,
                          Reduction reduction = Reduction::none);
/// max(|a - p|_p - |a - n|_p + margin, 0) along `axis`, all three of one shape, eps added inside the root for a
/// finite gradient; p < 1 throws.
array triplet_loss(const array& anchors, const array& positives, const array& negatives, int axis = -1, int p = 2,
                   float margin = 1.0F, float eps = 1e-6F, Reduction reduction = Reduction::none);
/// 0.5 (log(max(vars, eps)) + (inputs - targets)^2 / max(vars, eps)), plus 0.5 log(2 pi) when full; inputs and
/// targets of one shape, vars broadcasting against them (MLX requires the same shape).
array gaussian_nll_loss(const array& inputs, const array& targets, const array& vars, bool full = false,
                        float eps = 1e-6F, Reduction reduction = Reduction::mean);

}  // namespace nuvec::nn::losses
