#pragma once

// Loss functions (mlx.nn.losses' names, arguments and defaults). Each reduces its per-element losses by
// `reduction`: none (the per-element losses), mean or sum.

#include <optional>

#include "nuvec/core/array.h"

namespace nuvec::nn::losses {

enum class Reduction { none, mean, sum };

/// Cross entropy of logits against class indices (integer targets, logits' shape without `axis`) or class
/// probabilities (targets of logits' shape). `weights` multiply the per-sample losses; label smoothing mixes the
/// targets with the uniform distribution (as PyTorch's label_smoothing).
array cross_entropy(const array& logits, const array& targets, const std::optional<array>& weights = std::nullopt,
                    int axis = -1, float label_smoothing = 0.0F, Reduction reduction = Reduction::none);

/// Binary cross entropy of logits (with_logits) or probabilities against targets in [0, 1]; log terms are clamped
/// at -100 as PyTorch's.
array binary_cross_entropy(const array& inputs, const array& targets,
                           const std::optional<array>& weights = std::nullopt, bool with_logits = true,
                           Reduction reduction = Reduction::mean);

/// Negative log likelihood of log-probabilities at the integer targets along `axis`.
array nll_loss(const array& inputs, const array& targets, int axis = -1, Reduction reduction = Reduction::none);

array mse_loss(const array& predictions, const array& targets, Reduction reduction = Reduction::mean);
array l1_loss(const array& predictions, const array& targets, Reduction reduction = Reduction::mean);
/// 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere.
array smooth_l1_loss(const array& predictions, const array& targets, float beta = 1.0F,
                     Reduction reduction = Reduction::mean);
/// 0.5 d^2 where |d| <= delta, delta (|d| - 0.5 delta) elsewhere.
array huber_loss(const array& inputs, const array& targets, float delta = 1.0F, Reduction reduction = Reduction::none);
/// sum(exp(targets) * (targets - inputs)) along `axis`: both are log-probabilities.
array kl_div_loss(const array& inputs, const array& targets, int axis = -1, Reduction reduction = Reduction::none);
/// log(cosh(inputs - targets)), computed without overflow.
array log_cosh_loss(const array& inputs, const array& targets, Reduction reduction = Reduction::none);
/// x1 . x2 / max(|x1| |x2|, eps) along `axis` (a similarity: 1 for parallel vectors).
array cosine_similarity_loss(const array& x1, const array& x2, int axis = 1, float eps = 1e-8F,
                             Reduction reduction = Reduction::none);
/// max(1 - inputs * targets, 0), targets in {-1, 1}.
array hinge_loss(const array& inputs, const array& targets, Reduction reduction = Reduction::none);
/// max(0, -targets * (inputs1 - inputs2) + margin).
array margin_ranking_loss(const array& inputs1, const array& inputs2, const array& targets, float margin = 0.0F,
                          Reduction reduction = Reduction::none);
/// max(|a - p|_p - |a - n|_p + margin, 0) along `axis`, eps added inside the root for a finite gradient.
array triplet_loss(const array& anchors, const array& positives, const array& negatives, int axis = -1, int p = 2,
                   float margin = 1.0F, float eps = 1e-6F, Reduction reduction = Reduction::none);
/// 0.5 (log(max(vars, eps)) + (inputs - targets)^2 / max(vars, eps)), plus 0.5 log(2 pi) when full.
array gaussian_nll_loss(const array& inputs, const array& targets, const array& vars, bool full = false,
                        float eps = 1e-6F, Reduction reduction = Reduction::mean);

}  // namespace nuvec::nn::losses
