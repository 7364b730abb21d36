"""The diffusion matrices of Eq. (15) and the one-step decomposition of Eq. (12) (theory).

For the quadratic loss ``L~_i = 1/2 ||f(x_i) - y~_i||^2`` and ``eps_i = y~_i - y_i``,

    eta g~_k = eta grad L*(theta) + sqrt(eta) xi*_k + sqrt(eta) xi^ULN_k,        (Eq. 12)
    sqrt(eta) xi*_k    = eta ( (1/b) sum_{j in B_k} grad L*_j - grad L*(theta) ),
    sqrt(eta) xi^ULN_k = -(eta/b) sum_{j in B_k} J_j^T eps_j .                    (Eq. 13)

- Eq. (15), first line:  ``Sigma^SGD = (1/N) sum_i (g_i - g_bar)(g_i - g_bar)^T`` with
  ``g_i = grad L*_i`` and ``g_bar = (1/N) sum_i g_i`` (population covariance, 1/N).
- Eq. (15), second line, with ``sigma^2`` factored out:
  ``Sigma^ULN = (1/N) sum_i J_i^T J_i``, or ``(1/N) sum_i J_i^T C_i J_i`` for a label noise
  with per-sample covariance ``C_i`` (e.g. the symmetric swap noise of Sec. 5.2).

:func:`decompose_step` returns the three terms of a real minibatch step and checks they add up.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from ..foundation.checks import check_positive
from .gradient_norm import gradient_norm
from .jacobians import (as_inputs, as_labels, check_chunk, check_model, flatten_tree,
                        jacobian_chunks, loss_grad_chunks, loss_gradient, model_device,
                        model_dtype, n_outputs, parameter_dim)
from .minibatch import check_indices

__all__ = ["MAX_MATRIX_DIM", "sigma_sgd", "sigma_uln", "trace_sigma_sgd", "trace_sigma_uln",
           "StepDecomposition", "decompose_step"]


MAX_MATRIX_DIM = 20_000


def _check_matrix_dim(model: nn.Module) -> int:
    d = parameter_dim(model)
    if d > MAX_MATRIX_DIM:
        raise ValueError(f"model has d={d} trainable parameters, more than MAX_MATRIX_DIM="
                         f"{MAX_MATRIX_DIM}: a d x d matrix is too large; use the trace_* "
                         "functions")
    return d


def sigma_sgd(model: nn.Module, X: Any, y: Any, *, chunk_size: int = 32,
              progress: bool = False) -> Tensor:
    """``Sigma^SGD_N(theta)`` of Eq. (15) (``d x d``): population covariance (1/N) of the
    label-noiseless per-sample loss gradients.  Two passes (mean first) for accuracy."""
    chunk_size = check_chunk(chunk_size)
    X = as_inputs(model, X)
    Y = as_labels(model, X, y)
    d = _check_matrix_dim(model)
    g_bar = loss_gradient(model, X, Y)
    out = torch.zeros(d, d, dtype=g_bar.dtype, device=g_bar.device)
    for _, g in loss_grad_chunks(model, X, Y, chunk_size, progress):
        c = g - g_bar
        out += c.T @ c
    return out / X.shape[0]


def _as_label_cov(label_cov: Any, n: int, n_out: int, dtype: torch.dtype,
                  device: torch.device) -> Tensor | None:
    if label_cov is None:
        return None
    try:
        C = torch.as_tensor(label_cov).to(device=device, dtype=dtype)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError("label_cov must be an L x L or N x L x L tensor") from None
    if C.shape == (n_out, n_out):
        C = C.expand(n, n_out, n_out)
    if C.shape != (n, n_out, n_out):
        raise ValueError(f"label_cov must have shape ({n_out}, {n_out}) or ({n}, {n_out}, "
                         f"{n_out}) for N={n} samples with L={n_out} outputs, got "
                         f"{tuple(C.shape)}")
    if not torch.isfinite(C).all():
        raise ValueError("label_cov must contain only finite numbers")
    if not torch.allclose(C, C.transpose(-1, -2)):
        raise ValueError("label_cov must be symmetric")
    return C


def sigma_uln(model: nn.Module, X: Any, *, label_cov: Any = None, chunk_size: int = 32,
              progress: bool = False) -> Tensor:
    """``Sigma^ULN_N(theta)`` of Eq. (15) with ``sigma^2`` factored out (``d x d``):
    ``(1/N) sum_i J_i^T J_i``; with ``label_cov`` (``C`` or per-sample ``C_i``, the label
    noise covariance) returns ``(1/N) sum_i J_i^T C_i J_i`` instead (no factoring)."""
    chunk_size = check_chunk(chunk_size)
    X = as_inputs(model, X)
    d = _check_matrix_dim(model)
    C = _as_label_cov(label_cov, X.shape[0], n_outputs(model, X), model_dtype(model), X.device)
    out = torch.zeros(d, d, dtype=model_dtype(model), device=model_device(model))
    for sl, j in jacobian_chunks(model, X, chunk_size, progress):
        J = flatten_tree(j, 2)                                        # (b, L, d)
        CJ = J if C is None else torch.einsum("blm,bmd->bld", C[sl], J)
        out += torch.einsum("bld,ble->de", J, CJ)
    return out / X.shape[0]


def trace_sigma_sgd(model: nn.Module, X: Any, y: Any, *, chunk_size: int = 32,
                    progress: bool = False) -> float:
    """``trace Sigma^SGD_N = (1/N) sum_i ||g_i - g_bar||^2`` without any ``d x d`` matrix."""
    chunk_size = check_chunk(chunk_size)
    X = as_inputs(model, X)
    Y = as_labels(model, X, y)
    g_bar = loss_gradient(model, X, Y)
    total = 0.0
    for _, g in loss_grad_chunks(model, X, Y, chunk_size, progress):
        total += float((g - g_bar).pow(2).sum())
    return total / X.shape[0]


def trace_sigma_uln(model: nn.Module, X: Any, *, label_cov: Any = None, chunk_size: int = 32,
                    progress: bool = False) -> float:
    """``trace Sigma^ULN_N`` (``sigma^2`` factored out) ``= G(theta)``; with ``label_cov``:
    ``(1/N) sum_i trace(C_i J_i J_i^T)``.  No ``d x d`` matrix is formed."""
    if label_cov is None:
        return gradient_norm(model, X, chunk_size=chunk_size, progress=progress)
    chunk_size = check_chunk(chunk_size)
    X = as_inputs(model, X)
    C = _as_label_cov(label_cov, X.shape[0], n_outputs(model, X), model_dtype(model), X.device)
    total = 0.0
    for sl, j in jacobian_chunks(model, X, chunk_size, progress):
        # J_i J_i^T accumulated parameter tensor by parameter tensor: O(b L^2) memory.
        gram = sum(torch.einsum("blp,bmp->blm", t.reshape(*t.shape[:2], -1),
                                t.reshape(*t.shape[:2], -1)) for t in j.values())
        total += float(torch.einsum("blm,bml->", C[sl], gram))
    return total / X.shape[0]


@dataclass(frozen=True)
class StepDecomposition:
    """The three terms of Eq. (12) for one minibatch step, as flat ``(d,)`` vectors.

    ``step = full_gradient + sgd_noise + uln_noise`` up to ``residual`` (max abs error),
    where ``step = eta g~_k`` is the actual update ``theta_k - theta_{k+1}``.
    """
    full_gradient: Tensor   # eta grad L*(theta_k)
    sgd_noise: Tensor       # sqrt(eta) xi*_k
    uln_noise: Tensor       # sqrt(eta) xi^ULN_k
    step: Tensor            # eta g~_k
    eta: float
    residual: float = field(default=0.0)

    @property
    def xi_star(self) -> Tensor:
        """``xi*_k`` of Eq. (13); ``Cov = c_sgd (eta/b) Sigma^SGD`` (Prop. 1)."""
        return self.sgd_noise / math.sqrt(self.eta)

    @property
    def xi_uln(self) -> Tensor:
        """``xi^ULN_k`` of Eq. (13); ``Cov = c_uln (eta sigma^2 / b) Sigma^ULN`` (Prop. 1)."""
        return self.uln_noise / math.sqrt(self.eta)


def decompose_step(model: nn.Module, X: Any, y_clean: Any, y_noisy: Any, batch_idx: Any,
                   eta: float, *, full_gradient: Tensor | None = None,
                   chunk_size: int = 256) -> StepDecomposition:
    """Split ONE real label-noisy SGD step into the three terms of Eq. (12).

    Parameters
    ----------
    model : network ``f(x, theta)`` at ``theta_k`` (eval mode if it has BatchNorm/Dropout).
    X, y_clean : all ``N`` inputs and their label-noiseless labels ``y_i`` (for a biased
        noise such as the symmetric swap, pass ``E[y~_i]``, i.e. ``source.y_clean``).
    y_noisy : noisy labels of the batch, one row per entry of ``batch_idx`` (e.g.
        ``source.batch(batch_idx, seed)``), shape ``y_clean[batch_idx].shape``.
    batch_idx : 1-D indices of ``B_k`` (duplicates allowed: with-replacement sampling).
    eta : learning rate.
    full_gradient : optional precomputed ``grad L*(theta_k)`` (flat, from
        :func:`dsmlib.covariances.loss_gradient`) to save a full pass in Monte Carlo loops.

    The step is computed as an optimizer would, from one backward pass of
    ``(1/b) sum_j 1/2 ||f(x_j) - y~_j||^2``; the noise terms are computed independently
    (``sqrt(eta) xi^ULN`` as the VJP ``-(eta/b) sum_j J_j^T eps_j``), and the sum is checked:
    a ``RuntimeError`` is raised if the relative residual exceeds ``sqrt(machine eps)``.
    """
    check_model(model)
    eta = check_positive("eta", eta)
    chunk_size = check_chunk(chunk_size)
    X = as_inputs(model, X)
    Y = as_labels(model, X, y_clean, "y_clean")
    idx = check_indices(batch_idx, X.shape[0]).to(X.device)
    b = idx.numel()
    try:
        Yn = torch.as_tensor(y_noisy)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError("y_noisy must be a tensor (or array) of labels") from None
    expected = (b, *torch.as_tensor(y_clean).shape[1:])
    if tuple(Yn.shape) != expected:
        raise ValueError(f"y_noisy must hold the noisy labels of the batch, shape {expected} "
                         f"(= y_clean[batch_idx].shape), got {tuple(Yn.shape)}")
    Yn = Yn.reshape(b, -1).to(device=X.device, dtype=model_dtype(model))
    d = parameter_dim(model)
    if full_gradient is None:
        g_full = loss_gradient(model, X, Y, chunk_size=chunk_size)
    else:
        g_full = torch.as_tensor(full_gradient)
        if g_full.shape != (d,):
            raise ValueError(f"full_gradient must be a flat vector of d={d} entries, got "
                             f"shape {tuple(g_full.shape)}")
        g_full = g_full.to(device=X.device, dtype=model_dtype(model))

    params = [p for p in model.parameters() if p.requires_grad]

    def flat_grad(scalar: Tensor) -> Tensor:
        gs = torch.autograd.grad(scalar, params, retain_graph=True, allow_unused=True)
        return torch.cat([torch.zeros_like(p).reshape(-1) if g is None else g.reshape(-1)
                          for p, g in zip(params, gs)])

    out = model(X[idx]).reshape(b, -1)
    Yb = Y[idx]
    batch_clean = flat_grad(0.5 * (out - Yb).pow(2).sum() / b)
    uln = flat_grad(-(out * (Yn - Yb)).sum() / b)
    noisy = flat_grad(0.5 * (out - Yn).pow(2).sum() / b)

    full_term = eta * g_full
    sgd_term = eta * (batch_clean - g_full)
    uln_term = eta * uln
    step = eta * noisy
    residual = float((step - (full_term + sgd_term + uln_term)).abs().max())
    scale = max(float(t.abs().max()) for t in (step, full_term, sgd_term, uln_term))
    if residual > math.sqrt(torch.finfo(step.dtype).eps) * max(scale, 1e-300):
        raise RuntimeError(f"Eq. (12) decomposition does not add up: residual {residual:.3g} "
                           f"at scale {scale:.3g}; is the loss per-sample separable?")
    return StepDecomposition(full_term, sgd_term, uln_term, step, eta, residual)
