"""Least squares with unbiased label noise (theory): the problem and the exact moments of SGD
(paper Section 6, Figure 3).

The model is ``f(x, beta) = x^T beta`` with the quadratic loss of Eq. (25)

    L~_i(beta) = 1/2 (x_i^T beta - y~_i)^2,     y~_i = x_i^T beta* + eps_i,

and SGD with a constant step ``eta`` and batch size ``B`` (Eq. 26):

    beta_{k+1} = beta_k - (eta/B) sum_{j in B_k} x_j (x_j^T beta_k - y~_j)
               = (I - eta H_k) beta_k + eta g_k,

with ``H_k = (1/B) sum_j x_j x_j^T`` and ``g_k = (1/B) sum_j x_j y~_j``. Because the map is
affine in ``beta`` with i.i.d. random coefficients, the first two moments of the iterates obey
closed linear recursions. Their fixed points give the *exact* stationary mean and covariance of
the algorithm that is actually run, which this module computes by solving a
``d(d+1)/2``-dimensional linear system (no simulation). The paper's Remark 5 (Eq. 30) claims instead
``N(beta*, (eta sigma^2 / B) Sigma_bar_N)``; :func:`paper_covariance` evaluates that formula so
the two can be compared.

Minibatch schemes
-----------------
``replace=True``: the ``B`` indices are drawn independently and uniformly with replacement.
``replace=False``: ``B`` distinct indices, drawn uniformly at every step (a "b-length subset",
the paper's wording in Section 1.1). The second scheme multiplies every minibatch covariance by
the finite-population factor ``(N - B) / (N - 1)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import linalg

from ..foundation.checks import (check_choice, check_int, check_nonnegative, check_positive,
                                 check_psd)
from ..foundation.rng import as_generator
from .minibatch import finite_population_factor

__all__ = ["LABEL_NOISE_MODES", "OLSProblem", "make_problem", "check_problem", "check_batch",
           "check_eta", "stability_limit", "mean_square_rate", "stationary_mean",
           "stationary_covariance", "lyapunov_covariance", "paper_covariance", "burn_in_steps"]

LABEL_NOISE_MODES = ("fixed", "fresh", "none")

@dataclass(frozen=True)
class OLSProblem:
    """A least-squares problem with label noise drawn once (the paper's Section 6 setting).

    Attributes
    ----------
    X : (N, d) design, rows ``x_i ~ N(0, cov)``.
    y : (N,) noisy labels ``y~_i = x_i^T beta* + eps_i`` (Eq. 1).
    y_clean : (N,) noiseless labels ``x_i^T beta*``.
    beta_star : (d,) true parameter.
    beta_hat : (d,) least-squares fit to the noisy labels ``y`` (the minimiser of Eq. 25).
    sigma2 : label-noise variance ``sigma^2``.
    cov : (d, d) population covariance of the inputs.
    """

    X: np.ndarray
    y: np.ndarray
    y_clean: np.ndarray
    beta_star: np.ndarray
    beta_hat: np.ndarray
    sigma2: float
    cov: np.ndarray = field(repr=False)

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    @cached_property
    def sample_cov(self) -> np.ndarray:
        """``Sigma_bar_N = (1/N) sum_i x_i x_i^T`` (paper, Section 6.1)."""
        return self.X.T @ self.X / self.n

    @property
    def noise(self) -> np.ndarray:
        """The label noises ``eps_i`` drawn before training."""
        return self.y - self.y_clean

def make_problem(n: int, cov, beta_star, sigma2: float, seed=0) -> OLSProblem:
    """Draw ``N`` inputs ``x_i ~ N(0, cov)`` and noisy labels ``y~_i = x_i^T beta* + eps_i``.

    Common random numbers: ``x_i = cov^{1/2} z_i`` and ``eps_i = sigma * u_i`` with standard
    normal ``z_i``, ``u_i`` drawn from ``seed`` in that order, so problems that share a seed
    differ only through ``cov`` and ``sigma2`` (e.g. panels (a)-(d) of Fig. 3 see the same data
    with the noise rescaled).
    """
    n = check_int("n", n, minimum=1)
    beta_star = np.asarray(beta_star, dtype=float)
    if beta_star.ndim != 1 or beta_star.size < 1 or not np.all(np.isfinite(beta_star)):
        raise ValueError(f"beta_star must be a non-empty 1-D vector of finite numbers, got {beta_star!r}")
    d = beta_star.size
    cov = check_psd("cov", cov, dim=d)
    sigma2 = check_nonnegative("sigma2", sigma2)
    rng = as_generator(seed)
    w, v = np.linalg.eigh(cov)
    root = v @ np.diag(np.sqrt(np.clip(w, 0.0, None))) @ v.T
    X = rng.standard_normal((n, d)) @ root.T
    y_clean = X @ beta_star
    y = y_clean + np.sqrt(sigma2) * rng.standard_normal(n)
    beta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    return OLSProblem(X=X, y=y, y_clean=y_clean, beta_star=beta_star, beta_hat=beta_hat,
                      sigma2=sigma2, cov=cov)

def check_problem(problem) -> OLSProblem:
    if not isinstance(problem, OLSProblem):
        raise ValueError(f"problem must be an OLSProblem (see make_problem), got {type(problem).__name__}")
    return problem

def check_batch(problem: OLSProblem, batch_size, replace: bool) -> int:
    if not isinstance(replace, (bool, np.bool_)):
        raise ValueError(f"replace must be True or False, got {replace!r}")
    if replace:
        return check_int("batch_size", batch_size, minimum=1)
    b = check_int("batch_size", batch_size, minimum=1)
    if b > problem.n:
        raise ValueError(f"batch_size must be <= N = {problem.n} without replacement "
                         f"(replace=False), got {b}")
    return b

def _sym_basis(d: int) -> np.ndarray:
    """Orthonormal basis (d*d, d(d+1)/2) of symmetric d x d matrices in row-major vec form."""
    cols = []
    for i in range(d):
        for j in range(i, d):
            e = np.zeros((d, d))
            if i == j:
                e[i, i] = 1.0
            else:
                e[i, j] = e[j, i] = 1.0 / np.sqrt(2.0)
            cols.append(e.ravel())
    return np.array(cols).T

def _moment_operators(problem: OLSProblem, batch_size: int, replace: bool):
    """``P = Hbar (+) Hbar`` and ``R = E[H_k (x) H_k]`` restricted to symmetric matrices."""
    X, n, d = problem.X, problem.n, problem.d
    hbar = problem.sample_cov
    outer = np.einsum("ni,nj->nij", X, X).reshape(n, d * d)
    m4 = outer.T @ outer / n                        # mean_i (x_i x_i^T) (x) (x_i x_i^T)
    hh = np.kron(hbar, hbar)
    fpc = finite_population_factor(n, batch_size, replace)
    r_full = hh + fpc / batch_size * (m4 - hh)
    eye = np.eye(d)
    p_full = np.kron(hbar, eye) + np.kron(eye, hbar)
    s = _sym_basis(d)
    return s, s.T @ p_full @ s, s.T @ r_full @ s

def stability_limit(problem: OLSProblem, batch_size: int, *, replace: bool = True) -> float:
    """The largest learning rate for which SGD on this data is mean-square stable.

    The second moment ``C_k = E[e_k e_k^T]`` of the error obeys
    ``C_{k+1} = E[(I - eta H_k) C_k (I - eta H_k)] + ...``; this linear map is self-adjoint and
    positive, so its spectral radius is below one iff ``eta R < P`` with
    ``P = Hbar (+) Hbar`` and ``R = E[H_k (x) H_k]``, i.e. ``eta < 1 / lambda_max(R, P)``.
    """
    problem = check_problem(problem)
    batch_size = check_batch(problem, batch_size, replace)
    _, p, r = _moment_operators(problem, batch_size, replace)
    if np.linalg.eigvalsh(p).min() <= 1e-12 * max(1.0, np.abs(p).max()):
        raise ValueError("the sample covariance Sigma_bar_N of the inputs is singular: "
                         "SGD has a neutral direction and no mean-square stability limit")
    return float(1.0 / linalg.eigh(r, p, eigvals_only=True)[-1])

def check_eta(problem: OLSProblem, eta, batch_size: int, replace: bool) -> float:
    eta = check_positive("eta", eta)
    limit = stability_limit(problem, batch_size, replace=replace)
    if eta >= limit:
        raise ValueError(f"eta = {eta:g} is at or beyond the mean-square stability limit "
                         f"eta_max = {limit:.6g} of SGD on this data (batch_size={batch_size}, "
                         f"replace={replace}): there the second moment E||beta_k||^2 of the "
                         "iterates grows without bound (the iterates themselves may stay "
                         "finite, with heavy-tailed excursions) and no stationary covariance "
                         f"exists. Use eta < {limit:.6g}.")
    return eta

def mean_square_rate(problem: OLSProblem, eta: float, batch_size: int, *,
                     replace: bool = True) -> float:
    """Spectral radius of the second-moment map: ``E||e_k||^2`` shrinks like ``rate**k``.

    This is the exact rate at which noiseless SGD (``label_noise="none"``) converges to beta*
    in mean square, and at which any start is forgotten.
    """
    problem = check_problem(problem)
    batch_size = check_batch(problem, batch_size, replace)
    eta = check_eta(problem, eta, batch_size, replace)
    _, p, r = _moment_operators(problem, batch_size, replace)
    a = np.eye(p.shape[0]) - eta * p + eta ** 2 * r
    return float(np.abs(np.linalg.eigvalsh(a)).max())

def stationary_mean(problem: OLSProblem, *, label_noise: str = "fixed") -> np.ndarray:
    """Exact ``lim E[beta_k]``: ``beta_hat`` for fixed label noise, ``beta*`` otherwise.

    With labels drawn once, ``E[beta_{k+1}] = (I - eta Sigma_bar) E[beta_k] + eta X^T y~ / N``,
    whose fixed point is the least-squares fit to the *noisy* labels, not beta*.
    """
    problem = check_problem(problem)
    check_choice("label_noise", label_noise, LABEL_NOISE_MODES)
    return problem.beta_hat.copy() if label_noise == "fixed" else problem.beta_star.copy()

def _gradient_noise_cov(problem: OLSProblem, batch_size: int, replace: bool,
                        label_noise: str) -> np.ndarray:
    """``Q = E[zeta zeta^T]`` for the additive noise ``zeta_k = g_k - H_k m`` at the fixed point m."""
    if label_noise == "none":
        return np.zeros((problem.d, problem.d))
    if label_noise == "fresh":
        # zeta = (1/B) sum_j x_j eps_j with fresh eps: covariance sigma^2/B * Sigma_bar, any scheme.
        return problem.sigma2 / batch_size * problem.sample_cov
    r = problem.y - problem.X @ problem.beta_hat
    v = problem.X * r[:, None]
    vbar = v.mean(axis=0)
    cov_v = (v - vbar).T @ (v - vbar) / problem.n
    fpc = finite_population_factor(problem.n, batch_size, replace)
    return fpc / batch_size * cov_v + np.outer(vbar, vbar)

def stationary_covariance(problem: OLSProblem, eta: float, batch_size: int, *,
                          replace: bool = True, label_noise: str = "fixed") -> np.ndarray:
    """Exact ``lim Cov[beta_k]`` of the SGD iterates, from the second-moment recursion.

    With ``e_k = beta_k - m`` and ``m`` the stationary mean, ``e_{k+1} = (I - eta H_k) e_k +
    eta zeta_k`` where ``zeta_k`` has mean zero and ``e_k`` is independent of batch ``k``. So the
    stationary covariance solves the linear system

        C = E[(I - eta H) C (I - eta H)] + eta^2 E[zeta zeta^T],

    i.e. ``(P - eta R) vec C = eta vec Q``, solved on the symmetric matrices. To first order in
    eta this is the Lyapunov equation ``Sigma_bar C + C Sigma_bar = eta Q`` (see
    :func:`lyapunov_covariance`), whose solution is close to ``(eta sigma^2 / 2B) I``.
    """
    problem = check_problem(problem)
    batch_size = check_batch(problem, batch_size, replace)
    check_choice("label_noise", label_noise, LABEL_NOISE_MODES)
    eta = check_eta(problem, eta, batch_size, replace)
    s, p, r = _moment_operators(problem, batch_size, replace)
    q = _gradient_noise_cov(problem, batch_size, replace, label_noise)
    c = np.linalg.solve(p - eta * r, eta * (s.T @ q.ravel()))
    c = (s @ c).reshape(problem.d, problem.d)
    return (c + c.T) / 2

def lyapunov_covariance(problem: OLSProblem, eta: float, batch_size: int, *,
                        replace: bool = True, label_noise: str = "fixed") -> np.ndarray:
    """Leading-order (small eta) stationary covariance: ``Sigma_bar C + C Sigma_bar = eta Q``.

    This is the stationary covariance of the SDE of Eq. (16) specialised to least squares, with
    the diffusion matrix evaluated at the minimiser.
    """
    problem = check_problem(problem)
    batch_size = check_batch(problem, batch_size, replace)
    check_choice("label_noise", label_noise, LABEL_NOISE_MODES)
    eta = check_positive("eta", eta)
    q = _gradient_noise_cov(problem, batch_size, replace, label_noise)
    return linalg.solve_continuous_lyapunov(problem.sample_cov, eta * q)

def paper_covariance(problem: OLSProblem, eta: float, batch_size: int) -> np.ndarray:
    """The paper's claimed stationary covariance ``(eta sigma^2 / B) Sigma_bar_N`` (Remark 5, Eq. 30)."""
    problem = check_problem(problem)
    eta = check_positive("eta", eta)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    return eta * problem.sigma2 / batch_size * problem.sample_cov

def burn_in_steps(problem: OLSProblem, eta: float, batch_size: int, *, replace: bool = True,
                  tol: float = 1e-12) -> int:
    """Steps after which the start's mean-square contribution has shrunk by ``tol``."""
    rate = mean_square_rate(problem, eta, batch_size, replace=replace)
    return int(np.ceil(np.log(tol) / np.log(rate)))
