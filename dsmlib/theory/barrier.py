"""Two basins separated by a barrier (theory): the escape setting of Remark 3.

Remark 3 says the implicit regularizer "helps SGD escape from the point with high" gradient
norm ``G`` (Eq. 22). On a connected valley of minima (:mod:`dsmlib.theory.valley`) nothing has
to be escaped. Here the two global minima are isolated and a loss barrier lies between them.

The model has one parameter ``theta`` and inputs ``x`` in R^2: ``f(x; theta) = g(theta) . x``
along a circle through the target ``beta``, run at a varying speed:

    g(theta) - beta = r0 (cos psi - 1, sin psi),   psi(theta) = psi_lo + (psi_hi - psi_lo) s((theta - m) / w),

``s`` the logistic function, ``psi_lo`` in (-pi, 0), ``psi_hi`` in (2 pi, 3 pi), and ``m, w`` set
so that ``psi(0) = 0`` and ``psi(1) = 2 pi``. The ``N`` inputs have second moment exactly the
identity (``X^T X / N = I``) and the clean labels are ``y_i = beta . x_i``. Everything is exact:

- the clean loss is ``L = 1/2 |g - beta|^2 = r0^2 (1 - cos psi)``, ``L' = r0^2 psi' sin psi``;
- ``G(theta) = (1/N) sum_i (g' . x_i)^2 = |g'|^2 = r0^2 psi'^2``;
- the global minima are ``theta = 0`` and ``theta = 1`` (``psi = 0, 2 pi``), where ``L'' = G``;
  the barrier top is ``psi = pi`` (``theta_b = m + w logit((pi - psi_lo) / (psi_hi - psi_lo))``),
  of height ``2 r0^2``; with ``s0 = -psi_lo / (psi_hi - psi_lo)`` and ``s1 = s0 + 2 pi /
  (psi_hi - psi_lo)``, ``G(0) / G(1) = (s0 (1 - s0) / (s1 (1 - s1)))^2``, so bounds nearer
  ``-pi`` than ``3 pi`` make ``theta = 0`` the sharp, high-G minimum;
- ``psi`` stays in ``(psi_lo, psi_hi)``, so there is no other minimum and no other way over.

SGD with fresh Gaussian label noise (variance ``sigma^2``, minibatch ``b`` drawn with
replacement) moves ``theta <- theta - eta g' . c``, ``c = (1/b) sum_{i in B_k} (f(x_i) - y~_i) x_i``.
Its step has mean ``-eta L'`` and variance ``eta^2 (sigma^2 G + V) / b``, where ``V`` is the
minibatch variance of the clean residuals' gradient (zero at either minimum). The diffusion
approximation in time ``t = k eta`` (as for Eq. 16) is ``d theta = -L' dt + sqrt(D) dW`` with
``D = eta (sigma^2 G + V) / b``; its mean first-passage time over ``theta_b`` is a quadrature
(:func:`escape_time_diffusion`). In the coordinate ``psi`` of function space its drift scales
like ``G`` and its noise variance like ``G^2``: the effective temperature ``eta sigma^2 G / (2b)``
grows with ``G``, which is Remark 3's mechanism.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..foundation.checks import check_int, check_nonnegative, check_positive, check_real
from ..foundation.rng import as_generator

__all__ = ["BarrierProblem", "barrier_problem", "angle", "curve", "curve_derivative", "loss",
           "loss_derivative", "gradient_norm", "minibatch_variance", "barrier_top",
           "barrier_height", "escape_time_diffusion",
           "escape_probability_diffusion", "SHARP", "FLAT"]

SHARP, FLAT = 0.0, 1.0   # the two global minima


@dataclass(frozen=True)
class BarrierProblem:
    """Inputs ``X`` (N, 2) with ``X^T X / N = I``, and the curve's ``r0, psi_lo, psi_hi``."""

    X: np.ndarray
    beta: np.ndarray
    r0: float
    psi_lo: float
    psi_hi: float

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def y(self) -> np.ndarray:
        return self.X @ self.beta

    @property
    def logistic(self) -> tuple[float, float]:
        """``(m, w)`` with ``psi(0) = 0`` and ``psi(1) = 2 pi``."""
        span = self.psi_hi - self.psi_lo
        s0, s1 = -self.psi_lo / span, (2.0 * math.pi - self.psi_lo) / span
        w = 1.0 / (_logit(s1) - _logit(s0))
        return -w * _logit(s0), w


def _logit(s: float) -> float:
    return math.log(s / (1.0 - s))


def barrier_problem(n: int = 32, *, psi_lo: float = -0.95 * math.pi,
                    psi_hi: float = 2.2 * math.pi, g_flat: float = 1.0, beta=(1.0, 0.5),
                    seed: Any = 0) -> BarrierProblem:
    """``n >= 2`` random inputs rotated and scaled so that ``X^T X / n = I`` exactly; ``r0``
    set so that the flat minimum has ``G = g_flat``."""
    n = check_int("n", n, minimum=2)
    g_flat = check_positive("g_flat", g_flat)
    psi_lo, psi_hi = check_real("psi_lo", psi_lo), check_real("psi_hi", psi_hi)
    if not (-math.pi < psi_lo < 0.0):
        raise ValueError(f"psi_lo must lie in (-pi, 0), got {psi_lo:g}")
    if not (2.0 * math.pi < psi_hi < 3.0 * math.pi):
        raise ValueError(f"psi_hi must lie in (2 pi, 3 pi), got {psi_hi:g}")
    beta = np.asarray(beta, dtype=float)
    if beta.shape != (2,) or not np.all(np.isfinite(beta)):
        raise ValueError(f"beta must be two finite numbers, got {beta!r}")
    q, _ = np.linalg.qr(as_generator(seed).standard_normal((n, 2)))
    unit = BarrierProblem(X=math.sqrt(n) * q, beta=beta, r0=1.0, psi_lo=psi_lo, psi_hi=psi_hi)
    r0 = math.sqrt(g_flat / float(gradient_norm(unit, FLAT)))
    return BarrierProblem(X=unit.X, beta=beta, r0=r0, psi_lo=psi_lo, psi_hi=psi_hi)


def angle(p: BarrierProblem, theta: Any) -> tuple[np.ndarray, np.ndarray]:
    """``psi(theta)`` and ``psi'(theta)``."""
    m, w = p.logistic
    s = 1.0 / (1.0 + np.exp(-(np.asarray(theta, dtype=float) - m) / w))
    span = p.psi_hi - p.psi_lo
    return p.psi_lo + span * s, span * s * (1.0 - s) / w


def curve(p: BarrierProblem, theta: Any) -> np.ndarray:
    """``g(theta) - beta = r0 (cos psi - 1, sin psi)``, shape ``theta.shape + (2,)``."""
    psi, _ = angle(p, theta)
    return p.r0 * np.stack([np.cos(psi) - 1.0, np.sin(psi)], axis=-1)


def curve_derivative(p: BarrierProblem, theta: Any) -> np.ndarray:
    """``g'(theta) = r0 psi' (-sin psi, cos psi)``."""
    psi, dpsi = angle(p, theta)
    return (p.r0 * dpsi)[..., None] * np.stack([-np.sin(psi), np.cos(psi)], axis=-1)


def loss(p: BarrierProblem, theta: Any) -> np.ndarray:
    """The clean loss ``1/2 |g - beta|^2 = r0^2 (1 - cos psi)`` (since ``X^T X / N = I``)."""
    return p.r0 ** 2 * (1.0 - np.cos(angle(p, theta)[0]))


def loss_derivative(p: BarrierProblem, theta: Any) -> np.ndarray:
    """``L'(theta) = g' . (g - beta) = r0^2 psi' sin psi``."""
    psi, dpsi = angle(p, theta)
    return p.r0 ** 2 * dpsi * np.sin(psi)


def gradient_norm(p: BarrierProblem, theta: Any) -> np.ndarray:
    """``G(theta) = |g'(theta)|^2 = r0^2 psi'^2`` (Eq. 22 for this model); ``= L''`` at a minimum."""
    return (p.r0 * angle(p, theta)[1]) ** 2


def minibatch_variance(p: BarrierProblem, theta: Any) -> np.ndarray:
    """``V(theta) = Var_i[(g' . x_i)(x_i . (g - beta))]``: a one-sample minibatch's variance of
    the clean step direction (with replacement, ``b`` samples divide it by ``b``)."""
    t = np.asarray(theta, dtype=float)
    prod = (curve_derivative(p, t) @ p.X.T) * (curve(p, t) @ p.X.T)      # (..., N)
    return (prod ** 2).mean(-1) - prod.mean(-1) ** 2


def barrier_top(p: BarrierProblem) -> float:
    """``theta_b``, where ``psi = pi``: the loss maximum between the minima."""
    m, w = p.logistic
    return m + w * _logit((math.pi - p.psi_lo) / (p.psi_hi - p.psi_lo))


def barrier_height(p: BarrierProblem) -> float:
    """``L(theta_b) = 2 r0^2`` (both minima have loss 0)."""
    return 2.0 * p.r0 ** 2


def _diffusion(problem: BarrierProblem, t: np.ndarray, eta: float, sigma2: float,
               batch_size: int, noise_var: float = 0.0) -> np.ndarray:
    return eta * ((sigma2 * gradient_norm(problem, t) + minibatch_variance(problem, t))
                  / batch_size + noise_var)


def _cumtrapz(y: np.ndarray, dx: float) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(0.5 * (y[1:] + y[:-1]) * dx)])


def escape_time_diffusion(problem: BarrierProblem, start: float, *, eta: float, sigma2: float,
                          batch_size: int, margin: float = 1.0, n_grid: int = 8001,
                          noise_var: float = 0.0) -> float:
    """Mean number of steps (``T / eta``) for the diffusion started at the minimum ``start``
    to first reach ``theta_b``; reflecting ``margin`` beyond the start (the loss grows like
    ``theta^6`` there, so the result does not depend on it). ``inf`` without noise.
    ``noise_var`` adds a constant gradient-noise variance ``q`` to the diffusion,
    ``D = eta ((sigma^2 G + V) / b + q)`` (:mod:`dsmlib.theory.barrier_sgd`).

    ``T = int_start^theta_b e^{Phi(y)} int_far^y 2 e^{-Phi(z)} / D(z) dz dy``."""
    eta = check_positive("eta", eta)
    sigma2 = check_nonnegative("sigma2", sigma2)
    noise_var = check_nonnegative("noise_var", noise_var)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    start = check_real("start", start)
    if start not in (SHARP, FLAT):
        raise ValueError(f"start must be one of the minima {SHARP:g} or {FLAT:g}, got {start:g}")
    if sigma2 == 0.0 and noise_var == 0.0:
        return math.inf            # the minibatch noise vanishes at a minimum: nothing moves
    tb = barrier_top(problem)
    sign = 1.0 if start < tb else -1.0
    z = np.linspace(start - sign * margin, tb, n_grid)       # far end -> barrier
    dz = abs(z[1] - z[0])
    D = _diffusion(problem, z, eta, sigma2, batch_size, noise_var)
    phi = _cumtrapz(2.0 * sign * loss_derivative(problem, z) / D, dz)
    phi -= phi[np.argmin(np.abs(z - start))]
    with np.errstate(over="ignore", invalid="ignore"):
        inner = _cumtrapz(2.0 * np.exp(-phi) / D, dz)
        outer = np.exp(phi) * inner
    if not np.all(np.isfinite(outer[inner > 0])):
        return math.inf            # beyond floating point: a barrier of > 700 noise units
    i0 = int(np.argmin(np.abs(z - start)))
    return float(_cumtrapz(outer[i0:], dz)[-1] / eta)


def escape_probability_diffusion(problem: BarrierProblem, start: float, steps: int, *,
                                 eta: float, sigma2: float, batch_size: int,
                                 noise_var: float = 0.0) -> float:
    """``1 - exp(-steps / T)``: the escape probability within ``steps`` if escapes are a Poisson
    process with the mean time :func:`escape_time_diffusion` (Kramers' regime, barrier >> noise)."""
    steps = check_int("steps", steps, minimum=1)
    T = escape_time_diffusion(problem, start, eta=eta, sigma2=sigma2, batch_size=batch_size,
                              noise_var=noise_var)
    return 0.0 if math.isinf(T) else float(-np.expm1(-steps / T))
