"""Lockstep and groups (models layer): runs that train together, as the ``K`` members of one
grouped network (:class:`dsmlib.models.networks.CifarResNet` with ``members=K``), whose every
parameter and buffer is its members' tensors concatenated along the first axis. So a member's
state -- and its SGD state -- is a slice, in exactly the layout of a separately trained network:
these functions stack members' state dicts into the group's and slice them back out.

Two levels of grouping. A **lane** is the runs that read the same batches: the students of one
teacher (and student stream) that differ only in their noise kind and level (equal
:func:`lockstep_key`: *lockstep*), or one teacher. A **group** is one or more lanes whose runs
differ only in their seed (equal :func:`across_seeds_key`): the teachers of a setting's seeds,
or the students of several of its teachers; each lane has its own data split, batches, crops,
noise and teacher (:func:`lanes_of` numbers them).
"""
from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any, Sequence

import torch
from torch import Tensor

from ...foundation.checks import check_int
from .run_config import Noise, RunConfig

__all__ = ["lockstep_key", "across_seeds_key", "lanes_of", "stack_states", "member_state",
           "stack_optimizer_states",
           "member_optimizer_state"]


def lockstep_key(config: RunConfig) -> str:
    """Runs with equal keys can train in lockstep: students of one teacher that differ only in
    their noise kind and level (a teacher's key is its own)."""
    if config.role == "teacher":
        return config.key()
    return replace(config, noise=Noise.NONE.value, level=0.0).key()


def across_seeds_key(config: RunConfig) -> str:
    """Runs with equal keys can train in one group, each lane on its own batches: they differ
    only in their seed (a student: its teacher's seed), their student stream, and their noise
    kind and level."""
    teacher = None if config.teacher is None else replace(config.teacher, seed=0)
    return replace(config, seed=0, stream=0, noise=Noise.NONE.value, level=0.0,
                   teacher=teacher).key()


def lanes_of(configs: Sequence[RunConfig]) -> tuple[int, ...]:
    """Each run's lane in a group: the runs of equal :func:`lockstep_key` share one, numbered
    in the order of their first run."""
    first: dict[str, int] = {}
    return tuple(first.setdefault(lockstep_key(c), len(first)) for c in configs)


def _cat(name: str, tensors: Sequence[Any]) -> Any:
    first = tensors[0]
    if not torch.is_tensor(first):
        if any(t != first for t in tensors):
            raise ValueError(f"members disagree on {name}: {list(tensors)}")
        return copy.deepcopy(first)
    if first.ndim == 0:   # e.g. batch norm's num_batches_tracked: one count for all
        if any(not torch.equal(t, first) for t in tensors):
            raise ValueError(f"members disagree on the scalar {name}: they are not in lockstep")
        return first.clone()
    return torch.cat(list(tensors), dim=0)


def _slice(value: Any, k: int, members: int) -> Any:
    if not torch.is_tensor(value):
        return copy.deepcopy(value)
    if value.ndim == 0:
        return value.clone()
    return value.chunk(members, dim=0)[k].clone()


def stack_states(states: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
    """The state dict of a ``K``-member module from its members' state dicts (same keys)."""
    if not states:
        raise ValueError("states must hold at least one member's state dict")
    return {name: _cat(name, [s[name] for s in states]) for name in states[0]}


def member_state(state: dict[str, Tensor], k: int, members: int) -> dict[str, Tensor]:
    """Member ``k``'s state dict (a plain network's layout) from a ``members``-member one."""
    members = check_int("members", members, minimum=1)
    check_int("k", k, minimum=0, maximum=members - 1)
    return {name: _slice(t, k, members) for name, t in state.items()}


def stack_optimizer_states(states: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One SGD state dict for the grouped module from the members' (momentum buffers
    stacked; hyper-parameters, which lockstep members share, checked equal)."""
    first = states[0]
    for s in states[1:]:
        if s["param_groups"] != first["param_groups"] or set(s["state"]) != set(first["state"]):
            raise ValueError("members' optimizer states differ in settings or progress: they "
                             "cannot train in lockstep")
    return {"state": {i: {key: _cat(f"state[{i}].{key}", [s["state"][i][key] for s in states])
                          for key in st} for i, st in first["state"].items()},
            "param_groups": copy.deepcopy(first["param_groups"])}


def member_optimizer_state(state: dict[str, Any], k: int, members: int) -> dict[str, Any]:
    """Member ``k``'s SGD state dict from the grouped module's."""
    return {"state": {i: {key: _slice(v, k, members) for key, v in st.items()}
                      for i, st in state["state"].items()},
            "param_groups": copy.deepcopy(state["param_groups"])}
