"""How many runs train as one group, by measurement (models layer): the device policy's group
size. Runs that differ only in their seed can train as the lanes of one grouped network
(:mod:`dsmlib.models.sec5_distillation.lockstep`); whether that is worth it depends on the device. On a GPU a
ResNet step of one run is launch-bound, and a group of many runs costs little more than one; on
a CPU the work grows with the group and a group may gain nothing over runs trained one after
another (or in parallel processes). So the size is measured where the runs train, on the
shapes they train with:

- **memory** (:func:`member_bytes`, :func:`free_bytes`): what one member holds during a step
  -- the tensors autograd keeps for its backward pass, and its parameters four times over
  (weights, gradients, momentum, the update's temporaries) -- against the device's free memory
  (:data:`MEMORY_SHARE` of it);
- **throughput** (:func:`group_rate`): member-images per second of eager steps of a group of
  ``1, 2, 4, ...`` copies of a lane, each copy another seed (a run's own data would train at
  the same rate; the first pass over the plan warms up, the second is timed).

:func:`choose_members` keeps the smallest group unless a larger one trains faster by at least
:data:`GAIN` (below it the difference is within a shared machine's timing noise, and a larger
group only coarsens how runs are dealt to workers). :func:`group_size` does both for one lane's
runs. Grouping changes no number beyond rounding (a member's numbers are its separate run's,
``tests/models/test_lockstep.py``), so the choice is an execution option, never part of a
run's configuration.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

import torch

from .datasets import DataSplit, load_dataset
from .device import DevicePolicy, device_policy
from .lockstep import across_seeds_key, lockstep_key
from .group import Group
from .nets import teacher_model
from .plan import EpochPlan, plan_group
from .run_config import RunConfig
from .trainer import Trainer

__all__ = ["GAIN", "MEMORY_SHARE", "GroupSize", "choose_members", "seed_copies",
           "trial_group", "member_bytes", "free_bytes", "group_rate", "group_size",
           "lanes_by_kind", "measured_members"]

#: A larger group must train this much faster (member-images per second) than the one chosen.
GAIN = 1.15
#: The share of the device's free memory a group may fill.
MEMORY_SHARE = 0.8


@dataclass(frozen=True)
class GroupSize:
    """The measured choice: ``members``, the most runs a group holds; the measured ``rates``
    (member-images per second by group size, in members); the members memory holds
    (``fits``), from ``member_bytes`` each."""
    members: int
    rates: dict[int, float]
    fits: int
    member_bytes: int


def choose_members(rates: Mapping[int, float], fits: int, gain: float = GAIN) -> int:
    """The group size to train with, from measured ``rates`` (group size in members ->
    member-images per second): of the sizes memory holds (``<= fits``; the smallest measured
    one always), the largest that trains at least ``gain`` times faster than every smaller
    size chosen before it."""
    if not rates:
        raise ValueError("rates must hold at least one measured group size")
    sizes = sorted(s for s in rates if s <= fits) or [min(rates)]
    best = sizes[0]
    for s in sizes[1:]:
        if rates[s] >= gain * rates[best]:
            best = s
    return best


def seed_copies(lane: Sequence[RunConfig], copies: int) -> list[RunConfig]:
    """``copies`` lanes of the runs of ``lane``, the ``i``-th with every seed (a student's
    teacher's too) shifted by ``i``: the runs of a group of that many seeds."""
    out = []
    for i in range(copies):
        for c in lane:
            teacher = None if c.teacher is None else replace(c.teacher, seed=c.teacher.seed + i)
            out.append(replace(c, seed=c.seed + i, teacher=teacher))
    return out


def trial_group(lane: Sequence[RunConfig], data: DataSplit, policy: DevicePolicy,
                copies: int) -> tuple[Trainer, EpochPlan]:
    """An eager trainer of ``copies`` seeds of ``lane`` (an untrained teacher for students:
    the rate is the same) on ``data``, and its first epoch's plan."""
    configs, c = seed_copies(lane, copies), lane[0]
    teachers = [] if c.teacher is None else [teacher_model(c.teacher, 1, policy, data)] * copies
    group = Group.of(configs, [data] * copies, policy)
    plan = plan_group(group.streams, 0, c, data, group.kinds, policy.dtype)
    return Trainer(group, teachers), plan


def member_bytes(trainer: Trainer, plan: EpochPlan) -> int:
    """The memory one member of ``trainer``'s group holds during a step of ``plan``'s first
    batch: the tensors autograd saves for the backward pass, and the parameters four times
    over (weights, gradients, momentum, the update's temporaries), per member."""
    saved = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal saved
        saved += t.numel() * t.element_size()
        return t
    trainer.model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        trainer.losses(plan.batch(0))
    params = sum(p.numel() * p.element_size() for p in trainer.model.parameters())
    return (saved + 4 * params) // len(trainer.members)


def free_bytes(device: torch.device) -> int:
    """The device's free memory: CUDA's, or the machine's available memory for the CPU."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def group_rate(trainer: Trainer, plan: EpochPlan, steps: int, repeats: int = 2) -> float:
    """Member-images per second of ``trainer``'s eager steps on the first ``steps`` batches of
    ``plan``, the best of ``repeats`` timed passes after one that warms up."""
    steps = min(steps, plan.steps)
    part = EpochPlan(plan.batches.map(lambda t: t[:steps]))
    trainer.model.train()
    device = trainer.X.device
    best = float("inf")
    for i in range(repeats + 1):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        trainer.epoch(part).tolist()          # reads the losses back: the steps are done
        if i:
            best = min(best, time.perf_counter() - t0)
    return len(trainer.members) * part.batches.idx.shape[-1] * steps / best


def group_size(lane: Sequence[RunConfig], data: DataSplit, policy: DevicePolicy,
               max_copies: int, *, steps: int = 4, gain: float = GAIN) -> GroupSize:
    """How many runs of ``lane``'s kind (a teacher, or one teacher's students) a group should
    hold, at most ``max_copies`` lanes: memory and throughput measured on ``data`` with
    ``policy`` (eager steps; :func:`choose_members`), doubling the lanes while each doubling
    gains at least ``gain``."""
    policy = replace(policy, step="eager")
    trainer, plan = trial_group(lane, data, policy, 1)
    each = member_bytes(trainer, plan)
    fits = max(len(lane), int(MEMORY_SHARE * free_bytes(data.device) // max(each, 1)))
    rates = {len(lane): group_rate(trainer, plan, steps)}
    copies = 1
    while copies < max_copies and min(2 * copies, max_copies) * len(lane) <= fits:
        copies = min(2 * copies, max_copies)
        trainer, plan = trial_group(lane, data, policy, copies)
        rates[copies * len(lane)] = group_rate(trainer, plan, steps)
        if choose_members(rates, fits, gain) != copies * len(lane):
            break
    return GroupSize(choose_members(rates, fits, gain), rates, fits, each)


def lanes_by_kind(configs: Sequence[RunConfig]) -> dict[str, list[list[RunConfig]]]:
    """``configs``' lanes (:func:`~dsmlib.models.sec5_distillation.lockstep.lockstep_key`) by the key of the runs
    they can be grouped with (:func:`~dsmlib.models.sec5_distillation.lockstep.across_seeds_key`)."""
    lanes: dict[str, list[RunConfig]] = {}
    for c in configs:
        lanes.setdefault(lockstep_key(c), []).append(c)
    kinds: dict[str, list[list[RunConfig]]] = {}
    for lane in lanes.values():
        kinds.setdefault(across_seeds_key(lane[0]), []).append(lane)
    return kinds


def measured_members(configs: Sequence[RunConfig], *, device: torch.device,
                     data_dir: str | Path = "data", step: str = "auto") -> dict[str, GroupSize]:
    """For each kind of runs in ``configs`` with lanes of several seeds
    (:func:`lanes_by_kind`), the measured :class:`GroupSize` (:func:`group_size`, at most as
    many lanes as there are), keyed by :func:`~dsmlib.models.sec5_distillation.lockstep.across_seeds_key`: what
    :func:`dsmlib.models.sec5_distillation.runs.lockstep_groups` takes as ``members``. Run it with the threads
    the runs will train with."""
    out = {}
    for key, lanes in lanes_by_kind(configs).items():
        if len(lanes) < 2:
            continue
        c = lanes[0][0]
        data = load_dataset(c.dataset, data_dir=data_dir, device=device, **c.data_options())
        policy = device_policy(c.precision, device, step)
        out[key] = group_size(max(lanes, key=len), data, policy, len(lanes))
    return out
