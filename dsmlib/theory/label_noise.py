"""Label-noise models (theory): Gaussian and symmetric-swap noise.

Noise models (Sec. 5.2).  Each has ``draw(y, seed)`` -> noisy labels, ``mean(y)`` ->
``E[y~]`` and (where it has a closed form) ``covariance(y)`` -> per-sample ``L x L``
covariance of ``y~``:

- :class:`GaussianNoise` -- ``y~ = y + eps``, ``eps ~ N(0, sigma2 I_L)`` (per output dim).
- :class:`SymmetricSwapNoise` -- the "symmetric noise" of Sec. 5.2, see its docstring for
  why the literal "swap" description cannot have the paper's expectation and which
  variants do.

Each model is used either drawn ONCE before training (:class:`FixedLabelNoise`, the setting of
Sec. 6 and of the paper's Prop. 1 with noise "drawn before training steps") or FRESH at every
iteration (:class:`FreshLabelNoise`, the self-distillation setting of Sec. 5). Both expose
``batch(batch_idx, seed)`` returning the noisy labels of one minibatch (one row per batch
slot).

Every model also has ``residuals(y, seed)`` -> ``y~ - E[y~]``, the zero-mean label noise
``eps`` of Eq. (1) that enters ``xi^ULN`` (Eq. 13). Draws happen on ``y``'s device, from a
generator created there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor

from ..foundation.checks import check_choice, check_int, check_nonnegative, check_probability
from ..foundation.rng import as_torch_generator
from .minibatch import check_indices

__all__ = [
    "LabelNoise", "GaussianNoise", "SymmetricSwapNoise", "as_label_tensor",
    "symmetric_swap_expectation", "swap_expectation_matrix",
    "FixedLabelNoise", "FreshLabelNoise", "label_noise_source",
]


def as_label_tensor(y: Any, name: str = "y") -> Tensor:
    """``y`` as a floating-point tensor (ValueError naming ``name`` when it is not labels)."""
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
    def residuals(self, y: Tensor, seed: Any) -> Tensor: ...
    def mean(self, y: Tensor) -> Tensor: ...
    def covariance(self, y: Tensor) -> Tensor: ...


@dataclass(frozen=True)
class GaussianNoise:
    """Additive Gaussian label noise, Eq. (1) / Sec. 5.2 item 1: ``y~ = y + eps`` with
    ``eps ~ N(0, sigma2 I_L)`` independently per sample and per output dimension."""
    sigma2: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma2", check_nonnegative("sigma2", self.sigma2))

    def draw(self, y: Any, seed: Any) -> Tensor:
        y = as_label_tensor(y)
        return y + self.residuals(y, seed)

    def residuals(self, y: Any, seed: Any) -> Tensor:
        """The zero-mean noise ``eps = y~ - y`` itself, with the stream :meth:`draw` uses."""
        y = as_label_tensor(y)
        return self.apply(torch.zeros_like(y), self.draws(y.shape, seed, y.dtype, y.device))

    def draws(self, shape: tuple[int, ...], seed: Any, dtype: torch.dtype,
              device: Any) -> Tensor:
        """The random numbers :meth:`draw` consumes (standard normals), drawn ahead of time;
        ``apply(y, draws(y.shape, g, ...))`` equals ``draw(y, g)``."""
        g = as_torch_generator(seed, device)
        return torch.randn(shape, generator=g, dtype=dtype, device=g.device)

    def apply(self, y: Tensor, z: Tensor) -> Tensor:
        """``y + sigma z``: no random numbers drawn (safe inside a captured CUDA graph)."""
        return y + math.sqrt(self.sigma2) * z

    def mean(self, y: Any) -> Tensor:
        return as_label_tensor(y).clone()

    def covariance(self, y: Any) -> Tensor:
        """``(N, L, L)`` = ``sigma2 I_L`` per sample (``L = 1`` for labels of shape ``(N,)``)."""
        y = as_label_tensor(y)
        y2 = y.reshape(y.shape[0], -1)
        eye = torch.eye(y2.shape[1], dtype=y.dtype, device=y.device)
        return (self.sigma2 * eye).expand(y2.shape[0], -1, -1).clone()


def symmetric_swap_expectation(y: Any, p: float) -> Tensor:
    """The paper's formula (Sec. 5.2): ``E[y~_l] = (1-p) y_l + p sum_{m != l} y_m / (L-1)``
    along the last dimension of ``y`` (``L >= 2``)."""
    y = as_label_tensor(y)
    _swap_dims(y)
    return SymmetricSwapNoise(p).apply_mean(y)


def _swap_dims(y: Tensor) -> int:
    if y.ndim < 1 or y.shape[-1] < 2:
        raise ValueError("y must have at least 2 label dimensions (last axis) for the "
                         f"symmetric swap noise, got shape {tuple(y.shape)}")
    return int(y.shape[-1])


def _other_dim(shape: tuple[int, ...], l: Tensor | int, n_dims: int,
               g: torch.Generator) -> Tensor:
    """A dimension drawn uniformly from ``{0..L-1} \\ {l}``."""
    r = torch.randint(0, n_dims - 1, shape, generator=g, device=g.device)
    return r + (r >= l).long()


def _random_derangements(n: int, n_dims: int, g: torch.Generator) -> Tensor:
    """``n`` uniform derangements of ``L`` elements by rejection (acceptance ~ 1/e)."""
    ar = torch.arange(n_dims, device=g.device)
    out = torch.empty(n, n_dims, dtype=torch.long, device=g.device)
    todo = torch.arange(n, device=g.device)
    while todo.numel():
        perms = torch.argsort(torch.rand(todo.numel(), n_dims, generator=g, device=g.device), dim=1)
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
        """Noisy labels: each label vector (last axis) swapped as :attr:`variant` says."""
        y = as_label_tensor(y)
        n_dims = _swap_dims(y)
        g = as_torch_generator(seed, y.device)
        dev = y.device
        if self.variant == "copy":
            return self.apply(y, self.draws(y.shape, g, y.dtype, dev))
        lead = y.shape[:-1]
        y2 = y.reshape(-1, n_dims)
        n = y2.shape[0]
        if self.variant == "derangement":
            flip = torch.rand(n, generator=g, dtype=torch.float64, device=dev) < self.p
            perm = _random_derangements(n, n_dims, g)
            src = torch.where(flip[:, None], perm, torch.arange(n_dims, device=dev).expand(n, n_dims))
            return torch.gather(y2, 1, src).reshape(*lead, n_dims)
        out = y2.clone()
        rows = torch.arange(n, device=dev)
        for l in range(n_dims):
            flip = torch.rand(n, generator=g, dtype=torch.float64, device=dev) < self.p
            m = _other_dim((n,), l, n_dims, g)
            a, b = out[:, l].clone(), out[rows, m].clone()
            out[:, l] = torch.where(flip, b, a)
            out[rows, m] = torch.where(flip, a, b)
        return out.reshape(*lead, n_dims)

    def draws(self, shape: tuple[int, ...], seed: Any, dtype: torch.dtype = torch.float64,
              device: Any = None) -> tuple[Tensor, Tensor]:
        """``variant="copy"``: the uniforms ``u`` (swap where ``u < p``) and the raw draws
        ``r`` of the other dimension that :meth:`draw` consumes, drawn ahead of time. Shared
        by every ``p`` (common random numbers); ``dtype`` is unused (``u`` is float64)."""
        if self.variant != "copy":
            raise ValueError("draws/apply exist for variant='copy' only")
        g = as_torch_generator(seed, device)
        u = torch.rand(shape, generator=g, dtype=torch.float64, device=g.device)
        return u, torch.randint(0, shape[-1] - 1, shape, generator=g, device=g.device)

    def apply(self, y: Tensor, draws: tuple[Tensor, Tensor]) -> Tensor:
        """The copy-swapped labels from :meth:`draws`: no random numbers drawn."""
        u, r = draws
        ar = torch.arange(y.shape[-1], device=y.device).expand(y.shape)
        return torch.gather(y, -1, torch.where(u < self.p, r + (r >= ar).long(), ar))

    def apply_mean(self, y: Tensor) -> Tensor:
        """The paper's ``E[y~]`` (``copy`` and ``derangement``) without checks, for a step."""
        return (1 - self.p) * y + self.p * (y.sum(-1, keepdim=True) - y) / (y.shape[-1] - 1)

    def residuals(self, y: Any, seed: Any) -> Tensor:
        """``eps = y~ - E[y~]``: the zero-mean noise around the new soft label (Sec. 5.2)."""
        y = as_label_tensor(y)
        return self.draw(y, seed) - self.mean(y)

    def mean(self, y: Any) -> Tensor:
        """Exact ``E[y~]`` under this variant (the paper's formula unless ``literal``)."""
        y = as_label_tensor(y)
        M = swap_expectation_matrix(_swap_dims(y), self.p, self.variant).to(device=y.device, dtype=y.dtype)
        return y @ M.T

    def covariance(self, y: Any) -> Tensor:
        """Per-sample ``L x L`` covariance of ``y~`` (``variant="copy"`` only): diagonal,
        ``Var y~_l = (1-p) y_l^2 + p sum_{m != l} y_m^2/(L-1) - E[y~_l]^2``."""
        if self.variant != "copy":
            raise NotImplementedError("closed-form covariance only for variant='copy'; "
                                      "estimate it by Monte Carlo with draw()")
        y = as_label_tensor(y)
        n_dims = _swap_dims(y)
        y2 = y.reshape(-1, n_dims)
        second = (1 - self.p) * y2**2 + self.p * ((y2**2).sum(1, keepdim=True) - y2**2) / (n_dims - 1)
        var = (second - self.mean(y2) ** 2).clamp_min(0)
        return torch.diag_embed(var).reshape(*y.shape[:-1], n_dims, n_dims)


# How a noise model meets the training loop: drawn once, or fresh at every iteration.
class FixedLabelNoise:
    """Noise drawn ONCE per sample index before training (Sec. 6; the paper's case (1)
    below Eq. (1)): ``batch(idx)`` returns the cached ``y~[idx]``, so a sample drawn twice
    (also twice in one with-replacement batch) always carries the same noise."""

    def __init__(self, noise: LabelNoise, y: Any, seed: Any) -> None:
        self.noise = noise
        self.y = as_label_tensor(y)
        self.y_noisy = noise.draw(self.y, seed)

    @property
    def y_clean(self) -> Tensor:
        """``E[y~]``: the labels the noise is unbiased around."""
        return self.noise.mean(self.y)

    def batch(self, batch_idx: Any, seed: Any = None) -> Tensor:
        """Noisy labels of the batch, one row per slot; ``seed`` is ignored (kept for a
        common signature with :class:`FreshLabelNoise`)."""
        return self.y_noisy[check_indices(batch_idx, self.y.shape[0]).to(self.y.device)]


class FreshLabelNoise:
    """Noise drawn FRESH at every iteration (Sec. 5, noisy self-distillation): each call
    of ``batch(idx, seed)`` draws new noise, independently for every batch slot."""

    def __init__(self, noise: LabelNoise, y: Any) -> None:
        self.noise = noise
        self.y = as_label_tensor(y)

    @property
    def y_clean(self) -> Tensor:
        return self.noise.mean(self.y)

    def batch(self, batch_idx: Any, seed: Any) -> Tensor:
        idx = check_indices(batch_idx, self.y.shape[0]).to(self.y.device)
        return self.noise.draw(self.y[idx], seed)


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
