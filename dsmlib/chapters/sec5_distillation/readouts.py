"""What the Section 5 page reads off a grid's results besides its claims (chapter
``sec5_distillation``): the teachers' accuracy against the training-set size and the headroom
setting's place on it, the noise in the teachers' logit units, the headroom each setting
leaves a student, and the seeds that would decide each case.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ...foundation.claims import CONFIDENCE, interval, joint_level, quantile, verdict
from ...foundation.power import POWER, resolvable, units_to_decide
from .results import DistillResults, setting_of
from .gains import (FIT_ACCURACY, MIN_SEEDS, POINTS, accuracy_gate, teachers_fit, test_images,
                    unfit_teachers)
from ...models.sec5_distillation.run_config import Noise
from . import cpu_budget, gpu_cost, registry
from .grid import KINDS

__all__ = ["TARGET_ACCURACY", "SIZE_RULES", "size_rule", "train_range", "fit_words",
           "teacher_curve", "curve_lines", "noise_rows", "noise_lines", "accuracy_headroom",
           "seeds_to_decide"]

# The headroom setting's target: a teacher test accuracy in this range, read off the
# curve of teacher accuracy against training-set size (:func:`teacher_curve`).
TARGET_ACCURACY = (0.85, 0.93)

#: The rule that fixed a data-limited setting's size before its runs, per profile whose grid
#: reads none off a curve (the profiles' names: ``dsmlib.book.profiles``, a layer above).
SIZE_RULES = {
    "cpu-cifar10": (
        "fixed by the CPU budget's rule (`cpu_budget.largest_size`: the largest multiple of "
        f"{cpu_budget.SIZE_STEP} images at which {cpu_budget.SEEDS} seeds of a teacher and its "
        f"students train {cpu_budget.EPOCHS} epochs in {cpu_budget.BUDGET_S / 3600:g} h at the "
        "rates a pilot measured on a 2-core CPU)"),
    "cpu-cifar10-fit": (
        f"fixed at the cpu-cifar10 profile's {cpu_budget.FIT_IMAGES:,} images "
        "(`cpu_budget.FIT_IMAGES`), its epochs by the fit rule (`cpu_budget.fit_epochs`: "
        f"the most epochs of {', '.join(map(str, cpu_budget.FIT_EPOCHS))} whose "
        f"{cpu_budget.SEEDS}-seed grid trains in {cpu_budget.FIT_BUDGET_S / 3600:g} h at a "
        "pilot's rates on a 2-core CPU and at which the pilot's teacher fits its images)"),
    "gpu-cifar10": (
        "fixed by the GPU budget's rule (`gpu_cost.largest_size`: the largest multiple of "
        f"{gpu_cost.SIZE_STEP} images at which 10 seeds of a teacher and its students train in "
        f"{gpu_cost.PROFILE_BUDGET_S:g} s on one GPU at its measured rates)"),
}


def size_rule(res: DistillResults, profile: str | None = None) -> str:
    """How the grid's data-limited (headroom) setting got its size, in words that follow "its
    size was": read off the
    teachers' accuracy curve where the grid has one (the size whose teachers sit in
    :data:`TARGET_ACCURACY`), else the rule of ``profile`` (:data:`SIZE_RULES`), else the
    chapter's parameters; "" where the grid has no data-limited setting."""
    if not any(s.headroom for s in res.grid.settings):
        return ""
    if res.grid.curve_sizes:
        lo, hi = (100 * a for a in TARGET_ACCURACY)
        return ("read off the teachers' accuracy against the training-set size (the figure "
                f"under *The settings and their teachers*): a size whose teachers sit at "
                f"{lo:g}–{hi:g} % test accuracy")
    return SIZE_RULES.get(profile or "", "set in the chapter's parameters (`headroom_size`)")


def train_range(res: DistillResults, setting: str) -> tuple[float, float]:
    """The lowest and highest training accuracy (percent) of the teachers of ``setting``,
    measured on all their training images after the last epoch."""
    acc = POINTS * np.asarray(res.teacher(setting).final["train_acc"], dtype=float)
    return float(acc.min()), float(acc.max())


def fit_words(res: DistillResults, setting: str) -> str:
    """Whether the teachers of ``setting`` fit their training images (every one at
    :data:`~dsmlib.chapters.sec5_distillation.gains.FIT_ACCURACY` or above), with the range
    they reach, e.g. ``its teachers do not fit their training images: they reach 57.6–63.3 %
    of them, below the 99 % that fits``."""
    lo, hi = train_range(res, setting)
    span = f"{lo:.1f} %" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}–{hi:.1f} %"
    if teachers_fit(res, setting):
        return f"its teachers fit their training images, {span} of them"
    below = unfit_teachers(res, setting)
    if len(below) < res.n_seeds(setting):       # some fit: name the others, none dropped
        named = ", ".join(f"seed {t['seed']} ({t['train_acc']:.1f} % of them, "
                          f"{t['test_acc']:.2f} % test)" for t in below)
        return (f"its teachers do not all fit their training images: {named} "
                f"{'falls' if len(below) == 1 else 'fall'} below the {100 * FIT_ACCURACY:g} % "
                f"that fits (reported, not dropped; the others reach {span})")
    return (f"its teachers do not fit their training images: they reach {span} of them, below "
            f"the {100 * FIT_ACCURACY:g} % that fits")


def teacher_curve(res: DistillResults) -> list[dict[str, Any]]:
    """The teachers' test accuracy (percent) against the training-set size, per data set: the
    mean over seeds with its Student-t interval at the ledger's level, cut to [0, 100] (with
    fewer than :data:`~dsmlib.chapters.sec5_distillation.gains.MIN_SEEDS` seeds no interval: two seeds give
    a t quantile of 63.7 and a bar across the whole axis, so the figure shows each seed's point
    instead), the seeds' own accuracies, the mean training accuracy (a teacher that fits its
    images is data-limited, not step-limited), and whether the mean lies in
    :data:`TARGET_ACCURACY`."""
    out = []
    for r in res.curve:
        acc = POINTS * np.asarray(r["test_acc"], dtype=float)
        mean = float(acc.mean())
        iv = ([max(0.0, v) if i == 0 else min(POINTS, v) for i, v in enumerate(
                  interval(mean, float(acc.std(ddof=1) / math.sqrt(acc.size)), dof=acc.size - 1))]
              if acc.size >= MIN_SEEDS else [math.nan, math.nan])
        out.append(dict(dataset=r["dataset"], n_train=r["n_train"], train_limit=r["train_limit"],
                        seeds=r["seeds"], mean=mean, interval=iv, points=acc.tolist(),
                        setting=r["setting"],
                        train_acc=POINTS * float(np.mean(r["train_acc"])),
                        in_target=TARGET_ACCURACY[0] <= mean / POINTS <= TARGET_ACCURACY[1]))
    return out


def curve_lines(res: DistillResults, profile: str | None = None) -> list[str]:
    """What the curve says about the grid's settings, per data set: each setting's teachers
    (mean test accuracy, interval where there are enough seeds, training accuracy, whether they
    fit: :func:`fit_words`) and whether the headroom setting's lie in :data:`TARGET_ACCURACY`
    -- said plainly when they do not; a size not read off a curve names the rule that fixed it
    (:func:`size_rule`, under ``profile``)."""
    lo, hi = (100 * a for a in TARGET_ACCURACY)
    lines = []
    for r in teacher_curve(res):
        if r["setting"] is None:
            continue
        iv = ("" if math.isnan(r["interval"][0]) else
              " [" + ", ".join(f"{v:.2f}" for v in r["interval"]) + "]")
        text = (f"{r['dataset']}, {r['setting']} setting ({r['n_train']:,} training images, "
                f"{r['seeds']} seeds): the teachers reach {r['mean']:.2f} % test accuracy"
                f"{iv} and {r['train_acc']:.1f} % on their training images on average; "
                f"{_fit_of(res, r)}")
        if r["setting"] == "headroom" and not res.grid.curve_sizes:
            text += (f"; its size was {size_rule(res, profile)} before the runs, not read off "
                     "a curve (this grid has none).")
        elif r["setting"] == "headroom":
            text += (f"; inside the target of {lo:g}–{hi:g} %." if r["in_target"] else
                     f"; OUTSIDE the target of {lo:g}–{hi:g} %: choose another headroom_size "
                     "from the curve.")
        else:
            text += f", {100 - r['mean']:.2f} points from a perfect score."
        lines.append(text)
    return lines


def _fit_of(res: DistillResults, row: dict[str, Any]) -> str:
    """:func:`fit_words` for the setting of a curve row (its data set and role)."""
    s = next(s for s in res.grid.settings if s.dataset == row["dataset"] and s.role == row["setting"])
    return fit_words(res, s.name)


def noise_rows(res: DistillResults) -> list[dict[str, Any]]:
    """The noise in the teacher's logit units, per setting and noisy level: the teachers' logit
    scale ``s^2`` (the variance of a logit vector about its own mean, on the training images;
    mean over seeds), the noise's variance per logit around its mean target (``sigma^2``, or
    the swap's, which depends on the logits) and their ratio (mean over seeds of the per-seed
    ratio), with the student's mean test accuracy beside its teacher's."""
    rows = []
    for s in res.settings:
        teacher_acc = float(res.teacher(s).final["test_acc"].mean())
        for kind in KINDS:
            for c in res.noisy(s, kind):
                lv, nv = c.final["logit_var"], c.final["noise_var"]
                rows.append(dict(setting=s, kind=kind, level=c.level, name=c.name,
                                 logit_var=float(lv.mean()), noise_var=float(nv.mean()),
                                 ratio=float((nv / lv).mean()),
                                 test_acc=float(c.final["test_acc"].mean()),
                                 teacher_acc=teacher_acc))
    return rows


def noise_lines(res: DistillResults) -> list[str]:
    """Per setting, the teachers' logit scale and the range its Gaussian levels span in those
    units (:func:`noise_rows`), and, per data set with a headroom setting, the ratio of the two
    settings' scales: the factor by which the headroom grid's σ² should differ from the full
    one's for the same noise in the teacher's units."""
    rows = noise_rows(res)
    lines, scale = [], {}
    for s in res.grid.settings:
        g = [r for r in rows if r["setting"] == s.name and r["kind"] == Noise.GAUSSIAN]
        if not g:
            continue
        scale[s.name] = g[0]["logit_var"]
        levels = ", ".join(f"{r['level']:g}" for r in g)
        lines.append(f"{s.name}: the teachers' logit scale is s² = {g[0]['logit_var']:.3g}; its "
                     f"σ² grid ({levels}) spans {g[0]['ratio']:.3g} to {g[-1]['ratio']:.3g} in "
                     "those units.")
    for d in res.grid.datasets:
        full = next((s for s in res.grid.settings if s.dataset == d and not s.headroom), None)
        head = next((s for s in res.grid.settings if s.dataset == d and s.headroom), None)
        if full and head and full.name in scale and head.name in scale:
            ratio = scale[head.name] / scale[full.name]
            text = (f"{d}: the headroom teachers' logit scale is {ratio:.2f} times the full "
                    f"data's, so the same noise in the teachers' units takes a σ² {ratio:.2f} "
                    "times the full data's")
            grid = [h / f for h, f in zip(head.sigma2s, full.sigma2s)]
            if len(head.sigma2s) == len(full.sigma2s) and max(grid) - min(grid) < 1e-9 * max(grid):
                share = grid[0] / ratio
                text += (f"; the headroom grid's σ² are the full grid's times {grid[0]:g}, a "
                         "factor fixed in the chapter's parameters before the runs (a teacher "
                         "of fewer images was expected to have smaller logits), not measured; "
                         f"measured, the headroom setting's noise is {share:.2f} times the "
                         "full data's in its teachers' units"
                         + (" (weaker)" if share < 1 else " (stronger)" if share > 1 else ""))
            lines.append(text + ".")
    return lines


def accuracy_headroom(res: DistillResults, claims: Sequence[Any]) -> list[str]:
    """Why the accuracy claims can stay undecided, per setting: the teachers' mean test
    accuracy, the headroom it leaves a student, the smallest useful gain the verdicts use, and
    the half-width of the ledger's interval of the gain of the validation-selected noisy student
    over its teacher (the case of ``fig1.noisy_beats_teacher`` among ``claims``); a setting
    below the accuracy gate says so (:func:`dsmlib.chapters.sec5_distillation.gains.accuracy_gate`)."""
    claim = next((c for c in claims if c.id == registry.NOISY_BEATS_TEACHER), None)
    lines = []
    for s in res.settings:
        acc = POINTS * float(res.teacher(s).final["test_acc"].mean())
        gate = accuracy_gate(res, s)
        row = None if claim is None else next(
            (x for x in claim.details if not x.get("beside")
             and setting_of(x["case"], res.settings) == s), None)
        if gate or row is None:
            lines.append(f"{s}: the teachers reach {acc:.2f} % test accuracy on average "
                         f"({test_images(res, s)} test images); {gate or 'not judged'}.")
            continue
        lo, hi = row["interval"]
        half, room = (hi - lo) / 2, POINTS - acc
        verdict_text = ("so even a student that closed the whole gap would stay unconfirmed at "
                        f"this spread with {res.n_seeds(s)} seeds" if half >= room else
                        "so a gain as large as the headroom could be resolved")
        lines.append(f"{s}: the teachers reach {acc:.2f} % test accuracy on average, "
                     f"leaving {room:.2f} points to gain; the smallest useful gain is "
                     f"δ = {row['delta']:.2f} points; the {100 * CONFIDENCE:g} % interval of the "
                     f"selected student's gain is ±{half:.2f} points wide, {verdict_text}.")
    return lines


def _plan(d: dict[str, Any], measured: float, n: int, k: int, power: float) -> int | None:
    """The seeds :func:`dsmlib.foundation.power.units_to_decide` projects for the case ``d``
    were its value ``measured`` (planned at the family-wise level of ``k`` cases)."""
    dof = d.get("dof", n - 1)
    q = quantile(dof, joint_level(max(k, 1)))
    plan = [measured - q * d["se"], measured + q * d["se"]]
    floor = min(d.get("se_images") or 0.0, d["se"])
    if d["se"] <= 0 or not resolvable(measured, d["band"]):
        return None
    return units_to_decide(measured, d["se"], plan, d["band"], n, power=power, floor_se=floor,
                           dof=dof)


def _towards(d: dict[str, Any], value: float) -> str | None:
    """The verdict a plan at ``value`` aims for (None: on the band's edge, nothing)."""
    if not resolvable(value, d["band"]):
        return None
    return verdict([value, value], d["band"])


def seeds_to_decide(res: DistillResults, claims: Sequence[Any], *, power: float = POWER,
                    every: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every undecided case of ``claims``, and every case of the claims in ``every`` (decided or
    not): its measured value, the half-width of its interval and the seeds that would decide it
    against its own band with probability ``power``, were the measured value and the seeds'
    spread the truth (:func:`dsmlib.foundation.power.units_to_decide`; None: more than
    ``MAX_UNITS``, or a value on the band's edge; a case whose test images' own error
    (``se_images``) keeps it undecided at any number of seeds gets None too), beside the range
    of that figure over the measured value ± one standard error (``seeds_range``: the value one
    SE further from the band's edge, then one SE nearer it) with the verdict each end plans for
    (``towards_range``: an end past the band's edge plans the other verdict), and the verdict
    they would reach (``towards``: confirmed if the value lies in the band, else refuted). A value within the
    claim's resolution of a band edge (:func:`dsmlib.foundation.power.resolvable`) is a rounding
    residue: ``resolved`` is False and neither seeds nor a verdict are projected. The plan is
    made at the family-wise level of a claim over its ``k`` judged cases: Bonferroni's
    ``1 - alpha/k`` per case, which Holm's rule never needs to exceed. Only the cases a claim
    judges are here (a setting below the accuracy gate has none), and a tie is planned like any
    case: no rule sets a case aside for a small standard error. A planning figure, not
    evidence."""
    rows = []
    for c in claims:
        if c.verdict != "inconclusive" and c.id not in every:
            continue
        k = sum("band" in d for d in c.details)
        for d in c.details:
            if d.get("se") is None or (d.get("verdict") != "inconclusive" and c.id not in every):
                continue
            n = res.n_seeds(setting_of(d["case"], res.settings))
            lo, hi = d["interval"]
            resolved = resolvable(d["measured"], d["band"])
            edges = [e for e in d["band"] if e is not None]
            edge = min(edges, key=lambda e: abs(d["measured"] - e)) if edges else 0.0
            away = 1.0 if d["measured"] >= edge else -1.0     # one SE further from the edge
            rows.append(dict(claim=c.id, case=d["case"], measured=d["measured"],
                             half_width=(hi - lo) / 2, verdict=d["verdict"],
                             delta=d.get("delta"), resolved=resolved,
                             towards=verdict([d["measured"]] * 2, d["band"]) if resolved else None,
                             seeds=_plan(d, d["measured"], n, k, power) if resolved else None,
                             seeds_range=[_plan(d, d["measured"] + away * d["se"], n, k, power),
                                          _plan(d, d["measured"] - away * d["se"], n, k, power)]
                             if resolved and d["se"] > 0 else [None, None],
                             towards_range=[_towards(d, d["measured"] + away * d["se"]),
                                            _towards(d, d["measured"] - away * d["se"])]
                             if resolved and d["se"] > 0 else [None, None]))
    return rows
