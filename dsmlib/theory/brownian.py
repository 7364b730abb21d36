"""Brownian increments coupled across step sizes (theory).

Proposition 2 compares the discrete doubly stochastic iteration, Eq. (17), with the SDE of
Eq. (16) *path by path*, so both must be driven by the same Brownian motion: the ``z_k`` of
Eq. (17) are ``(W(t_{k+1}) - W(t_k)) / sqrt(eta)``. Here every increment is a sum of increments
on one finest grid of step ``fine_dt``: a coarse increment is *exactly* (bit for bit) the sum of
the fine increments it covers, whatever step sizes are compared.

The finest increments are drawn block by block (one block spans ``block_dt``, usually the
largest step compared), each block from its own node of the seed tree, so a long fine grid never
has to sit in memory, and any block can be redrawn identically.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..foundation.checks import check_int, check_positive
from ..foundation.rng import as_torch_generator

__all__ = ["refinement", "grid_steps", "coarsen", "BrownianIncrements"]


def refinement(coarse_dt: float, fine_dt: float, *, name: str = "refinement factor") -> int:
    """The integer ``coarse_dt / fine_dt``; a ValueError if it is below 1 or not an integer
    (up to a relative ``1e-9``, so that ``0.1 / 0.025`` counts as 4)."""
    coarse_dt = check_positive("coarse step", coarse_dt)
    fine_dt = check_positive("fine step", fine_dt)
    ratio = coarse_dt / fine_dt
    r = round(ratio)
    if r < 1:
        raise ValueError(f"{name} must be >= 1: the step {coarse_dt:g} is finer than {fine_dt:g}")
    if abs(ratio - r) > 1e-9 * ratio:
        raise ValueError(f"{name} must be an integer: {fine_dt:g} does not divide {coarse_dt:g} "
                         f"(ratio {ratio:.6g})")
    return int(r)


def grid_steps(horizon: float, dt: float, *, name: str = "dt") -> int:
    """Number of steps of size ``dt`` (called ``name`` in errors, e.g. ``eta``) in
    ``[0, horizon]``; both must be positive and ``dt`` must divide ``horizon``."""
    horizon = check_positive("horizon", horizon)
    dt = check_positive(name, dt)
    return refinement(horizon, dt, name=f"horizon / {name}")


def coarsen(increments: Tensor, factor: int) -> Tensor:
    """Sum consecutive groups of ``factor`` increments along the first (time) axis.

    ``(n, ...) -> (n / factor, ...)``; row ``j`` is ``increments[j*factor:(j+1)*factor].sum(0)``.
    """
    factor = check_int("factor", factor, minimum=1)
    if increments.ndim < 1 or increments.shape[0] % factor:
        raise ValueError(f"factor {factor} must divide the number of increments, got shape "
                         f"{tuple(increments.shape)}")
    if factor == 1:
        return increments
    return increments.unflatten(0, (increments.shape[0] // factor, factor)).sum(dim=1)


def _block_seed(seed: Any, k: int) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, k))
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return np.random.SeedSequence([int(seed), k])
    raise ValueError(f"seed must be a non-negative int or a numpy SeedSequence, got {seed!r}")


class BrownianIncrements:
    """Increments of ``n_paths`` independent ``dim``-dimensional Brownian motions on
    ``[0, horizon]``, on a finest grid of step ``fine_dt``, drawn in blocks of ``block_dt``.

    ``block(k, dt)`` returns the increments of block ``k`` on the grid of step ``dt`` (shape
    ``(block_dt / dt, n_paths, dim)``), :meth:`increments` the whole path. Every ``dt`` must
    divide ``block_dt`` and be a multiple of ``fine_dt``; ``block_dt`` must divide ``horizon``.
    """

    def __init__(self, *, horizon: float, fine_dt: float, n_paths: int, dim: int, seed: Any,
                 block_dt: float | None = None, device: Any = None,
                 dtype: torch.dtype = torch.float64) -> None:
        self.horizon = check_positive("horizon", horizon)
        self.fine_dt = check_positive("fine_dt", fine_dt)
        self.block_dt = self.horizon if block_dt is None else check_positive("block_dt", block_dt)
        self.n_blocks = refinement(self.horizon, self.block_dt, name="horizon / block_dt")
        self.steps_per_block = refinement(self.block_dt, self.fine_dt, name="block_dt / fine_dt")
        self.n_paths = check_int("n_paths", n_paths, minimum=1)
        self.dim = check_int("dim", dim, minimum=1)
        self.device = torch.device("cpu") if device is None else torch.device(device)
        self.dtype = dtype
        _block_seed(seed, 0)                      # validate now, not at the first draw
        self.seed = seed

    def fine_block(self, k: int) -> Tensor:
        """The ``steps_per_block`` finest increments of block ``k``, ``N(0, fine_dt)`` each."""
        k = check_int("k", k, minimum=0, maximum=self.n_blocks - 1)
        g = as_torch_generator(_block_seed(self.seed, k), self.device)
        z = torch.randn(self.steps_per_block, self.n_paths, self.dim, generator=g,
                        dtype=self.dtype, device=self.device)
        return math.sqrt(self.fine_dt) * z

    def factor(self, dt: float) -> int:
        """How many finest increments one increment of step ``dt`` sums."""
        f = refinement(dt, self.fine_dt)
        if self.steps_per_block % f:
            raise ValueError(f"step {dt:g} must divide block_dt={self.block_dt:g}")
        return f

    def block(self, k: int, dt: float) -> Tensor:
        """Block ``k`` on the grid of step ``dt``: exact sums of its finest increments."""
        return coarsen(self.fine_block(k), self.factor(dt))

    def increments(self, dt: float) -> Tensor:
        """All increments on ``[0, horizon]`` at step ``dt``: ``(horizon / dt, n_paths, dim)``."""
        f = self.factor(dt)
        return torch.cat([coarsen(self.fine_block(k), f) for k in range(self.n_blocks)])
