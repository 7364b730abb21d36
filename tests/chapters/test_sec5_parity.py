"""bf16 against fp32 on the CPU (dsmlib.chapters.sec5_distillation.parity, issue 69, item 2), on
fabricated records: the row's numbers (the paired differences, their mean, standard error and
99 % Student-t interval), the rule in both directions (no loss beyond seed noise, and a loss
beyond it) and undecided, and the records it refuses."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest
from scipy import stats

from dsmlib.chapters.sec5_distillation.parity import (MIN_SEEDS, PARITY_BAND, paired_accuracies,
                                                      parity_row)
from dsmlib.models.sec5_distillation.runs import RunRecord
from tiny_runs import tiny_teacher

FP32 = (0.40, 0.42, 0.41)


def records(differences, fp32=FP32, **changes) -> list[RunRecord]:
    """A finished fp32 and bf16 teacher per seed, bf16's test accuracy fp32's plus the
    difference."""
    out = []
    for seed, (acc, d) in enumerate(zip(fp32, differences)):
        for precision, value in (("fp32", acc), ("bf16", acc + d)):
            config = tiny_teacher(seed=seed, precision=precision, **changes)
            out.append(RunRecord(config, [{"epoch": 0, "test_acc": 0.1},
                                          {"epoch": config.epochs, "test_acc": value}], True))
    return out


def test_the_row_is_the_paired_difference_with_its_99_percent_interval():
    d = (0.001, 0.002, 0.0015)
    row = parity_row(records(d))
    assert "parity" in row["name"] and row["seeds"] == [0, 1, 2]
    assert row["fp32_test_acc"] == list(FP32)
    assert row["differences"] == pytest.approx(d, abs=1e-15)
    mean = sum(d) / 3
    se = math.sqrt(sum((v - mean) ** 2 for v in d) / 2) / math.sqrt(3)
    half = stats.t.ppf(0.995, 2) * se
    assert row["difference"] == pytest.approx(mean, rel=1e-12)
    assert row["se"] == pytest.approx(se, rel=1e-9) and row["dof"] == 2
    assert row["interval"] == pytest.approx([mean - half, mean + half], rel=1e-9)
    assert row["level"] == 0.99 and row["band"] == [-PARITY_BAND, None] == [-0.01, None]


def test_no_loss_beyond_seed_noise_where_the_interval_lies_above_minus_one_point():
    row = parity_row(records((0.001, 0.002, 0.0015)))        # interval [-0.0014, 0.0044]
    assert row["interval"][0] > -PARITY_BAND
    assert row["verdict"] == "confirmed" and row["no_loss_beyond_seed_noise"] is True
    gain = parity_row(records((0.05, 0.06, 0.055)))          # a gain: the band is open above
    assert gain["verdict"] == "confirmed" and gain["no_loss_beyond_seed_noise"]


def test_a_loss_beyond_the_band_is_refuted_and_a_wide_interval_decides_nothing():
    loss = parity_row(records((-0.05, -0.06, -0.055)))       # interval [-0.084, -0.026]
    assert loss["interval"][1] < -PARITY_BAND
    assert loss["verdict"] == "refuted" and loss["no_loss_beyond_seed_noise"] is False
    wide = parity_row(records((0.03, -0.03, 0.0)))           # mean 0, interval +-0.17
    assert wide["interval"][0] < -PARITY_BAND < wide["interval"][1]
    assert wide["verdict"] == "inconclusive" and not wide["no_loss_beyond_seed_noise"]
    # the band is the rule's: the same loss inside a wider band would pass
    assert parity_row(records((-0.05, -0.06, -0.055)), band=0.1)["no_loss_beyond_seed_noise"]


def test_identical_accuracies_decide_by_the_point():
    row = parity_row(records((0.0, 0.0, 0.0)))
    assert row["se"] == 0 and row["interval"] == [0.0, 0.0] and row["verdict"] == "confirmed"


def test_records_that_do_not_pair_are_refused():
    good = records((0.0, 0.0, 0.0))
    assert MIN_SEEDS == 3
    with pytest.raises(ValueError, match="at least 3 seeds"):
        parity_row(good[:4])
    with pytest.raises(ValueError, match=r"seeds \[2\] lack a run"):
        paired_accuracies(good[:5])
    other = good[:5] + [replace(good[5], config=replace(good[5].config, epochs=3))]
    with pytest.raises(ValueError, match="differ in more than their precision"):
        paired_accuracies(other)
    moved = good[:4] + [replace(r, config=replace(r.config, epochs=3)) for r in good[4:]]
    with pytest.raises(ValueError, match="one setting's seeds"):
        paired_accuracies(moved)
    unfinished = good[:5] + [replace(good[5], done=False)]
    with pytest.raises(ValueError, match="finished teacher"):
        paired_accuracies(unfinished)
    with pytest.raises(ValueError, match="two bf16 runs of seed 2"):
        paired_accuracies(good + [good[5]])
    with pytest.raises(ValueError, match="finished teacher in fp32 or bf16"):
        paired_accuracies([replace(good[0], config=replace(good[0].config, precision="fp64"))])
