"""The Section 5 chapter: its grid, the arrangement of records by cell and seed, and the claims
judged with seeds as the unit, on synthetic records whose answers are known."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dsmlib.chapters import sec5_distillation as distill
from dsmlib.models.runs import RunRecord

PARAMS = dict(datasets=["digits"], depth=8, teacher_epochs=3, student_epochs=2,
              sigma2s=[1.0, 4.0], ps=[0.1, 0.3], seeds=[0, 1, 2, 3])


def fake_records(grid, final) -> list[RunRecord]:
    """Finished records whose last row is ``final(config)`` (earlier rows: twice the losses)."""
    out = []
    for c in distill.grid_runs(grid):
        f = {m: 1.0 for m in distill.METRICS} | final(c)
        rows = [dict(f, epoch=e, train_loss=f["train_loss"] * (2 if e < c.epochs else 1))
                for e in range(c.epochs + 1)]
        out.append(RunRecord(c, rows, True))
    return out


def position(c) -> int:
    if c.role == "teacher" or c.noise == "none":
        return 0
    levels = PARAMS["sigma2s"] if c.noise == "gaussian" else PARAMS["ps"]
    return 1 + levels.index(c.level)


def good(c) -> dict:
    """Every paper claim true: G falls along each grid and students sit below the teacher; the
    best-validated noisy student (symmetric, p = 0.1) gains 1 % test accuracy."""
    jitter = 0.01 * np.sin(3 * c.seed + position(c))
    best = c.noise == "symmetric" and c.level == 0.1
    g = 2000.0 if c.role == "teacher" else 1000.0 * math.exp(-0.3 * position(c) + jitter)
    return dict(gradnorm=g, val_acc=0.95 + 0.02 * best, test_acc=0.95 + 0.01 * best + jitter / 10,
                train_loss=0.01 + jitter / 100, loss_scale=1.0)


def test_grid_runs_teachers_first_and_counted():
    grid = distill.grid_from_parameters(PARAMS)
    runs = distill.grid_runs(grid)
    assert len(runs) == 4 * (1 + 1 + 2 + 2)
    assert [r.role for r in runs[:4]] == ["teacher"] * 4
    assert all(r.role == "student" and r.teacher.seed == r.seed for r in runs[4:])
    assert len({r.key() for r in runs}) == len(runs)


@pytest.mark.parametrize("change, match", [
    (dict(seeds=[0]), "at least 2 distinct seeds"), (dict(datasets=[]), "datasets must not be empty"),
    (dict(datasets=["imagenet"]), "dataset must be one of"), (dict(ps=[1.2]), "swap probability"),
    (dict(sigma2s=[-1.0]), "sigma"), (dict(teacher_epochs=0), "epochs must be >= 1")])
def test_bad_grid_parameters(change, match):
    with pytest.raises(ValueError, match=match):
        distill.grid_from_parameters({**PARAMS, **change})


def test_summarise_needs_every_run():
    grid = distill.grid_from_parameters(PARAMS)
    recs = fake_records(grid, good)
    with pytest.raises(ValueError, match="1 run\\(s\\) of the grid are not finished"):
        distill.summarise(grid, recs[:-1])
    res = distill.summarise(grid, recs)
    assert res.teacher("digits").curves["train_loss"].shape == (4, 4)
    assert [c.level for c in res.noisy("digits", "gaussian")] == [1.0, 4.0]


def test_claims_confirmed_when_the_paper_holds():
    grid = distill.grid_from_parameters(PARAMS)
    res = distill.summarise(grid, fake_records(grid, good))
    claims = {c.id: c for c in distill.distill_claims(res, scope_note="synthetic")}
    assert set(claims) == {"fig1.gradnorm_vs_sigma2", "fig1.gradnorm_vs_p",
                           "fig1.student_below_teacher", "fig1.noisy_beats_teacher",
                           "fig1.noisy_beats_noiseless", "fig2.train_loss_to_zero"}
    for c in claims.values():
        assert c.verdict == "confirmed", c.id
        assert c.scope in ("setting", "reading") and c.condition == "" and "synthetic" in c.note
    assert claims["fig1.gradnorm_vs_p"].measured == pytest.approx(-0.3, abs=0.02)
    # the interval is a Student-t interval over the 4 seeds (3 degrees of freedom)
    c = claims["fig1.noisy_beats_teacher"]
    sel = res.noisy("digits", "symmetric")[0].final["test_acc"] - res.teacher("digits").final["test_acc"]
    half = stats.t.ppf(0.995, 3) * sel.std(ddof=1) / 2
    assert c.interval == pytest.approx([sel.mean() - half, sel.mean() + half])
    assert distill.selected_levels(res, "digits")["symmetric"].level == 0.1


def test_claims_refuted_when_the_paper_fails():
    grid = distill.grid_from_parameters(PARAMS)

    def bad(c):
        f = good(c)
        f["gradnorm"] = 500.0 if c.role == "teacher" else 1000.0 * math.exp(0.3 * position(c)
                                                                            + 0.01 * c.seed)
        f["test_acc"] = 0.95 - 0.03 * (c.role == "student" and c.noise != "none") + 0.001 * c.seed
        f["train_loss"] = 0.5 + 0.01 * c.seed
        return f
    claims = {c.id: c for c in distill.distill_claims(distill.summarise(grid, fake_records(grid, bad)))}
    for cid in ("fig1.gradnorm_vs_sigma2", "fig1.student_below_teacher",
                "fig1.noisy_beats_teacher", "fig1.noisy_beats_noiseless", "fig2.train_loss_to_zero"):
        assert claims[cid].verdict == "refuted", cid
        assert claims[cid].condition


def test_selection_averages_ties_within_a_seed():
    """Two noisy students tie on validation in every seed: the selected test accuracy is the
    mean of theirs (the expectation of a random tie-break), not the first one's."""
    grid = distill.grid_from_parameters(PARAMS)

    def ties(c):
        f = good(c)
        tie = c.role == "student" and (c.noise, c.level) in (("gaussian", 1.0), ("symmetric", 0.3))
        f["val_acc"] = 0.99 if tie else 0.9
        f["test_acc"] = {("gaussian", 1.0): 0.90, ("symmetric", 0.3): 0.96}.get((c.noise, c.level), 0.5) \
            if c.role == "student" else 0.5
        return f
    res = distill.summarise(grid, fake_records(grid, ties))
    claims = {c.id: c for c in distill.distill_claims(res)}
    assert claims["fig1.noisy_beats_teacher"].measured == pytest.approx(0.93 - 0.5)


def test_seeds_tied_at_zero_gain_do_not_confirm_a_gain():
    """Accuracies are discrete: if every seed's selected student ties its teacher exactly, the
    interval is [0, 0] and "beats the teacher" is refuted, not confirmed."""
    grid = distill.grid_from_parameters(PARAMS)

    def flat(c):
        return good(c) | dict(test_acc=0.9)
    claims = {c.id: c for c in distill.distill_claims(distill.summarise(grid, fake_records(grid, flat)))}
    assert claims["fig1.noisy_beats_teacher"].interval == [0.0, 0.0]
    assert claims["fig1.noisy_beats_teacher"].verdict == "refuted"
