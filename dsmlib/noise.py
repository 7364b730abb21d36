"""Label-noise models and the one-step decomposition of label-noisy SGD (Eq. (11)).

Noise models (Sec. 5.2).  Each has ``draw(y, seed)`` -> noisy labels, ``mean(y)`` ->
``E[y~]`` and (where it has a closed form) ``covariance(y)`` -> per-sample ``L x L``
covariance of ``y~``:

- :class:`GaussianNoise` -- ``y~ = y + eps``, ``eps ~ N(0, sigma2 I_L)`` (per output dim).
- :class:`SymmetricSwapNoise` -- the "symmetric noise" of Sec. 5.2, see its docstring for
  why the literal "swap" description cannot have the paper's expectation and which
  variants do.

Each model is used either drawn ONCE before training (:class:`FixedLabelNoise`, the
setting of Sec. 6 and of the paper's Prop. 1 with noise "drawn before training steps")
or FRESH at every iteration (:class:`FreshLabelNoise`, the self-distillation setting of
Sec. 5).  Both expose ``batch(batch_idx, seed)`` returning the noisy labels of one
minibatch (one row per batch slot).

One-step decomposition (Sec. 3.1, Eqs. (11)-(12)): for the quadratic loss
``L~_i = 1/2 ||f(x_i) - y~_i||^2`` and ``eps_i = y~_i - y_i``,

    eta g~_k = eta grad L*(theta) + sqrt(eta) xi*_k + sqrt(eta) xi^ULN_k,
    sqrt(eta) xi*_k    = eta ( (1/b) sum_{j in B_k} grad L*_j - grad L*(theta) ),
    sqrt(eta) xi^ULN_k = -(eta/b) sum_{j in B_k} J_j^T eps_j .

:func:`decompose_step` returns the three terms of a real minibatch step and checks they
add up; :func:`prop1_covariance_factors` gives the exact covariance of ``xi*`` and
``xi^ULN`` under each sampling scheme (Prop. 1 holds exactly only in some of them).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import Tensor, nn

from ._checks import check_choice, check_int, check_nonnegative, check_positive, check_probability
from .covariances import (_as_inputs, _as_labels, _check_chunk, _check_model, _model_dtype,
                          as_torch_generator, loss_gradient, parameter_dim)

__all__ = [
    "LabelNoise", "GaussianNoise", "SymmetricSwapNoise", "FixedLabelNoise", "FreshLabelNoise",
    "label_noise_source", "symmetric_swap_expectation", "swap_expectation_matrix",
    "minibatch_indices", "prop1_covariance_factors", "StepDecomposition", "decompose_step",
]


def _as_label_tensor(y: Any, name: str = "y") -> Tensor:
    try:
        y = torch.as_tensor(y)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"{name} must be a tensor (or array) of labels") from None
    if not torch.is_floating_point(y):
        y = y.to(torch.get_default_dtype())
    return y


class LabelNoise(Protocol):
    """A label-noise model: noisy labels ``y~`` from clean labels ``y``."""

    def draw(self, y: Tensor, seed: Any) -> Tensor: ...
    def mean(self, y: Tensor) -> Tensor: ...
    def covariance(self, y: Tensor) -> Tensor: ...


# --------------------------------------------------------------------------- Gaussian


@dataclass(frozen=True)
class GaussianNoise:
    """Additive Gaussian label noise, Eq. (1) / Sec. 5.2 item 1: ``y~ = y + eps`` with
    ``eps ~ N(0, sigma2 I_L)`` independently per sample and per output dimension."""
    sigma2: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma2", check_nonnegative("sigma2", self.sigma2))

    def draw(self, y: Any, seed: Any) -> Tensor:
        y = _as_label_tensor(y)
        g = as_torch_generator(seed)
        return y + math.sqrt(self.sigma2) * torch.randn(y.shape, generator=g, dtype=y.dtype)

    def mean(self, y: Any) -> Tensor:
        return _as_label_tensor(y).clone()

    def covariance(self, y: Any) -> Tensor:
        """``(N, L, L)`` = ``sigma2 I_L`` per sample (``L = 1`` for labels of shape ``(N,)``)."""
        y = _as_label_tensor(y)
        y2 = y.reshape(y.shape[0], -1)
        eye = torch.eye(y2.shape[1], dtype=y.dtype)
        return (self.sigma2 * eye).expand(y2.shape[0], -1, -1).clone()


# --------------------------------------------------------------------------- symmetric swap


def symmetric_swap_expectation(y: Any, p: float) -> Tensor:
    """The paper's formula (Sec. 5.2): ``E[y~_l] = (1-p) y_l + p sum_{m != l} y_m / (L-1)``
    along the last dimension of ``y`` (``L >= 2``)."""
    p = check_probability("p", p)
    y = _as_label_tensor(y)
    n_dims = _swap_dims(y)
    return (1 - p) * y + p * (y.sum(-1, keepdim=True) - y) / (n_dims - 1)


def _swap_dims(y: Tensor) -> int:
    if y.ndim < 1 or y.shape[-1] < 2:
        raise ValueError("y must have at least 2 label dimensions (last axis) for the "
                         f"symmetric swap noise, got shape {tuple(y.shape)}")
    return int(y.shape[-1])


def _other_dim(shape: tuple[int, ...], l: Tensor | int, n_dims: int,
               g: torch.Generator) -> Tensor:
    """A dimension drawn uniformly from ``{0..L-1} \\ {l}``."""
    r = torch.randint(0, n_dims - 1, shape, generator=g)
    return r + (r >= l).long()


def _random_derangements(n: int, n_dims: int, g: torch.Generator) -> Tensor:
    """``n`` uniform derangements of ``L`` elements by rejection (acceptance ~ 1/e)."""
    ar = torch.arange(n_dims)
    out = torch.empty(n, n_dims, dtype=torch.long)
    todo = torch.arange(n)
    while todo.numel():
        perms = torch.argsort(torch.rand(todo.numel(), n_dims, generator=g), dim=1)
        ok = ~(perms == ar).any(dim=1)
        out[todo[ok]] = perms[ok]
        todo = todo[~ok]
    return out


def swap_expectation_matrix(n_dims: int, p: float, variant: str = "copy") -> Tensor:
    """Exact ``M`` (``L x L``, float64) with ``E[y~] = M y`` for each variant of
    :class:`SymmetricSwapNoise`.

    ``copy`` and ``derangement``: ``M = (1-p) I + p (11^T - I)/(L-1)``, the paper's formula.
    ``literal``: ``M = T_{L-1} ... T_0`` with ``T_l = (1-p) I + p/(L-1) sum_{m != l} P_(l m)``
    (the expected transposition applied at step ``l``; steps are independent, so the
    expectation of the product is the product of expectations).  For ``L = 2`` this is
    ``(1 - 2p(1-p)) I + 2p(1-p) P``: at ``p = 1`` every label is swapped twice and
    ``E[y~] = y``, where the paper's formula gives the swapped vector.
    """
    n_dims = check_int("n_dims", n_dims, minimum=2)
    p = check_probability("p", p)
    variant = check_choice("variant", variant, SymmetricSwapNoise.VARIANTS)
    eye = torch.eye(n_dims, dtype=torch.float64)
    if variant != "literal":
        return (1 - p) * eye + p * (torch.ones_like(eye) - eye) / (n_dims - 1)
    M = eye.clone()
    for l in range(n_dims):
        T = (1 - p) * eye
        for m in range(n_dims):
            if m != l:
                P = eye.clone()
                P[[l, m]] = P[[m, l]]
                T = T + p / (n_dims - 1) * P
        M = T @ M
    return M


@dataclass(frozen=True)
class SymmetricSwapNoise:
    """The "symmetric noise" of Sec. 5.2 on ``L``-dimensional (logit) labels, last axis.

    The paper: "in probability p [the strategy] swaps the logit value in the dimension
    [l] with any other dimension y_{m != l} in equal prior ... In this way
    E[y~_l] = (1-p) y_l + p sum_{m != l} y_m / (L-1)".

    A literal swap also moves ``y_l`` into dimension ``m``, and later dimensions may swap
    again, so per-dimension swap events with probability ``p`` do NOT give that
    expectation (for ``L = 2``, ``E[y~_1] = (1 - 2p(1-p)) y_1 + 2p(1-p) y_2``; see
    :func:`swap_expectation_matrix`).  Variants:

    - ``"copy"`` (default): each dimension ``l`` independently, with probability ``p``,
      takes the ORIGINAL value of a uniformly chosen other dimension ``m != l``
      (one-directional "swap"), else keeps ``y_l``.  Gives the paper's expectation exactly;
      coordinates are independent given ``y``, so :meth:`covariance` is diagonal.
    - ``"derangement"``: with probability ``p`` the whole vector is permuted by a uniform
      derangement (a genuine permutation of the logits; for ``L = 2`` exactly "swap the
      two with probability p").  Also gives the paper's expectation, since a uniform
      derangement sends ``l`` to each ``m != l`` with probability ``1/(L-1)``.
    - ``"literal"``: for ``l = 0..L-1`` in turn, with probability ``p`` swap positions
      ``l`` and a uniform ``m != l``.  Expectation given by
      :func:`swap_expectation_matrix`, not the paper's formula.

    The noise is biased (``E[y~] != y``); as the paper says, treat ``E[y~]`` as the clean
    label: ``eps = y~ - E[y~]`` is then zero-mean and Prop. 1 applies.
    """
    p: float
    variant: str = "copy"
    VARIANTS = ("copy", "derangement", "literal")

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", check_probability("p", self.p))
        check_choice("variant", self.variant, self.VARIANTS)

    def draw(self, y: Any, seed: Any) -> Tensor:
        y = _as_label_tensor(y)
        n_dims = _swap_dims(y)
        g = as_torch_generator(seed)
        if self.variant == "copy":
            flip = torch.rand(y.shape, generator=g, dtype=torch.float64) < self.p
            ar = torch.arange(n_dims).expand(y.shape)
            src = torch.where(flip, _other_dim(y.shape, ar, n_dims, g), ar)
            return torch.gather(y, -1, src)
        lead = y.shape[:-1]
        y2 = y.reshape(-1, n_dims)
        n = y2.shape[0]
        if self.variant == "derangement":
            flip = torch.rand(n, generator=g, dtype=torch.float64) < self.p
            perm = _random_derangements(n, n_dims, g)
            src = torch.where(flip[:, None], perm, torch.arange(n_dims).expand(n, n_dims))
            return torch.gather(y2, 1, src).reshape(*lead, n_dims)
        out = y2.clone()
        rows = torch.arange(n)
        for l in range(n_dims):
            flip = torch.rand(n, generator=g, dtype=torch.float64) < self.p
            m = _other_dim((n,), l, n_dims, g)
            a, b = out[:, l].clone(), out[rows, m].clone()
            out[:, l] = torch.where(flip, b, a)
            out[rows, m] = torch.where(flip, a, b)
        return out.reshape(*lead, n_dims)

    def mean(self, y: Any) -> Tensor:
        """Exact ``E[y~]`` under this variant (the paper's formula unless ``literal``)."""
        y = _as_label_tensor(y)
        M = swap_expectation_matrix(_swap_dims(y), self.p, self.variant).to(y.dtype)
        return y @ M.T

    def covariance(self, y: Any) -> Tensor:
        """Per-sample ``L x L`` covariance of ``y~`` (``variant="copy"`` only): diagonal,
        ``Var y~_l = (1-p) y_l^2 + p sum_{m != l} y_m^2/(L-1) - E[y~_l]^2``."""
        if self.variant != "copy":
            raise NotImplementedError("closed-form covariance only for variant='copy'; "
                                      "estimate it by Monte Carlo with draw()")
        y = _as_label_tensor(y)
        n_dims = _swap_dims(y)
        y2 = y.reshape(-1, n_dims)
        second = (1 - self.p) * y2**2 + self.p * ((y2**2).sum(1, keepdim=True) - y2**2) / (n_dims - 1)
        var = (second - self.mean(y2) ** 2).clamp_min(0)
        return torch.diag_embed(var).reshape(*y.shape[:-1], n_dims, n_dims)


# --------------------------------------------------------------------------- fixed / fresh


def _check_indices(batch_idx: Any, n: int) -> Tensor:
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


class FixedLabelNoise:
    """Noise drawn ONCE per sample index before training (Sec. 6; the paper's case (1)
    below Eq. (1)): ``batch(idx)`` returns the cached ``y~[idx]``, so a sample drawn twice
    (also twice in one with-replacement batch) always carries the same noise."""

    def __init__(self, noise: LabelNoise, y: Any, seed: Any) -> None:
        self.noise = noise
        self.y = _as_label_tensor(y)
        self.y_noisy = noise.draw(self.y, as_torch_generator(seed))

    @property
    def y_clean(self) -> Tensor:
        """``E[y~]``: the labels the noise is unbiased around."""
        return self.noise.mean(self.y)

    def batch(self, batch_idx: Any, seed: Any = None) -> Tensor:
        """Noisy labels of the batch, one row per slot; ``seed`` is ignored (kept for a
        common signature with :class:`FreshLabelNoise`)."""
        return self.y_noisy[_check_indices(batch_idx, self.y.shape[0])]


class FreshLabelNoise:
    """Noise drawn FRESH at every iteration (Sec. 5, noisy self-distillation): each call
    of ``batch(idx, seed)`` draws new noise, independently for every batch slot."""

    def __init__(self, noise: LabelNoise, y: Any) -> None:
        self.noise = noise
        self.y = _as_label_tensor(y)

    @property
    def y_clean(self) -> Tensor:
        return self.noise.mean(self.y)

    def batch(self, batch_idx: Any, seed: Any) -> Tensor:
        return self.noise.draw(self.y[_check_indices(batch_idx, self.y.shape[0])],
                               as_torch_generator(seed))


def label_noise_source(noise: LabelNoise, y: Any, mode: str, seed: Any = None
                       ) -> FixedLabelNoise | FreshLabelNoise:
    """``mode="fixed"`` -> :class:`FixedLabelNoise` (needs ``seed``), ``"fresh"`` ->
    :class:`FreshLabelNoise`."""
    mode = check_choice("mode", mode, ["fixed", "fresh"])
    if mode == "fixed":
        if seed is None:
            raise ValueError("seed is required for mode='fixed' (the one draw before training)")
        return FixedLabelNoise(noise, y, seed)
    return FreshLabelNoise(noise, y)


# --------------------------------------------------------------------------- Prop. 1


def minibatch_indices(n: int, batch_size: int, *, replacement: bool, seed: Any) -> Tensor:
    """Indices of one minibatch ``B_k`` of size ``b``: i.i.d. uniform (with replacement)
    or a uniform ``b``-subset (without replacement)."""
    n = check_int("n", n, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1,
                           maximum=None if replacement else n)
    g = as_torch_generator(seed)
    if replacement:
        return torch.randint(0, n, (batch_size,), generator=g)
    return torch.randperm(n, generator=g)[:batch_size]


def prop1_covariance_factors(n: int, batch_size: int, *, replacement: bool,
                             noise_mode: str) -> tuple[float, float]:
    """Exact factors ``(c_sgd, c_uln)`` such that, over minibatch AND label noise,

        Cov[xi*_k]    = c_sgd * (eta/b) Sigma^SGD_N            (Prop. 1, first line)
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
    gradient, which Eq. (11) keeps out of the drift term.
    """
    n = check_int("n", n, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1,
                           maximum=None if replacement else n)
    noise_mode = check_choice("noise_mode", noise_mode, ["fixed", "fresh"])
    if replacement:
        c_sgd = 1.0
    else:
        c_sgd = 0.0 if n == 1 else (n - batch_size) / (n - 1)
    c_uln = 1.0 + (batch_size - 1) / n if (replacement and noise_mode == "fixed") else 1.0
    return c_sgd, c_uln


@dataclass(frozen=True)
class StepDecomposition:
    """The three terms of Eq. (11) for one minibatch step, as flat ``(d,)`` vectors.

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
        """``xi*_k`` of Eq. (12); ``Cov = c_sgd (eta/b) Sigma^SGD`` (Prop. 1)."""
        return self.sgd_noise / math.sqrt(self.eta)

    @property
    def xi_uln(self) -> Tensor:
        """``xi^ULN_k`` of Eq. (12); ``Cov = c_uln (eta sigma^2 / b) Sigma^ULN`` (Prop. 1)."""
        return self.uln_noise / math.sqrt(self.eta)


def decompose_step(model: nn.Module, X: Any, y_clean: Any, y_noisy: Any, batch_idx: Any,
                   eta: float, *, full_gradient: Tensor | None = None,
                   chunk_size: int = 256) -> StepDecomposition:
    """Split ONE real label-noisy SGD step into the three terms of Eq. (11).

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
    _check_model(model)
    eta = check_positive("eta", eta)
    chunk_size = _check_chunk(chunk_size)
    X = _as_inputs(model, X)
    Y = _as_labels(model, X, y_clean, "y_clean")
    idx = _check_indices(batch_idx, X.shape[0])
    b = idx.numel()
    try:
        Yn = torch.as_tensor(y_noisy)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError("y_noisy must be a tensor (or array) of labels") from None
    expected = tuple(torch.as_tensor(y_clean)[idx].shape)
    if tuple(Yn.shape) != expected:
        raise ValueError(f"y_noisy must hold the noisy labels of the batch, shape {expected} "
                         f"(= y_clean[batch_idx].shape), got {tuple(Yn.shape)}")
    Yn = Yn.reshape(b, -1).to(_model_dtype(model))
    d = parameter_dim(model)
    if full_gradient is None:
        g_full = loss_gradient(model, X, Y, chunk_size=chunk_size)
    else:
        g_full = torch.as_tensor(full_gradient)
        if g_full.shape != (d,):
            raise ValueError(f"full_gradient must be a flat vector of d={d} entries, got "
                             f"shape {tuple(g_full.shape)}")
        g_full = g_full.to(_model_dtype(model))

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
        raise RuntimeError(f"Eq. (11) decomposition does not add up: residual {residual:.3g} "
                           f"at scale {scale:.3g}; is the loss per-sample separable?")
    return StepDecomposition(full_term, sgd_term, uln_term, step, eta, residual)
