"""Per-sample Jacobians and loss gradients of any ``torch.nn.Module`` (theory).

Notation (paper, Sec. 3.1): the network ``f(x, theta)`` has ``d`` trainable parameters
and ``L`` outputs per sample (``L = 1`` for the paper's scalar analysis).  For sample
``i`` let ``J_i = d f(x_i, theta) / d theta`` (an ``L x d`` matrix) and let
``g_i = grad L*_i(theta) = J_i^T (f(x_i, theta) - y_i)`` be the gradient of the
label-noiseless quadratic loss ``L*_i = 1/2 ||f(x_i, theta) - y_i||^2`` (Eq. 13).

Everything is computed with ``torch.func`` (``functional_call`` + ``vmap`` +
``jacrev``/``grad``) in chunks of ``chunk_size`` samples, so memory is
``O(chunk_size * L * d)`` and never ``O(N * d)`` unless a per-sample tensor is requested.
Buffers (BatchNorm running statistics) are passed to ``functional_call`` unchanged, so
BatchNorm works in eval mode; layers that couple samples or draw random numbers in
training mode (BatchNorm, Dropout) are rejected, because for them the per-sample
quantities the paper talks about do not exist.

Device: the work runs where the model's parameters live. Inputs and labels are moved there
(and cast to the parameters' dtype); every tensor returned lives there too.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterator

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, jacrev, vmap

from ..foundation.checks import check_int

__all__ = [
    "check_model", "trainable_parameters", "flat_parameters", "parameter_dim", "model_constants",
    "model_dtype", "model_device", "as_inputs", "as_labels", "n_outputs", "check_chunk",
    "sample_chunks", "per_sample_fn", "flatten_tree", "tree_sq_norms", "jacobian_chunks",
    "loss_grad_chunks", "per_sample_jacobians", "per_sample_loss_gradients",
    "per_sample_jacobian_sq_norms", "loss_gradient",
]


def check_model(model: Any) -> None:
    """A ``torch.nn.Module`` with trainable parameters and no sample-coupling layer in training mode."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError("model has no trainable parameters (requires_grad=True); "
                         "the gradients of Prop. 1 are taken with respect to them")
    for name, m in model.named_modules():
        if m.training and isinstance(m, (nn.modules.batchnorm._BatchNorm,
                                         nn.modules.dropout._DropoutNd)):
            raise ValueError(
                f"model has {type(m).__name__} layer '{name}' in training mode; per-sample "
                "gradients need layers that act on each sample independently and "
                "deterministically: call model.eval() first")


def trainable_parameters(model: nn.Module) -> dict[str, Tensor]:
    """Detached trainable parameters, in ``named_parameters`` order (defines the flat layout)."""
    check_model(model)
    return {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}


def flat_parameters(model: nn.Module) -> Tensor:
    """``theta`` as one flat vector (same layout as every flat gradient returned here)."""
    return torch.cat([p.reshape(-1) for p in trainable_parameters(model).values()])


def parameter_dim(model: nn.Module) -> int:
    """``d``, the number of trainable scalar parameters."""
    return sum(p.numel() for p in trainable_parameters(model).values())


def model_constants(model: nn.Module) -> dict[str, Tensor]:
    """Frozen parameters and buffers, passed unchanged to ``functional_call``."""
    out = {n: p.detach() for n, p in model.named_parameters() if not p.requires_grad}
    out.update({n: b for n, b in model.named_buffers()})
    return out


def model_dtype(model: nn.Module) -> torch.dtype:
    """The dtype of the model's trainable parameters."""
    return next(p for p in model.parameters() if p.requires_grad).dtype


def model_device(model: nn.Module) -> torch.device:
    """The device of the model's trainable parameters: where every computation runs."""
    return next(p for p in model.parameters() if p.requires_grad).device


def as_inputs(model: nn.Module, X: Any) -> Tensor:
    check_model(model)
    try:
        X = torch.as_tensor(X)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError("X must be a tensor (or array) of inputs") from None
    if X.ndim < 1 or X.shape[0] < 1:
        raise ValueError(f"X must have a leading sample dimension N >= 1, got shape {tuple(X.shape)}")
    return X.to(device=model_device(model), dtype=model_dtype(model))


def n_outputs(model: nn.Module, X: Tensor) -> int:
    """``L``, the number of outputs per sample."""
    with torch.no_grad():
        out = model(X[:1])
    return int(out.reshape(1, -1).shape[1])


def as_labels(model: nn.Module, X: Tensor, y: Any, name: str = "y") -> Tensor:
    """Labels reshaped to ``(N, L)``; ValueError naming ``name`` when shapes disagree."""
    try:
        y = torch.as_tensor(y)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"{name} must be a tensor (or array) of labels") from None
    n = X.shape[0]
    if y.ndim < 1 or y.shape[0] != n:
        raise ValueError(f"{name} must have one row per input: X has N={n} samples, "
                         f"{name} has shape {tuple(y.shape)}")
    n_out = n_outputs(model, X)
    y = y.reshape(n, -1).to(device=model_device(model), dtype=model_dtype(model))
    if y.shape[1] != n_out:
        raise ValueError(f"{name} has {y.shape[1]} values per sample but the model has "
                         f"{n_out} outputs per sample")
    return y


def check_chunk(chunk_size: Any) -> int:
    """A chunk size >= 1."""
    return check_int("chunk_size", chunk_size, minimum=1)


def sample_chunks(n: int, chunk_size: int, progress: bool, desc: str) -> Iterator[slice]:
    """Slices of ``range(n)`` of at most ``chunk_size``, with an optional progress bar."""
    starts = range(0, n, chunk_size)
    if progress:
        from tqdm.auto import tqdm
        starts = tqdm(starts, desc=desc, total=math.ceil(n / chunk_size))
    for s in starts:
        yield slice(s, min(s + chunk_size, n))


def per_sample_fn(model: nn.Module) -> Callable[[dict[str, Tensor], Tensor], Tensor]:
    """``(params, x) -> f(x, params)`` flattened to shape ``(L,)`` for ONE sample ``x``."""
    consts = model_constants(model)

    def f(params: dict[str, Tensor], x: Tensor) -> Tensor:
        return functional_call(model, (params, consts), (x.unsqueeze(0),)).reshape(-1)
    return f


def flatten_tree(tree: dict[str, Tensor], lead: int) -> Tensor:
    """Concatenate per-parameter tensors with ``lead`` leading batch dims into ``(..., d)``."""
    return torch.cat([t.reshape(*t.shape[:lead], -1) for t in tree.values()], dim=lead)


def tree_sq_norms(tree: dict[str, Tensor], lead: int) -> Tensor:
    """Squared norm over the parameter dims of a per-parameter tensor dict."""
    return sum(t.pow(2).reshape(*t.shape[:lead], -1).sum(-1) for t in tree.values())


def jacobian_chunks(model: nn.Module, X: Tensor, chunk_size: int, progress: bool
                    ) -> Iterator[tuple[slice, dict[str, Tensor]]]:
    """Per-sample Jacobians chunk by chunk, as per-parameter tensors ``(b, L, *shape)``."""
    params = trainable_parameters(model)
    jac = vmap(jacrev(per_sample_fn(model)), in_dims=(None, 0))
    for sl in sample_chunks(X.shape[0], chunk_size, progress, "Jacobians"):
        yield sl, jac(params, X[sl])


def loss_grad_chunks(model: nn.Module, X: Tensor, Y: Tensor, chunk_size: int,
                     progress: bool) -> Iterator[tuple[slice, Tensor]]:
    """Flat per-sample loss gradients ``(b, d)`` chunk by chunk."""
    params = trainable_parameters(model)
    f = per_sample_fn(model)

    def loss(p: dict[str, Tensor], x: Tensor, y: Tensor) -> Tensor:
        return 0.5 * (f(p, x) - y).pow(2).sum()
    g = vmap(grad(loss), in_dims=(None, 0, 0))
    for sl in sample_chunks(X.shape[0], chunk_size, progress, "per-sample gradients"):
        yield sl, flatten_tree(g(params, X[sl], Y[sl]), 1)


def per_sample_jacobians(model: nn.Module, X: Any, *, chunk_size: int = 32,
                         progress: bool = False) -> Tensor:
    """``J`` of shape ``(N, L, d)``: ``J[i] = d f(x_i, theta) / d theta`` (``L = 1`` for
    scalar outputs).  Memory ``O(N L d)``: for big models prefer the trace functions."""
    chunk_size = check_chunk(chunk_size)
    X = as_inputs(model, X)
    return torch.cat([flatten_tree(j, 2) for _, j in jacobian_chunks(model, X, chunk_size, progress)])


def per_sample_loss_gradients(model: nn.Module, X: Any, y: Any, *, chunk_size: int = 32,
                              progress: bool = False) -> Tensor:
    """``(N, d)`` matrix of ``grad L*_i(theta) = J_i^T (f(x_i) - y_i)`` (Eq. (13), first line)."""
    chunk_size = check_chunk(chunk_size)
    X = as_inputs(model, X)
    Y = as_labels(model, X, y)
    return torch.cat([g for _, g in loss_grad_chunks(model, X, Y, chunk_size, progress)])


def per_sample_jacobian_sq_norms(model: nn.Module, X: Any, *, chunk_size: int = 32,
                                 progress: bool = False) -> Tensor:
    """``(N,)`` vector of ``||J_i||_F^2 = ||grad_theta f(x_i, theta)||^2`` (Eq. (22))."""
    chunk_size = check_chunk(chunk_size)
    X = as_inputs(model, X)
    return torch.cat([tree_sq_norms(j, 2).sum(1)
                      for _, j in jacobian_chunks(model, X, chunk_size, progress)])


def loss_gradient(model: nn.Module, X: Any, y: Any, *, chunk_size: int = 256) -> Tensor:
    """Full-batch label-noiseless gradient ``grad L*(theta) = (1/N) sum_i grad L*_i``
    (the drift of Eq. (12)), flat ``(d,)``; chunked ordinary backward passes."""
    chunk_size = check_chunk(chunk_size)
    X = as_inputs(model, X)
    Y = as_labels(model, X, y)
    params = [p for p in model.parameters() if p.requires_grad]
    total = [torch.zeros_like(p) for p in params]
    for sl in sample_chunks(X.shape[0], chunk_size, False, ""):
        out = model(X[sl]).reshape(sl.stop - sl.start, -1)
        gs = torch.autograd.grad(0.5 * (out - Y[sl]).pow(2).sum(), params, allow_unused=True)
        for t, g in zip(total, gs):
            if g is not None:
                t += g
    return torch.cat([t.reshape(-1) for t in total]) / X.shape[0]
