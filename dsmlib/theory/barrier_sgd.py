"""Label-noisy SGD over a barrier (theory), vectorised over runs: first-passage times.

``R`` runs of SGD on the two-basin model of :mod:`dsmlib.theory.barrier` advance together,
each with its own ``eta`` and ``sigma^2`` (a whole sweep is one batch). Step ``k`` is SGD on
noisy labels (Eq. 11): minibatch indices from :func:`dsmlib.theory.minibatch.draw_minibatches`
(with replacement) and fresh Gaussian label noise from :class:`dsmlib.theory.label_noise.GaussianNoise`,

    c = (1/b) sum_{i in B_k} (f(x_i) - y~_i) x_i,        theta <- theta - eta g'(theta) . c .

A run stops at its first passage over the barrier top ``theta_b``; the draws stop when every
run has crossed. The steps are a compiled loop (numba): the state is one number per run.

A *constant* gradient noise of variance ``q`` (``noise_var``; the control of Remarks 3-4) adds
``eta sqrt(q) z`` to each step, ``z`` standard normal: noise that does not depend on ``theta``,
where the label noise's variance ``eta^2 sigma^2 G(theta) / b`` does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numba import njit

from ..foundation.checks import check_int
from ..foundation.rng import as_generator, as_torch_generator
from .barrier import FLAT, SHARP, BarrierProblem, barrier_top, gradient_norm
from .label_noise import GaussianNoise
from .minibatch import draw_minibatches
from .valley_sgd import per_run

__all__ = ["EscapeRuns", "escape_kernel", "run_barrier_sgd"]

CHUNK_ELEMENTS = 1 << 20   # random numbers per chunk and kind: bounds working memory


@dataclass
class EscapeRuns:
    """First-passage steps of ``R`` runs (``-1``: not within ``steps``) and where they were."""

    start: float
    hit: np.ndarray        # (R,) step of the first passage over theta_b, or -1
    theta: np.ndarray      # (R,) parameter at the first passage, or at the end
    eta: np.ndarray
    sigma2: np.ndarray
    batch_size: int
    steps: int

    @property
    def escaped(self) -> np.ndarray:
        return self.hit >= 0


@njit(cache=True)
def escape_kernel(theta, eta, X, r0, psi_lo, span, m, w, tb, side, idx, eps, hit,
                  k0, extra):  # pragma: no cover - compiled
    """``idx.shape[0]`` SGD steps of every run still on its side of ``tb``, in place;
    ``extra`` (steps, R), unless empty, is a gradient noise added to each step."""
    steps, R, b = idx.shape
    add = extra.shape[0] > 0
    for r in range(R):
        if hit[r] >= 0:
            continue
        t = theta[r]
        for k in range(steps):
            s = 1.0 / (1.0 + np.exp(-(t - m) / w))
            psi, dpsi = psi_lo + span * s, span * s * (1.0 - s) / w
            cs, sn = np.cos(psi), np.sin(psi)
            e0, e1 = r0 * (cs - 1.0), r0 * sn                        # g - beta
            d0, d1 = -r0 * dpsi * sn, r0 * dpsi * cs                 # g'
            c0 = 0.0
            c1 = 0.0
            for j in range(b):
                i = idx[k, r, j]
                res = (e0 * X[i, 0] + e1 * X[i, 1] - eps[k, r, j]) / b
                c0 += res * X[i, 0]
                c1 += res * X[i, 1]
            grad = d0 * c0 + d1 * c1
            if add:
                grad -= extra[k, r]
            t = t - eta[r] * grad
            if (t - tb) * side > 0.0:
                hit[r] = k0 + k + 1
                break
        theta[r] = t


def run_barrier_sgd(problem: BarrierProblem, start: float, *, eta: Any, sigma2: Any,
                    batch_size: int, steps: int, n_runs: int, seed: Any = 0,
                    noise_var: Any = 0.0) -> EscapeRuns:
    """``n_runs`` runs of label-noisy SGD from the minimum ``start`` (``SHARP = 0`` or
    ``FLAT = 1``) until each first crosses the barrier top, for at most ``steps`` steps;
    ``eta``, ``sigma2`` are scalars or one value per run (``sigma2 = 0``: noiseless SGD);
    ``noise_var`` (scalar or per run) adds the constant gradient noise of the module
    docstring (drawn only where it is non-zero, so runs without it keep their streams)."""
    if start not in (SHARP, FLAT):
        raise ValueError(f"start must be one of the minima {SHARP:g} or {FLAT:g}, got {start!r}")
    n_runs = check_int("n_runs", n_runs, minimum=1)
    steps = check_int("steps", steps, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    eta_r = per_run("eta", eta, n_runs, positive=True)
    s2_r = per_run("sigma2", sigma2, n_runs, positive=False)
    q_r = per_run("noise_var", noise_var, n_runs, positive=False)
    g_max = float(gradient_norm(problem, np.linspace(-1.0, 2.0, 601)).max())
    if np.any(eta_r * g_max >= 2.0):
        raise ValueError(f"eta must be < 2/max G = {2.0 / g_max:.4g} (G bounds the "
                         f"curvature near the minima), got max {eta_r.max():g}")
    tb = barrier_top(problem)
    side = 1.0 if start < tb else -1.0
    rng = as_generator(seed)
    gen = as_torch_generator(rng, "cpu")
    unit, sigma = GaussianNoise(1.0), np.sqrt(s2_r)
    theta, hit = np.full(n_runs, float(start)), np.full(n_runs, -1, dtype=np.int64)
    chunk = max(1, CHUNK_ELEMENTS // (n_runs * batch_size))
    for k0 in range(0, steps, chunk):
        count = min(chunk, steps - k0)
        idx = draw_minibatches(problem.n, batch_size, count * n_runs, replace=True, seed=rng)
        eps = unit.residuals(torch.zeros((count, n_runs, batch_size), dtype=torch.float64), gen)
        extra = (unit.residuals(torch.zeros((count, n_runs), dtype=torch.float64), gen).numpy()
                 * np.sqrt(q_r)[None, :] if np.any(q_r > 0) else np.zeros((0, n_runs)))
        escape_kernel(theta, eta_r, problem.X, problem.r0, problem.psi_lo,
                      problem.psi_hi - problem.psi_lo, *problem.logistic, tb, side,
                      idx.reshape(count, n_runs, batch_size),
                      eps.numpy() * sigma[None, :, None], hit, k0, extra)
        if not np.all(np.isfinite(theta)):
            raise ValueError("the runs diverged (non-finite parameters): lower eta or sigma2")
        if np.all(hit >= 0):
            break
    return EscapeRuns(start=float(start), hit=hit, theta=theta, eta=eta_r, sigma2=s2_r,
                      batch_size=batch_size, steps=steps)
