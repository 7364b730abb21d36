"""The networks of a group (models layer): a run's CIFAR ResNet built from its seed, the state a
group starts from, and the one network of a group's teachers.

A group trains its ``K`` runs as the members of one grouped network
(:class:`dsmlib.models.networks.CifarResNet` with ``members=K``; its state is its members'
stacked, :mod:`dsmlib.models.sec5_distillation.lockstep`): a teacher starts from its own
initialisation, drawn from ``child_seed(seed, INIT)`` as its separate run draws it, a student
from its teacher's final weights.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor, nn

from ...foundation.rng import child_seed
from ..networks import cifar_resnet
from .datasets import DataSplit
from .device import DevicePolicy, device_policy
from .lanes import Lanes
from .lockstep import stack_states
from .run_config import RunConfig
from .seeds import STREAM_INIT

__all__ = ["build_model", "start_state", "teacher_model", "group_teacher", "teachers_state"]


def build_model(config: RunConfig, data: DataSplit, members: int = 1,
                policy: DevicePolicy | None = None,
                lanes: Sequence[int] | None = None) -> nn.Module:
    """The CIFAR ResNet of ``config.depth`` for the data's channels and classes, initialised from
    ``child_seed(seed, INIT)`` (a student's weights are then replaced by its teacher's);
    ``members`` networks in one grouped module, reading per-lane images where ``lanes`` gives
    each member's lane."""
    policy = policy or device_policy(config.precision, data.device)
    model = cifar_resnet(config.depth, data.spec.num_classes, in_channels=data.spec.in_channels,
                         seed=child_seed(config.seed, STREAM_INIT), device=data.device,
                         members=members, dtype=policy.dtype, lanes=lanes)
    return model.to(memory_format=torch.channels_last) if policy.channels_last else model


def start_state(configs: Sequence[RunConfig], lanes: Lanes, policy: DevicePolicy,
                teachers: Sequence[nn.Module] = ()) -> dict[str, Tensor]:
    """The state a group starts from, stacked: each student its lane's teacher's final weights
    (``teachers[l]``); each teacher its own initialisation, as its separate run builds it
    (:func:`build_model` from its seed)."""
    if teachers:
        lane_states = [t.state_dict() for t in teachers]
        return stack_states([lane_states[lane] for lane in lanes.of])
    return stack_states([build_model(c, lanes.splits[lane], 1, policy).state_dict()
                         for c, lane in zip(configs, lanes.of)])


def teacher_model(config: RunConfig, lanes: int, policy: DevicePolicy,
                  data: DataSplit) -> nn.Module:
    """A network of the shape of the teacher of a group of ``lanes`` lanes (of configuration
    ``config``), frozen in eval mode: one lane's plain; several lanes' one grouped network of
    ``lanes`` members, member ``l`` reading lane ``l``'s images."""
    model = build_model(config, data, lanes, policy,
                        lanes=None if lanes == 1 else range(lanes))
    return model.eval().requires_grad_(False)


def group_teacher(config: RunConfig, teachers: Sequence[nn.Module], policy: DevicePolicy,
                  data: DataSplit) -> nn.Module:
    """The teacher of a group's lanes (``teachers[l]``, of configuration ``config``), in eval
    mode: one lane's as it is; several lanes' in one :func:`teacher_model`."""
    if len(teachers) == 1:
        return teachers[0].eval()
    model = teacher_model(config, len(teachers), policy, data)
    model.load_state_dict(teachers_state(teachers))
    return model


def teachers_state(teachers: Sequence[nn.Module]) -> dict[str, Tensor]:
    """The state of the one network of a group's lanes' teachers: theirs, stacked."""
    return stack_states([t.state_dict() for t in teachers])
