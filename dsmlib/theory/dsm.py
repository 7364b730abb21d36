"""The three processes of Proposition 2, vectorised over paths (theory).

For a model ``f(x, theta)`` (a torch module or a function of ``theta``) on a finite data set
``(x_i, y_i)`` with label-noiseless labels, and ``P`` independent paths ``theta`` of shape
``(P, d)``:

(a) :func:`sgd_label_noise` -- actual SGD on the noisy quadratic loss, Eqs. (11)-(12): minibatches
    from the book's one sampler, label noise drawn fresh at every step (:class:`FreshLabelNoise`);
(b) :func:`dsm_iteration` -- the discrete doubly stochastic model, Eq. (17), with two
    independent standard Gaussian draws ``z_k, z'_k`` per step (:func:`dsm_step` is Eq. (17)
    written out; :func:`dsm_iteration` runs it as Euler-Maruyama of (c) with step ``eta``);
(c) :func:`dsm_sde` -- the continuous doubly stochastic model, Eq. (16), as an :class:`SDE`
    whose Brownian motion is ``(W_1, W_2)``, ``2d`` components.

:func:`diffusion_terms` computes the drift ``-grad L*`` and the matrices of Eq. (15) for every
path at once (``Sigma^ULN`` with ``sigma^2`` factored out, as in :mod:`.diffusion`, whose
single-``theta`` functions it agrees with).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, jacfwd, jacrev, vmap

from ..foundation.checks import check_int, check_nonnegative, check_positive
from ..foundation.rng import as_generator, as_torch_generator
from .brownian import BrownianIncrements
from .jacobians import flat_parameters, model_constants, trainable_parameters
from .label_noise import FreshLabelNoise, GaussianNoise, LabelNoise
from .minibatch import draw_minibatches
from .psd import psd_sqrt
from .sde import SDE, solve

__all__ = ["Problem", "as_problem", "diffusion_terms", "dsm_sde", "dsm_step", "dsm_iteration",
           "sgd_label_noise"]


@dataclass(frozen=True)
class Problem:
    """``fn(theta, X) -> (n, L)`` outputs for a flat ``theta`` of ``dim`` entries, on inputs
    ``X`` (``N`` rows) with label-noiseless labels ``y`` (``N x L``); ``theta0`` is the
    module's own parameters when built from one."""

    fn: Callable[[Tensor, Tensor], Tensor]
    X: Tensor
    y: Tensor
    dim: int
    theta0: Tensor | None = None

    @property
    def n(self) -> int:
        return self.X.shape[0]


def _module_fn(model: nn.Module) -> tuple[Callable[[Tensor, Tensor], Tensor], Tensor]:
    params = trainable_parameters(model)
    consts = model_constants(model)
    shapes = [(name, p.shape, p.numel()) for name, p in params.items()]

    def fn(theta: Tensor, X: Tensor) -> Tensor:
        tree, start = {}, 0
        for name, shape, size in shapes:
            tree[name] = theta[start:start + size].reshape(shape)
            start += size
        return functional_call(model, (tree, consts), (X,)).reshape(X.shape[0], -1)
    return fn, flat_parameters(model)


def as_problem(model: nn.Module | Callable[[Tensor, Tensor], Tensor], X: Any, y: Any, *,
               dim: int | None = None) -> Problem:
    """A :class:`Problem` from a torch module (its trainable parameters are ``theta``) or from
    a function ``fn(theta, X)`` of a flat ``theta`` with ``dim`` entries. Inputs and labels are
    moved to the module's device and dtype (for a function: left where they are)."""
    if isinstance(model, nn.Module):
        fn, theta0 = _module_fn(model)
        d = theta0.numel()
        if dim is not None and dim != d:
            raise ValueError(f"dim must be the module's parameter count {d}, got {dim}")
        kw = dict(device=theta0.device, dtype=theta0.dtype)
    elif callable(model):
        if dim is None:
            raise ValueError("dim (the number of entries of theta) is required when the model "
                             "is a function of theta")
        d, fn, theta0, kw = check_int("dim", dim, minimum=1), model, None, {}
    else:
        raise ValueError(f"model must be a torch.nn.Module or a function fn(theta, X), got "
                         f"{type(model).__name__}")
    try:
        X, y = torch.as_tensor(X).to(**kw), torch.as_tensor(y).to(**kw)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError("X and y must be tensors (or arrays) of numbers") from None
    if X.ndim < 1 or y.ndim < 1 or X.shape[0] != y.shape[0] or X.shape[0] < 1:
        raise ValueError(f"X and y must have the same number N >= 1 of rows, got shapes "
                         f"{tuple(X.shape)} and {tuple(y.shape)}")
    y = y.reshape(y.shape[0], -1)
    probe = torch.zeros(d, dtype=X.dtype, device=X.device) if theta0 is None else theta0
    out = fn(probe, X)
    if tuple(out.shape) != tuple(y.shape):
        raise ValueError(f"the model's outputs have shape {tuple(out.shape)} but the labels "
                         f"{tuple(y.shape)}")
    return Problem(fn, X, y, d, theta0)


def _check_thetas(problem: Problem, theta: Any, name: str = "theta") -> Tensor:
    if not isinstance(theta, Tensor) or theta.ndim != 2 or theta.shape[1] != problem.dim:
        shape = tuple(theta.shape) if isinstance(theta, Tensor) else type(theta).__name__
        raise ValueError(f"{name} must be a tensor of shape (P, d) with d = {problem.dim}, "
                         f"got {shape}")
    if theta.device != problem.X.device:
        raise ValueError(f"{name} lives on {theta.device} but the data on {problem.X.device}")
    return theta


def diffusion_terms(problem: Problem, theta: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(-grad L*(theta), Sigma^SGD(theta), Sigma^ULN(theta))`` for every path, shapes
    ``(P, d)``, ``(P, d, d)``, ``(P, d, d)`` (Eq. 15; ``Sigma^ULN`` without ``sigma^2``)."""
    theta = _check_thetas(problem, theta)
    # Forward mode costs d passes, reverse mode N L: take the cheaper.
    jac = jacfwd if problem.dim <= problem.y.numel() else jacrev
    with warnings.catch_warnings():
        # torch registers its forward-mode decompositions with torch.jit.script on first use.
        warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)
        J = vmap(jac(problem.fn), in_dims=(0, None))(theta, problem.X)     # (P, N, L, d)
    r = vmap(problem.fn, in_dims=(0, None))(theta, problem.X) - problem.y  # (P, N, L)
    g = torch.einsum("pnl,pnld->pnd", r, J)                                # grad L*_i
    g_bar = g.mean(dim=1)
    c = g - g_bar[:, None]
    n = problem.n
    return (-g_bar, torch.einsum("pnd,pne->pde", c, c) / n,
            torch.einsum("pnld,pnle->pde", J, J) / n)


def dsm_sde(problem: Problem, *, eta: float, batch_size: int, sigma2: float,
            diffusion_eta: float | None = None, sgd_noise: bool = True) -> SDE:
    """Eq. (16): ``dTheta = -grad L* dt + (eta/b Sigma^SGD)^(1/2) dW_1
    + (eta sigma^2/b Sigma^ULN)^(1/2) dW_2``, noise dimension ``2d`` (``W_1`` first).

    ``diffusion_eta`` replaces the ``eta`` inside the diffusion coefficient (a control that
    keeps the noise scale fixed while the step changes); by default it is ``eta``.
    ``sgd_noise=False`` drops the ``W_1`` term (full-batch descent with label noise: for least
    squares the diffusion is then constant, i.e. additive noise).
    """
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1)
    sigma2 = check_nonnegative("sigma2", sigma2)
    scale = eta if diffusion_eta is None else check_positive("diffusion_eta", diffusion_eta)

    def coefficients(theta: Tensor) -> tuple[Tensor, Tensor]:
        drift, s_sgd, s_uln = diffusion_terms(problem, theta)
        if not sgd_noise:
            s_sgd = torch.zeros_like(s_sgd)
        # One batched eigendecomposition for both matrices: [root(SGD) | root(ULN)].
        roots = psd_sqrt(torch.cat([scale / b * s_sgd, scale * sigma2 / b * s_uln]),
                         name="the diffusion matrices (eta/b) Sigma^SGD, (eta sigma^2/b) Sigma^ULN")
        return drift, torch.cat(roots.chunk(2), dim=-1)
    return SDE(coefficients, problem.dim, 2 * problem.dim, "general")


def dsm_step(problem: Problem, theta: Tensor, *, eta: float, batch_size: int, sigma2: float,
             z: Tensor, z_prime: Tensor) -> Tensor:
    """One step of Eq. (17), written out: ``theta - eta grad L*(theta)
    + sqrt(eta) (eta/b Sigma^SGD)^(1/2) z + sqrt(eta) (eta sigma^2/b Sigma^ULN)^(1/2) z'``."""
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1)
    sigma2 = check_nonnegative("sigma2", sigma2)
    theta = _check_thetas(problem, theta)
    for name, v in (("z", z), ("z_prime", z_prime)):
        if not isinstance(v, Tensor) or v.shape != theta.shape:
            raise ValueError(f"{name} must be a tensor of shape {tuple(theta.shape)}")
    drift, s_sgd, s_uln = diffusion_terms(problem, theta)
    r1, r2 = psd_sqrt(eta / b * s_sgd), psd_sqrt(eta * sigma2 / b * s_uln)
    root = math.sqrt(eta)
    return (theta + eta * drift + root * torch.einsum("pde,pe->pd", r1, z)
            + root * torch.einsum("pde,pe->pd", r2, z_prime))


def dsm_iteration(problem: Problem, theta0: Tensor, *, eta: float, steps: int,
                  batch_size: int, sigma2: float, seed: Any, save: bool = False) -> Tensor:
    """(b): ``steps`` iterations of Eq. (17) from ``theta0`` ``(P, d)``, i.e. Euler-Maruyama
    of :func:`dsm_sde` with step ``eta`` on Brownian increments drawn from ``seed`` by
    :class:`~dsmlib.theory.brownian.BrownianIncrements` (grid ``eta``); to compare with the SDE
    path by path use :func:`dsmlib.theory.sde.strong_errors`, which draws one finer grid for
    both. Returns ``(P, d)``, or ``(steps + 1, P, d)`` if ``save``."""
    theta0 = _check_thetas(problem, theta0, "theta0")
    steps = check_int("steps", steps, minimum=1)
    eta = check_positive("eta", eta)
    sde = dsm_sde(problem, eta=eta, batch_size=batch_size, sigma2=sigma2)
    bm = BrownianIncrements(horizon=steps * eta, fine_dt=eta, block_dt=eta, n_paths=theta0.shape[0],
                            dim=sde.noise_dim, seed=seed, device=theta0.device, dtype=theta0.dtype)
    return solve(sde, theta0, bm.increments(eta), eta, save=save)


def sgd_label_noise(problem: Problem, theta0: Tensor, *, eta: float, steps: int,
                    batch_size: int, noise: LabelNoise | float, replace: bool = True,
                    seed: Any, save: bool = False) -> Tensor:
    """(a): ``steps`` steps of minibatch SGD on ``1/2 ||f(x_j, theta) - y~_j||^2`` from
    ``theta0`` ``(P, d)``, every path with its own minibatches and fresh label noise.

    ``noise`` is a label-noise model (a float means :class:`GaussianNoise` of that variance),
    redrawn at every step (:class:`FreshLabelNoise`); minibatches come from
    :func:`~dsmlib.theory.minibatch.draw_minibatches` (``replace=True`` is the setting in
    which Prop. 1's covariances, and so Eq. (17)'s, are exact). Returns ``(P, d)``, or
    ``(steps + 1, P, d)`` if ``save``.
    """
    theta = _check_thetas(problem, theta0, "theta0")
    eta = check_positive("eta", eta)
    steps = check_int("steps", steps, minimum=1)
    b = check_int("batch_size", batch_size, minimum=1,
                  maximum=None if replace else problem.n)
    if not hasattr(noise, "draw"):
        noise = GaussianNoise(check_nonnegative("noise (sigma2)", noise))
    source = FreshLabelNoise(noise, problem.y)
    rng = as_generator(seed)
    gen = as_torch_generator(rng, theta.device)
    P = theta.shape[0]

    def loss(th: Tensor, Xb: Tensor, yb: Tensor) -> Tensor:
        return 0.5 * (problem.fn(th, Xb) - yb).pow(2).sum() / b
    batch_grad = vmap(grad(loss))
    path = [theta] if save else None
    for _ in range(steps):
        idx = torch.as_tensor(draw_minibatches(problem.n, b, P, replace=replace, seed=rng),
                              device=theta.device)
        y_noisy = source.batch(idx.reshape(-1), gen).reshape(P, b, -1).to(theta.dtype)
        theta = theta - eta * batch_grad(theta, problem.X[idx], y_noisy)
        if save:
            path.append(theta)
    return torch.stack(path) if save else theta
