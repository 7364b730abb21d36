"""The discrete doubly stochastic model, Eq. (17), for the diagonal linear network (theory).

Model-specific on purpose (a general Eq. 17 simulator may replace it). For
``f(x; u, v) = sum_j u_j v_j x_j`` every term of one step of Eq. (17),

    theta <- theta - eta grad L*(theta) + sqrt(eta) (eta/b Sigma^SGD)^{1/2} z
                                        + sqrt(eta) (eta/b Sigma^ULN)^{1/2} z',

is a combination of the per-sample gradients ``grad f_i = (x_i * v, x_i * u)`` (the clean loss
gradients are ``g_i = r_i grad f_i``, ``r_i`` the clean residuals; Eq. 15), so the step is the
same bilinear update as SGD, ``u <- u - eta c*v, v <- v - eta c*u``, with

    c = g_bar + n,   g_bar = (1/N) sum_i r_i x_i,
    n ~ N(0, (1/b) [(1/N) sum_i (r_i^2 + sigma^2) x_i x_i^T - g_bar g_bar^T])   (d x d).

The Gaussian ``n`` has the law of the two noise terms together (independent, Eq. 17); it is
drawn as ``L zeta`` with ``L`` a Cholesky factor (pivots below rounding set to zero, as the
matrix has rank <= N), so a step costs ``d`` normal draws whatever ``N`` is.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from ..foundation.checks import check_int
from ..foundation.rng import as_generator
from .valley import ValleyProblem
from .valley_sgd import ValleyRuns, initial_point, per_run, simulate

__all__ = ["psd_cholesky", "eq17_kernel", "Eq17Draws", "run_dsm_eq17"]


@njit(cache=True)
def psd_cholesky(A, L):  # pragma: no cover - compiled
    """Lower-triangular ``L`` with ``L L^T = A`` for a positive SEMI-definite ``A`` (in place):
    a pivot below ``1e-13 * max diag`` is a zero of the rank, its column is set to zero."""
    d = A.shape[0]
    top = 0.0
    for j in range(d):
        top = max(top, A[j, j])
    tol = 1e-13 * top
    L[:, :] = 0.0
    for j in range(d):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if s <= tol:
            continue
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, d):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]


@njit(cache=True)
def eq17_kernel(u, v, eta, X, y, sigma2, inv_b, zeta):  # pragma: no cover - compiled
    """``zeta.shape[0]`` steps of Eq. (17) for every run, in place."""
    steps, R, d = zeta.shape
    n = X.shape[0]
    res = np.empty(n)
    g = np.empty(d)
    M = np.empty((d, d))
    L = np.empty((d, d))
    for k in range(steps):
        for r in range(R):
            g[:] = 0.0
            M[:, :] = 0.0
            for i in range(n):
                f = 0.0
                for j in range(d):
                    f += u[r, j] * v[r, j] * X[i, j]
                res[i] = f - y[i]
                w = (res[i] * res[i] + sigma2[r]) / n
                for j in range(d):
                    g[j] += res[i] * X[i, j] / n
                    for m in range(j + 1):
                        M[j, m] += w * X[i, j] * X[i, m]
            for j in range(d):
                for m in range(j + 1):
                    M[j, m] = (M[j, m] - g[j] * g[m]) * inv_b
                    M[m, j] = M[j, m]
            psd_cholesky(M, L)
            for j in range(d):
                c = g[j]
                for m in range(j + 1):
                    c += L[j, m] * zeta[k, r, m]
                uj = u[r, j]
                u[r, j] = uj - eta[r] * c * v[r, j]
                v[r, j] = v[r, j] - eta[r] * c * uj
    return u, v


class Eq17Draws:
    """``draw(count)`` -> the standard normals ``zeta`` of ``count`` steps, ``(count, R, d)``."""

    def __init__(self, n_runs: int, d: int, seed: Any) -> None:
        self.shape, self.per_step = (n_runs, d), n_runs * d
        self.rng = as_generator(seed)

    def __call__(self, count: int) -> tuple[np.ndarray]:
        return (self.rng.standard_normal((count, *self.shape)),)


def run_dsm_eq17(problem: ValleyProblem, u0: Any, v0: Any, *, eta: Any, sigma2: Any,
                 batch_size: int, steps: int, n_runs: int, record_every: int = 100,
                 seed: Any = 0, progress: bool = False) -> ValleyRuns:
    """``n_runs`` runs of Eq. (17) from ``(u0, v0)``, on the CPU; arguments as in
    :func:`dsmlib.theory.valley_sgd.run_valley_sgd` (``b`` enters only through ``eta/b``)."""
    n_runs = check_int("n_runs", n_runs, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    eta_r = per_run("eta", eta, n_runs, positive=True)
    s2_r = per_run("sigma2", sigma2, n_runs, positive=False)
    problem = problem.to("cpu")
    u, v = initial_point(problem, u0, v0, n_runs)
    X, y = problem.X.numpy(), problem.y.numpy()
    return simulate(problem, u, v, eta=eta_r, steps=steps, record_every=record_every,
                    draw=Eq17Draws(n_runs, problem.d, seed),
                    advance=lambda u_, v_, e, z: eq17_kernel(u_, v_, e, X, y, s2_r, 1.0 / batch_size, z),
                    backend="numba", sigma2=s2_r, batch_size=batch_size, noise_mode="Eq. 17",
                    progress=progress, desc="Eq. 17 model")
