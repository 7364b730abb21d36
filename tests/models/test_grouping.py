"""Group size by measurement (dsmlib.models.sec5_distillation.grouping): the choice from measured rates and
memory on exact inputs; the measurement's parts on a tiny run (its structure, not its timings:
those are the machine's); the device policy's answer per device."""
from __future__ import annotations

import pytest
import torch

from dsmlib.models.sec5_distillation.datasets import load_dataset
from dsmlib.models.sec5_distillation.device import device_policy, group_members
from dsmlib.models.sec5_distillation.grouping import (GAIN, choose_members, group_size, lanes_by_kind,
                                    member_bytes, seed_copies, trial_group)
from dsmlib.models.sec5_distillation.lockstep import across_seeds_key, lanes_of
from dsmlib.models.sec5_distillation.run_config import student_of
from tiny_runs import tiny_teacher


def test_the_smallest_group_unless_a_larger_one_is_measurably_faster():
    assert choose_members({1: 100.0}, fits=8) == 1
    assert choose_members({1: 100.0, 2: 190.0, 4: 300.0, 8: 310.0}, fits=8) == 4
    assert choose_members({1: 100.0, 2: 100.0 * GAIN - 1, 4: 400.0}, fits=8) == 4
    assert choose_members({1: 100.0, 2: 110.0, 4: 114.0}, fits=8) == 1       # within GAIN
    assert choose_members({1: 100.0, 2: 190.0, 4: 300.0}, fits=2) == 2       # memory holds 2
    assert choose_members({11: 10.0, 22: 30.0}, fits=5) == 11                 # a lane at least
    with pytest.raises(ValueError, match="at least one measured group size"):
        choose_members({}, fits=1)


def test_seed_copies_are_lanes_of_other_seeds_of_one_kind():
    t = tiny_teacher()
    lane = [student_of(t, "none", 0.0), student_of(t, "gaussian", 4.0)]
    copies = seed_copies(lane, 3)
    assert [c.seed for c in copies] == [0, 0, 1, 1, 2, 2]
    assert [c.teacher.seed for c in copies] == [0, 0, 1, 1, 2, 2]
    assert lanes_of(copies) == (0, 0, 1, 1, 2, 2)
    assert len({across_seeds_key(c) for c in copies}) == 1
    kinds = lanes_by_kind(copies + [t, tiny_teacher(seed=5)])
    assert sorted(len(v) for v in kinds.values()) == [2, 3]


def test_a_group_size_is_measured_on_the_runs_shapes():
    """A tiny lane of students: rates for 1 and 2 seeds (the measured sizes, in members), the
    chosen size among them, memory for at least one lane, bytes per member about the same in a
    group as alone (the step's saved tensors and parameters scale with the members)."""
    t = tiny_teacher(batch_size=8)
    lane = [student_of(t, "none", 0.0), student_of(t, "gaussian", 4.0)]
    data = load_dataset("digits", train_limit=96, device="cpu")
    policy = device_policy("fp32", torch.device("cpu"), "eager")
    size = group_size(lane, data, policy, 2, steps=2, gain=1e9)   # no gain is enough
    assert set(size.rates) <= {2, 4} and 2 in size.rates and size.members == 2
    assert all(r > 0 for r in size.rates.values()) and size.fits >= 2 and size.member_bytes > 0
    one, two = (member_bytes(*trial_group(lane, data, policy, c)) for c in (1, 2))
    assert 0.8 < two / one < 1.25


def test_the_device_policy_groups_across_seeds_by_measurement_on_cuda_only():
    assert group_members(torch.device("cpu")) == 1
    assert group_members(torch.device("cuda")) is None
