"""Section 5's accuracy verdicts (chapter ``sec5_distillation``): one rule, written once.

**The rule.** A test-accuracy gain is judged against the smallest gain worth having, ``delta``
(:data:`DELTA_FRACTION` of the teachers' test error in the setting, fixed here before
measuring), as a band ``[delta, inf)``: *confirmed* when its 99 % interval lies above ``delta``,
*refuted* when it lies below ``delta`` (no gain of useful size, whatever its sign),
*inconclusive* when it contains ``delta`` (:data:`ACCURACY_RULE`). A shortfall that must stay
small (the validation-selected student's regret) is the same rule mirrored, the band
``(-inf, delta]``. It is the ledger's ordinary band verdict, so a case's verdict alone, its
p-value, Holm's decision inside a claim (:func:`dsmlib.foundation.claims.every_case`), the
verdicts at ``delta / 2`` and ``2 delta`` (:func:`delta_rows`, each the whole claim re-judged)
and the seeds that would decide it all follow from one band.

**The error of a case** has two sources: the seeds (training randomness) and the test images
(every seed is scored on the same ones). Where the runs recorded which test images they got
right, a gain's interval is the two-level one of the crossed seeds x images table
(:func:`dsmlib.foundation.stats.crossed_mean`), so a verdict speaks for digits, not for these
images; otherwise it is over seeds alone, and the case says that it speaks for these test
images only (:func:`population`).

**No decision from a degenerate interval**: a case needs at least :data:`MIN_SEEDS` seeds and,
for an accuracy, a standard error of at least one test image's worth (``1 / n_test``), or it is
inconclusive with the reason stated (:func:`degenerate`).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..foundation.claims import CONFIDENCE, Case, Claim, band_gap, case, combine_all, from_case
from ..foundation.stats import crossed_mean
from ..models.datasets import OFFICIAL_TEST
from .sec5_distillation import Cell, DistillResults
from .sec5_readouts import setting_of

__all__ = ["STRICT", "DELTA_FRACTION", "MIN_SEEDS", "FIT_ACCURACY", "ACCURACY_RULE",
           "ACCURACY_IDS", "SOME_IDS", "smallest_gain", "teachers_fit", "judged_settings",
           "unfit_caveat", "test_images", "scores", "difference", "degenerate", "population", "seed_case",
           "accuracy_case", "gain_case", "shortfall_case", "some_case", "verdicts_by_setting",
           "delta_rows"]

STRICT = 1e-12
# The smallest test-accuracy gain worth having, as a fraction of the teacher's test error in the
# setting: a student must remove a tenth of its teacher's mistakes to be worth a second training
# run of the teacher's length. Fixed before any measurement; never tuned to a result.
DELTA_FRACTION = 0.1
# Fewer seeds than this decide nothing: two seeds can tie, giving an interval of zero width.
MIN_SEEDS = 3
# A teacher "fits its training images" at this training accuracy or above. Students are judged
# on accuracy only against teachers that fit: one that does not is limited by its training, and
# a student that trains on beats it for that reason alone.
FIT_ACCURACY = 0.99
#: The accuracy rule, as the page and the claims state it.
ACCURACY_RULE = ("A gain is confirmed when its 99 % interval lies above δ, the smallest gain "
                 "worth having, refuted when it lies below δ (no gain of useful size, whatever "
                 "its sign), and inconclusive when it contains δ.")
ACCURACY_IDS = ("fig1.noisy_beats_teacher", "fig1.noisy_beats_noiseless",
                "fig1.some_student_beats_teacher", "fig1.validation_selection_near_best",
                "fig2.swap_flatter_and_better")
SOME_IDS = ("fig1.some_student_beats_teacher",)   # decided by the "some case" rule


def smallest_gain(res: DistillResults, setting: str, scale: float = 1.0) -> float:
    """``delta``: :data:`DELTA_FRACTION` of the mean test error of the teachers judged in
    ``setting`` (at least :data:`STRICT`, so that a teacher at 100 % still leaves a band), times
    ``scale`` (the δ table's δ/2 and 2δ)."""
    err = 1.0 - float(res.teacher(setting).final["test_acc"].mean())
    return scale * max(DELTA_FRACTION * err, STRICT)


def teachers_fit(res: DistillResults, setting: str) -> bool:
    """Whether every teacher judged in ``setting`` reaches :data:`FIT_ACCURACY` on its own
    training images (measured on all of them after the last epoch)."""
    return bool(np.all(res.teacher(setting).final["train_acc"] >= FIT_ACCURACY))


def judged_settings(res: DistillResults) -> list[str]:
    """The settings whose accuracy cases are judged: those whose teachers fit their training
    images (:func:`teachers_fit`). If none does, every setting, each case then carrying
    :func:`unfit_caveat`."""
    fit = [s for s in res.settings if teachers_fit(res, s)]
    return fit or list(res.settings)


def unfit_caveat(res: DistillResults, setting: str) -> str:
    """Why a setting's accuracy cases cannot decide ("" when its teachers fit)."""
    if teachers_fit(res, setting):
        return ""
    low = float(res.teacher(setting).final["train_acc"].min())
    return (f"its teachers do not all fit their training images (the lowest reaches "
            f"{100 * low:.1f} %, below {100 * FIT_ACCURACY:g} %): a student would beat such a "
            "teacher by training longer alone")


def test_images(res: DistillResults, setting: str) -> int:
    """The test images every seed of ``setting`` is scored on."""
    t = res.teacher(setting)
    if t.test_correct is not None:
        return int(t.test_correct.shape[1])
    return OFFICIAL_TEST[res.setting(setting).dataset]


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


def degenerate(n_seeds: int, se: float, n_test: int | None = None) -> str:
    """Why a case's interval cannot decide ("" when it can): fewer than :data:`MIN_SEEDS`
    seeds, or, for an accuracy scored on ``n_test`` images, a standard error below one test
    image's worth (ties among the seeds, not a measured spread)."""
    if n_seeds < MIN_SEEDS:
        return (f"{n_seeds} seeds: a case needs at least {MIN_SEEDS} (two seeds can tie, and "
                "their interval then has zero width)")
    if n_test is not None and se < 1.0 / n_test:
        return (f"its standard error {100 * se:.3g} points is below one test image's worth "
                f"({100 / n_test:.3g} points of {n_test} images): the seeds tie rather than "
                "measure a spread")
    return ""


def population(values: np.ndarray, n_test: int) -> str:
    """What an accuracy case's interval speaks for."""
    if values.ndim == 2:
        return "seeds and test digits: the interval carries both sources of error"
    return (f"these {n_test} test images only: the interval is over seeds alone, without the "
            "test set's own sampling error (the runs did not record per-image results)")


def seed_case(values: np.ndarray, band, quantity: str, *, level: float = CONFIDENCE) -> Case:
    """Mean over seeds with its Student-t interval (seeds are independent replicates);
    inconclusive with fewer than :data:`MIN_SEEDS` seeds."""
    v = np.asarray(values, dtype=float)
    se = float(v.std(ddof=1) / math.sqrt(v.size))
    return case(paper=0.0, measured=float(v.mean()), se=se, band=band, quantity=quantity,
                dof=v.size - 1, level=level, caveat=degenerate(v.size, se))


def accuracy_case(values: np.ndarray, band, quantity: str, n_test: int, *,
                  level: float = CONFIDENCE, caveat: str = "") -> tuple[Case, dict[str, Any]]:
    """A difference of test accuracies judged against ``band``: over seeds and test images
    (a seeds x images table, :func:`dsmlib.foundation.stats.crossed_mean`) or over seeds
    alone (a vector), with :func:`degenerate`'s caveat; and the row extras: each source's share
    of the standard error and the population the interval speaks for."""
    v = np.asarray(values, dtype=float)
    if v.ndim == 2:
        cm = crossed_mean(v)      # Satterthwaite's dof, rounded down (the wider interval)
        measured, se, dof = cm.mean, cm.se, max(1, math.floor(cm.dof))
        parts = {"se_seeds": math.sqrt(cm.unit_var), "se_images": math.sqrt(cm.item_var)}
    else:
        measured, se, dof = float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)), v.size - 1
        parts = {"se_seeds": se, "se_images": None}
    c = case(paper=0.0, measured=measured, se=se, band=band, quantity=quantity, dof=dof,
             level=level, caveat=caveat or degenerate(v.shape[0], se, n_test), bounds=(-1, 1))
    return c, {**parts, "seeds": int(v.shape[0]), "dof": float(dof),
               "population": population(v, n_test)}


def gain_case(values: np.ndarray, delta: float, quantity: str, n_test: int, *,
              level: float = CONFIDENCE, caveat: str = "") -> tuple[Case, dict[str, Any]]:
    """A test-accuracy gain judged by the rule (:data:`ACCURACY_RULE`): the band
    ``[delta, inf)``."""
    c, extras = accuracy_case(values, (delta, None), f"{quantity}; δ = {100 * delta:.3g} points",
                              n_test, level=level, caveat=caveat)
    return c, {**extras, "delta": delta, "sense": "gain"}


def shortfall_case(values: np.ndarray, delta: float, quantity: str, n_test: int, *,
                   level: float = CONFIDENCE, caveat: str = "") -> tuple[Case, dict[str, Any]]:
    """A shortfall in test accuracy that must stay below ``delta``: the rule mirrored, the band
    ``(-inf, delta]``."""
    c, extras = accuracy_case(values, (None, delta), f"{quantity}; δ = {100 * delta:.3g} points",
                              n_test, level=level, caveat=caveat)
    return c, {**extras, "delta": delta, "sense": "shortfall"}


def _depth(c: Case) -> float:
    """How far the interval lies inside the band (its distance to the nearer end)."""
    lo, hi = (-math.inf if b is None else b for b in c.band)
    return min(c.interval[0] - lo, hi - c.interval[1])


def some_case(id: str, statement: str, cases: dict[str, Case], *, note: str = "",
              scope: str | None = None, condition: str = "",
              extras: dict[str, dict[str, Any]] | None = None) -> Claim:
    """A claim that holds if *some* case holds: confirmed if any case is confirmed, refuted if
    every case is refuted, else inconclusive. The cases' intervals must form a joint box
    (:func:`joint_level`), or "some" would be confirmed by chance among many. The headline is the
    deciding case: the confirmed one furthest inside its band, else the one closest to it."""
    if not cases:
        raise ValueError("cases must not be empty")
    vs = [c.verdict for c in cases.values()]
    overall = some_verdict(vs)
    pool = [(k, c) for k, c in cases.items() if c.verdict == overall]
    key, head = (max(pool, key=lambda kc: _depth(kc[1])) if overall == "confirmed"
                 else min(pool, key=lambda kc: band_gap(kc[1])))
    details = [{"case": k, "paper": c.paper, "measured": c.measured, "interval": c.interval,
                "band": c.band, "verdict": c.verdict, "se": c.se,
                **({"caveat": c.caveat} if c.caveat else {}),
                **({"bounds": c.bounds} if c.bounds is not None else {}),
                **(extras or {}).get(k, {})}
               for k, c in cases.items()]
    head = Case(**{**head.__dict__, "verdict": overall,
                   "quantity": f"{head.quantity} (deciding case: {key})"})
    return from_case(id, statement, head, note=note, details=details, scope=scope,
                     condition=condition)


def some_verdict(verdicts: Sequence[str]) -> str:
    """The "some case holds" rule: confirmed if any case is, refuted if all are."""
    vs = list(verdicts)
    return ("confirmed" if "confirmed" in vs else "refuted" if set(vs) == {"refuted"}
            else "inconclusive")


def verdicts_by_setting(res: DistillResults, claims: list[Claim]) -> list[dict[str, Any]]:
    """Per claim, its verdict restricted to each setting's cases (the claim's own rule: every
    case, or some case for :data:`SOME_IDS`): the full data and the headroom setting read apart."""
    rows = []
    for c in claims:
        by = {s: [] for s in res.settings}
        for d in c.details:
            by[setting_of(d["case"], res.settings)].append(d["verdict"])
        row = {"claim": c.id, "verdict": c.verdict}
        for s, vs in by.items():
            row[s] = (None if not vs else some_verdict(vs) if c.id in SOME_IDS
                      else combine_all(vs))
        rows.append(row)
    return rows


def delta_rows(claims: list[Claim], at: Callable[[float], list[Claim]]) -> list[dict[str, Any]]:
    """Every accuracy case of ``claims``: its measured value and interval, ``delta``, and its
    verdict in its claim at ``delta / 2``, ``delta`` and ``2 delta``, where ``at(scale)`` gives
    the claims judged with ``delta`` times ``scale`` (the same rule, Holm's decision included:
    the δ column is the claims' own verdict)."""
    scaled = {s: {(c.id, d["case"]): d["verdict"] for c in at(s) for d in c.details}
              for s in (0.5, 2.0)}
    return [dict(claim=c.id, case=d["case"], measured=d["measured"], interval=d["interval"],
                 delta=d["delta"], sense=d.get("sense", "gain"),
                 half=scaled[0.5][c.id, d["case"]], at=d["verdict"],
                 double=scaled[2.0][c.id, d["case"]])
            for c in claims for d in c.details if d.get("delta") is not None]
