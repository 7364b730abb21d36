"""Section 5's recipe where it follows the paper or states why not (issue 35): a student's own
batch stream, the Hinton student's softened cross-entropy, passes over a small training set,
the epochs that read the training subsample and skip the test set, and the noise in the
teacher's logit units."""
from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from dsmlib.models.sec5_distillation.datasets import load_dataset
from dsmlib.models.sec5_distillation.lockstep import lockstep_key
from dsmlib.models.sec5_distillation.loop import train, train_group
from dsmlib.models.sec5_distillation.nets import build_model
from dsmlib.models.sec5_distillation.plan import plan_epoch
from dsmlib.models.sec5_distillation.seeds import stream_seed
from dsmlib.models.sec5_distillation.targets import (Member, hinton_loss, logit_variance,
                                                     member_losses, member_targets,
                                                     noise_variance)
from dsmlib.models.sec5_distillation.run_config import RECIPE, RunConfig, student_of
from dsmlib.theory.label_noise import SymmetricSwapNoise
from tiny_runs import tiny_teacher

TEACHER = tiny_teacher(epochs=3, n_gradnorm=6)


def _plan(seed: int, **kw) -> torch.Tensor:
    return plan_epoch(seed, 0, n=96, batch_size=32, device=torch.device("cpu"), pad=1,
                      flip=False, augment=True, num_classes=10, **kw).batches.idx


def test_students_draw_their_own_stream_not_their_teachers():
    """A student's epoch plan is not its teacher's epoch plan; the students of one teacher share
    one (lockstep, common random numbers) unless given streams of their own."""
    s0, s1 = student_of(TEACHER, "none", 0.0), student_of(TEACHER, "gaussian", 4.0)
    own = student_of(TEACHER, "gaussian", 4.0, stream=1)
    assert stream_seed(TEACHER) == TEACHER.seed
    assert stream_seed(s0) == stream_seed(s1) != stream_seed(TEACHER)
    assert stream_seed(own) not in (stream_seed(s0), stream_seed(TEACHER))
    assert not torch.equal(_plan(stream_seed(s0)), _plan(stream_seed(TEACHER)))
    assert lockstep_key(s0) == lockstep_key(s1) != lockstep_key(own)
    assert "-stream1" in own.label() and own.key() != s1.key()


def test_the_recipe_version_is_part_of_every_key_as_recipe():
    """The version is ``recipe_version`` in the code and ``"recipe"`` in ``config.json`` and in
    the key, as the runs keyed before the attribute's name changed (issue 68) record it."""
    assert TEACHER.recipe_version == RECIPE and TEACHER.to_dict()["recipe"] == RECIPE
    assert TEACHER.key_dict()["recipe"] == RECIPE and "recipe_version" not in TEACHER.to_dict()
    assert student_of(TEACHER, "none", 0.0).to_dict()["teacher"]["recipe"] == RECIPE
    assert RunConfig.from_dict(TEACHER.to_dict()) == TEACHER


def test_passes_cover_the_images_again_each_pass():
    one, three = _plan(7), _plan(7, passes=3)
    assert three.shape == (3 * one.shape[0], 32)
    assert torch.equal(three[:one.shape[0]], one)             # the first pass is the old epoch
    for k in range(3):
        idx = three[k * 3:(k + 1) * 3].flatten()
        assert idx.unique().numel() == idx.numel() == 96      # every pass a permutation


def test_hinton_loss_is_the_softened_cross_entropy():
    """T^2 KL(softmax(t/T) || softmax(f/T)), computed here from its definition; zero when the
    student is its teacher; and at high T it tends to half the quadratic loss per logit of the
    centred logits (Hinton et al., Sec. 2.1), to 1 % at T = 1000."""
    g = torch.Generator().manual_seed(0)
    f, t = torch.randn(64, 10, generator=g, dtype=torch.float64), torch.randn(
        64, 10, generator=g, dtype=torch.float64)
    T = 3.0
    p, q = torch.softmax(t / T, -1), torch.softmax(f / T, -1)
    want = T ** 2 * (p * (p.log() - q.log())).sum(-1).mean()
    assert float(hinton_loss(f, t, T)) == pytest.approx(float(want), rel=1e-12)
    assert float(hinton_loss(t, t, T)) == pytest.approx(0.0, abs=1e-12)
    fc, tc = f - f.mean(-1, keepdim=True), t - t.mean(-1, keepdim=True)
    limit = 0.5 * ((fc - tc) ** 2).mean()
    assert float(hinton_loss(f, t, 1000.0)) == pytest.approx(float(limit), rel=1e-2)


def test_member_losses_use_each_members_loss():
    g = torch.Generator().manual_seed(1)
    out = torch.randn(16, 3, 10, generator=g, dtype=torch.float64)
    t = torch.randn(16, 10, generator=g, dtype=torch.float64)
    members = [Member("none"), Member("hinton", 2.0), Member("symmetric_mean", 0.3)]
    target = member_targets(t, members)
    losses = member_losses(out, t, target, members)
    assert float(losses[0]) == pytest.approx(float(((out[:, 0] - t) ** 2).mean()), rel=1e-12)
    assert float(losses[1]) == pytest.approx(float(hinton_loss(out[:, 1], t, 2.0)), rel=1e-12)
    assert float(losses[2]) == pytest.approx(float(((out[:, 2] - target[:, 2]) ** 2).mean()),
                                             rel=1e-12)


def test_noise_in_the_teachers_logit_units():
    """The teacher's logit scale is the mean variance of a logit vector about its own mean;
    the swap's noise variance per logit (closed form) matches its draws' (10,000 draws per
    image of 8 images; within 5 SE of the sample variance, false failure ~1e-6)."""
    g = torch.Generator().manual_seed(2)
    t = 3 * torch.randn(8, 10, generator=g, dtype=torch.float64)
    assert logit_variance(t) == pytest.approx(float(t.var(-1, unbiased=False).mean()), rel=1e-12)
    assert noise_variance(Member("gaussian", 4.0), t) == 4.0
    assert noise_variance(Member("none"), t) == noise_variance(Member("hinton", 4.0), t) == 0.0
    assert noise_variance(Member("symmetric_mean", 0.3), t) == 0.0
    p, draws = 0.3, 10_000
    y = t.repeat_interleave(draws, 0)
    swap = SymmetricSwapNoise(p)
    r = swap.draw(y, 5) - swap.mean(y)
    var = r.view(8, draws, 10).var(1)                          # per image and logit
    want = noise_variance(Member("symmetric", p), t)
    got = float(var.mean())
    fourth = float((r ** 4).mean())
    se = math.sqrt(max(fourth - got ** 2, 0.0) / r.numel())
    assert abs(got - want) < 5 * se, (got, want, se)


def test_rows_of_the_middle_epochs_read_the_training_subsample_and_not_the_test_set():
    data = load_dataset("digits", train_limit=96, device="cpu")
    t = dataclasses.replace(TEACHER, n_train_eval=32, epochs=3)
    hist = train(t, data)
    assert hist[0]["test_acc"] is not None and hist[-1]["test_acc"] is not None
    assert all(r["test_acc"] is None and r["test_loss"] is None for r in hist[1:-1])
    for r in hist[1:-1]:                                      # accuracies over 32 images
        assert abs(r["train_acc"] * 32 - round(r["train_acc"] * 32)) < 1e-6
    whole = train(dataclasses.replace(t, n_train_eval=None), data)
    assert [r["val_acc"] for r in whole] == [r["val_acc"] for r in hist]   # training unchanged
    assert whole[-1]["train_acc"] == hist[-1]["train_acc"]
    assert all(r["n_train"] == 96 and r["logit_var"] is None for r in hist)


def test_students_record_the_noise_in_the_teachers_logit_units():
    data = load_dataset("digits", train_limit=96, device="cpu")
    t_model = build_model(TEACHER, data).eval()
    configs = [student_of(TEACHER, k, lv, epochs=1) for k, lv in
               (("none", 0.0), ("gaussian", 4.0), ("symmetric", 0.3))]
    hist = train_group(configs, data, teacher=t_model)
    lv = {h[0]["logit_var"] for h in hist}
    assert len(lv) == 1 and next(iter(lv)) > 0
    assert [h[-1]["noise_var"] for h in hist[:2]] == [0.0, 4.0] and hist[2][0]["noise_var"] > 0
