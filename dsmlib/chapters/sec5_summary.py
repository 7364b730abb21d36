"""The Section 5 page's opening (chapter ``sec5_distillation``): its finding in two sentences
and its short summary, both computed from an execution's claims, so that the page says what was
measured, on which network and data, and what was decided, in the numbers shown below it.
"""
from __future__ import annotations

from typing import Any, Sequence

from .sec5_distillation import DistillResults
from .sec5_gains import teachers_fit
from .sec5_readouts import setting_of

__all__ = ["SHORT", "VERDICT_ORDER", "accuracy_reading", "finding", "in_short"]

#: A few words per claim for the page's summary (the ledger keeps each claim's full statement).
SHORT = {
    "fig1.noise_lowers_gradnorm_sigma2": "Gaussian noise lowers G(θ) below the noiseless "
                                         "student's",
    "fig1.noise_lowers_gradnorm_p": "the swap lowers G(θ) below its control's",
    "fig1.gradnorm_falls_with_sigma2": "G(θ) falls at every step up the σ² grid",
    "fig1.gradnorm_vs_p_with_shrinkage": "G(θ) falls at every step up the p grid (noise and "
                                         "shrinkage together)",
    "fig1.swap_excess_falls_with_p": "the swap's G(θ) falls further below its control's at "
                                     "every step up the p grid",
    "fig1.gradnorm_below_control_over_epochs": "noise keeps G(θ) below its control's over the "
                                               "epochs",
    "fig1.student_below_teacher": "every student's G(θ) lies below its teacher's",
    "fig1.noisy_beats_teacher": "the validation-selected noisy student beats its teacher",
    "fig1.noisy_beats_noiseless": "the selected noisy student beats the noiseless students",
    "fig1.some_student_beats_teacher": "some noisy student beats its teacher",
    "fig1.validation_selection_near_best": "validation selection comes within δ of the best "
                                           "noise in hindsight",
    "fig2.train_loss_to_zero": "every training loss goes to nearly zero",
    "fig2.swap_flatter_and_better": "the swap's minima are flatter and generalise better",
}
VERDICT_ORDER = ("confirmed", "refuted", "inconclusive")


def _points(x: float) -> str:
    """A gain in points of accuracy, signed: ``+0.39``, ``−1.59``."""
    return f"{100 * x:+.2f}".replace("-", "−")


def _points_interval(iv: Sequence[float]) -> str:
    return "[" + ", ".join(f"{100 * v:.2f}".replace("-", "−") for v in iv) + "]"


def _claim(claims: Sequence[Any], cid: str) -> Any | None:
    return next((c for c in claims if c.id == cid), None)


def _deltas(claim: Any) -> str:
    """δ of an accuracy claim's cases, in points (one value, or the range over settings)."""
    ds = sorted({round(100 * d["delta"], 2) for d in claim.details if d.get("delta") is not None})
    if not ds:
        return ""
    return f"δ = {ds[0]:.2f}" if len(ds) == 1 else f"δ = {ds[0]:.2f}–{ds[-1]:.2f}"


def accuracy_reading(claim: Any) -> str:
    """An accuracy claim's value as the page's opening quotes it: its verdict, then the gain
    (or the shortfall) in points with its 99 % interval and δ, e.g. ``inconclusive (+0.39
    points [−0.72, 1.50], δ = 1.13)``."""
    shortfall = any(d.get("sense") == "shortfall" for d in claim.details)
    delta = _deltas(claim)
    return (f"{claim.verdict} ({'shortfall ' if shortfall else ''}{_points(claim.measured)} "
            f"points {_points_interval(claim.interval)}{', ' + delta if delta else ''})")


def _setting_words(res: DistillResults, setting: str) -> str:
    """``digits, 50 images (10 seeds judged, teachers at 88.66 % test accuracy)``."""
    acc = 100 * float(res.teacher(setting).final["test_acc"].mean())
    return f"{setting} ({res.n_seeds(setting)} seeds judged, teachers at {acc:.2f} % test accuracy)"


def finding(res: DistillResults, claims: Sequence[Any]) -> str:
    """The page's finding in two sentences, from this execution's claims: what was measured
    (network, data, settings and seeds), whether label noise lowers G(θ) against its control,
    and, in the settings whose accuracy is judged, the selected noisy student's gain over its
    teacher and over the noiseless student (verdict, points, 99 % interval, δ)."""
    words = [_setting_words(res, s) for s in res.settings]
    settings = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    lowers = [c for c in (_claim(claims, "fig1.noise_lowers_gradnorm_sigma2"),
                          _claim(claims, "fig1.noise_lowers_gradnorm_p")) if c is not None]
    verdicts = {c.verdict for c in lowers}
    if len(verdicts) == 1:
        g_text = f"{verdicts.pop()} for Gaussian noise and for the swap"
    else:
        g_text = ", ".join(f"{c.verdict} for "
                           f"{'Gaussian noise' if c.id.endswith('sigma2') else 'the swap'}"
                           for c in lowers)
    first = (f"Measured with ResNet-{res.grid.depth} teachers and students in {settings}: "
             "that label noise lowers the "
             "students' gradient norm G(θ) below that of a student trained without noise on "
             f"the same mean target is {g_text}.")
    teacher = _claim(claims, "fig1.noisy_beats_teacher")
    if teacher is None or not teacher.details:
        return first
    judged = sorted({setting_of(d["case"], res.settings) for d in teacher.details},
                    key=list(res.settings).index)
    fit = all(teachers_fit(res, s) for s in judged)
    where = " and ".join(judged)
    second = (f"Accuracy is judged on {where}, "
              + ("where every teacher fits its training images" if fit else
                 "although not every teacher fits its training images")
              + f": the validation-selected noisy student's gain over its teacher is "
              f"{accuracy_reading(teacher)}")
    noiseless = _claim(claims, "fig1.noisy_beats_noiseless")
    if noiseless is not None:
        second += f", and over the noiseless students {accuracy_reading(noiseless)}"
    return f"{first} {second}."


def in_short(claims: Sequence[Any]) -> list[str]:
    """The page's summary: one line per verdict (confirmed, refuted, inconclusive), each naming
    its claims in a few words (:data:`SHORT`), an accuracy claim with its gain in points and
    99 % interval (:func:`accuracy_reading`). Each claim's full statement, note and cases are in
    the claims table and the ledger."""
    lines = []
    for v in VERDICT_ORDER:
        these = [c for c in claims if c.verdict == v]
        if not these:
            continue
        parts = []
        for c in these:
            text = SHORT.get(c.id, c.statement.split(". ")[0])
            if any(d.get("delta") is not None for d in c.details):
                shortfall = any(d.get("sense") == "shortfall" for d in c.details)
                text += (f" ({'shortfall ' if shortfall else ''}{_points(c.measured)} points "
                         f"{_points_interval(c.interval)}, {_deltas(c)})")
            parts.append(text)
        lines.append(f"**{v.capitalize()}** ({len(these)} of {len(claims)}): "
                     + "; ".join(parts) + ".")
    return lines
