"""Valleys of minima (theory): models whose global minima form a connected set along which the
gradient norm ``G(theta) = (1/N) sum_i ||grad_theta f(x_i, theta)||^2`` (Eq. 22) varies, the
setting of Remarks 3-4.

The model is the two-layer diagonal linear network ``f(x; u, v) = sum_j u_j v_j x_j`` (inputs
``x`` in R^d, parameters ``theta = (u, v)`` in R^{2d}) on data ``(X, y)`` with interpolable
labels. ``d = 1`` is the scalar product model ``f(x; theta) = theta_1 theta_2 x``
(:func:`scalar_product_problem`); ``N < d`` is an over-parameterised network
(:func:`diagonal_problem`). Everything below is exact:

- ``grad_{u_j} f(x) = v_j x_j`` and ``grad_{v_j} f(x) = u_j x_j``, so
  ``G(u, v) = sum_j a_j (u_j^2 + v_j^2)`` with ``a_j = (1/N) sum_i x_ij^2``;
- the valley of global minima is ``{(u, v): X (u*v) = y}``. Write ``w = u*v`` (a point of the
  affine set ``{X w = y}``) and ``delta = u*u - v*v`` (the imbalance); then
  ``G = sum_j a_j sqrt(delta_j^2 + 4 w_j^2) >= 2 sum_j a_j |w_j|``, with equality iff the
  network is balanced (``delta = 0``);
- so the minimum-G point of the valley is balanced, at ``w = argmin sum_j a_j |w_j|`` subject
  to ``X w = y`` (a weighted basis pursuit, a linear program); for the scalar model with
  ``y = beta x`` it is ``|theta_1| = |theta_2| = sqrt|beta|`` with ``G = 2 m2 |beta|``;
- every step of the form ``u <- u - eta c*v, v <- v - eta c*u`` (SGD with or without label
  noise, and the discrete doubly stochastic model, Eq. 17) multiplies the imbalance exactly:
  ``delta_j <- delta_j (1 - eta^2 c_j^2)`` (:func:`imbalance_decay_rate` gives its rate).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor, nn

from ..foundation.checks import check_choice, check_int, check_positive, check_real
from ..foundation.rng import as_generator

__all__ = ["ValleyProblem", "scalar_product_problem", "diagonal_problem", "predict",
           "per_sample_gradients", "gradient_norm", "loss", "imbalance", "valley_point",
           "valley_gradient_norm", "ValleyMinimum", "scalar_min_gradnorm",
           "min_gradnorm_point", "min_gradnorm_by_enumeration", "scalar_start", "min_norm_start",
           "sharpness",
           "imbalance_decay_rate", "DiagonalLinear"]


@dataclass(frozen=True)
class ValleyProblem:
    """Inputs ``X`` (N, d) and interpolable labels ``y`` (N,) of the diagonal linear network."""

    name: str
    X: Tensor
    y: Tensor

    def __post_init__(self) -> None:
        X, y = torch.as_tensor(self.X), torch.as_tensor(self.y)
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(f"X must be a 2-D array (N, d) with N, d >= 1, got shape {tuple(X.shape)}")
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape (N,) = ({X.shape[0]},), got {tuple(y.shape)}")
        if not (torch.isfinite(X).all() and torch.isfinite(y).all()):
            raise ValueError("X and y must be finite")
        X, y = X.to(torch.float64), y.to(device=X.device, dtype=torch.float64)
        w = torch.linalg.lstsq(X.cpu(), y.cpu()[:, None]).solution[:, 0].to(X.device)
        if float((X @ w - y).norm()) > 1e-8 * max(1.0, float(y.norm())):
            raise ValueError("y must be interpolable (X w = y solvable): the valley of global "
                             "minima is empty otherwise")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def a(self) -> Tensor:
        """``a_j = (1/N) sum_i x_ij^2``: the weights of ``G`` (shape (d,))."""
        return self.X.pow(2).mean(dim=0)

    def to(self, device: Any) -> "ValleyProblem":
        return ValleyProblem(self.name, self.X.to(device), self.y.to(device))


def scalar_product_problem(n: int = 64, *, beta: float = 1.0, seed: Any = 0) -> ValleyProblem:
    """``f(x; theta) = theta_1 theta_2 x`` with ``y = beta x``; ``x ~ N(0, 1)`` rescaled so that
    ``m2 = mean(x^2) = 1`` exactly (then ``G = theta_1^2 + theta_2^2``)."""
    n = check_int("n", n, minimum=1)
    beta = check_real("beta", beta)
    x = as_generator(seed).standard_normal(n)
    x /= np.sqrt(np.mean(x ** 2))
    X = torch.as_tensor(x[:, None])
    return ValleyProblem("scalar product θ₁θ₂x", X, beta * X[:, 0])


def diagonal_problem(n: int = 3, d: int = 6, *, w_star=None, seed: Any = 0) -> ValleyProblem:
    """An over-parameterised diagonal network (``N < d``): Gaussian inputs, labels from a
    teacher ``w_star`` (default ``e_1``, a 1-sparse teacher)."""
    n = check_int("n", n, minimum=1)
    d = check_int("d", d, minimum=1)
    w = np.eye(d)[0] if w_star is None else np.asarray(w_star, dtype=float)
    if w.shape != (d,):
        raise ValueError(f"w_star must have shape (d,) = ({d},), got {w.shape}")
    X = torch.as_tensor(as_generator(seed).standard_normal((n, d)))
    return ValleyProblem(f"diagonal network, N={n}, d={d}", X, X @ torch.as_tensor(w))


def predict(u: Tensor, v: Tensor, X: Tensor) -> Tensor:
    """``f(x_i; u, v)`` for every sample: shape ``(..., N)`` for ``u, v`` of shape ``(..., d)``."""
    return (u * v) @ X.T


def per_sample_gradients(u: Tensor, v: Tensor, X: Tensor) -> Tensor:
    """``grad_theta f(x_i)`` with ``theta = (u, v)``: shape ``(..., N, 2d)``."""
    return torch.cat([X * v[..., None, :], X * u[..., None, :]], dim=-1)


def gradient_norm(u: Tensor, v: Tensor, a: Tensor) -> Tensor:
    """``G(u, v) = sum_j a_j (u_j^2 + v_j^2)`` (Eq. 22 for this model), shape ``(...)``."""
    return ((u * u + v * v) * a).sum(dim=-1)


def loss(u: Tensor, v: Tensor, X: Tensor, y: Tensor) -> Tensor:
    """The label-noiseless loss ``(1/2N) sum_i (f(x_i) - y_i)^2`` (Eq. 2)."""
    return 0.5 * (predict(u, v, X) - y).pow(2).mean(dim=-1)


def imbalance(u: Tensor, v: Tensor) -> Tensor:
    """``delta = u*u - v*v``: conserved by gradient flow, shrunk by label-noise SGD."""
    return u * u - v * v


def valley_point(w: Any, delta: Any) -> tuple[Tensor, Tensor]:
    """The point ``(u, v)`` with ``u*v = w`` and ``u*u - v*v = delta`` (``u >= 0``)."""
    w, delta = torch.broadcast_tensors(torch.as_tensor(w, dtype=torch.float64),
                                       torch.as_tensor(delta, dtype=torch.float64))
    root = torch.sqrt(delta * delta + 4 * w * w)
    sign = torch.where(w < 0, -1.0, 1.0).to(w)
    u = torch.sqrt(((root + delta) / 2).clamp_min(0))
    v = sign * torch.sqrt(((root - delta) / 2).clamp_min(0))
    return u, v


def valley_gradient_norm(w: Any, delta: Any, a: Any) -> Tensor:
    """``G`` on the valley in its coordinates: ``sum_j a_j sqrt(delta_j^2 + 4 w_j^2)``."""
    w, delta, a = (torch.as_tensor(t, dtype=torch.float64) for t in (w, delta, a))
    return (a * torch.sqrt(delta * delta + 4 * w * w)).sum(dim=-1)


class ValleyMinimum(NamedTuple):
    """The minimum-G point of the valley: balanced ``(u, v)``, its ``w = u*v`` and ``G``."""
    u: Tensor
    v: Tensor
    w: Tensor
    G: float


def _balanced(w: Tensor, a: Tensor) -> ValleyMinimum:
    u, v = valley_point(w, torch.zeros_like(w))
    return ValleyMinimum(u, v, w, float(2 * (a * w.abs()).sum()))


def scalar_min_gradnorm(beta: float, m2: float = 1.0) -> ValleyMinimum:
    """Closed form for the scalar model: ``(sqrt|beta|, sign(beta) sqrt|beta|)``,
    ``G = 2 m2 |beta|``."""
    beta = check_real("beta", beta)
    m2 = check_positive("m2", m2)
    return _balanced(torch.tensor([beta], dtype=torch.float64),
                     torch.tensor([m2], dtype=torch.float64))


def min_gradnorm_point(problem: ValleyProblem) -> ValleyMinimum:
    """Minimum of ``G`` over the valley: balanced, ``w = argmin sum a_j |w_j|`` s.t. ``X w = y``.

    Solved as a linear program over the null space of ``X`` (``w = w0 + Z t``, ``|w| <= s``,
    minimise ``a . s``) with scipy's HiGHS, then polished to the exact solution of ``X_S w_S = y``
    on the LP's support ``S``; unique ``w`` when ``X`` has full column rank.
    """
    from scipy.optimize import linprog
    X, y, a = (t.cpu().numpy() for t in (problem.X, problem.y, problem.a))
    w0 = np.linalg.lstsq(X, y, rcond=None)[0]
    _, s, vt = np.linalg.svd(X)
    rank = int(np.sum(s > s.max() * max(X.shape) * np.finfo(float).eps))
    Z = vt[rank:].T
    w = w0
    if Z.shape[1]:
        k, d = Z.shape[1], X.shape[1]
        A = np.block([[Z, -np.eye(d)], [-Z, -np.eye(d)]])
        res = linprog(np.r_[np.zeros(k), a], A_ub=A, b_ub=np.r_[-w0, w0],
                      bounds=[(None, None)] * k + [(0, None)] * d, method="highs")
        if not res.success:  # pragma: no cover - the LP is always feasible and bounded
            raise RuntimeError(f"linear program failed: {res.message}")
        w = w0 + Z @ res.x[:k]
        S = np.abs(w) > 1e-6 * np.abs(w).max()      # polish: the exact basic solution on w's support
        wS = np.linalg.lstsq(X[:, S], y, rcond=None)[0]
        if np.linalg.norm(X[:, S] @ wS - y) <= 1e-10 * max(1.0, np.linalg.norm(y)):
            w = np.zeros_like(w)
            w[S] = wS
    return _balanced(torch.as_tensor(w).to(problem.X), problem.a)


def min_gradnorm_by_enumeration(problem: ValleyProblem, max_supports: int = 100_000) -> ValleyMinimum:
    """The same minimum in closed form: a linear program attains its optimum at a basic
    solution, so ``w`` is the best of the ``w_S = X_S^{-1} y`` over supports ``S`` of size
    ``rank X`` with ``X_S`` invertible (for small ``d``)."""
    X, y, a = (t.cpu().numpy() for t in (problem.X, problem.y, problem.a))
    r = int(np.linalg.matrix_rank(X))
    if math.comb(X.shape[1], r) > max_supports:
        raise ValueError(f"too many supports C({X.shape[1]}, {r}) > max_supports={max_supports}")
    best, best_w = math.inf, None
    for S in itertools.combinations(range(X.shape[1]), r):
        XS = X[:, S]
        if np.linalg.matrix_rank(XS) < r:
            continue
        wS = np.linalg.lstsq(XS, y, rcond=None)[0]
        if np.linalg.norm(XS @ wS - y) > 1e-9 * max(1.0, np.linalg.norm(y)):
            continue
        val = float(np.dot(a[list(S)], np.abs(wS)))
        if val < best:
            best, best_w = val, np.zeros(X.shape[1])
            best_w[list(S)] = wS
    return _balanced(torch.as_tensor(best_w).to(problem.X), problem.a)


def scalar_start(beta: float = 1.0, stretch: float = 3.0) -> tuple[Tensor, Tensor]:
    """``theta = (sqrt|beta| stretch, sign(beta) sqrt|beta| / stretch)``, on the valley
    ``theta_1 theta_2 = beta``; ``stretch = 1`` is the minimum-G point."""
    beta, stretch = check_real("beta", beta), check_positive("stretch", stretch)
    r = math.sqrt(abs(beta))
    return (torch.tensor([r * stretch], dtype=torch.float64),
            torch.tensor([math.copysign(r, beta) / stretch], dtype=torch.float64))


def min_norm_start(problem: ValleyProblem, scale: float = 1.5) -> tuple[Tensor, Tensor]:
    """``u = scale * 1``, ``v = w0 / scale`` with ``w0 = X^+ y`` the minimum-norm interpolant:
    on the valley, with a large first layer, far from balanced."""
    scale = check_positive("scale", scale)
    w0 = torch.linalg.pinv(problem.X) @ problem.y
    return torch.full_like(w0, scale), w0 / scale


def sharpness(u: Tensor, v: Tensor, X: Tensor) -> Tensor:
    """Largest eigenvalue of the loss Hessian on the valley, ``(1/N) J^T J`` (``J`` the per-sample
    gradients), shape ``(...)``; gradient descent across the valley is stable for
    ``eta < 2/sharpness``."""
    J = per_sample_gradients(u, v, X)
    return torch.linalg.eigvalsh(J.mT @ J / X.shape[0])[..., -1]


def imbalance_decay_rate(eta: Any, sigma2: Any, batch_size: Any, a: Any = 1.0, *,
                         per: str = "time") -> Any:
    """Leading-order rate of ``-d log|delta_j|``: ``eta sigma2 a_j / b`` per unit time ``t = k eta``
    (``eta^2 sigma2 a_j / b`` per step).

    From ``delta_j <- delta_j (1 - eta^2 c_j^2)``: on the valley the clean residuals vanish, so
    ``c_j = -(1/b) sum_{i in B} eps_i x_ij`` and ``E c_j^2 = sigma2 a_j / b`` (fresh Gaussian noise,
    either sampling scheme); hence ``E[-log(1 - eta^2 c_j^2)] = eta^2 sigma2 a_j / b + O(eta^3)``
    per step. The O(eta) relative correction comes from the fluctuations normal to the valley.
    """
    per = check_choice("per", per, ["time", "step"])
    eta = np.asarray(eta, dtype=float)
    sigma2 = np.asarray(sigma2, dtype=float)
    b = np.asarray(batch_size, dtype=float)
    if np.any(eta <= 0) or np.any(sigma2 < 0) or np.any(b < 1):
        raise ValueError("eta must be > 0, sigma2 >= 0 and batch_size >= 1")
    rate = eta * sigma2 * np.asarray(a, dtype=float) / b
    return rate if per == "time" else rate * eta


class DiagonalLinear(nn.Module):
    """``f(x; u, v) = sum_j u_j v_j x_j`` as a ``torch.nn.Module`` (for the Remark 2 probe);
    outputs shape ``(N, 1)``."""

    def __init__(self, u: Any, v: Any) -> None:
        super().__init__()
        u = torch.as_tensor(u, dtype=torch.float64).reshape(-1)
        v = torch.as_tensor(v, dtype=torch.float64).reshape(-1)
        if u.shape != v.shape:
            raise ValueError(f"u and v must have the same shape, got {tuple(u.shape)} and {tuple(v.shape)}")
        self.u = nn.Parameter(u.clone())
        self.v = nn.Parameter(v.to(u.device).clone())

    def forward(self, x: Tensor) -> Tensor:
        return (x @ (self.u * self.v))[:, None]
