"""What a group trains with, and its step and epoch (models layer).

A *group* -- one teacher, the students of one teacher in lockstep, or several lanes of either
across seeds (:mod:`dsmlib.models.sec5_distillation.lockstep`) -- trains as the ``K`` members of
one grouped network: one forward and backward pass per batch, the teacher's forward pass
computed once for all of them. Member ``k`` keeps its own target and loss
(:mod:`dsmlib.models.sec5_distillation.targets`); the sum of the ``K`` losses is minimised, and
member ``k``'s parameters see only loss ``k``'s gradient, so each member's numbers are those of
its separate run, up to rounding.

- **The step** (:meth:`Trainer.step`): one step of SGD on one batch of the epoch's plan
  (:mod:`dsmlib.models.sec5_distillation.plan`) -- the batch's images, cropped and flipped; the
  teacher's logits and each member's noisy target; each member's loss
  (:meth:`Trainer.losses`); one ``.backward()`` for all; SGD's update. It draws nothing and
  reads nothing back to the host, so it can be captured as a CUDA graph
  (:mod:`dsmlib.models.sec5_distillation.graph`, whose trainers run this step as it is).
- **The epoch** (:meth:`Trainer.epoch`): every step of the plan, summing the members' losses,
  at the settings of SGD that :meth:`Trainer.start_epoch` set from the recipe.
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .datasets import apply_augment
from .gradnorm import GradNormMeter
from .group import Group
from .lockstep import stack_optimizer_states, stack_states
from .nets import build_model, group_teacher, start_state
from .plan import Batch, EpochPlan
from .recipe import Recipe
from .targets import member_losses, member_noise, member_targets

__all__ = ["Trainer", "TrainerSource"]


class Trainer:
    """What a group trains with: the grouped network of its ``K`` members at its starting
    point (:func:`~dsmlib.models.sec5_distillation.nets.start_state`: each student its
    teacher's weights, each teacher its own initialisation), the network its targets come from
    (:meth:`teacher_of`: the lanes' ``teachers`` as one, in eval mode), SGD, every lane's
    training images and the ``G`` meter; and its step and its epoch.

    ``drop_grads``: each step sets the gradients to None before its backward pass instead of
    zeroing them in place (a form of the step may need either:
    :class:`dsmlib.models.sec5_distillation.graph.ReusableTrainer`)."""

    drop_grads = False

    def __init__(self, group: Group, teachers: Sequence[nn.Module] = ()) -> None:
        c, k_all, lanes = group.config, len(group.configs), group.lanes
        self.policy, self.members, self.lanes = group.policy, group.members, lanes
        self.teacher = self.teacher_of(group, teachers)
        self.noises = tuple(member_noise(m) for m in self.members)
        self.X, self.y = lanes.training_images()
        self.rows = torch.arange(lanes.count, device=self.X.device)[:, None]
        self.pad, self.augment = lanes.first.pad, c.augment
        self.model = build_model(c, lanes.first, k_all, self.policy, lanes.member_lanes)
        if teachers or k_all > 1:   # one teacher's is the network's own
            self.model.load_state_dict(start_state(group.configs, lanes, self.policy, teachers))
        self.opt = c.optimizer(self.model.parameters())
        self.gradnorm = GradNormMeter(self.model, lanes.subsample(c.n_gradnorm), k_all,
                                      seed=group.probe_seeds, n_probes=c.gradnorm_probes,
                                      chunk_size=self.policy.gradnorm_chunk,
                                      lanes=lanes.member_lanes)

    def teacher_of(self, group: Group, teachers: Sequence[nn.Module]) -> nn.Module | None:
        """The network the members' targets come from: the lanes' ``teachers`` as one
        (:func:`~dsmlib.models.sec5_distillation.nets.group_teacher`); None for teachers."""
        if not teachers:
            return None
        return group_teacher(group.config.teacher, teachers, group.policy, group.lanes.first)

    def inputs(self, batch: Batch) -> Tensor:
        """The batch's images (every field of ``batch`` with a lane axis first), cropped and
        flipped: one lane's ``(b, C, H, W)``, several lanes' ``(b, L, C, H, W)``."""
        n_lanes, b = batch.idx.shape
        x = self.X[self.rows, batch.idx].to(self.policy.dtype).flatten(0, 1)
        if self.augment:
            x = apply_augment(x, *(None if v is None else v.flatten()
                                   for v in (batch.dy, batch.dx, batch.flips)), pad=self.pad)
        if n_lanes > 1:
            return x.view(n_lanes, b, *x.shape[1:]).transpose(0, 1)
        return x.contiguous(memory_format=torch.channels_last) if self.policy.channels_last else x

    def losses(self, batch: Batch) -> Tensor:
        """The members' losses on ``batch`` (every field with a lane axis first), ``(K,)``: its
        images, cropped and flipped; the teacher's logits and each member's noisy target; each
        member's loss (a teacher's: cross-entropy on the labels). Draws nothing and reads
        nothing back to the host."""
        dtype, lanes = self.policy.dtype, self.lanes.member_lanes
        x = self.inputs(batch)
        b, k_all = x.shape[0], len(self.members)
        # no autocast weight cache: a captured step must not keep casts from its capture
        with torch.autocast(x.device.type, torch.bfloat16, enabled=self.policy.amp,
                            cache_enabled=False):
            out = self.model(x).to(dtype)
            if self.teacher is None:
                y = self.y[self.rows, batch.idx]
                if lanes is None:
                    return F.cross_entropy(out.view(b, -1), y[0]).reshape(1)
                return F.cross_entropy(out.permute(0, 2, 1), y.t(), reduction="none").mean(0)
            with torch.no_grad():
                t = self.teacher(x).to(dtype)
        draws = batch if lanes is not None else batch.map(lambda v: v[0])
        target = member_targets(t, self.members, draws, self.noises, lanes)
        labels = self.y[self.rows, batch.idx]
        return member_losses(out.view(b, k_all, -1), t, target, self.members, lanes,
                             labels[0] if lanes is None else labels.t())

    def step(self, batch: Batch) -> Tensor:
        """One step of SGD on ``batch``: the losses, one backward pass for all members, the
        update. Returns the members' losses (detached)."""
        losses = self.losses(batch)
        self.opt.zero_grad(set_to_none=self.drop_grads)
        losses.sum().backward()
        self.opt.step()
        return losses.detach()

    def start_epoch(self, recipe: Recipe, epoch: int) -> float:
        """Set SGD's settings to ``recipe``'s in epoch ``epoch`` (from 0; :meth:`Recipe.sgd`,
        the one place where a recipe reaches the optimizer, on a fresh trainer as on one kept
        from another run) and the network to train mode; returns the learning rate."""
        settings = recipe.sgd(epoch)
        for group in self.opt.param_groups:
            group.update(settings)
        self.model.train()
        return settings["lr"]

    def epoch(self, plan: EpochPlan) -> Tensor:
        """Every step of ``plan`` at the optimizer's current settings; the members' summed
        training losses (on the device: no host synchronisation until the epoch's end)."""
        total = torch.zeros(len(self.members), dtype=self.policy.dtype, device=self.X.device)
        for s in range(plan.steps):
            total += self.step(plan.batch(s))
        return total

    def resume(self, states: Sequence[dict]) -> list[list[dict]]:
        """Continue from each member's checkpoint (``model``, ``optimizer``, ``history``; all at
        the same epoch); returns their histories so far."""
        self.model.load_state_dict(stack_states([s["model"] for s in states]))
        self.load_optimizer(stack_optimizer_states([s["optimizer"] for s in states]))
        return [list(s["history"]) for s in states]

    def load_optimizer(self, state_dict: dict[str, Any]) -> None:
        """Continue from a saved SGD state (a resumed run)."""
        self.opt.load_state_dict(state_dict)


class TrainerSource(Protocol):
    """Where :func:`~dsmlib.models.sec5_distillation.loop.train_group` gets its
    :class:`Trainer` for a step form other than eager
    (:class:`dsmlib.models.sec5_distillation.graph.Trainers`)."""

    def get(self, group: Group, teachers: Sequence[nn.Module]) -> Trainer: ...
