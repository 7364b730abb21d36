"""Section 5's training loop (models layer): a teacher trained with cross-entropy, or the
students of one teacher, in lockstep, each regressing on the teacher's logits plus its own
noise redrawn at every step -- or several of either, of several seeds, as one group; and what
it measures after every epoch. :func:`train_group` reads in one sitting, as its parts do:

1. **The group**, resolved once (:mod:`~dsmlib.models.sec5_distillation.group`): its runs
   checked, each lane's data, the seeds of its draws, how it runs on its device.
2. **The trainer** (:mod:`~dsmlib.models.sec5_distillation.trainer`): the grouped network at its
   starting point, its teacher, SGD, the step and the epoch; fresh, or kept from another run of
   its shape (:mod:`~dsmlib.models.sec5_distillation.graph`); or continued from checkpoints.
3. **Row 0**: what every row reports besides its measurements, and the measurements before
   training (:mod:`~dsmlib.models.sec5_distillation.measure`; students' logits are their
   teachers' then, computed once).
4. **The epochs** (:func:`train_epoch`): the epoch's draws
   (:mod:`~dsmlib.models.sec5_distillation.plan`), SGD's settings from the recipe
   (:meth:`~dsmlib.models.sec5_distillation.recipe.Recipe.sgd`), every step, then the
   measurements: a row per run.

Words. A *step* is one SGD update on one batch, and nothing else: an epoch has
:attr:`~dsmlib.models.sec5_distillation.plan.EpochPlan.steps` of them. A *member* is one run of
a group (:mod:`~dsmlib.models.sec5_distillation.targets`: what it regresses on). A *lane* is the
members that read the same batches (:mod:`dsmlib.models.sec5_distillation.lockstep`): one
teacher, or the students of one teacher in lockstep; a group of several lanes trains runs of
several seeds at once, each lane on its own data split, batches, crops, noise and teacher, so
each run's numbers are still those of its separate run, up to rounding. Where every random
number comes from: :mod:`dsmlib.models.sec5_distillation.seeds`. The *form* of the step
(``step="eager" | "graph" | "compiled"``, :mod:`dsmlib.models.sec5_distillation.device`) is how
it executes: eagerly, or replayed from a CUDA graph or compiled by
:mod:`dsmlib.models.sec5_distillation.graph`, whose trainers run the same step.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch import nn

from .datasets import DataSplit
from .device import DevicePolicy
from .group import Group
from .measure import Baseline, clock, measure
from .plan import plan_group
from .run_config import RunConfig
from .trainer import Trainer, TrainerSource

__all__ = ["EpochHook", "train_group", "train_epoch", "train"]

# on_epoch(epoch, histories, model, optimizer): the grouped model and its optimizer
EpochHook = Callable[[int, list, nn.Module, torch.optim.Optimizer], None]


def train_group(configs: Sequence[RunConfig], data: DataSplit | Sequence[DataSplit], *,
                teacher: nn.Module | Sequence[nn.Module] | None = None,
                states: Sequence[dict] | None = None, on_epoch: EpochHook | None = None,
                stop_after: int | None = None, progress: bool = False,
                step: str | DevicePolicy = "eager", trainers: TrainerSource | None = None
                ) -> list[list[dict[str, float]]]:
    """Train ``configs`` -- one teacher, students of one teacher, or several lanes of either
    across seeds (:func:`~dsmlib.models.sec5_distillation.lockstep.across_seeds_key`) --
    together; return each run's metrics rows (row 0: before training). ``data``: the split of
    the group's one lane, or each lane's
    (:func:`~dsmlib.models.sec5_distillation.lockstep.lanes_of`).

    ``teacher``: the trained teacher of each lane (students only; used in eval mode for the
    targets). ``states``: one checkpoint per run (``model``, ``optimizer``, ``history``; all at
    the same epoch) to continue from. ``on_epoch(epoch, histories, model, optimizer)`` runs
    after every epoch (checkpoints: :func:`~dsmlib.models.sec5_distillation.lockstep.member_state`
    splits the grouped state). ``stop_after``: at most that many epochs in this call. ``step``:
    the step's form, ``eager`` | ``auto`` | ``graph`` | ``compiled``
    (:func:`dsmlib.models.sec5_distillation.device.device_policy`), or a whole policy.
    ``trainers``: where the trainer comes from (a fresh
    :class:`~dsmlib.models.sec5_distillation.trainer.Trainer` if None); the ``graph`` and
    ``compiled`` steps need :class:`dsmlib.models.sec5_distillation.graph.Trainers`, which keeps
    a trainer, captured or compiled once, for the next run of its shape.
    """
    teachers = [] if teacher is None else [teacher] if isinstance(teacher, nn.Module) else teacher
    group = Group.of(configs, data, step, teachers)
    if trainers is None and group.policy.reusable:
        raise ValueError(f"step={group.policy.step!r} runs on a trainer kept for reuse: pass "
                         "trainers=dsmlib.models.sec5_distillation.graph.Trainers()")
    trainer = Trainer(group, teachers) if trainers is None else trainers.get(group, teachers)
    resumed = None if states is None else trainer.resume(states)
    base = Baseline.of(trainer)
    histories = resumed or [[row] for row in base.before_training(
        measure(trainer, base.targets, 0, logits=base.start_logits(group.lanes)))]
    for epoch in group.epochs(len(histories[0]) - 1, stop_after, progress):
        for history, row in zip(histories, train_epoch(trainer, group, base, epoch)):
            history.append(row)
        if on_epoch is not None:
            on_epoch(epoch + 1, histories, trainer.model, trainer.opt)
    return histories


def train_epoch(trainer: Trainer, group: Group, base: Baseline, epoch: int
                ) -> list[dict[str, Any]]:
    """Train epoch ``epoch`` (from 0) of ``group`` with ``trainer`` at the recipe's settings,
    then measure: each member's row."""
    config = group.config   # the group's recipe, among the fields every run shares
    plan = plan_group(group.streams, epoch, config, group.lanes.first, group.kinds,
                      group.policy.dtype)
    lr = trainer.start_epoch(config, epoch)
    t0 = clock(group.lanes.device)
    total = trainer.epoch(plan)
    train_s = clock(group.lanes.device) - t0
    measured = measure(trainer, base.targets, epoch + 1, config.n_train_eval,
                       whole=epoch + 1 == config.epochs)
    return base.rows(epoch + 1, lr, train_s, [t / plan.steps for t in total.tolist()], measured)


def train(config: RunConfig, data: DataSplit, *, teacher: nn.Module | None = None,
          state: dict[str, Any] | None = None, on_epoch: EpochHook | None = None,
          stop_after: int | None = None, progress: bool = False,
          step: str | DevicePolicy = "eager", trainers: TrainerSource | None = None
          ) -> list[dict[str, float]]:
    """One run: :func:`train_group` with a single member (``on_epoch(epoch, history, model,
    optimizer)`` gets that run's history and its own network)."""
    hook = None if on_epoch is None else (lambda e, hs, m, o: on_epoch(e, hs[0], m, o))
    return train_group([config], data, teacher=teacher,
                       states=None if state is None else [state], on_epoch=hook,
                       stop_after=stop_after, progress=progress, step=step,
                       trainers=trainers)[0]
