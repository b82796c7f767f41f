"""nuvec: lazy arrays, function transforms and neural networks with MLX's Python API.

``import nuvec.core as mx`` stands in for ``import mlx.core as mx``.
"""

from nuvec import core

__version__ = "0.1.0"
__all__ = ["core"]
