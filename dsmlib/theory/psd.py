"""The symmetric square root of a positive semi-definite matrix (theory).

The doubly stochastic models, Eqs. (16)-(17), take ``(eta/b Sigma)^(1/2)`` of the diffusion
matrices of Eq. (15). Those are sums of outer products: symmetric positive semi-definite, often
rank-deficient (``Sigma^SGD`` vanishes at an interpolating minimiser, ``Sigma^ULN`` has rank at
most ``N L``), and slightly indefinite after rounding. :func:`psd_sqrt` takes a symmetric
eigendecomposition, clips the eigenvalues that rounding pushed below zero, and returns
``V diag(sqrt(w)) V^T``; Cholesky would fail on every singular matrix.

A matrix that is not symmetric, or has an eigenvalue clearly below zero (beyond a relative
tolerance ``rtol`` of its largest entry), is an error, not something to clip silently.

Small matrices (``d <= SMALL_DIM``) on the CPU are decomposed on one thread. A batch of small
eigendecompositions gains nothing from a second thread, but its OpenMP workers spin-wait
between the many short parallel regions: beside any other busy process they fight it for the
cores, and the Proposition 2 sweep ran 44 times slower (issue 15; ``make bench ARGS=--load``).
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
from torch import Tensor

from ..foundation.checks import check_positive

__all__ = ["SMALL_DIM", "default_rtol", "psd_sqrt", "single_threaded_if_small"]

#: Largest matrix dimension decomposed on one thread (see the module docstring).
SMALL_DIM = 64


@contextlib.contextmanager
def single_threaded_if_small(S: Tensor) -> Iterator[None]:
    """Run the block on one torch thread when ``S`` holds small CPU matrices, then restore
    the caller's thread count (the setting is the caller's; this only borrows it)."""
    threads = torch.get_num_threads()
    if S.device.type != "cpu" or S.shape[-1] > SMALL_DIM or threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def default_rtol(dtype: torch.dtype, dim: int) -> float:
    """The tolerance used when none is given: ``100 * dim * eps(dtype)``, well above the
    rounding of a sum of outer products and of a symmetric eigendecomposition."""
    return 100.0 * max(dim, 1) * torch.finfo(dtype).eps


def psd_sqrt(matrix: Any, *, rtol: float | None = None, name: str = "matrix") -> Tensor:
    """Symmetric square root ``S^(1/2)`` of a batch of PSD matrices ``(..., d, d)``.

    Parameters
    ----------
    matrix : real tensor of shape ``(..., d, d)`` (a batch over the leading dimensions, e.g.
        one diffusion matrix per simulated path). Stays on its device.
    rtol : relative tolerance; entries of ``S - S^T`` and negative eigenvalues larger than
        ``rtol * max|S|`` (per matrix) are errors. Default :func:`default_rtol`.
    name : the parameter name used in error messages.

    Returns ``R`` with ``R = R^T`` and ``R @ R = S`` up to rounding (eigenvalues below zero,
    within tolerance, are set to zero), same shape, dtype and device as the input. In the null
    space of a singular ``S`` the root is accurate to ``~ sqrt(eps * max|S|)`` only: the square
    root is not Lipschitz at zero, so rounding-level eigenvalues become ``sqrt(eps)``.
    """
    try:
        S = torch.as_tensor(matrix)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"{name} must be a real tensor of shape (..., d, d)") from None
    if S.ndim < 2 or S.shape[-1] != S.shape[-2]:
        raise ValueError(f"{name} must have shape (..., d, d) (square in its last two "
                         f"dimensions), got {tuple(S.shape)}")
    if not torch.is_floating_point(S):
        S = S.to(torch.get_default_dtype())
    d = S.shape[-1]
    rtol = default_rtol(S.dtype, d) if rtol is None else check_positive("rtol", rtol)
    if S.numel() == 0:
        return S.clone()
    if not torch.isfinite(S).all():
        raise ValueError(f"{name} must contain only finite numbers")
    scale = S.abs().amax(dim=(-2, -1))                                   # (...,)
    asym = (S - S.transpose(-1, -2)).abs().amax(dim=(-2, -1))
    bad = asym > rtol * scale
    if bad.any():
        worst = float((asym / scale.clamp_min(torch.finfo(S.dtype).tiny))[bad].max())
        raise ValueError(f"{name} must be symmetric: the largest |S - S^T| is {worst:.3g} times "
                         f"the largest entry, above rtol={rtol:.3g}")
    with single_threaded_if_small(S):
        w, V = torch.linalg.eigh(0.5 * (S + S.transpose(-1, -2)))
        neg = w[..., 0] < -rtol * scale
        if neg.any():
            lowest = float((w[..., 0] / scale.clamp_min(torch.finfo(S.dtype).tiny))[neg].min())
            raise ValueError(f"{name} must be positive semi-definite: an eigenvalue is "
                             f"{lowest:.3g} times the largest entry, below -rtol={-rtol:.3g}")
        root = w.clamp_min(0).sqrt()
        return (V * root.unsqueeze(-2)) @ V.transpose(-1, -2)
