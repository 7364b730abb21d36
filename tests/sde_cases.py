"""Linear SDEs with known solutions, shared by the SDE tests (not a test module)."""
from __future__ import annotations

import math

import torch

from dsmlib.theory.sde import SDE

OU_A = [[0.25, 0.125], [-0.075, 0.2]]          # drift -A x (eigenvalues with positive real part)
OU_G = [[0.6, 0.0, 0.3], [0.2, 0.5, 0.0]]  # additive, general shape (d = 2, m = 3)
GBM_MU, GBM_SIGMA = [0.3, -0.2], [0.6, 0.9]


def ou(device, dtype=torch.float64) -> tuple[SDE, torch.Tensor, torch.Tensor]:
    """``dX = -A X dt + G dW`` (additive noise): the SDE, ``A`` and ``G``."""
    A = torch.tensor(OU_A, dtype=dtype, device=device)
    G = torch.tensor(OU_G, dtype=dtype, device=device)
    return SDE(lambda x: (-x @ A.T, G), 2, 3, "additive"), A, G


def ou_exact(A: torch.Tensor, G: torch.Tensor, x0: torch.Tensor, dW: torch.Tensor,
             dt: float, chunk: int = 256) -> torch.Tensor:
    """``X(T) = e^{-AT} x0 + G W_T - int_0^T A e^{-A(T-u)} G W_u du`` (Itô integration by
    parts), the Riemann integral by the trapezoid rule on the grid of ``dW`` (error
    ``O(dt^{3/2})``, far below the errors measured), accumulated chunk by chunk."""
    n = dW.shape[0]
    T = n * dt
    W = torch.zeros_like(dW[0])
    integral = torch.zeros_like(x0)
    for start in range(0, n, chunk):
        Ws = torch.cat([W[None], W + dW[start:start + chunk].cumsum(0)])        # W_start..W_end
        k = torch.arange(start, start + Ws.shape[0], dtype=dW.dtype, device=dW.device)
        K = A @ torch.linalg.matrix_exp(-A * (T - k * dt)[:, None, None]) @ G   # (k, d, m)
        f = torch.einsum("kdm,kpm->kpd", K, Ws)
        integral = integral + dt * (f[:-1] + f[1:]).sum(0) / 2
        W = Ws[-1]
    return x0 @ torch.linalg.matrix_exp(-A * T).T + W @ G.T - integral


def gbm(device, noise_type: str, dtype=torch.float64) -> SDE:
    """``dX_i = mu_i X_i dt + s_i X_i dW_i``: diagonal, or the same written as general noise."""
    mu = torch.tensor(GBM_MU, dtype=dtype, device=device)
    s = torch.tensor(GBM_SIGMA, dtype=dtype, device=device)
    if noise_type == "diagonal":
        return SDE(lambda x: (mu * x, s * x), 2, 2, "diagonal")
    return SDE(lambda x: (mu * x, torch.diag_embed(s * x)), 2, 2, "general")


def gbm_exact(x0: torch.Tensor, W_T: torch.Tensor, T: float) -> torch.Tensor:
    """``X_i(T) = X_i(0) exp((mu_i - s_i^2/2) T + s_i W_i(T))``."""
    mu = torch.tensor(GBM_MU, dtype=x0.dtype, device=x0.device)
    s = torch.tensor(GBM_SIGMA, dtype=x0.dtype, device=x0.device)
    return x0 * torch.exp((mu - s ** 2 / 2) * T + s * W_T)


def ou_stationary_scale() -> float:
    return math.sqrt(sum(g * g for row in OU_G for g in row))
