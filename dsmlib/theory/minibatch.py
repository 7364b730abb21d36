"""Minibatch sampling (theory): the book's one sampler, and Prop. 1's sampling factors.

Every experiment draws its minibatches ``B_k`` here. A minibatch is made from ``b`` uniforms:

- ``replace=True``: ``b`` indices drawn independently and uniformly (the setting of the paper's
  proof of Prop. 1, Appendix A);
- ``replace=False``: ``b`` distinct indices (the paper's "b-length subset", Sec. 1.1), by a
  partial Fisher-Yates shuffle of a permutation that is carried from step to step.

The kernel :func:`fill_minibatch` is compiled, so the least-squares SGD loop calls it at every
step; :func:`draw_minibatches` is the vectorised front end for Monte-Carlo experiments.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from ..foundation.checks import check_choice, check_int
from ..foundation.rng import as_generator

__all__ = ["CHUNK_STEPS", "fill_minibatch", "minibatches_from_uniforms", "draw_minibatches",
           "finite_population_factor", "prop1_covariance_factors", "check_indices"]

CHUNK_STEPS = 1 << 16  # steps drawn per chunk of uniforms: bounds working memory


@njit(cache=True)
def fill_minibatch(u, n, replace, perm, out):  # pragma: no cover - compiled
    """Write the ``b = u.shape[0]`` indices of one minibatch into ``out``.

    With replacement index ``j`` is ``floor(u_j N)``; without, step ``j`` of a partial
    Fisher-Yates shuffle swaps ``perm[j]`` with ``perm[j + floor(u_j (N - j))]``, so the first
    ``b`` entries of ``perm`` are a uniform ``b``-subset in uniform order.
    """
    b = u.shape[0]
    for j in range(b):
        if replace:
            out[j] = min(int(u[j] * n), n - 1)
        else:
            r = min(j + int(u[j] * (n - j)), n - 1)
            idx = perm[r]
            perm[r] = perm[j]
            perm[j] = idx
            out[j] = idx


@njit(cache=True)
def minibatches_from_uniforms(u, n, replace, perm):  # pragma: no cover - compiled
    """One minibatch per row of ``u`` (shape ``(steps, b)``), as an int64 array of that shape."""
    steps, b = u.shape
    out = np.empty((steps, b), dtype=np.int64)
    for t in range(steps):
        fill_minibatch(u[t], n, replace, perm, out[t])
    return out


def draw_minibatches(n: int, batch_size: int, count: int, *, replace: bool,
                     seed: Any) -> np.ndarray:
    """``count`` minibatches of ``batch_size`` indices into ``range(n)``, shape ``(count, b)``.

    ``seed`` is an int, a ``SeedSequence`` or a numpy ``Generator``; the uniforms are drawn
    from it in one block, so a generator's stream is consumed exactly as the SGD kernel does.
    """
    n = check_int("n", n, minimum=1)
    if not isinstance(replace, (bool, np.bool_)):
        raise ValueError(f"replace must be True or False, got {replace!r}")
    batch_size = check_int("batch_size", batch_size, minimum=1,
                           maximum=None if replace else n)
    count = check_int("count", count, minimum=0)
    rng = as_generator(seed)
    u = rng.random((count, batch_size))
    return minibatches_from_uniforms(u, n, bool(replace), np.arange(n))


def finite_population_factor(n: int, batch_size: int, replace: bool) -> float:
    """``1`` with replacement, ``(N - B)/(N - 1)`` without (the covariance of a minibatch mean)."""
    if replace or n == 1:
        return 1.0
    return (n - batch_size) / (n - 1)


def prop1_covariance_factors(n: int, batch_size: int, *, replacement: bool,
                             noise_mode: str) -> tuple[float, float]:
    """Exact factors ``(c_sgd, c_uln)`` such that, over minibatch AND label noise,

        Cov[xi*_k]    = c_sgd * (eta/b) Sigma^SGD_N            (Prop. 1, Eq. 14)
        Cov[xi^ULN_k] = c_uln * (eta/b) (1/N) sum_i J_i^T C_i J_i  (= sigma^2 Sigma^ULN_N)

    with ``C_i`` the label-noise covariance (``sigma^2 I`` for Gaussian noise), both terms
    mean zero and mutually uncorrelated (not independent: they share ``B_k``).

    - ``c_sgd = 1`` with replacement (the paper's proof treats batch members as
      independent draws); ``(N - b)/(N - 1)`` without replacement (finite population).
    - ``c_uln = 1`` for fresh noise (any sampling) and for fixed noise without
      replacement; ``1 + (b - 1)/N`` for fixed noise with replacement, because a sample
      drawn twice in one batch carries the same noise twice.

    For fixed noise these are moments over the one-time noise draw too.  Conditional on
    the drawn table (one training run), ``xi^ULN_k`` has the non-zero batch mean
    ``-sqrt(eta) (1/N) sum_i J_i^T eps_i``: the label noise also shifts the full-batch
    gradient, which Eq. (12) keeps out of the drift term.
    """
    n = check_int("n", n, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1,
                           maximum=None if replacement else n)
    noise_mode = check_choice("noise_mode", noise_mode, ["fixed", "fresh"])
    c_sgd = finite_population_factor(n, batch_size, replacement)
    if not replacement and n == 1:
        c_sgd = 0.0
    c_uln = 1.0 + (batch_size - 1) / n if (replacement and noise_mode == "fixed") else 1.0
    return c_sgd, c_uln


def check_indices(batch_idx: Any, n: int):
    """A non-empty 1-D integer tensor of indices into ``range(n)`` (torch), or a ValueError."""
    import torch
    try:
        idx = torch.as_tensor(batch_idx)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError("batch_idx must be a 1-D integer tensor of sample indices") from None
    if idx.ndim != 1 or idx.numel() < 1 or torch.is_floating_point(idx) or idx.dtype == torch.bool:
        raise ValueError("batch_idx must be a non-empty 1-D integer tensor of sample indices, "
                         f"got dtype {idx.dtype} and shape {tuple(idx.shape)}")
    if int(idx.min()) < 0 or int(idx.max()) >= n:
        raise ValueError(f"batch_idx must lie in [0, {n - 1}] for N={n} samples")
    return idx.long()
