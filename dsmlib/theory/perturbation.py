"""Remark 2's probe (theory): how much a network's outputs move under a random perturbation of
its parameters, against the gradient norm that measures it to first order (Eq. 23).

``perturbation_curve`` takes any object with ``name``, ``model``, ``X`` and ``n`` (a
:class:`dsmlib.models.settings.Setting`, for instance) and works on the model's device.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..foundation.checks import check_int
from ..foundation.rng import as_generator
from .gradient_norm import gradient_norm
from .jacobians import trainable_parameters

__all__ = ["PerturbationCurve", "perturbation_curve"]


@dataclass
class PerturbationCurve:
    setting: str
    scales: np.ndarray       # perturbation sizes s (delta ~ N(0, s^2 I))
    ratio: np.ndarray        # E||f(x, theta+delta) - f(x, theta)||^2 / (s^2 G(theta))
    se: np.ndarray
    gradient_norm: float
    n_draws: int = 2


def perturbation_curve(s: Any, *, scales, n_draws: int, seed: Any = 0,
                       chunk: int = 64) -> PerturbationCurve:
    """Remark 2: ``(1/N) sum_i E||f(x_i, theta + delta) - f(x_i, theta)||^2`` for
    ``delta ~ N(0, s^2 I_d)``, divided by ``s^2 G(theta)``.

    To first order ``f(x, theta + delta) - f(x, theta) = J delta`` and ``E||J delta||^2 =
    s^2 ||J||_F^2``, so the ratio tends to 1 as ``s -> 0``; where it leaves 1, the gradient norm
    stops describing the network's stability.
    """
    n_draws = check_int("n_draws", n_draws, minimum=2)
    scales = np.asarray(scales, dtype=float)
    if scales.ndim != 1 or scales.size < 1 or np.any(scales <= 0):
        raise ValueError("scales must be a non-empty 1-D sequence of positive numbers")
    G = gradient_norm(s.model, s.X)
    params = trainable_parameters(s.model)
    buffers = dict(s.model.named_buffers())
    rng = as_generator(seed)

    def outputs(p: dict) -> torch.Tensor:
        return torch.func.functional_call(s.model, (p, buffers), (s.X,))

    batched = torch.func.vmap(outputs)
    ratios, ses = [], []
    with torch.no_grad():
        base = outputs(params)
        for sc in scales:
            vals = []
            for start in range(0, n_draws, chunk):
                m = min(chunk, n_draws - start)
                moved = {k: v + sc * torch.as_tensor(rng.standard_normal((m, *v.shape)), device=v.device)
                         for k, v in params.items()}
                diff = (batched(moved) - base).pow(2).reshape(m, -1).sum(dim=1) / s.n
                vals.append(diff.cpu().numpy() / (sc ** 2 * G))
            vals = np.concatenate(vals)
            ratios.append(vals.mean()), ses.append(vals.std(ddof=1) / np.sqrt(n_draws))
    return PerturbationCurve(s.name, scales, np.array(ratios), np.array(ses), G, n_draws)
