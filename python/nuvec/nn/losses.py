"""Loss functions (mlx.nn.losses' names, arguments and defaults): nuvec::nn::losses'. Each reduces with
reduction="none", "mean" or "sum" (each loss's default is MLX's)."""

from nuvec._nn.losses import (  # noqa: F401 (re-exported)
    binary_cross_entropy,
    cosine_similarity_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_loss,
    huber_loss,
    kl_div_loss,
    l1_loss,
    log_cosh_loss,
    margin_ranking_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
    triplet_loss,
)
