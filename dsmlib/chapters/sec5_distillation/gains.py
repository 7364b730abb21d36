"""Section 5's accuracy verdicts (chapter ``sec5_distillation``): one rule, written once.

**Units.** Accuracies are in percent and their differences in points (:data:`POINTS`), in every
case, interval, band and δ that a reader sees.

**The gate** (:func:`accuracy_gate`, fixed before measuring). A setting is judged for accuracy
only where its teachers leave a student room: every teacher fits its training images
(:data:`FIT_ACCURACY`; one that does not is beaten by training longer alone) or, where they do
not, the grid trained each on as long as a student (the continued teacher, the baseline of
"beats the teacher" there: :func:`baseline`), and δ is at least
one test image's worth, i.e. the teachers miss at least :data:`GATE_IMAGES` test images on
average. A setting below the gate is shown as "not judged: its teachers miss k of n test
images" and enters no family, no seeds-to-decide and no headline.

**The rule** (issue 60, fixed before measuring). The paper's accuracy claims are directional
("the students beat the teacher", "noise beats noiseless"); its figures give no sizes. So a
directional claim is decided by its direction (:data:`ACCURACY_RULE`): *confirmed* when its
99 % interval lies above 0, *refuted* when it lies below 0 (the opposite holds), *inconclusive*
otherwise, with the seeds it would take. Beside every verdict goes its **size** against δ, the
smallest gain worth having (:data:`DELTA_FRACTION` of the teachers' test error), *by at least
δ*, *by less than δ* or *size not decided* (:func:`size_against_delta`). δ is measured on the
same teachers it judges, so its own error is carried: the size is read from the interval of
``gain − δ`` computed per seed and test image (δ's share of each: a tenth of the teacher's
error on that image, :func:`delta_scores`), never from a δ taken as exact. The one
equivalence claim -- validation selection falls short of the best in hindsight by less than δ
-- keeps its band, on ``shortfall − δ`` with the same per-image δ (:func:`shortfall_case`).

**The error of a case** has two sources: the seeds (training randomness) and the test images
(every seed is scored on the same ones). Where the runs recorded which test images they got
right, a gain's interval is the two-level one of the crossed seeds x images table
(:func:`dsmlib.foundation.stats.crossed_mean`, Satterthwaite's fractional degrees of freedom),
so a verdict speaks for the data's images, not for these ones; otherwise it is over seeds alone
(:func:`population`).

**Ties are ties** (:func:`degenerate`): fewer than :data:`MIN_SEEDS` seeds, or every seed's
difference the same (no spread between seeds), decides nothing. A case with a real spread is
judged at any standard error.

**Headlines** follow the book's one rule (:func:`dsmlib.foundation.claims.deciding_case`):
a case that can decide heads a claim, never one with a caveat, a zero-width interval or the
whole possible range.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ...foundation.claims import (CONFIDENCE, Case, Claim, case, combine_all, some_verdict)
from ...foundation.stats import crossed_mean
from ...models.sec5_distillation.dataset_specs import OFFICIAL_TEST
from .registry import ACCURACY_IDS, SOME_IDS
from .results import Cell, DistillResults, setting_of

__all__ = ["STRICT", "POINTS", "UNIT", "LOG_RATIO", "DELTA_FRACTION", "GATE_IMAGES", "MIN_SEEDS",
           "FIT_ACCURACY", "ABOVE_ZERO", "ACCURACY_RULE", "SIZES", "delta_scores",
           "size_against_delta", "size_in_claim", "baseline", "delta_of", "unfit_teachers", "GATE_RULE", "ACCURACY_IDS", "SOME_IDS",
           "DIRECTIONS", "smallest_gain", "teachers_fit", "missed_images", "accuracy_gate",
           "judged_settings", "not_judged", "test_images", "scores", "difference",
           "degenerate", "population", "seed_case", "accuracy_case", "gain_case",
           "shortfall_case", "direction", "verdicts_by_setting", "delta_rows"]

STRICT = 1e-12
#: Accuracies in percent, their differences in points: what every accuracy case is computed in.
POINTS = 100.0
UNIT = "points"
#: The unit of a natural-log ratio of two gradient norms (0.1 is a ratio of e^0.1 = 1.105).
LOG_RATIO = "ln ratio"
# The smallest test-accuracy gain worth having, as a fraction of the teacher's test error in the
# setting: a student must remove a tenth of its teacher's mistakes to be worth a second training
# run of the teacher's length. Fixed before any measurement; never tuned to a result.
DELTA_FRACTION = 0.1
# The gate: δ must be at least one test image's worth, so the teachers must miss at least
# 1 / DELTA_FRACTION test images on average. Below it no gain can be resolved: at the gpu
# profile's full data (about 1 of 359 digits missed) δ would be a tenth of one image.
GATE_IMAGES = round(1 / DELTA_FRACTION)
# Fewer seeds than this decide nothing: two seeds can tie, giving an interval of zero width.
MIN_SEEDS = 3
# A teacher "fits its training images" at this training accuracy or above. Students are judged
# on accuracy only against teachers that fit: one that does not is limited by its training, and
# a student that trains on beats it for that reason alone.
FIT_ACCURACY = 0.99
#: A directional case's band: its interval above 0 confirms, below 0 refutes.
ABOVE_ZERO = (STRICT, None)
#: The accuracy rule, as the page and the claims state it (issue 60).
ACCURACY_RULE = ("A directional claim is confirmed when its 99 % interval lies above 0, "
                 "refuted when it lies below 0 (the opposite holds), and inconclusive "
                 "otherwise, with the seeds it would take. Beside each verdict, its size against "
                 "δ, the smallest gain worth having (a tenth of the test error of what the case "
                 "compares with: the teacher, the continued teacher or a noiseless student; the "
                 "rule is fixed before measuring, the value measured, and its error carried): "
                 "by at least δ, by less than δ, or size not decided. Inside a claim over "
                 "several cases Holm's rule decides them together, so a case whose own 99 % "
                 "interval lies wholly on one side of 0 can stay inconclusive there: its claim's "
                 "note names each such case.")
#: The sizes of a directional case against δ (:func:`size_against_delta`).
SIZES = ("by at least δ", "by less than δ", "size not decided")
#: The gate, as the page states it.
GATE_RULE = (f"A setting is judged for accuracy only where every teacher fits its training "
             f"images (at least {100 * FIT_ACCURACY:g} %) -- or, where they do not, each "
             "teacher was also trained on as long as a student (the continued teacher), which "
             "\"beats the teacher\" is then judged against -- and the teachers miss at least "
             f"{GATE_IMAGES} test images on average, so that δ is at least one test image's "
             "worth; below that no gain can be resolved, and the setting enters no claim.")
#: The direction of an interval against 0, in words: above, below, or across 0.
DIRECTIONS = ("higher", "lower", "cannot tell")


def smallest_gain(res: DistillResults, setting: str, scale: float = 1.0) -> float:
    """``delta`` in points: :data:`DELTA_FRACTION` of the mean test error of the teachers of
    ``setting`` (at least :data:`STRICT`), times ``scale`` (the δ table's δ/2 and 2δ)."""
    err = 1.0 - float(res.teacher(setting).final["test_acc"].mean())
    return scale * max(POINTS * DELTA_FRACTION * err, STRICT)


def baseline(res: DistillResults, setting: str) -> Cell:
    """What "beats the teacher" is judged against in ``setting``: the teacher where every
    teacher fits its training images, else the continued teacher (trained on its labels as
    long as a student), where the grid has one (:func:`accuracy_gate`)."""
    if teachers_fit(res, setting) or res.continued(setting) is None:
        return res.teacher(setting)
    return res.continued(setting)


def teachers_fit(res: DistillResults, setting: str) -> bool:
    """Whether every teacher of ``setting`` reaches :data:`FIT_ACCURACY` on its own training
    images (measured on all of them after the last epoch)."""
    return bool(np.all(res.teacher(setting).final["train_acc"] >= FIT_ACCURACY))


def unfit_teachers(res: DistillResults, setting: str) -> list[dict[str, float]]:
    """Each teacher of ``setting`` below :data:`FIT_ACCURACY` on its own training images, with
    its seed and its training and test accuracy (percent): the gate's exceptions, reported by
    the page and never dropped from any claim (issue 67)."""
    t = res.teacher(setting)
    return [dict(seed=int(seed), train_acc=POINTS * float(tr), test_acc=POINTS * float(te))
            for seed, tr, te in zip(t.seeds, t.final["train_acc"], t.final["test_acc"])
            if tr < FIT_ACCURACY]


def test_images(res: DistillResults, setting: str) -> int:
    """The test images every seed of ``setting`` is scored on."""
    t = res.teacher(setting)
    if t.test_correct is not None:
        return int(t.test_correct.shape[1])
    return OFFICIAL_TEST[res.setting(setting).dataset]


def missed_images(res: DistillResults, setting: str) -> float:
    """The test images the teachers of ``setting`` get wrong, on average over seeds."""
    return (1.0 - float(res.teacher(setting).final["test_acc"].mean())) * test_images(res, setting)


def _count(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.1f}"


def accuracy_gate(res: DistillResults, setting: str) -> str:
    """Why ``setting`` is not judged for accuracy ("" when it is, :data:`GATE_RULE`): a
    teacher that does not fit its training images, or teachers that leave less than one test
    image's worth of δ."""
    if not teachers_fit(res, setting) and res.continued(setting) is None:
        low = float(res.teacher(setting).final["train_acc"].min())
        return (f"not judged: its teachers do not all fit their training images (the lowest "
                f"reaches {100 * low:.1f} %, below {100 * FIT_ACCURACY:g} %), so a student "
                "would beat such a teacher by training longer alone")
    missed, n = missed_images(res, setting), test_images(res, setting)
    if missed < GATE_IMAGES:
        return (f"not judged: its teachers miss {_count(missed)} of {n} test images on average, "
                f"fewer than {GATE_IMAGES}, so δ would be less than one test image")
    return ""


def judged_settings(res: DistillResults) -> list[str]:
    """The settings whose accuracy is judged (:func:`accuracy_gate`), in the grid's order;
    possibly none."""
    return [s for s in res.settings if not accuracy_gate(res, s)]


def not_judged(res: DistillResults) -> dict[str, str]:
    """Each setting below the gate, with why (:func:`accuracy_gate`)."""
    return {s: why for s in res.settings if (why := accuracy_gate(res, s))}


def scores(cell: Cell) -> np.ndarray:
    """What an accuracy case is computed from: per seed and test image, 1 where the model was
    right (seeds x images), where the runs recorded it; else per seed, the test accuracy."""
    return cell.final["test_acc"] if cell.test_correct is None else cell.test_correct


def difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` for two score arrays of :func:`scores`' forms (a per-image table against a
    per-seed vector is reduced to per-seed accuracies first)."""
    if a.ndim != b.ndim:
        a, b = (x.mean(axis=1) if x.ndim == 2 else x for x in (a, b))
    return a - b


def degenerate(per_seed: np.ndarray) -> str:
    """Why a case cannot decide ("" when it can), from its per-seed values: fewer than
    :data:`MIN_SEEDS` seeds, or a tie (every seed the same value, so no spread between seeds
    is measured). A case with a real spread is judged, however small its standard error."""
    v = np.asarray(per_seed, dtype=float)
    if v.size < MIN_SEEDS:
        return (f"{v.size} seeds: a case needs at least {MIN_SEEDS} (two seeds can tie, and "
                "their interval then has zero width)")
    if float(np.ptp(v)) <= STRICT * max(1.0, float(np.abs(v).max())):
        return (f"a tie: all {v.size} seeds give the same value, so the seeds' spread is not "
                "measured")
    return ""


def population(values: np.ndarray, n_test: int, item_var: float | None = None) -> str:
    """What an accuracy case's interval speaks for."""
    if values.ndim == 1:
        return (f"these {n_test} test images only: the interval is over seeds alone, without "
                "the test set's own sampling error (the runs did not record per-image results)")
    if not item_var:
        return ("seeds only: the test images' term is 0 here (no per-image effect beyond the "
                "seeds' scatter), so the interval speaks for the spread over seeds")
    return "seeds and test images: the interval carries both sources of error"


def seed_case(values: np.ndarray, band, quantity: str, *, level: float = CONFIDENCE,
              unit: str = "") -> Case:
    """Mean over seeds with its Student-t interval (seeds are independent replicates);
    inconclusive with fewer than :data:`MIN_SEEDS` seeds or a tie (:func:`degenerate`);
    ``unit``: of the values (:data:`LOG_RATIO` for a natural-log ratio of G)."""
    v = np.asarray(values, dtype=float)
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
    return case(paper=0.0, measured=float(v.mean()), se=se, band=band, quantity=quantity,
                dof=max(v.size - 1, 1), level=level, caveat=degenerate(v), unit=unit)


def accuracy_case(values: np.ndarray, band, quantity: str, n_test: int, *,
                  level: float = CONFIDENCE, bounds: tuple[float, float] | None = (-POINTS, POINTS),
                  caveat: str | None = None) -> tuple[Case, dict[str, Any]]:
    """A difference of test accuracies (``values``: fractions, a seeds x images table or a
    per-seed vector), in points, judged against ``band`` (points): over seeds and test images
    (:func:`dsmlib.foundation.stats.crossed_mean`, Satterthwaite's degrees of freedom kept
    fractional) or over seeds alone, with :func:`degenerate`'s caveat; and the row extras:
    each source's share of the standard error, the degrees of freedom and the population the
    interval speaks for."""
    v = POINTS * np.asarray(values, dtype=float)
    per_seed = v.mean(axis=1) if v.ndim == 2 else v
    if v.ndim == 2:
        cm = crossed_mean(v)
        measured, se, dof, item_var = cm.mean, cm.se, max(1.0, cm.dof), cm.item_var
        parts = {"se_seeds": math.sqrt(cm.unit_var), "se_images": math.sqrt(cm.item_var)}
    else:
        measured, se, dof, item_var = (float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)),
                                       float(v.size - 1), None)
        parts = {"se_seeds": se, "se_images": None}
    c = case(paper=0.0, measured=measured, se=se, band=band, quantity=quantity, dof=dof,
             level=level, caveat=degenerate(per_seed) if caveat is None else caveat,
             bounds=bounds, unit=UNIT)
    return c, {**parts, "seeds": int(v.shape[0]), "dof": float(dof),
               "population": population(v, n_test, item_var), "direction": direction(c)}


def delta_of(right: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """δ's share of each score of a model that is ``right`` (fractions, per seed and image or
    per seed): :data:`DELTA_FRACTION` of its error, times ``scale``."""
    return scale * DELTA_FRACTION * (1.0 - np.asarray(right, dtype=float))


def delta_scores(res: DistillResults, setting: str, scale: float = 1.0,
                 base: Cell | None = None) -> np.ndarray:
    """δ where it is measured, in the units of :func:`scores` (fractions; a case reports it in
    points): per seed and test image (where the runs recorded them) :data:`DELTA_FRACTION` of
    the error on that image of ``base``, the model the case compares with (default the
    teacher), ``0.1 x (1 - right)``, times ``scale`` (the δ table's δ/2 and 2δ); else per
    seed, of its test error. So a case against the continued teacher reads δ from the
    continued teacher's error, and a case against a noiseless student from that student's
    (issue 70). Against the teacher its mean, in points, is :func:`smallest_gain`; its spread
    over seeds and images is δ's own error, which a size read against it carries."""
    return delta_of(scores(res.teacher(setting) if base is None else base), scale)


def _aligned(values: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``values`` and ``deltas`` in one form (a per-image table against a per-seed vector is
    reduced to per-seed means first)."""
    v, d = np.asarray(values, dtype=float), np.asarray(deltas, dtype=float)
    if d.ndim == 0:       # a δ given as a number (a test's): the same for every seed and image
        d = np.full(v.shape, float(d))
    if v.ndim != d.ndim:
        v, d = (x.mean(axis=1) if x.ndim == 2 else x for x in (v, d))
    return v, d


def size_against_delta(values: np.ndarray, deltas: np.ndarray, n_test: int, *,
                       level: float = CONFIDENCE) -> dict[str, Any]:
    """The size of a directional case against δ (:data:`SIZES`), δ's error carried: the
    interval (points) of ``gain - δ`` and of ``-gain - δ``, each from the per-seed (and
    per-image) differences. Above 0 by at least δ when the first lies above 0, by less than δ
    when it lies below 0; the same for a loss with the second; a case across 0 is "by less than
    δ" only when both lie below 0 (no effect of δ's size either way), else "size not
    decided"."""
    v, d = _aligned(values, deltas)
    up, _ = accuracy_case(v - d, ABOVE_ZERO, "gain − δ", n_test, level=level, bounds=None)
    down, _ = accuracy_case(-v - d, ABOVE_ZERO, "loss − δ", n_test, level=level, bounds=None)
    gain, _ = accuracy_case(v, ABOVE_ZERO, "gain", n_test, level=level)
    either = {"size_either_way": bool(up.interval[1] < 0 and down.interval[1] < 0
                                      and not (up.caveat or down.caveat or gain.caveat))}
    if gain.caveat:       # the gain itself decides nothing (a tie): nor does its size
        return {"size": SIZES[2], "size_measured": up.measured, "size_interval": up.interval,
                "size_of": "gain − δ", **either}
    way = direction(gain)
    if way == DIRECTIONS[0]:
        judged = up
    elif way == DIRECTIONS[1]:
        judged = down
    else:
        return {"size": SIZES[1] if either["size_either_way"] else SIZES[2],
                "size_measured": up.measured, "size_interval": up.interval,
                "size_of": "gain − δ", **either}
    size = (SIZES[2] if judged.caveat else SIZES[0] if judged.interval[0] > 0 else
            SIZES[1] if judged.interval[1] < 0 else SIZES[2])
    return {"size": size, "size_measured": judged.measured, "size_interval": judged.interval,
            "size_of": judged.quantity, **either}


def size_in_claim(row: dict[str, Any]) -> str:
    """A case's size as its claim reports it: its own (:func:`size_against_delta`) where the
    family-wise rule decided the case's direction; where that rule left it undecided, only
    "by less than δ" either way (both ``gain − δ`` and ``loss − δ`` below 0) is a size, else
    "size not decided"."""
    if row.get("verdict") != "inconclusive" or row.get("size") == SIZES[2]:
        return row.get("size", SIZES[2])
    return SIZES[1] if row.get("size_either_way") else SIZES[2]


def gain_case(values: np.ndarray, deltas: np.ndarray, quantity: str, n_test: int, *,
              level: float = CONFIDENCE) -> tuple[Case, dict[str, Any]]:
    """A directional test-accuracy gain judged by the rule (:data:`ACCURACY_RULE`): its
    direction, the band ``(0, inf)`` in points; beside it its size against δ
    (:func:`size_against_delta`, ``deltas``: :func:`delta_scores`), δ's error carried."""
    v, d = _aligned(values, deltas)
    delta = POINTS * float(d.mean())
    c, extras = accuracy_case(v, ABOVE_ZERO, f"{quantity}; δ = {delta:.3g} points", n_test,
                              level=level)
    return c, {**extras, "delta": delta, "sense": "gain",
               **size_against_delta(v, d, n_test, level=level)}


def shortfall_case(values: np.ndarray, deltas: np.ndarray, quantity: str, n_test: int, *,
                   level: float = CONFIDENCE) -> tuple[Case, dict[str, Any]]:
    """A shortfall in test accuracy that must stay below δ (the one equivalence claim): the
    case is ``shortfall - δ`` per seed (and test image), δ's own error carried, against the
    band ``(-inf, 0]``: confirmed when its interval lies below 0, refuted above; the shortfall
    itself beside it."""
    v, d = _aligned(values, deltas)
    delta = POINTS * float(d.mean())
    own, _ = accuracy_case(v, (None, 0.0), quantity, n_test, level=level)
    c, extras = accuracy_case(v - d, (None, 0.0), f"{quantity} − δ (δ = {delta:.3g} points, "
                              "its error carried)", n_test, level=level, bounds=None,
                              caveat=own.caveat)
    return c, {**extras, "delta": delta, "sense": "shortfall",
               "shortfall": own.measured, "shortfall_interval": own.interval}


def direction(c: Case | Claim | Sequence[float]) -> str:
    """The sign verdict of an interval (a case's, a claim's, or ``[low, high]``) against 0:
    ``higher`` when it lies above 0, ``lower`` when below, else ``cannot tell``
    (:data:`DIRECTIONS`)."""
    lo, hi = c if isinstance(c, (list, tuple)) else c.interval
    return DIRECTIONS[0] if lo > 0 else DIRECTIONS[1] if hi < 0 else DIRECTIONS[2]


def verdicts_by_setting(res: DistillResults, claims: list[Claim]) -> list[dict[str, Any]]:
    """Per claim, its verdict restricted to each setting's cases (the claim's own rule: every
    case, or some case for :data:`SOME_IDS`): the settings read apart. A setting below the
    accuracy gate is "not judged" for the accuracy claims (:func:`accuracy_gate`)."""
    gate = not_judged(res)
    rows = []
    for c in claims:
        by = {s: [] for s in res.settings}
        for d in c.details:
            if not d.get("beside"):
                by[setting_of(d["case"], res.settings)].append(d["verdict"])
        row = {"claim": c.id, "verdict": c.verdict}
        for s, vs in by.items():
            row[s] = ("not judged" if not vs and c.id in ACCURACY_IDS and s in gate else
                      None if not vs else some_verdict(vs) if c.id in SOME_IDS
                      else combine_all(vs))
        rows.append(row)
    return rows


def delta_rows(claims: list[Claim], at: Callable[[float], list[Claim]]) -> list[dict[str, Any]]:
    """Every accuracy case of ``claims``: its measured value and interval (points), δ, its
    verdict, and what δ decides at ``delta / 2``, ``delta`` and ``2 delta``, where ``at(scale)``
    gives the claims judged with δ times ``scale``: a directional case's size (its verdict does
    not depend on δ), the shortfall case's verdict (Holm's decision included)."""
    scaled = {s: {(c.id, d["case"]): d for c in at(s) for d in c.details} for s in (0.5, 2.0)}

    def read(d: dict[str, Any]) -> str:
        return d["verdict"] if d.get("sense") == "shortfall" else d.get("size", SIZES[2])
    return [dict(claim=c.id, case=d["case"], measured=d["measured"], interval=d["interval"],
                 delta=d["delta"], sense=d.get("sense", "gain"), verdict=d["verdict"],
                 size=d.get("size", ""), half=read(scaled[0.5][c.id, d["case"]]), at=read(d),
                 double=read(scaled[2.0][c.id, d["case"]]))
            for c in claims for d in c.details if d.get("delta") is not None]
