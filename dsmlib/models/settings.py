"""Settings of the noise chapters (models and data layer): a model at a fixed ``theta`` with
its inputs and label-noiseless labels, all with explicit seeds.

- :func:`least_squares_setting`: ``f(x, theta) = theta^T x`` in two dimensions, evaluated away
  from the minimiser (at the minimiser every noiseless per-sample gradient vanishes);
- :func:`mlp_setting`: a two-layer tanh MLP on generated inputs, labelled by a teacher MLP;
- :func:`cnn_setting`: a small CNN on scikit-learn's bundled digits (real 8x8 images, no
  download), labelled by a teacher CNN's ten logits (vector outputs, as in Section 5).

Settings are float64, because the checks built on them compare at rounding level.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..foundation.checks import check_int
from ..foundation.rng import as_generator
from ..theory.jacobians import parameter_dim
from .data import DIGITS_SIZE, digits
from .networks import Linear2, small_cnn, tanh_mlp

__all__ = ["Setting", "least_squares_setting", "mlp_setting", "cnn_setting"]


@dataclass
class Setting:
    """A model at a fixed ``theta`` with its inputs and label-noiseless labels (float64)."""

    name: str
    model: nn.Module
    X: torch.Tensor
    y_clean: torch.Tensor

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return parameter_dim(self.model)


def least_squares_setting(n: int = 64, *, theta=(0.3, 1.8), scales=(1.0, 2.0),
                          seed: int = 0) -> Setting:
    """Least squares with ``x ~ N(0, diag(scales)^2)``, ``beta* = [1, 1]``, at ``theta``."""
    n = check_int("n", n, minimum=2)
    rng = as_generator(seed)
    X = torch.as_tensor(rng.standard_normal((n, 2)) * np.asarray(scales, float))
    y = X @ torch.ones(2, dtype=torch.float64)
    return Setting("least squares", Linear2(theta), X, y[:, None])


def mlp_setting(n: int = 128, *, in_dim: int = 4, hidden: int = 8, seed: int = 0) -> Setting:
    """A tanh MLP (student, seed ``seed``) and labels from a teacher MLP (seed ``seed + 1``)."""
    n = check_int("n", n, minimum=2)
    rng = as_generator(seed)
    X = torch.as_tensor(rng.standard_normal((n, in_dim)))
    student = tanh_mlp(in_dim, hidden, 1, seed=seed, dtype=torch.float64)
    teacher = tanh_mlp(in_dim, hidden, 1, seed=seed + 1, dtype=torch.float64)
    with torch.no_grad():
        y = teacher(X)
    return Setting("tanh MLP", student, X, y)


def cnn_setting(n: int = 256, *, width: int = 8, seed: int = 0) -> Setting:
    """A small CNN on the first ``n`` of scikit-learn's digits, teacher-CNN logits as labels."""
    n = check_int("n", n, minimum=2, maximum=DIGITS_SIZE)
    X = torch.as_tensor(digits(n)[0], dtype=torch.float64)
    student = small_cnn(1, 10, width=width, seed=seed, dtype=torch.float64)
    teacher = small_cnn(1, 10, width=width, seed=seed + 1, dtype=torch.float64)
    with torch.no_grad():
        y = teacher(X)
    return Setting("small CNN (digits)", student, X, y)
