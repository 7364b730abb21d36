"""Exact mean-square errors of Euler-Maruyama for linear SDEs (theory).

Proposition 2's Eq. (18) bounds ``E||Theta(k eta) - theta_bar_k||^2``, where ``theta_bar`` is
Euler-Maruyama (EM) with step ``eta`` (Eq. 17) and ``Theta`` solves Eq. (16). For linear SDEs
the coarse and the reference solution are jointly linear in the shared Brownian increments (or,
for multiplicative noise, have closed second-moment recursions), so the *expected* error that
:func:`dsmlib.theory.sde.strong_error_paths` estimates can be computed exactly:

- :func:`additive_em_mse`: ``dX = -H X dt + G dW`` with ``H`` symmetric (least squares with the
  label-noise term only: ``H = X^T X / N``, ``G = (eta sigma^2 / b H)^(1/2)``);
- :func:`multiplicative_em_mse`: scalar ``dX = -a X dt + c X dW`` (state-dependent diffusion).

The reference is EM with step ``eta / refine`` on the same path, or the exact solution
(``refine=None``). Both return the error at every coarse step ``k = 1, ..., T / eta``.
"""
from __future__ import annotations

import math

import numpy as np

from ..foundation.checks import check_int, check_positive, check_real
from .brownian import grid_steps

__all__ = ["additive_em_mse", "multiplicative_em_mse"]


def _phi(x: np.ndarray, eta: float) -> np.ndarray:
    """``(1 - exp(-x eta)) / x`` elementwise, ``eta`` at ``x = 0``."""
    x = np.asarray(x, dtype=float)
    small = np.abs(x * eta) < 1e-12
    return np.where(small, eta, -np.expm1(-x * eta) / np.where(small, 1.0, x))


def additive_em_mse(H, G, u0, *, eta: float, horizon: float,
                    refine: int | None) -> np.ndarray:
    """``E||X_eta(k eta) - X_ref(k eta)||^2`` for ``k = 1..T/eta``, ``dX = -H X dt + G dW``
    from ``u0`` (``H`` symmetric ``d x d``, ``G`` ``d x m``); the reference is EM with step
    ``eta / refine`` on the same Brownian path, or the exact solution if ``refine`` is None."""
    H, G, u0 = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (H, G, u0))
    u0 = u0.reshape(-1)
    d = u0.size
    if H.shape != (d, d) or not np.allclose(H, H.T) or G.shape[0] != d:
        raise ValueError(f"H must be symmetric {d}x{d} and G must have {d} rows, got "
                         f"{H.shape} and {G.shape}")
    eta = check_positive("eta", eta)
    K = grid_steps(horizon, eta, name="eta")
    Ac = np.eye(d) - eta * H
    GG = G @ G.T
    if refine is None:
        lam, Q = np.linalg.eigh(H)
        Af = Q @ np.diag(np.exp(-lam * eta)) @ Q.T
        cross = Q @ np.diag(_phi(lam, eta)) @ Q.T @ GG          # E[(G S)(noise_f)^T]
        Gq = Q.T @ GG @ Q
        var_f = Q @ (Gq * _phi(lam[:, None] + lam[None, :], eta)) @ Q.T
        Qn = np.block([[eta * GG, cross], [cross.T, var_f]])
    else:
        r = check_int("refine", refine, minimum=1)
        h = eta / r
        M = np.eye(d) - h * H
        Af = np.linalg.matrix_power(M, r)
        Qn = np.zeros((2 * d, 2 * d))
        for i in range(r):
            B = np.vstack([G, np.linalg.matrix_power(M, r - 1 - i) @ G])
            Qn += h * B @ B.T
    A = np.block([[Ac, np.zeros((d, d))], [np.zeros((d, d)), Af]])
    D = np.hstack([np.eye(d), -np.eye(d)])
    mu, S = np.concatenate([u0, u0]), np.zeros((2 * d, 2 * d))
    out = np.empty(K)
    for k in range(K):
        mu, S = A @ mu, A @ S @ A.T + Qn
        out[k] = float(np.sum((D @ mu) ** 2) + np.trace(D @ S @ D.T))
    return out


def multiplicative_em_mse(a: float, c: float, x0: float, *, eta: float, horizon: float,
                          refine: int | None) -> np.ndarray:
    """``E|X_eta(k eta) - X_ref(k eta)|^2`` for ``k = 1..T/eta``, scalar ``dX = -a X dt
    + c X dW`` from ``x0``: exact second-moment recursions of the coarse EM solution ``u``,
    the reference ``v`` (EM with step ``eta / refine``, or the exact geometric Brownian motion
    if ``refine`` is None) and their product ``E[u v]``."""
    a, c, x0 = (check_real(n, v) for n, v in (("a", a), ("c", c), ("x0", x0)))
    eta = check_positive("eta", eta)
    K = grid_steps(horizon, eta, name="eta")
    gu = (1 - a * eta) ** 2 + c * c * eta
    if refine is None:
        gv = math.exp((-2 * a + c * c) * eta)
        gw = math.exp(-a * eta) * (1 - a * eta + c * c * eta)
    else:
        r = check_int("refine", refine, minimum=1)
        h = eta / r
        gv = ((1 - a * h) ** 2 + c * c * h) ** r
        gw = (1 - a * eta) * (1 - a * h) ** r + c * c * eta * (1 - a * h) ** (r - 1)
    k = np.arange(1, K + 1)
    return x0 * x0 * (gu ** k + gv ** k - 2 * gw ** k)
