"""SGD on least squares with unbiased label noise (paper Section 6, Figure 3).

The model is ``f(x, beta) = x^T beta`` with the quadratic loss of Eq. (24)

    L~_i(beta) = 1/2 (x_i^T beta - y~_i)^2,     y~_i = x_i^T beta* + eps_i,

and SGD with a constant step ``eta`` and batch size ``B`` (Eq. 25):

    beta_{k+1} = beta_k - (eta/B) sum_{j in B_k} x_j (x_j^T beta_k - y~_j)
               = (I - eta H_k) beta_k + eta g_k,

with ``H_k = (1/B) sum_j x_j x_j^T`` and ``g_k = (1/B) sum_j x_j y~_j``. Because the map is
affine in ``beta`` with i.i.d. random coefficients, the first two moments of the iterates obey
closed linear recursions. Their fixed points give the *exact* stationary mean and covariance of
the algorithm that is actually run, which this module computes by solving a
``d(d+1)/2``-dimensional linear system (no simulation). The paper's Remark 5 claims instead
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
from numba import njit
from scipy import linalg

from ._checks import (as_generator, check_choice, check_int, check_nonnegative,
                      check_positive, check_psd)

LABEL_NOISE_MODES = ("fixed", "fresh", "none")
_CHUNK_STEPS = 1 << 16  # steps simulated per call of the compiled kernel: bounds working memory


# ----------------------------------------------------------------------------------------------
# The problem
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OLSProblem:
    """A least-squares problem with label noise drawn once (the paper's Section 6 setting).

    Attributes
    ----------
    X : (N, d) design, rows ``x_i ~ N(0, cov)``.
    y : (N,) noisy labels ``y~_i = x_i^T beta* + eps_i`` (Eq. 1).
    y_clean : (N,) noiseless labels ``x_i^T beta*``.
    beta_star : (d,) true parameter.
    beta_hat : (d,) least-squares fit to the noisy labels ``y`` (the minimiser of Eq. 24).
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


def _check_problem(problem) -> OLSProblem:
    if not isinstance(problem, OLSProblem):
        raise ValueError(f"problem must be an OLSProblem (see make_problem), got {type(problem).__name__}")
    return problem


def _check_batch(problem: OLSProblem, batch_size, replace: bool) -> int:
    if not isinstance(replace, (bool, np.bool_)):
        raise ValueError(f"replace must be True or False, got {replace!r}")
    if replace:
        return check_int("batch_size", batch_size, minimum=1)
    b = check_int("batch_size", batch_size, minimum=1)
    if b > problem.n:
        raise ValueError(f"batch_size must be <= N = {problem.n} without replacement "
                         f"(replace=False), got {b}")
    return b


# ----------------------------------------------------------------------------------------------
# Exact moments of the SGD iterates
# ----------------------------------------------------------------------------------------------
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


def finite_population_factor(n: int, batch_size: int, replace: bool) -> float:
    """``1`` with replacement, ``(N - B)/(N - 1)`` without (the covariance of a minibatch mean)."""
    if replace or n == 1:
        return 1.0
    return (n - batch_size) / (n - 1)


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
    problem = _check_problem(problem)
    batch_size = _check_batch(problem, batch_size, replace)
    _, p, r = _moment_operators(problem, batch_size, replace)
    if np.linalg.eigvalsh(p).min() <= 1e-12 * max(1.0, np.abs(p).max()):
        raise ValueError("the sample covariance Sigma_bar_N of the inputs is singular: "
                         "SGD has a neutral direction and no mean-square stability limit")
    return float(1.0 / linalg.eigh(r, p, eigvals_only=True)[-1])


def _check_eta(problem: OLSProblem, eta, batch_size: int, replace: bool) -> float:
    eta = check_positive("eta", eta)
    limit = stability_limit(problem, batch_size, replace=replace)
    if eta >= limit:
        raise ValueError(f"eta = {eta:g} is at or beyond the mean-square stability limit "
                         f"eta_max = {limit:.6g} of SGD on this data (batch_size={batch_size}, "
                         f"replace={replace}); the iterates would diverge. Use eta < {limit:.6g}.")
    return eta


def mean_square_rate(problem: OLSProblem, eta: float, batch_size: int, *,
                     replace: bool = True) -> float:
    """Spectral radius of the second-moment map: ``E||e_k||^2`` shrinks like ``rate**k``.

    This is the exact rate at which noiseless SGD (``label_noise="none"``) converges to beta*
    in mean square, and at which any start is forgotten.
    """
    problem = _check_problem(problem)
    batch_size = _check_batch(problem, batch_size, replace)
    eta = _check_eta(problem, eta, batch_size, replace)
    _, p, r = _moment_operators(problem, batch_size, replace)
    a = np.eye(p.shape[0]) - eta * p + eta ** 2 * r
    return float(np.abs(np.linalg.eigvalsh(a)).max())


def stationary_mean(problem: OLSProblem, *, label_noise: str = "fixed") -> np.ndarray:
    """Exact ``lim E[beta_k]``: ``beta_hat`` for fixed label noise, ``beta*`` otherwise.

    With labels drawn once, ``E[beta_{k+1}] = (I - eta Sigma_bar) E[beta_k] + eta X^T y~ / N``,
    whose fixed point is the least-squares fit to the *noisy* labels, not beta*.
    """
    problem = _check_problem(problem)
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
    problem = _check_problem(problem)
    batch_size = _check_batch(problem, batch_size, replace)
    check_choice("label_noise", label_noise, LABEL_NOISE_MODES)
    eta = _check_eta(problem, eta, batch_size, replace)
    s, p, r = _moment_operators(problem, batch_size, replace)
    q = _gradient_noise_cov(problem, batch_size, replace, label_noise)
    c = np.linalg.solve(p - eta * r, eta * (s.T @ q.ravel()))
    c = (s @ c).reshape(problem.d, problem.d)
    return (c + c.T) / 2


def lyapunov_covariance(problem: OLSProblem, eta: float, batch_size: int, *,
                        replace: bool = True, label_noise: str = "fixed") -> np.ndarray:
    """Leading-order (small eta) stationary covariance: ``Sigma_bar C + C Sigma_bar = eta Q``.

    This is the stationary covariance of the SDE of Eq. (17) specialised to least squares, with
    the diffusion matrix evaluated at the minimiser.
    """
    problem = _check_problem(problem)
    batch_size = _check_batch(problem, batch_size, replace)
    check_choice("label_noise", label_noise, LABEL_NOISE_MODES)
    eta = check_positive("eta", eta)
    q = _gradient_noise_cov(problem, batch_size, replace, label_noise)
    return linalg.solve_continuous_lyapunov(problem.sample_cov, eta * q)


def paper_covariance(problem: OLSProblem, eta: float, batch_size: int) -> np.ndarray:
    """The paper's claimed stationary covariance ``(eta sigma^2 / B) Sigma_bar_N`` (Remark 5)."""
    problem = _check_problem(problem)
    eta = check_positive("eta", eta)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    return eta * problem.sigma2 / batch_size * problem.sample_cov


def burn_in_steps(problem: OLSProblem, eta: float, batch_size: int, *, replace: bool = True,
                  tol: float = 1e-12) -> int:
    """Steps after which the start's mean-square contribution has shrunk by ``tol``."""
    rate = mean_square_rate(problem, eta, batch_size, replace=replace)
    return int(np.ceil(np.log(tol) / np.log(rate)))


# ----------------------------------------------------------------------------------------------
# Simulation
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def _sgd_chunk(X, y, beta, u, z, eta, replace, perm, record_every, step0, out):  # pragma: no cover
    """Run ``u.shape[0]`` SGD steps in place on ``beta``; record every ``record_every`` steps.

    ``u`` holds ``B`` uniforms per step that pick the minibatch (independent draws with
    replacement, or a partial Fisher-Yates shuffle of ``perm`` without). ``z`` holds fresh
    label noises (one per drawn sample) or is empty for labels fixed in ``y``.
    Returns False if the iterate stopped being finite.
    """
    n, d = X.shape
    steps, b = u.shape
    fresh = z.shape[0] > 0
    scale = eta / b
    grad = np.zeros(d)
    # A countdown instead of ``k % record_every``: integer division per step costs ~25% here.
    until_record = record_every - step0 % record_every
    slot = step0 // record_every + 1
    for t in range(steps):
        for i in range(d):
            grad[i] = 0.0
        for j in range(b):
            if replace:
                idx = min(int(u[t, j] * n), n - 1)
            else:
                r = min(j + int(u[t, j] * (n - j)), n - 1)
                idx = perm[r]
                perm[r] = perm[j]
                perm[j] = idx
            resid = -y[idx]
            if fresh:
                resid -= z[t, j]
            for i in range(d):
                resid += X[idx, i] * beta[i]
            for i in range(d):
                grad[i] += X[idx, i] * resid
        for i in range(d):
            beta[i] -= scale * grad[i]
        until_record -= 1
        if until_record == 0:
            until_record = record_every
            for i in range(d):
                out[slot, i] = beta[i]
            slot += 1
    # Divergence propagates as inf/nan, so one check per chunk suffices.
    for i in range(d):
        if not np.isfinite(beta[i]):
            return False
    return True


def _chain_streams(seed, n_chains: int) -> list[tuple[np.random.Generator, np.random.Generator]]:
    """Independent (minibatch, fresh-noise) generator pairs, one pair per chain."""
    if isinstance(seed, np.random.Generator):
        children = seed.spawn(n_chains)
        return [tuple(g.spawn(2)) for g in children]
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        seed = np.random.SeedSequence(int(seed))
    if not isinstance(seed, np.random.SeedSequence):
        raise ValueError(f"seed must be an int, a numpy SeedSequence or a numpy Generator, got {seed!r}")
    return [tuple(np.random.default_rng(s) for s in child.spawn(2)) for child in seed.spawn(n_chains)]


def sgd_trajectories(problem: OLSProblem, eta: float, batch_size: int, steps: int, *,
                     label_noise: str = "fixed", n_chains: int = 1, seed=0,
                     replace: bool = True, record_every: int = 1, beta0=None,
                     progress: bool = False) -> np.ndarray:
    """Simulate SGD on the least-squares loss (Eq. 25), ``n_chains`` independent chains.

    Parameters
    ----------
    label_noise : ``"fixed"`` uses the labels drawn once in ``problem.y`` (the paper's
        setting); ``"fresh"`` redraws ``eps ~ N(0, sigma^2)`` for every sample at every step;
        ``"none"`` uses the clean labels.
    seed : int, SeedSequence or Generator. Chain ``c`` uses the ``c``-th child stream for its
        minibatches and a second child stream for fresh noise, so runs with the same seed and a
        different ``label_noise`` see *the same minibatch sequence* (the noiseless companion of
        Fig. 3).
    beta0 : start, default the origin.

    Returns
    -------
    Array of shape ``(n_chains, steps // record_every + 1, d)``; entry ``[:, 0]`` is the start,
    entry ``[:, r]`` the iterate after ``r * record_every`` steps. Working memory beyond that is
    bounded by a chunk of ``2**16`` steps whatever ``steps`` is.
    """
    problem = _check_problem(problem)
    batch_size = _check_batch(problem, batch_size, replace)
    check_choice("label_noise", label_noise, LABEL_NOISE_MODES)
    steps = check_int("steps", steps, minimum=1)
    n_chains = check_int("n_chains", n_chains, minimum=1)
    record_every = check_int("record_every", record_every, minimum=1)
    eta = _check_eta(problem, eta, batch_size, replace)
    if beta0 is None:
        beta0 = np.zeros(problem.d)
    beta0 = np.asarray(beta0, dtype=float)
    if beta0.shape != (problem.d,) or not np.all(np.isfinite(beta0)):
        raise ValueError(f"beta0 must be a finite vector of length d = {problem.d}")
    X = np.ascontiguousarray(problem.X)
    y = np.ascontiguousarray(problem.y if label_noise == "fixed" else problem.y_clean)
    sigma = np.sqrt(problem.sigma2)
    out = np.empty((n_chains, steps // record_every + 1, problem.d))
    no_noise = np.empty((0, 0))
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=n_chains * steps, unit="step", unit_scale=True, desc="SGD")
    for c, (batch_rng, noise_rng) in enumerate(_chain_streams(seed, n_chains)):
        beta = beta0.copy()
        out[c, 0] = beta
        perm = np.arange(problem.n)
        for start in range(0, steps, _CHUNK_STEPS):
            t = min(_CHUNK_STEPS, steps - start)
            u = batch_rng.random((t, batch_size))
            z = sigma * noise_rng.standard_normal((t, batch_size)) if label_noise == "fresh" else no_noise
            if not _sgd_chunk(X, y, beta, u, z, eta, bool(replace), perm, record_every, start, out[c]):
                raise FloatingPointError("SGD iterates became non-finite; eta is too large for "
                                         "this data")
            if bar is not None:
                bar.update(t)
    if bar is not None:
        bar.close()
    return out


def naive_sgd(problem: OLSProblem, eta: float, batch_size: int, steps: int, *, seed=0,
              replace: bool = True, label_noise: str = "fixed", beta0=None) -> np.ndarray:
    """Reference per-step Python loop of Eq. (25), used only as a benchmark baseline and oracle.

    Returns the full trajectory ``(steps + 1, d)``.
    """
    problem = _check_problem(problem)
    batch_size = _check_batch(problem, batch_size, replace)
    check_choice("label_noise", label_noise, ("fixed", "none"))
    rng = as_generator(seed)
    y = problem.y if label_noise == "fixed" else problem.y_clean
    beta = np.zeros(problem.d) if beta0 is None else np.asarray(beta0, dtype=float).copy()
    out = np.empty((steps + 1, problem.d))
    out[0] = beta
    for k in range(steps):
        idx = (rng.integers(0, problem.n, size=batch_size) if replace
               else rng.choice(problem.n, size=batch_size, replace=False))
        xb = problem.X[idx]
        beta = beta - eta / batch_size * xb.T @ (xb @ beta - y[idx])
        out[k + 1] = beta
    return out
