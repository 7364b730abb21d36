"""What a group's training measures, and what it costs (dsmlib.models.sec5_distillation.measure,
issue 69, item 3): the measurement in inference mode, the teachers' logits once per split and
the students' row 0 taken from them, against the measurement as it was -- each member's own
plain network, its logits under ``torch.no_grad`` in batches of 1,024, the teachers' logits
computed again for the targets -- on the same weights, in float32 and float64, for one lane and
for two.

**The tolerance, from first principles.** Both ways compute the same logits of the same weights
on the same images; in exact arithmetic they are equal. In floating point a logit can differ
only where a kernel sums in another order (another batch, a grouped against a plain
convolution): by at most about ``n u`` relative per layer for a sum of ``n`` terms at unit
roundoff ``u`` (the longest sum of a CIFAR ResNet is a 3x3 convolution over 64 channels,
``n = 576``: ``576 * 2**-24 = 3.4e-5`` in float32, ``576 * 2**-53 = 6.4e-14`` in float64),
compounded over a few layers. A loss, a mean of smooth functions of the logits, moves by as
much relatively: :data:`RTOL` allows three layers' worth of that bound. An accuracy moves only
where an image's two top logits lie within that error of each other: it must be equal. On
this project's CPUs both ways run the same kernels on the same batches' images, and every value
is bit for bit the same (:func:`test_the_measurement_is_bit_for_bit_the_old_one_on_the_cpu`;
``tests/models/test_tiny_run_records.py`` holds a whole tiny grid's rows and weights to the
bit).
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from dsmlib.models.sec5_distillation.correctness import pack_flags
from dsmlib.models.sec5_distillation.datasets import load_dataset
from dsmlib.models.sec5_distillation.group import Group
from dsmlib.models.sec5_distillation.lanes import SPLITS
from dsmlib.models.sec5_distillation.lockstep import member_state
from dsmlib.models.sec5_distillation.loop import train, train_epoch
from dsmlib.models.sec5_distillation.measure import Baseline, measure, predict
from dsmlib.models.sec5_distillation.nets import build_model
from dsmlib.models.sec5_distillation.run_config import Noise, student_of
from dsmlib.models.sec5_distillation.trainer import Trainer
from dsmlib.models.sec5_distillation.targets import mean_members, member_targets
from tiny_runs import tiny_teacher

KINDS = ((Noise.NONE, 0.0), (Noise.GAUSSIAN, 4.0), (Noise.SYMMETRIC, 0.3),
         (Noise.CONTROL, 0.3), (Noise.HINTON, 2.0), (Noise.CONTINUED, 0.0))
#: Three layers' worth of the bound ``576 u`` (see the module's docstring).
RTOL = {"fp32": 3 * 576 * 2.0 ** -24, "fp64": 3 * 576 * 2.0 ** -53}
TIMING = ("eval_s", "gradnorm_s")
PART = 32   # training images measured between the first and the last epoch


def _setting(precision: str, lanes: int):
    """Trained teachers (one epoch) of ``lanes`` seeds, their data, and a trainer of their
    students of every kind in one group (a lane per teacher)."""
    configs, data, teachers = [], [], []
    for seed in range(lanes):
        cfg = tiny_teacher(precision=precision, seed=seed, epochs=1, n_train_eval=PART)
        split = load_dataset("digits", split_seed=seed, train_limit=96, device="cpu")
        teacher = _trained(cfg, split)
        configs += [student_of(cfg, kind, level, epochs=2) for kind, level in KINDS]
        data.append(split)
        teachers.append(teacher)
    group = Group.of(configs, data if lanes > 1 else data[0], "eager", teachers)
    return group, Trainer(group, teachers), teachers


def _trained(cfg, split):
    """The teacher of ``cfg`` after its epochs, in eval mode."""
    kept = {}
    train(cfg, split, on_epoch=lambda e, h, m, o: kept.update(state=m.state_dict()))
    model = build_model(cfg, split)
    model.load_state_dict(kept["state"])
    return model.eval().requires_grad_(False)


@torch.no_grad()
def _old_logits(model, X, policy):
    """Logits as the measurement computed them before issue 69: under ``no_grad``, in batches
    of 1,024."""
    out = []
    for s in range(0, X.shape[0], 1024):
        x = X[s:s + 1024].to(policy.dtype).contiguous(memory_format=torch.channels_last)
        with torch.autocast("cpu", torch.bfloat16, enabled=policy.amp):
            out.append(model(x).to(policy.dtype))
    return torch.cat(out)


def old_rows(trainer: Trainer, teachers, group: Group, part: int | None) -> list[dict]:
    """Each member's accuracies and losses the old way: its own plain network (its slice of the
    grouped weights), the teachers' logits computed again for its noiseless target."""
    lanes, policy, k_all = trainer.lanes, trainer.policy, len(trainer.members)
    state = trainer.model.state_dict()
    rows = [{} for _ in range(k_all)]
    for k, (member, config) in enumerate(zip(trainer.members, group.configs)):
        lane = lanes.of[k]
        split = lanes.splits[lane]
        own = build_model(config, split, 1, policy)
        own.load_state_dict(member_state(state, k, k_all))
        own.eval()
        for name in SPLITS:
            if part is not None and name == "test":
                continue
            X, y = getattr(split, f"X_{name}"), getattr(split, f"y_{name}")
            n = X.shape[0] if part is None or name != "train" else min(part, X.shape[0])
            X, y = X[:n], y[:n]
            logits = _old_logits(own, X, policy)
            right = logits.argmax(dim=1) == y
            rows[k][f"{name}_acc"] = float(right.float().mean())
            if name == "test":
                rows[k]["test_correct"] = pack_flags(right.numpy())
            t = _old_logits(teachers[lane].eval(), X, policy)
            target = member_targets(t, mean_members([member]))[:, 0]
            labelled = member.kind == Noise.CONTINUED
            rows[k][f"{name}_loss"] = float(F.cross_entropy(logits, y) if labelled
                                            else F.mse_loss(logits, target))
    return rows


def _far(new: list[dict], old: list[dict], rtol: float) -> list[str]:
    out = []
    for k, (a, b) in enumerate(zip(new, old)):
        for key, want in b.items():
            got = a[key]
            close = (math.isclose(got, want, rel_tol=rtol, abs_tol=rtol) if key.endswith("_loss")
                     else got == want)
            if not close:
                out.append(f"member {k} {key}: {got!r} != {want!r}")
    return out


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
@pytest.mark.parametrize("lanes", [1, 2])
def test_the_measurement_equals_the_old_one_within_its_tolerance(precision, lanes):
    """Row 0 (the students' logits taken from their teachers'), a row between the first and
    the last epoch (the training images' first 32) and a whole row after training: each value
    equal to the old way's within :data:`RTOL` (losses) or exactly (accuracies, test flags)."""
    group, trainer, teachers = _setting(precision, lanes)
    base = Baseline.of(trainer)
    rows0 = measure(trainer, base.targets, 0, logits=base.start_logits(group.lanes))
    assert not _far(rows0, old_rows(trainer, teachers, group, None), RTOL[precision])
    mid = train_epoch(trainer, group, base, 0)      # epoch 1 of 2: not the last
    assert all(r["test_acc"] is None for r in mid)
    trainer.model.eval()
    assert not _far(mid, old_rows(trainer, teachers, group, PART), RTOL[precision])
    whole = measure(trainer, base.targets, 2)
    assert not _far(whole, old_rows(trainer, teachers, group, None), RTOL[precision])


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("lanes", [1, 2])
def test_the_measurement_is_bit_for_bit_the_old_one_on_the_cpu(lanes, precision):
    """On the CPU the members run apart, each its plain network's kernels, batch by batch:
    every value of a row equals the old way's to the bit, row 0 (from the teachers' logits)
    and a measured row alike, in float32 and under bf16 autocast (whose logits both ways
    compute in bf16)."""
    group, trainer, teachers = _setting(precision, lanes)
    base = Baseline.of(trainer)
    rows0 = measure(trainer, base.targets, 0, logits=base.start_logits(group.lanes))
    assert not _far(rows0, old_rows(trainer, teachers, group, None), 0.0)
    full0 = measure(trainer, base.targets, 0)        # row 0 through the network itself
    assert [{k: v for k, v in r.items() if k not in TIMING} for r in rows0] == \
        [{k: v for k, v in r.items() if k not in TIMING} for r in full0]


def test_a_students_row_0_runs_no_forward_pass_of_its_own():
    """Before training the students' logits are their teachers' (computed once, for the
    targets): row 0 runs the network only for G, whose pass is the same either way."""
    group, trainer, _ = _setting("fp32", 1)
    base = Baseline.of(trainer)
    calls = []
    hook = trainer.model.register_forward_pre_hook(lambda m, a: calls.append(1))
    try:
        measure(trainer, base.targets, 0, logits=base.start_logits(group.lanes))
        with_known = len(calls)
        calls.clear()
        measure(trainer, base.targets, 0)
        without = len(calls)
        calls.clear()
        trainer.gradnorm(0)
        g_only = len(calls)
    finally:
        hook.remove()
    assert with_known == g_only < without


def test_start_logits_are_each_members_lane_teachers():
    """One lane: every member reads the lane's teacher logits; two lanes: member k its own
    lane's; a teachers' group has none."""
    group, trainer, teachers = _setting("fp32", 2)
    base = Baseline.of(trainer)
    start = base.start_logits(group.lanes)
    for k, lane in enumerate(group.lanes.of):
        X = group.lanes.splits[lane].X_val
        want = predict(teachers[lane], X, amp=False, batch=64, channels_last=True)
        assert torch.equal(start["val"][:, k], want)
    t_group = Group.of([tiny_teacher(n_train_eval=PART)], group.lanes.splits[0], "eager", [])
    assert Baseline.of(Trainer(t_group)).start_logits(t_group.lanes) is None


def test_predictions_are_made_in_inference_mode():
    """No autograd record: the logits are inference tensors."""
    cfg = tiny_teacher()
    split = load_dataset("digits", train_limit=96, device="cpu")
    out = predict(build_model(cfg, split).eval(), split.X_val[:8], amp=False)
    assert out.is_inference() and not out.requires_grad
