"""Least squares (theory): the compiled SGD kernel and the naive reference loop (Eq. 26).

``sgd_trajectories`` runs SGD on the least-squares loss in a numba loop fed by chunks of
uniforms; the minibatch of each step comes from :func:`dsmlib.theory.minibatch.fill_minibatch`,
the book's one sampler. ``naive_sgd`` is the per-step Python loop used as the benchmark baseline.
Both draw their minibatches from the same uniforms, so on the same seed they follow the same path.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..foundation.checks import check_choice, check_int
from ..foundation.rng import chain_streams
from .least_squares import LABEL_NOISE_MODES, OLSProblem, check_batch, check_eta, check_problem
from .minibatch import CHUNK_STEPS, fill_minibatch

__all__ = ["sgd_trajectories", "sgd_time_averages", "naive_sgd"]

@njit(cache=True)
def _sgd_chunk(X, y, beta, u, z, eta, replace, perm, record_every, step0, out):  # pragma: no cover
    """Run ``u.shape[0]`` SGD steps in place on ``beta``; record every ``record_every`` steps.

    ``u`` holds ``B`` uniforms per step that pick the minibatch through
    :func:`~dsmlib.theory.minibatch.fill_minibatch` (``perm`` carries the permutation of the
    without-replacement scheme). ``z`` holds fresh label noises (one per drawn sample) or is
    empty for labels fixed in ``y``. Returns False if the iterate stopped being finite.
    """
    n, d = X.shape
    steps, b = u.shape
    fresh = z.shape[0] > 0
    scale = eta / b
    grad = np.zeros(d)
    batch = np.empty(b, dtype=np.int64)
    # A countdown instead of ``k % record_every``: integer division per step costs ~25% here.
    until_record = record_every - step0 % record_every
    slot = step0 // record_every + 1
    for t in range(steps):
        for i in range(d):
            grad[i] = 0.0
        fill_minibatch(u[t], n, replace, perm, batch)
        for j in range(b):
            idx = batch[j]
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


def sgd_trajectories(problem: OLSProblem, eta: float, batch_size: int, steps: int, *,
                     label_noise: str = "fixed", n_chains: int = 1, seed=0,
                     replace: bool = True, record_every: int = 1, beta0=None,
                     progress: bool = False) -> np.ndarray:
    """Simulate SGD on the least-squares loss (Eq. 26), ``n_chains`` independent chains.

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
    problem = check_problem(problem)
    batch_size = check_batch(problem, batch_size, replace)
    check_choice("label_noise", label_noise, LABEL_NOISE_MODES)
    steps = check_int("steps", steps, minimum=1)
    n_chains = check_int("n_chains", n_chains, minimum=1)
    record_every = check_int("record_every", record_every, minimum=1)
    eta = check_eta(problem, eta, batch_size, replace)
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
    for c, (batch_rng, noise_rng) in enumerate(chain_streams(seed, n_chains)):
        beta = beta0.copy()
        out[c, 0] = beta
        perm = np.arange(problem.n)
        for start in range(0, steps, CHUNK_STEPS):
            t = min(CHUNK_STEPS, steps - start)
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

def sgd_time_averages(problem: OLSProblem, labels: np.ndarray, eta: float, batch_size: int,
                      steps: int, *, burn_in: int, seed=0, replace: bool = True) -> np.ndarray:
    """SGD on ``problem``'s inputs once per row of ``labels`` (each a label vector drawn once),
    from the origin, for ``burn_in + steps`` steps; returns each run's mean iterate over its last
    ``steps`` steps, ``(M, d)``. Run ``m`` draws its minibatches from the ``m``-th stream of
    ``chain_streams(seed, M)``, so runs are independent; the checks are made once."""
    problem = check_problem(problem)
    batch_size = check_batch(problem, batch_size, replace)
    steps = check_int("steps", steps, minimum=1)
    burn_in = check_int("burn_in", burn_in, minimum=0)
    eta = check_eta(problem, eta, batch_size, replace)
    labels = np.asarray(labels, dtype=float)
    if labels.ndim != 2 or labels.shape[1] != problem.n or not np.all(np.isfinite(labels)):
        raise ValueError(f"labels must be an (M, N = {problem.n}) array of finite numbers, got "
                         f"shape {labels.shape}")
    X = np.ascontiguousarray(problem.X)
    total = burn_in + steps
    out = np.empty((labels.shape[0], problem.d))
    path = np.empty((total + 1, problem.d))
    no_noise = np.empty((0, 0))
    for m, (batch_rng, _) in enumerate(chain_streams(seed, labels.shape[0])):
        beta = np.zeros(problem.d)
        perm = np.arange(problem.n)
        y = np.ascontiguousarray(labels[m])
        for start in range(0, total, CHUNK_STEPS):
            t = min(CHUNK_STEPS, total - start)
            if not _sgd_chunk(X, y, beta, batch_rng.random((t, batch_size)), no_noise, eta,
                              bool(replace), perm, 1, start, path):
                raise FloatingPointError("SGD iterates became non-finite; eta is too large for "
                                         "this data")
        out[m] = path[burn_in + 1:].mean(axis=0)
    return out


def naive_sgd(problem: OLSProblem, eta: float, batch_size: int, steps: int, *, seed=0,
              replace: bool = True, label_noise: str = "fixed", beta0=None) -> np.ndarray:
    """Reference per-step Python loop of Eq. (26), used as the benchmark baseline and oracle.

    It draws each step's uniforms from the same stream as :func:`sgd_trajectories` (chain 0)
    and picks the minibatch with the same sampler, so the two agree to rounding on one seed.
    Returns the full trajectory ``(steps + 1, d)``.
    """
    problem = check_problem(problem)
    batch_size = check_batch(problem, batch_size, replace)
    check_choice("label_noise", label_noise, ("fixed", "none"))
    steps = check_int("steps", steps, minimum=1)
    batch_rng, _ = chain_streams(seed, 1)[0]
    y = problem.y if label_noise == "fixed" else problem.y_clean
    beta = np.zeros(problem.d) if beta0 is None else np.asarray(beta0, dtype=float).copy()
    perm = np.arange(problem.n)
    idx = np.empty(batch_size, dtype=np.int64)
    out = np.empty((steps + 1, problem.d))
    out[0] = beta
    for k in range(steps):
        fill_minibatch(batch_rng.random(batch_size), problem.n, bool(replace), perm, idx)
        xb = problem.X[idx]
        beta = beta - eta / batch_size * xb.T @ (xb @ beta - y[idx])
        out[k + 1] = beta
    return out
