"""dsmlib.theory.perturbation on a model small enough to do by hand: ``f(x, w) = w x`` with one
parameter, where the perturbed output moves by ``delta x`` exactly and ``G = x^2``, so each
draw's ratio is ``(delta / s)^2 = z^2`` for the draw's standard normal ``z``."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from dsmlib.foundation.rng import as_generator
from dsmlib.theory.perturbation import perturbation_curve


def test_ratio_and_its_standard_error_by_hand():
    """Three draws per scale, so that the standard error's n - 1 (and its square root of n)
    shows: the mean of z^2 and sd(z^2, ddof=1) / sqrt(3), the draws continuing from one scale
    to the next in one stream. (The chapter's pins cannot see an n for an n - 1 over 4000
    draws: it moves the interval by 3e-4 of its SE; issue 44.)"""
    model = torch.nn.Linear(1, 1, bias=False).to(torch.float64)
    with torch.no_grad():
        model.weight.fill_(0.7)
    s = SimpleNamespace(name="w x", model=model, X=torch.tensor([[2.0]], dtype=torch.float64), n=1)
    curve = perturbation_curve(s, scales=[0.5, 2.0], n_draws=3, seed=9)
    rng = as_generator(9)
    z2 = [rng.standard_normal(3) ** 2 for _ in range(2)]
    assert curve.gradient_norm == pytest.approx(4.0, rel=1e-15)
    np.testing.assert_allclose(curve.ratio, [z.mean() for z in z2], rtol=1e-12)
    np.testing.assert_allclose(curve.se, [z.std(ddof=1) / np.sqrt(3) for z in z2], rtol=1e-12)
    assert curve.n_draws == 3 and curve.scales.tolist() == [0.5, 2.0]
