"""Loss functions (mlx.nn.losses'): each reduces with "none", "mean" (the default unless noted) or "sum"."""

import nuvec.core as mx


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return mx.mean(loss)
    if reduction == "sum":
        return mx.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"[losses] Invalid reduction {reduction!r}; use 'none', 'mean' or 'sum'.")


def cross_entropy(logits, targets, weights=None, axis: int = -1, label_smoothing: float = 0.0,
                  reduction: str = "none"):
    """Cross entropy of logits against class indices (or probabilities of logits' shape)."""
    if targets.ndim == logits.ndim:
        score = mx.sum(logits * targets, axis=axis)
    else:
        score = mx.take_along_axis(logits, mx.expand_dims(targets, axis), axis).squeeze(axis)
    log_z = mx.logsumexp(logits, axis=axis)
    if label_smoothing > 0:
        mean_logits = mx.mean(logits, axis=axis)
        loss = log_z - (1 - label_smoothing) * score - label_smoothing * mean_logits
    else:
        loss = log_z - score
    if weights is not None:
        loss = loss * weights
    return _reduce(loss, reduction)


def binary_cross_entropy(inputs, targets, weights=None, with_logits: bool = True, reduction: str = "mean"):
    if with_logits:
        loss = mx.logaddexp(0.0, inputs) - inputs * targets
    else:
        loss = -(targets * mx.log(inputs) + (1 - targets) * mx.log(1 - inputs))
    if weights is not None:
        loss = loss * weights
    return _reduce(loss, reduction)


def mse_loss(predictions, targets, reduction: str = "mean"):
    return _reduce(mx.square(predictions - targets), reduction)


def l1_loss(predictions, targets, reduction: str = "mean"):
    return _reduce(mx.abs(predictions - targets), reduction)


def nll_loss(inputs, targets, axis: int = -1, reduction: str = "none"):
    loss = -mx.take_along_axis(inputs, mx.expand_dims(targets, axis), axis).squeeze(axis)
    return _reduce(loss, reduction)
