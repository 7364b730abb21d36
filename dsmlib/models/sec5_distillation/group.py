"""A group of runs that train together, resolved once (models layer): its runs, what each
member regresses on, each lane's data, the seeds of each lane's draws, and how the group runs on
its device.

A group is one teacher, the students of one teacher in lockstep, or several lanes of either
across seeds (:mod:`dsmlib.models.sec5_distillation.lockstep`): runs that differ only in their
seed, student stream, noise and level, so they share every other field -- the recipe among
them (:attr:`Group.config`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from torch import nn

from .datasets import DataSplit
from .device import DevicePolicy, device_policy
from .lanes import Lanes
from .lockstep import across_seeds_key, lanes_of
from .run_config import RunConfig
from .seeds import lane_seeds, lane_streams
from .targets import Member, members_of

__all__ = ["Group"]


@dataclass(frozen=True)
class Group:
    """The runs ``configs`` of a group, each one's member (``members``,
    :class:`~dsmlib.models.sec5_distillation.targets.Member`), each lane's data
    (:class:`~dsmlib.models.sec5_distillation.lanes.Lanes`), how it runs (``policy``), each
    lane's stream of epoch plans (``streams``,
    :func:`~dsmlib.models.sec5_distillation.seeds.lane_streams`) and the seed of its ``G``
    probes (``probe_seeds``, :func:`~dsmlib.models.sec5_distillation.seeds.lane_seeds`; one
    lane's an int)."""
    configs: tuple[RunConfig, ...]
    members: tuple[Member, ...]
    lanes: Lanes
    policy: DevicePolicy
    streams: tuple[int, ...]
    probe_seeds: int | tuple[int, ...]

    @classmethod
    def of(cls, configs: Sequence[RunConfig], data: DataSplit | Sequence[DataSplit] | Lanes,
           step: str | DevicePolicy = "eager", teachers: Sequence[nn.Module] | None = None
           ) -> Group:
        """The group of ``configs`` on ``data`` (the split of its one lane, each lane's, or
        the lanes), with the step ``step`` (its form, or a whole policy: :func:`device_policy`)
        and, for students, each lane's teacher (checked: one per lane), refused with the
        reason where its runs cannot train together."""
        if not configs:
            raise ValueError("configs must hold at least one run configuration")
        lanes = Lanes.of_group(lanes_of(configs), data)
        _check(configs, lanes, teachers)
        policy = (step if isinstance(step, DevicePolicy)
                  else device_policy(configs[0].precision, lanes.device, step))
        streams, seeds = lane_streams(configs, lanes.of), lane_seeds(configs, lanes.of)
        return cls(tuple(configs), members_of(configs), lanes, policy, tuple(streams),
                   seeds if isinstance(seeds, int) else tuple(seeds))

    @property
    def config(self) -> RunConfig:
        """The group's first run: every field but the seed, stream, noise and level is every
        run's (the recipe, the network, the data set, ...)."""
        return self.configs[0]

    @property
    def kinds(self) -> set[str]:
        """The members' noise kinds (what an epoch's plan draws for)."""
        return {m.kind for m in self.members}

    def epochs(self, start: int, stop_after: int | None = None, progress: bool = False
               ) -> Iterable[int]:
        """The epochs to train from ``start`` (at most ``stop_after`` of them), with a progress
        bar if asked."""
        c, runs = self.config, len(self.configs)
        end = c.epochs if stop_after is None else min(c.epochs, start + stop_after)
        if not progress:
            return range(start, end)
        from tqdm.auto import tqdm
        what = c.label() + (f" (+{runs - 1} together)" if runs > 1 else "")
        return tqdm(range(start, end), desc=what, leave=False, initial=start, total=c.epochs)


def _check(configs: Sequence[RunConfig], lanes: Lanes,
           teachers: Sequence[nn.Module] | None) -> None:
    if len({across_seeds_key(c) for c in configs}) > 1:
        raise ValueError("runs of one group must differ only in their seed, student stream, "
                         "noise and level (students in lockstep: of one teacher): "
                         + ", ".join(c.label() for c in configs))
    if teachers is not None:
        if (not teachers) != (configs[0].role == "teacher"):
            raise ValueError("a student run needs its trained teacher, and a teacher run none")
        if teachers and len(teachers) != lanes.count:
            raise ValueError(f"the group's {lanes.count} lanes need one teacher each, got "
                             f"{len(teachers)}")
    n, c = lanes.first.X_train.shape[0], configs[0]
    if c.batch_size > n:
        raise ValueError(f"batch_size must be <= the {n} training images, got {c.batch_size}")
    if c.n_gradnorm > n:   # G is measured on the first n_gradnorm training images
        raise ValueError(f"n_gradnorm must be <= the {n} training images, got {c.n_gradnorm}")
