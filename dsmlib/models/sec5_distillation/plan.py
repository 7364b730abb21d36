"""An epoch's draws (models layer): every random number of an epoch of Section 5's training,
drawn before its first step -- one :class:`Batch` per step: which images, their crops and flips,
and the label noise of their targets -- so that the step itself draws nothing.

An epoch draws its order and augmentation from ``child_seed(s, DATA, epoch)`` and its label
noise from ``child_seed(s, NOISE, epoch)``, ``s`` the run's stream
(:mod:`dsmlib.models.sec5_distillation.seeds`), in exactly the order a per-step loop would draw
them. A group's plan stacks its lanes' (:func:`plan_lanes`, :func:`plan_group`).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Sequence

import torch
from torch import Tensor

from ...foundation.rng import as_torch_generator, child_seed
from ...theory.label_noise import GaussianNoise, SymmetricSwapNoise
from .datasets import DataSplit, augment_draws
from .recipe import Recipe
from .run_config import Noise
from .seeds import STREAM_DATA, STREAM_NOISE

__all__ = ["Batch", "EpochPlan", "plan_epoch", "plan_lanes", "plan_group"]


@dataclass(frozen=True)
class Batch:
    """One step's batch, as drawn before its epoch: the indices ``idx`` of its ``b`` images,
    their crop offsets ``dy, dx`` and flips (``(b,)``; None without augmentation, or without
    flips), and the label noise's draws ``(b, L)``, shared by every member of a kind: the
    standard normals of Gaussian noise (``gauss``), the swap's uniforms and partners
    (``swap_u``, ``swap_r``; None where no member draws that kind). In an :class:`EpochPlan`
    every field has a first axis of steps."""
    idx: Tensor
    dy: Tensor | None = None
    dx: Tensor | None = None
    flips: Tensor | None = None
    gauss: Tensor | None = None
    swap_u: Tensor | None = None
    swap_r: Tensor | None = None

    def map(self, fn: Callable[[Tensor], Tensor]) -> Batch:
        """The batch with ``fn`` applied to each of its tensors (None stays None)."""
        return Batch(**{f.name: None if getattr(self, f.name) is None else fn(getattr(self, f.name))
                        for f in fields(self)})


@dataclass(frozen=True)
class EpochPlan:
    """An epoch's draws: its steps' batches stacked (each field of ``batches`` is ``(S, ...)``)."""
    batches: Batch

    @property
    def steps(self) -> int:
        return self.batches.idx.shape[0]

    def batch(self, s: int) -> Batch:
        """The batch of step ``s``."""
        return self.batches.map(lambda t: t[s])


def _stack(rows: list) -> Tensor | None:
    return None if rows[0] is None else torch.stack(rows)


def plan_epoch(seed: int, epoch: int, *, n: int, batch_size: int, device: torch.device,
               pad: int, flip: bool, augment: bool, num_classes: int,
               kinds: Sequence[str] = (), dtype: torch.dtype = torch.float32,
               passes: int = 1) -> EpochPlan:
    """Draw epoch ``epoch``'s randomness for a run (or a lockstep group) seeded ``seed``, in
    exactly the order a per-step loop would draw it: ``passes`` shuffled passes over the ``n``
    images, each of ``n - n mod b`` images, in ``S`` batches, their augmentation, and the draws
    of each noise kind in ``kinds`` (each kind from its own copy of the noise stream, as a run
    of that kind alone would draw it)."""
    g = as_torch_generator(child_seed(seed, STREAM_DATA, epoch), device)

    def noise_stream() -> torch.Generator:   # a copy per kind
        return as_torch_generator(child_seed(seed, STREAM_NOISE, epoch), device)
    b = batch_size
    idx = torch.cat([torch.randperm(n, generator=g, device=device)[: n - n % b]
                     for _ in range(passes)]).view(-1, b)
    steps = idx.shape[0]
    dy = dx = flips = gauss = swap_u = swap_r = None
    if augment:
        draws = [augment_draws(b, g, pad=pad, flip=flip) for _ in range(steps)]
        dy, dx, flips = (_stack([d[i] for d in draws]) for i in range(3))
    shape = (b, num_classes)
    if Noise.GAUSSIAN in kinds:
        gen = noise_stream()
        gauss = torch.stack([GaussianNoise(1.0).draws(shape, gen, dtype, device)
                             for _ in range(steps)])
    if Noise.SYMMETRIC in kinds:
        gen, swap = noise_stream(), SymmetricSwapNoise(0.5)
        u, r = zip(*(swap.draws(shape, gen) for _ in range(steps)))
        swap_u, swap_r = torch.stack(u), torch.stack(r)
    return EpochPlan(Batch(idx=idx, dy=dy, dx=dx, flips=flips, gauss=gauss, swap_u=swap_u,
                           swap_r=swap_r))


def plan_lanes(plans: Sequence[EpochPlan]) -> EpochPlan:
    """The epoch plan of a group from each lane's (:func:`plan_epoch`, same shapes): every
    field ``(S, L, ...)``, step by step, lane by lane (one lane's: its plan with a lane axis
    of one)."""
    if len(plans) == 1:
        return EpochPlan(plans[0].batches.map(lambda t: t.unsqueeze(1)))
    first = plans[0].batches
    return EpochPlan(Batch(**{f.name: None if getattr(first, f.name) is None else
                              torch.stack([getattr(p.batches, f.name) for p in plans], dim=1)
                              for f in fields(Batch)}))


def plan_group(streams: Sequence[int], epoch: int, recipe: Recipe, data: DataSplit,
               kinds: Sequence[str], dtype: torch.dtype) -> EpochPlan:
    """Epoch ``epoch``'s plan of a group whose lanes draw from ``streams`` (each lane's,
    :func:`~dsmlib.models.sec5_distillation.seeds.lane_streams`): the recipe's batches, passes
    and augmentation over the training images of ``data`` (one lane's split: every lane's has
    its shapes), and the draws of the members' noise ``kinds``."""
    return plan_lanes([plan_epoch(s, epoch, n=data.X_train.shape[0], batch_size=recipe.batch_size,
                                  device=data.device, pad=data.pad, flip=data.spec.flip,
                                  augment=recipe.augment, num_classes=data.spec.num_classes,
                                  kinds=kinds, dtype=dtype, passes=recipe.passes)
                       for s in streams])
