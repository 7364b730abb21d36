"""A small Itô SDE toolkit, vectorised over independent paths (theory).

``dX = f(X) dt + G(X) dW`` with ``X`` of shape ``(P, d)`` (``P`` paths) and ``W`` an
``m``-dimensional Brownian motion per path. The continuous doubly stochastic model, Eq. (16),
is such an SDE with ``G = [(eta/b Sigma^SGD)^(1/2) | (eta/b Sigma^ULN)^(1/2)]`` and
``W = (W_1, W_2)`` (``m = 2d``); the discrete model, Eq. (17), is *exactly* its Euler-Maruyama
scheme with step ``eta`` (``z_k = Delta W_1 / sqrt(eta)``, ``z'_k = Delta W_2 / sqrt(eta)``).

Solvers declare their strong order as torchsde's do: the ``p`` with
``(E ||X_h(T) - X(T)||^2)^(1/2) = O(h^p)``, which depends on the noise type:

================  =========  ==========  =========
solver            general    diagonal    additive
================  =========  ==========  =========
``"euler"``       0.5        0.5         1.0
``"milstein"``    --         1.0         1.0
================  =========  ==========  =========

Noise types (torchsde's names): ``general`` -- ``G(x)`` is ``(P, d, m)``; ``diagonal`` --
``G(x)`` is ``(P, d)`` with ``g_i`` depending on ``x_i`` only, acting elementwise on ``dW``
(``m = d``); ``additive`` -- ``G`` does not depend on ``x`` (``(d, m)`` or ``(P, d, m)``).
The mean-square error is ``O(h^(2p))``; tests hold every solver to its declared order.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
from torch import Tensor

from ..foundation.checks import check_choice, check_int, check_positive
from .brownian import BrownianIncrements, coarsen

__all__ = ["NOISE_TYPES", "SDE", "EulerMaruyama", "Milstein", "SOLVERS", "declared_order",
           "solve", "strong_error_paths", "strong_errors"]

NOISE_TYPES = ("general", "diagonal", "additive")


@dataclass(frozen=True)
class SDE:
    """``dX = f(X) dt + G(X) dW``: ``coefficients(x)`` returns ``(f(x), G(x))`` for ``x`` of
    shape ``(P, dim)`` (one call, so the two can share work such as Jacobians)."""

    coefficients: Callable[[Tensor], tuple[Tensor, Tensor]]
    dim: int
    noise_dim: int
    noise_type: str = "general"

    def __post_init__(self) -> None:
        check_int("dim", self.dim, minimum=1)
        check_int("noise_dim", self.noise_dim, minimum=1)
        check_choice("noise_type", self.noise_type, NOISE_TYPES)
        if self.noise_type == "diagonal" and self.noise_dim != self.dim:
            raise ValueError(f"diagonal noise needs noise_dim == dim, got {self.noise_dim} and "
                             f"{self.dim}")


def _apply(G: Tensor, dW: Tensor, noise_type: str) -> Tensor:
    if noise_type == "diagonal":
        return G * dW
    if G.ndim == 2:
        return dW @ G.T
    return torch.einsum("pdm,pm->pd", G, dW)


def _check_coefficients(sde: SDE, x: Tensor, f: Tensor, G: Tensor) -> None:
    P, d, m = x.shape[0], sde.dim, sde.noise_dim
    if tuple(f.shape) != (P, d):
        raise ValueError(f"the SDE's drift must have shape (P, d) = {(P, d)}, got "
                         f"{tuple(f.shape)}")
    ok = ({(P, d)} if sde.noise_type == "diagonal"
          else {(P, d, m), (d, m)} if sde.noise_type == "additive" else {(P, d, m)})
    if tuple(G.shape) not in ok:
        raise ValueError(f"the SDE's diffusion ({sde.noise_type} noise) must have shape "
                         f"{' or '.join(map(str, sorted(ok)))}, got {tuple(G.shape)}")


class EulerMaruyama:
    """``X_{k+1} = X_k + f(X_k) h + G(X_k) (W_{k+1} - W_k)``: strong order 1/2, 1 for additive
    noise (Kloeden & Platen, Thms. 10.2.2 and 10.3.5)."""

    name = "euler"
    strong_order = 0.5
    strong_order_additive = 1.0
    noise_types = NOISE_TYPES

    @staticmethod
    def step(sde: SDE, x: Tensor, dt: float, dW: Tensor) -> Tensor:
        f, G = sde.coefficients(x)
        return x + f * dt + _apply(G, dW, sde.noise_type)


class Milstein:
    """Milstein's scheme for diagonal noise, ``+ 1/2 g_i g_i' (dW_i^2 - h)`` on top of
    Euler-Maruyama (``g_i' = d g_i / d x_i`` by forward-mode autodiff): strong order 1
    (Kloeden & Platen, Thm. 10.3.5). General noise would need Lévy areas: not offered."""

    name = "milstein"
    strong_order = 1.0
    strong_order_additive = 1.0
    noise_types = ("diagonal", "additive")

    @staticmethod
    def step(sde: SDE, x: Tensor, dt: float, dW: Tensor) -> Tensor:
        if sde.noise_type == "additive":
            return EulerMaruyama.step(sde, x, dt, dW)
        f, g = sde.coefficients(x)
        # For diagonal noise the Jacobian of g is diagonal, so a JVP with ones gives g_i'.
        with warnings.catch_warnings():
            # torch registers its forward-mode decompositions with torch.jit.script on first use.
            warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)
            _, dg = torch.func.jvp(lambda y: sde.coefficients(y)[1], (x,), (torch.ones_like(x),))
        return x + f * dt + g * dW + 0.5 * g * dg * (dW * dW - dt)


SOLVERS = {"euler": EulerMaruyama, "milstein": Milstein}


def declared_order(method: str, noise_type: str) -> float:
    """The strong order a solver declares for a noise type (see the module's table)."""
    solver = SOLVERS[check_choice("method", method, list(SOLVERS))]
    check_choice("noise_type", noise_type, solver.noise_types)
    return solver.strong_order_additive if noise_type == "additive" else solver.strong_order


def _check_state(sde: SDE, x0: Any, name: str = "x0") -> Tensor:
    if not isinstance(x0, Tensor) or x0.ndim != 2 or x0.shape[1] != sde.dim:
        shape = tuple(x0.shape) if isinstance(x0, Tensor) else type(x0).__name__
        raise ValueError(f"{name} must be a tensor of shape (P, d) with d = {sde.dim}, got "
                         f"{shape}")
    return x0


def solve(sde: SDE, x0: Tensor, dW: Tensor, dt: float, *, method: str = "euler",
          save: bool = False) -> Tensor:
    """Integrate ``sde`` from ``x0`` ``(P, d)`` over the increments ``dW`` ``(n, P, m)`` of
    step ``dt``. Returns ``X(n dt)`` ``(P, d)``, or the path ``(n + 1, P, d)`` if ``save``.
    Work stays on ``x0``'s device; ``dW`` must live there too."""
    x = _check_state(sde, x0)
    dt = check_positive("dt", dt)
    solver = SOLVERS[check_choice("method", method, list(SOLVERS))]
    check_choice(f"noise_type (for method {method!r})", sde.noise_type, solver.noise_types)
    if not isinstance(dW, Tensor) or dW.ndim != 3 or dW.shape[1:] != (x.shape[0], sde.noise_dim):
        shape = tuple(dW.shape) if isinstance(dW, Tensor) else type(dW).__name__
        raise ValueError(f"dW must have shape (n_steps, P, m) = (n, {x.shape[0]}, "
                         f"{sde.noise_dim}), got {shape}")
    if dW.device != x.device:
        raise ValueError(f"dW lives on {dW.device} but x0 on {x.device}: put both on one device")
    if dW.shape[0]:
        _check_coefficients(sde, x, *sde.coefficients(x))
    path = [x] if save else None
    for k in range(dW.shape[0]):
        x = solver.step(sde, x, dt, dW[k])
        if save:
            path.append(x)
    return torch.stack(path) if save else x


def strong_error_paths(sdes: Sequence[SDE], x0: Tensor, steps: Sequence[float], *,
                       horizon: float, refine: int, seed: Any, method: str = "euler",
                       progress: bool = False) -> list[Tensor]:
    """As :func:`strong_errors`, but at every step of each coarse grid: entry ``j`` is the
    ``(P, horizon / steps[j])`` tensor of ``||X_h(kh) - X_{h/refine}(kh)||^2`` for
    ``k = 1, ..., horizon / h`` (Eq. 18 bounds the error at every ``k <= T / eta``)."""
    refine = check_int("refine", refine, minimum=1)
    steps = [check_positive("steps", h) for h in steps]
    if not steps or len(sdes) != len(steps):
        raise ValueError(f"sdes and steps must be non-empty and of the same length, got "
                         f"{len(sdes)} and {len(steps)}")
    x0 = _check_state(sdes[0], x0)
    if any(s.dim != sdes[0].dim or s.noise_dim != sdes[0].noise_dim for s in sdes):
        raise ValueError("every SDE must have the same dim and noise_dim")
    bm = BrownianIncrements(horizon=horizon, fine_dt=min(steps) / refine, block_dt=max(steps),
                            n_paths=x0.shape[0], dim=sdes[0].noise_dim, seed=seed,
                            device=x0.device, dtype=x0.dtype)
    factors = [(bm.factor(h), bm.factor(h / refine)) for h in steps]
    coarse, fine = [x0] * len(steps), [x0] * len(steps)
    errors: list[list[Tensor]] = [[] for _ in steps]
    blocks = range(bm.n_blocks)
    if progress:
        from tqdm.auto import tqdm
        blocks = tqdm(blocks, desc="strong errors")
    for k in blocks:
        dW = bm.fine_block(k)
        for j, (sde, h) in enumerate(zip(sdes, steps)):
            fc, ff = factors[j]
            pc = solve(sde, coarse[j], coarsen(dW, fc), h, method=method, save=True)[1:]
            pf = solve(sde, fine[j], coarsen(dW, ff), h / refine, method=method,
                       save=True)[refine::refine]
            errors[j].append((pc - pf).pow(2).sum(dim=2))
            coarse[j], fine[j] = pc[-1], pf[-1]
    return [torch.cat(e).T for e in errors]


def strong_errors(sdes: Sequence[SDE], x0: Tensor, steps: Sequence[float], *, horizon: float,
                  refine: int, seed: Any, method: str = "euler",
                  progress: bool = False) -> Tensor:
    """Mean-square strong errors on coupled Brownian paths, one column per step size.

    Level ``j`` solves ``sdes[j]`` (the SDE may depend on the step, as Eq. (16) does through
    its ``eta``) from ``x0`` to ``horizon`` twice on the same Brownian path: with step
    ``steps[j]`` and with the reference step ``steps[j] / refine``. Returns the per-path
    ``||X_h(T) - X_{h/refine}(T)||^2`` as a ``(P, len(steps))`` tensor. For an error
    ``~ C h^(2p)`` this is ``~ C (1 - refine^-p)^2 h^(2p)`` up to cross terms, so its log-log
    slope in ``h`` is that of the true error. Every step must divide the largest one, which
    must divide ``horizon``; the Brownian increments are drawn one largest step at a time.
    """
    paths = strong_error_paths(sdes, x0, steps, horizon=horizon, refine=refine, seed=seed,
                               method=method, progress=progress)
    return torch.stack([e[:, -1] for e in paths], dim=1)
