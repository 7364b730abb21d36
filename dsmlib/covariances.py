"""Per-sample gradients, Jacobians and the two diffusion matrices of Prop. 1, for any
``torch.nn.Module``.

Notation (paper, Sec. 3.1): the network ``f(x, theta)`` has ``d`` trainable parameters
and ``L`` outputs per sample (``L = 1`` for the paper's scalar analysis).  For sample
``i`` let ``J_i = d f(x_i, theta) / d theta`` (an ``L x d`` matrix) and let
``g_i = grad L*_i(theta) = J_i^T (f(x_i, theta) - y_i)`` be the gradient of the
label-noiseless quadratic loss ``L*_i = 1/2 ||f(x_i, theta) - y_i||^2``.

- Eq. (15), first line:  ``Sigma^SGD = (1/N) sum_i (g_i - g_bar)(g_i - g_bar)^T`` with
  ``g_bar = (1/N) sum_i g_i`` (population covariance, 1/N normalisation).
- Eq. (15), second line, with ``sigma^2`` factored out:
  ``Sigma^ULN = (1/N) sum_i J_i^T J_i``, or ``(1/N) sum_i J_i^T C_i J_i`` for a label noise
  with per-sample covariance ``C_i`` (e.g. the symmetric swap noise of Sec. 5.2).
- Prop. 3 / Eq. (18): the gradient norm ``G(theta) = (1/N) sum_i ||J_i||_F^2
  = trace(Sigma^ULN)``.

Everything is computed with ``torch.func`` (``functional_call`` + ``vmap`` +
``jacrev``/``grad``/``vjp``/``jvp``) in chunks of ``chunk_size`` samples, so memory is
``O(chunk_size * L * d)`` and never ``O(N * d)`` unless a per-sample tensor is requested.
Buffers (BatchNorm running statistics) are passed to ``functional_call`` unchanged, so
BatchNorm works in eval mode; layers that couple samples or draw random numbers in
training mode (BatchNorm, Dropout) are rejected, because for them the per-sample
quantities the paper talks about do not exist.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np
import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, jacrev, jvp, vjp, vmap

from ._checks import check_choice, check_int

__all__ = [
    "ProbeEstimate",
    "as_torch_generator", "trainable_parameters", "flat_parameters", "parameter_dim",
    "per_sample_jacobians", "per_sample_loss_gradients", "per_sample_jacobian_sq_norms",
    "loss_gradient", "sigma_sgd", "sigma_uln", "trace_sigma_sgd", "trace_sigma_uln",
    "gradient_norm", "gradient_norm_probe",
]

#: Refuse to form a d x d matrix beyond this many parameters (a float64 20k x 20k
#: matrix is 3.2 GB); use the ``trace_*`` functions instead.
MAX_MATRIX_DIM = 20_000


class ProbeEstimate(NamedTuple):
    """An unbiased Monte Carlo estimate with its standard error."""
    estimate: float
    standard_error: float
    n_probes: int


# --------------------------------------------------------------------------- helpers


def as_torch_generator(seed: Any) -> torch.Generator:
    """Accept an int seed, a ``torch.Generator`` or a numpy ``Generator`` (from which a
    seed is drawn); never touches the global RNG."""
    if isinstance(seed, torch.Generator):
        return seed
    if isinstance(seed, np.random.Generator):
        return torch.Generator().manual_seed(int(seed.integers(0, 2**63 - 1)))
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        return torch.Generator().manual_seed(int(seed))
    raise ValueError("seed must be an int, a torch.Generator or a numpy Generator, "
                     f"got {seed!r}")


def _check_model(model: Any) -> None:
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
    _check_model(model)
    return {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}


def flat_parameters(model: nn.Module) -> Tensor:
    """``theta`` as one flat vector (same layout as every flat gradient returned here)."""
    return torch.cat([p.reshape(-1) for p in trainable_parameters(model).values()])


def parameter_dim(model: nn.Module) -> int:
    """``d``, the number of trainable scalar parameters."""
    return sum(p.numel() for p in trainable_parameters(model).values())


def _constants(model: nn.Module) -> dict[str, Tensor]:
    out = {n: p.detach() for n, p in model.named_parameters() if not p.requires_grad}
    out.update({n: b for n, b in model.named_buffers()})
    return out


def _model_dtype(model: nn.Module) -> torch.dtype:
    return next(p for p in model.parameters() if p.requires_grad).dtype


def _as_inputs(model: nn.Module, X: Any) -> Tensor:
    _check_model(model)
    try:
        X = torch.as_tensor(X)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError("X must be a tensor (or array) of inputs") from None
    if X.ndim < 1 or X.shape[0] < 1:
        raise ValueError(f"X must have a leading sample dimension N >= 1, got shape {tuple(X.shape)}")
    return X.to(_model_dtype(model))


def _n_outputs(model: nn.Module, X: Tensor) -> int:
    with torch.no_grad():
        out = model(X[:1])
    return int(out.reshape(1, -1).shape[1])


def _as_labels(model: nn.Module, X: Tensor, y: Any, name: str = "y") -> Tensor:
    """Labels reshaped to ``(N, L)``; ValueError naming ``name`` when shapes disagree."""
    try:
        y = torch.as_tensor(y)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"{name} must be a tensor (or array) of labels") from None
    n = X.shape[0]
    if y.ndim < 1 or y.shape[0] != n:
        raise ValueError(f"{name} must have one row per input: X has N={n} samples, "
                         f"{name} has shape {tuple(y.shape)}")
    n_out = _n_outputs(model, X)
    y = y.reshape(n, -1).to(_model_dtype(model))
    if y.shape[1] != n_out:
        raise ValueError(f"{name} has {y.shape[1]} values per sample but the model has "
                         f"{n_out} outputs per sample")
    return y


def _check_chunk(chunk_size: Any) -> int:
    return check_int("chunk_size", chunk_size, minimum=1)


def _chunks(n: int, chunk_size: int, progress: bool, desc: str) -> Iterator[slice]:
    starts = range(0, n, chunk_size)
    if progress:
        from tqdm.auto import tqdm
        starts = tqdm(starts, desc=desc, total=math.ceil(n / chunk_size))
    for s in starts:
        yield slice(s, min(s + chunk_size, n))


def _per_sample_fn(model: nn.Module) -> Callable[[dict[str, Tensor], Tensor], Tensor]:
    """``(params, x) -> f(x, params)`` flattened to shape ``(L,)`` for ONE sample ``x``."""
    consts = _constants(model)

    def f(params: dict[str, Tensor], x: Tensor) -> Tensor:
        return functional_call(model, (params, consts), (x.unsqueeze(0),)).reshape(-1)
    return f


def _flatten(tree: dict[str, Tensor], lead: int) -> Tensor:
    """Concatenate per-parameter tensors with ``lead`` leading batch dims into ``(..., d)``."""
    return torch.cat([t.reshape(*t.shape[:lead], -1) for t in tree.values()], dim=lead)


def _sq_norms(tree: dict[str, Tensor], lead: int) -> Tensor:
    """Squared norm over the parameter dims of a per-parameter tensor dict."""
    return sum(t.pow(2).reshape(*t.shape[:lead], -1).sum(-1) for t in tree.values())


# --------------------------------------------------------------------------- per-sample


def _jacobian_chunks(model: nn.Module, X: Tensor, chunk_size: int, progress: bool
                     ) -> Iterator[tuple[slice, dict[str, Tensor]]]:
    params = trainable_parameters(model)
    jac = vmap(jacrev(_per_sample_fn(model)), in_dims=(None, 0))
    for sl in _chunks(X.shape[0], chunk_size, progress, "Jacobians"):
        yield sl, jac(params, X[sl])


def _loss_grad_chunks(model: nn.Module, X: Tensor, Y: Tensor, chunk_size: int,
                      progress: bool) -> Iterator[tuple[slice, Tensor]]:
    params = trainable_parameters(model)
    f = _per_sample_fn(model)

    def loss(p: dict[str, Tensor], x: Tensor, y: Tensor) -> Tensor:
        return 0.5 * (f(p, x) - y).pow(2).sum()
    g = vmap(grad(loss), in_dims=(None, 0, 0))
    for sl in _chunks(X.shape[0], chunk_size, progress, "per-sample gradients"):
        yield sl, _flatten(g(params, X[sl], Y[sl]), 1)


def per_sample_jacobians(model: nn.Module, X: Any, *, chunk_size: int = 32,
                         progress: bool = False) -> Tensor:
    """``J`` of shape ``(N, L, d)``: ``J[i] = d f(x_i, theta) / d theta`` (``L = 1`` for
    scalar outputs).  Memory ``O(N L d)``: for big models prefer the trace functions."""
    chunk_size = _check_chunk(chunk_size)
    X = _as_inputs(model, X)
    return torch.cat([_flatten(j, 2) for _, j in _jacobian_chunks(model, X, chunk_size, progress)])


def per_sample_loss_gradients(model: nn.Module, X: Any, y: Any, *, chunk_size: int = 32,
                              progress: bool = False) -> Tensor:
    """``(N, d)`` matrix of ``grad L*_i(theta) = J_i^T (f(x_i) - y_i)`` (Eq. (12), first line)."""
    chunk_size = _check_chunk(chunk_size)
    X = _as_inputs(model, X)
    Y = _as_labels(model, X, y)
    return torch.cat([g for _, g in _loss_grad_chunks(model, X, Y, chunk_size, progress)])


def per_sample_jacobian_sq_norms(model: nn.Module, X: Any, *, chunk_size: int = 32,
                                 progress: bool = False) -> Tensor:
    """``(N,)`` vector of ``||J_i||_F^2 = ||grad_theta f(x_i, theta)||^2`` (Eq. (18))."""
    chunk_size = _check_chunk(chunk_size)
    X = _as_inputs(model, X)
    return torch.cat([_sq_norms(j, 2).sum(1)
                      for _, j in _jacobian_chunks(model, X, chunk_size, progress)])


def loss_gradient(model: nn.Module, X: Any, y: Any, *, chunk_size: int = 256) -> Tensor:
    """Full-batch label-noiseless gradient ``grad L*(theta) = (1/N) sum_i grad L*_i``
    (the drift of Eq. (11)), flat ``(d,)``; chunked ordinary backward passes."""
    chunk_size = _check_chunk(chunk_size)
    X = _as_inputs(model, X)
    Y = _as_labels(model, X, y)
    params = [p for p in model.parameters() if p.requires_grad]
    total = [torch.zeros_like(p) for p in params]
    for sl in _chunks(X.shape[0], chunk_size, False, ""):
        out = model(X[sl]).reshape(sl.stop - sl.start, -1)
        gs = torch.autograd.grad(0.5 * (out - Y[sl]).pow(2).sum(), params, allow_unused=True)
        for t, g in zip(total, gs):
            if g is not None:
                t += g
    return torch.cat([t.reshape(-1) for t in total]) / X.shape[0]


# --------------------------------------------------------------------------- Eq. (15)


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
    chunk_size = _check_chunk(chunk_size)
    X = _as_inputs(model, X)
    Y = _as_labels(model, X, y)
    d = _check_matrix_dim(model)
    g_bar = loss_gradient(model, X, Y)
    out = torch.zeros(d, d, dtype=g_bar.dtype)
    for _, g in _loss_grad_chunks(model, X, Y, chunk_size, progress):
        c = g - g_bar
        out += c.T @ c
    return out / X.shape[0]


def _as_label_cov(label_cov: Any, n: int, n_out: int, dtype: torch.dtype) -> Tensor | None:
    if label_cov is None:
        return None
    try:
        C = torch.as_tensor(label_cov).to(dtype)
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
    chunk_size = _check_chunk(chunk_size)
    X = _as_inputs(model, X)
    d = _check_matrix_dim(model)
    C = _as_label_cov(label_cov, X.shape[0], _n_outputs(model, X), _model_dtype(model))
    out = torch.zeros(d, d, dtype=_model_dtype(model))
    for sl, j in _jacobian_chunks(model, X, chunk_size, progress):
        J = _flatten(j, 2)                                        # (b, L, d)
        CJ = J if C is None else torch.einsum("blm,bmd->bld", C[sl], J)
        out += torch.einsum("bld,ble->de", J, CJ)
    return out / X.shape[0]


def trace_sigma_sgd(model: nn.Module, X: Any, y: Any, *, chunk_size: int = 32,
                    progress: bool = False) -> float:
    """``trace Sigma^SGD_N = (1/N) sum_i ||g_i - g_bar||^2`` without any ``d x d`` matrix."""
    chunk_size = _check_chunk(chunk_size)
    X = _as_inputs(model, X)
    Y = _as_labels(model, X, y)
    g_bar = loss_gradient(model, X, Y)
    total = 0.0
    for _, g in _loss_grad_chunks(model, X, Y, chunk_size, progress):
        total += float((g - g_bar).pow(2).sum())
    return total / X.shape[0]


def trace_sigma_uln(model: nn.Module, X: Any, *, label_cov: Any = None, chunk_size: int = 32,
                    progress: bool = False) -> float:
    """``trace Sigma^ULN_N`` (``sigma^2`` factored out) ``= G(theta)``; with ``label_cov``:
    ``(1/N) sum_i trace(C_i J_i J_i^T)``.  No ``d x d`` matrix is formed."""
    if label_cov is None:
        return gradient_norm(model, X, chunk_size=chunk_size, progress=progress)
    chunk_size = _check_chunk(chunk_size)
    X = _as_inputs(model, X)
    C = _as_label_cov(label_cov, X.shape[0], _n_outputs(model, X), _model_dtype(model))
    total = 0.0
    for sl, j in _jacobian_chunks(model, X, chunk_size, progress):
        # J_i J_i^T accumulated parameter tensor by parameter tensor: O(b L^2) memory.
        gram = sum(torch.einsum("blp,bmp->blm", t.reshape(*t.shape[:2], -1),
                                t.reshape(*t.shape[:2], -1)) for t in j.values())
        total += float(torch.einsum("blm,bml->", C[sl], gram))
    return total / X.shape[0]


# --------------------------------------------------------------------------- Prop. 3


def gradient_norm(model: nn.Module, X: Any, *, chunk_size: int = 32,
                  progress: bool = False) -> float:
    """Exact ``G(theta) = (1/N) sum_i ||grad_theta f(x_i, theta)||^2`` (Eq. (18); squared
    Frobenius norm of the ``L x d`` Jacobian for vector outputs), via ``vmap(jacrev)``."""
    return float(per_sample_jacobian_sq_norms(model, X, chunk_size=chunk_size,
                                              progress=progress).mean())


def _probes(shape: tuple[int, ...], probe: str, generator: torch.Generator,
            dtype: torch.dtype) -> Tensor:
    if probe == "rademacher":
        return torch.randint(0, 2, shape, generator=generator).to(dtype) * 2 - 1
    return torch.randn(shape, generator=generator, dtype=dtype)


def gradient_norm_probe(model: nn.Module, X: Any, *, n_probes: int = 2, seed: Any = 0,
                        method: str = "vjp", probe: str = "rademacher",
                        chunk_size: int = 32, progress: bool = False) -> ProbeEstimate:
    """Unbiased random-probe estimate of ``G(theta)`` (Eq. (18)) with its standard error.

    ``method="vjp"`` (default): for every sample ``i`` and probe ``k`` an independent
    output-space probe ``u_ik`` in R^L gives ``q_ik = ||J_i^T u_ik||^2`` with
    ``E q_ik = trace(J_i J_i^T) = ||J_i||_F^2``; the estimate is ``mean_ik q_ik`` and the
    standard error ``sqrt(sum_i s_i^2 / n_probes) / N`` from the per-sample variances
    ``s_i^2`` over probes (needs ``n_probes >= 2``).  Cost: ``n_probes`` per-sample VJPs
    against ``L`` for the exact Jacobian.

    ``method="jvp"``: ``n_probes`` parameter-space probes ``v_k`` in R^d shared by all
    samples, ``e_k = (1/N) sum_i ||J_i v_k||^2`` by batched forward-mode AD (cheap: about
    one forward pass per probe), standard error ``sd(e_k)/sqrt(n_probes)``.

    Why ``vjp`` is the default: both are Hutchinson estimators, but the jvp one is
    Hutchinson on ``A = (1/N) sum_i J_i^T J_i`` with one probe for all samples, relative
    variance ``~ 2 ||A||_F^2 / trace(A)^2 = 2 / (effective rank)``, which does not shrink
    with N and is large for networks (their NTK spectrum is dominated by a few
    directions).  The vjp probes are independent across samples, so the variance is
    ``(1/N^2) sum_i Var(q_i)`` and shrinks like ``1/N``; with Rademacher probes
    ``Var(q_i) = 2 (||J_i J_i^T||_F^2 - sum_l (J_i J_i^T)_ll^2)``, which is zero for
    scalar outputs (``L = 1``: the estimate is then exact).  ``benchmarks/bench_gradnorm.py``
    measures both.
    """
    n_probes = check_int("n_probes", n_probes, minimum=2)
    method = check_choice("method", method, ["vjp", "jvp"])
    probe = check_choice("probe", probe, ["rademacher", "gaussian"])
    chunk_size = _check_chunk(chunk_size)
    generator = as_torch_generator(seed)
    X = _as_inputs(model, X)
    params = trainable_parameters(model)
    dtype = _model_dtype(model)
    n, n_out = X.shape[0], _n_outputs(model, X)

    if method == "vjp":
        U = _probes((n, n_probes, n_out), probe, generator, dtype)
        f = _per_sample_fn(model)

        def sample_q(p: dict[str, Tensor], x: Tensor, u: Tensor) -> Tensor:
            _, pullback = vjp(lambda q: f(q, x), p)
            (g,) = vmap(pullback)(u)                      # dict of (n_probes, *shape)
            return _sq_norms(g, 1)
        qfn = vmap(sample_q, in_dims=(None, 0, 0))
        q = torch.cat([qfn(params, X[sl], U[sl])
                       for sl in _chunks(n, chunk_size, progress, "VJP probes")])  # (N, K)
        est = float(q.mean())
        se = float(torch.sqrt(q.var(dim=1, unbiased=True).sum() / n_probes) / n)
        return ProbeEstimate(est, se, n_probes)

    consts = _constants(model)
    V = _probes((n_probes, sum(p.numel() for p in params.values())), probe, generator, dtype)
    e = torch.zeros(n_probes, dtype=dtype)
    with warnings.catch_warnings():
        # torch's forward-AD decompositions are scripted on first use (torch-internal notice)
        warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)
        _jvp_probe_sums(model, X, params, consts, V, e, chunk_size, progress)
    e /= n
    return ProbeEstimate(float(e.mean()), float(e.std(unbiased=True) / math.sqrt(n_probes)),
                         n_probes)


def _jvp_probe_sums(model: nn.Module, X: Tensor, params: dict[str, Tensor],
                    consts: dict[str, Tensor], V: Tensor, e: Tensor, chunk_size: int,
                    progress: bool) -> None:
    """``e[k] = sum_i ||J_i v_k||^2`` by batched forward-mode AD, chunk by chunk."""
    names = list(params)
    sizes = [params[k].numel() for k in names]
    n = X.shape[0]
    for k in range(V.shape[0]):
        v = dict(zip(names, (t.reshape(params[nm].shape)
                             for t, nm in zip(torch.split(V[k], sizes), names))))
        for sl in _chunks(n, chunk_size, progress and k == 0, "JVP probes"):
            _, tangent = jvp(lambda p: functional_call(model, (p, consts), (X[sl],)),
                             (params,), (v,))
            e[k] += tangent.pow(2).sum()
