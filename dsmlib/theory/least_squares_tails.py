"""Least squares (theory): when the stationary law of SGD has heavy tails.

The error ``e_k = beta_k - m`` obeys the random affine recursion ``e_{k+1} = A_k e_k + eta zeta_k``
with ``A_k = I - eta H_k``. Its ``p``-th moment is finite in the stationary law iff the
``p``-fold operator ``E[A^{(x)p}]`` has spectral radius below one (Kesten's power-law tails).
For ``p = 2`` this is the mean-square stability limit ``eta_max``
(:func:`dsmlib.theory.least_squares.stability_limit`, exact). For ``p = 4`` it decides
whether second-moment statistics of the iterates (covariances, traces, axis ratios) have a
finite variance: beyond :func:`fourth_moment_limit` their sample values obey no central limit
theorem, and no batch-means or t-interval for them can be trusted.

``E[A^{(x)4}]`` is a polynomial of degree four in ``eta`` whose coefficients are the moments
``E[H^{(x)j}]``, ``j <= 4``, of the minibatch matrix; they are averaged over ``n_draws``
minibatches from the book's one sampler (seeded), so the limit carries a small Monte-Carlo
error (about 0.5 % at the default ``n_draws``, measured against the exact ``p = 2`` limit).
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..foundation.checks import check_int
from .least_squares import OLSProblem, check_batch, check_problem
from .minibatch import draw_minibatches

__all__ = ["operator_coefficients", "moment_operator", "moment_stability_limit",
           "fourth_moment_limit"]

_LETTERS = "abcdefghijklmnop"


def _h_moments(problem: OLSProblem, batch_size: int, replace: bool, order: int,
               n_draws: int, seed: Any, chunk: int = 50_000) -> list[np.ndarray]:
    """``E[H^{(x)j}]`` for ``j = 1..order``, each as a tensor with indices (row, col) per factor.

    With ``h = vec(H)`` the moments are Gram products of Kronecker powers of ``h``, so BLAS
    does the work: ``E[h (x) h (x) h (x) h] = E[(h (x) h)(h (x) h)^T]``.
    """
    d, q = problem.d, problem.d ** 2
    sums = [np.zeros(q ** j) for j in range(1, order + 1)]
    idx = draw_minibatches(problem.n, batch_size, n_draws, replace=replace, seed=seed)
    for start in range(0, n_draws, chunk):
        xb = problem.X[idx[start:start + chunk]]
        h = np.einsum("mbi,mbj->mij", xb, xb).reshape(-1, q) / batch_size
        h2 = (h[:, :, None] * h[:, None, :]).reshape(-1, q * q)
        powers = {1: h, 2: h2}
        for j in range(1, order + 1):
            left = powers[min(j - 1, 2)] if j > 1 else None
            right = powers[j - min(j - 1, 2)] if j > 1 else h
            sums[j - 1] += (h.sum(0) if j == 1 else (left.T @ right).ravel())
    return [(s / n_draws).reshape((d, d) * j) for j, s in enumerate(sums, start=1)]


def operator_coefficients(moments: list[np.ndarray], order: int, d: int) -> list[np.ndarray]:
    """``C_k`` with ``E[(I - eta H)^{(x)order}] = sum_k (-eta)^k C_k`` (``d^order``-square
    matrices), from the moments ``E[H^{(x)j}]``: ``C_k`` sums, over the ``k``-subsets of the
    factors, ``E[H^{(x)k}]`` placed on the subset and the identity elsewhere."""
    eye = np.eye(d)
    out = "".join(_LETTERS[2 * k] for k in range(order)) + "".join(
        _LETTERS[2 * k + 1] for k in range(order))
    coefficients = []
    for size in range(order + 1):
        total = np.zeros((d,) * (2 * order))
        for subset in itertools.combinations(range(order), size):
            factors, ins = [], []
            if size:
                factors.append(moments[size - 1])
                ins.append("".join(_LETTERS[2 * k] + _LETTERS[2 * k + 1] for k in subset))
            for k in (k for k in range(order) if k not in subset):
                factors.append(eye)
                ins.append(_LETTERS[2 * k] + _LETTERS[2 * k + 1])
            total += np.einsum(",".join(ins) + "->" + out, *factors)
        coefficients.append(total.reshape(d ** order, d ** order))
    return coefficients


def moment_operator(coefficients: list[np.ndarray], eta: float) -> np.ndarray:
    """``E[(I - eta H)^{(x)order}]`` from :func:`operator_coefficients`."""
    return sum((-eta) ** k * c for k, c in enumerate(coefficients))


def moment_stability_limit(problem: OLSProblem, batch_size: int, *, replace: bool = True,
                           order: int = 4, n_draws: int = 200_000, seed: Any = 0) -> float:
    """The largest ``eta`` for which the ``order``-th moment of the SGD iterates stays finite."""
    problem = check_problem(problem)
    batch_size = check_batch(problem, batch_size, replace)
    order = check_int("order", order, minimum=1, maximum=4)
    n_draws = check_int("n_draws", n_draws, minimum=100)
    coefficients = operator_coefficients(
        _h_moments(problem, batch_size, replace, order, n_draws, seed), order, problem.d)

    def radius(eta: float) -> float:
        return float(np.abs(np.linalg.eigvals(moment_operator(coefficients, eta))).max())

    lo, hi = 0.0, 1.0 / max(float(np.linalg.eigvalsh(problem.sample_cov).max()), 1e-300)
    while radius(hi) < 1.0:
        hi *= 2.0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if radius(mid) < 1.0 else (lo, mid)
    return lo


def fourth_moment_limit(problem: OLSProblem, batch_size: int, *, replace: bool = True,
                        n_draws: int = 200_000, seed: Any = 0) -> float:
    """``eta_4``: beyond it the iterates have no finite fourth moment (heavy tails), so
    covariance statistics of the stationary cloud have no finite variance."""
    return moment_stability_limit(problem, batch_size, replace=replace, order=4,
                                  n_draws=n_draws, seed=seed)
