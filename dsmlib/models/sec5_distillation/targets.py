"""What each member of a group regresses on, and its loss (models layer). A *member* is one run
of a group (:mod:`dsmlib.models.sec5_distillation.lockstep`): a teacher, or a student of one of
the noise kinds of :class:`~dsmlib.models.sec5_distillation.run_config.Noise` at its level.

A student's target is its teacher's logits plus its own label noise, redrawn at every step from
the step's planned draws (:class:`~dsmlib.models.sec5_distillation.plan.Batch`): ``t + sigma z``
(Gaussian, Sec. 5.2), ``t`` copy-swapped where ``u < p`` (symmetric), or the swap's mean
``M_p t`` (Eq. 24; the swap's noiseless control). Its loss is the quadratic loss per logit,
Hinton et al.'s softened cross-entropy, or, for the continued teacher, the cross-entropy on the
labels. What its losses are measured against after an epoch is the noise's mean ``E[y~]``
(:func:`mean_members`), and the noise's size is stated in the teacher's logit units
(:func:`logit_variance`, :func:`noise_variance`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from ...theory.label_noise import GaussianNoise, SymmetricSwapNoise
from .plan import Batch
from .run_config import Noise, RunConfig

__all__ = ["NOISE_MODELS", "Member", "members_of", "member_noise", "member_targets",
           "mean_members", "hinton_loss", "member_losses", "logit_variance", "noise_variance"]

# the noise model of each kind that has one (the control uses only its mean)
NOISE_MODELS = {Noise.GAUSSIAN: GaussianNoise, Noise.SYMMETRIC: SymmetricSwapNoise,
                Noise.CONTROL: SymmetricSwapNoise}


@dataclass(frozen=True)
class Member:
    """One member of a lockstep group: its noise kind and level
    (:class:`~dsmlib.models.sec5_distillation.run_config.Noise`; a teacher: ``"teacher"``)."""
    kind: str
    level: float = 0.0


def members_of(configs: Sequence[RunConfig]) -> tuple[Member, ...]:
    """The members of a group of runs, in order."""
    return tuple(Member("teacher") if c.role == "teacher" else Member(c.noise, c.level)
                 for c in configs)


def member_noise(m: Member) -> GaussianNoise | SymmetricSwapNoise | None:
    """The noise model of a member's targets (None: it draws nothing), the swap in its
    ``"copy"`` variant (the one with the paper's ``E[y~]``)."""
    model = NOISE_MODELS.get(m.kind)
    return None if model is None else model(m.level)


def _target(m: Member, noise: GaussianNoise | SymmetricSwapNoise | None, t: Tensor,
            batch: Batch | None) -> Tensor:
    if m.kind == Noise.GAUSSIAN:
        return noise.apply(t, batch.gauss)
    if m.kind == Noise.SYMMETRIC:
        return noise.apply(t, (batch.swap_u, batch.swap_r))
    if m.kind == Noise.CONTROL:
        return noise.apply_mean(t)
    return t


def member_targets(t: Tensor, members: Sequence[Member], batch: Batch | None = None,
                   noises: Sequence[GaussianNoise | SymmetricSwapNoise | None] | None = None,
                   lanes: Sequence[int] | None = None) -> Tensor:
    """``(b, K, L)`` regression targets from the teacher's logits ``t`` (b, L) and the
    ``batch``'s noise draws: the logits (noiseless, and a Hinton student's), plus ``sigma z``
    (Gaussian, Sec. 5.2), copy-swapped where ``u < p`` (symmetric), or the swap's mean
    ``M_p t`` (Eq. 24; the swap's noiseless control). Without a batch, only members that draw
    nothing. ``noises``: the members' :func:`member_noise`, if built already. ``lanes`` (a
    group of several lanes): member ``k``'s lane; ``t`` is then ``(b, lanes, L)`` and the
    batch's draws have a lane axis first, and member ``k`` reads lane ``lanes[k]``'s."""
    out = []
    for k, (m, noise) in enumerate(zip(members, noises or [member_noise(m) for m in members])):
        if lanes is None:
            out.append(_target(m, noise, t, batch))
            continue
        lane = lanes[k]
        mine = None if batch is None else batch.map(lambda v: v[lane])
        out.append(_target(m, noise, t[:, lane], mine))
    return torch.stack(out, dim=1)


def mean_members(members: Sequence[Member]) -> list[Member]:
    """Each member's noiseless target ``E[y~]`` as a member drawing nothing: the swap's mean
    ``M_p t`` (its control's) for the swap, the teacher's logits for the others."""
    return [Member(Noise.CONTROL, m.level) if m.kind in (Noise.SYMMETRIC, Noise.CONTROL) else
            Member(Noise.NONE) for m in members]


def hinton_loss(out: Tensor, t: Tensor, temperature: float) -> Tensor:
    """Hinton et al. (2015)'s soft-target loss of logits ``out`` (b, L) against the teacher's
    ``t``: ``T^2 KL(softmax(t/T) || softmax(out/T))``, the cross-entropy between the softened
    softmaxes less the teacher's entropy (which has no gradient), averaged over the batch; the
    factor ``T^2`` keeps its gradients' size as ``T`` changes (their Sec. 2)."""
    log_q = F.log_softmax(out / temperature, dim=-1)
    log_p = F.log_softmax(t / temperature, dim=-1)
    return temperature ** 2 * (log_p.exp() * (log_p - log_q)).sum(-1).mean()


def member_losses(out: Tensor, t: Tensor, target: Tensor, members: Sequence[Member],
                  lanes: Sequence[int] | None = None, labels: Tensor | None = None) -> Tensor:
    """The ``K`` members' losses from their logits ``out`` (b, K, L), the teacher's ``t``
    (b, L; with ``lanes``, each member's lane, ``(b, lanes, L)``) and the regression targets
    ``target`` (b, K, L): the quadratic loss per logit, ``mean_l (f_l - y~_l)^2`` (PyTorch's
    ``MSELoss``: ``2/L`` times the gradient of Eq. 13's ``1/2 ||f - y~||^2``),
    :func:`hinton_loss` for a Hinton student, or the cross-entropy on the batch's ``labels``
    ((b,); with ``lanes``, ``(b, lanes)``) for the continued teacher."""
    mse = (out - target).pow(2).mean(dim=(0, 2))
    if not any(m.kind in (Noise.HINTON, Noise.CONTINUED) for m in members):
        return mse

    def own(k: int, m: Member) -> Tensor:
        if m.kind == Noise.HINTON:
            return hinton_loss(out[:, k], t if lanes is None else t[:, lanes[k]], m.level)
        if m.kind == Noise.CONTINUED:
            if labels is None:
                raise ValueError("the continued teacher's loss needs the batch's labels")
            return F.cross_entropy(out[:, k], labels if lanes is None else labels[:, lanes[k]])
        return mse[k]
    return torch.stack([own(k, m) for k, m in enumerate(members)])


def logit_variance(t: Tensor) -> float:
    """The teacher's logit scale: the variance of each logit vector ``t_i`` (N, L) about its own
    mean, ``(1/L) sum_l (t_il - mean_l t_il)^2``, averaged over the images. Label noise is
    stated in these units beside ``sigma^2`` and ``p`` (:func:`noise_variance`)."""
    return float(t.double().var(dim=-1, unbiased=False).mean())


def noise_variance(member: Member, t: Tensor) -> float:
    """The variance per logit of a member's label noise around its mean target, averaged over
    the teacher's logits ``t`` (N, L): ``sigma^2`` for Gaussian noise, the swap's
    ``(1/L) tr Cov(y~_i)`` (its closed form, which depends on the logits) for the symmetric
    swap, 0 for a member that draws no noise."""
    if member.kind == Noise.GAUSSIAN:
        return float(member.level)
    if member.kind == Noise.SYMMETRIC:
        cov = member_noise(member).covariance(t.double())
        return float(cov.diagonal(dim1=-2, dim2=-1).mean())
    return 0.0
