"""The Section 5 page's opening (chapter ``sec5_distillation``): its finding in two sentences
and its short summary, both computed from an execution's claims, so that the page says what was
measured, on which network and data, and what was decided, in the numbers shown below it.
"""
from __future__ import annotations

from typing import Any, Sequence

from . import registry as R
from .claims import heading_row, swap_parts
from .gains import GATE_IMAGES, baseline, not_judged
from .results import DistillResults

__all__ = ["VERDICT_ORDER", "accuracy_reading", "sources_text",
           "source_of_gain", "finding", "in_short"]

VERDICT_ORDER = ("confirmed", "refuted", "inconclusive")


def _points(x: float) -> str:
    """A gain in points of accuracy, signed: ``+0.39``, ``−1.59``."""
    return f"{x:+.2f}".replace("-", "−")


def _points_interval(iv: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:.2f}".replace("-", "−") for v in iv) + "]"


def _claim(claims: Sequence[Any], cid: str) -> Any | None:
    return next((c for c in claims if c.id == cid), None)


def accuracy_reading(claim: Any) -> str:
    """An accuracy claim's value as the page's opening quotes it: its verdict (a directional
    claim's is its direction), then the gain (or the shortfall less δ) in points with its 99 %
    interval, δ of its headline case and the gain's size against δ, and the headline case
    where the claim has several in a setting, e.g. ``inconclusive (+0.42 points [−0.53,
    1.37], δ = 1.12, size not decided; case: vs noiseless student)``."""
    row = heading_row(claim) or {}
    shortfall = row.get("sense") == "shortfall"
    delta = f", δ = {row['delta']:.2f}" if row.get("delta") is not None else ""
    way = f", {claim.size.split(' (')[0]}" if claim.size else ""
    case = row.get("case", "")
    where = f"; case: {case.split(': ', 1)[1]}" if ": " in case else ""
    return (f"{claim.verdict} ({'shortfall − δ ' if shortfall else ''}{_points(claim.measured)} "
            f"points {_points_interval(claim.interval)}{delta}{way}{where})")


def _setting_words(res: DistillResults, setting: str) -> str:
    """``digits, 50 images (10 seeds judged, teachers at 88.66 % test accuracy)``."""
    acc = 100 * float(res.teacher(setting).final["test_acc"].mean())
    return f"{setting} ({res.n_seeds(setting)} seeds judged, teachers at {acc:.2f} % test accuracy)"


def _row_text(r: dict[str, Any]) -> str:
    return (f"{_points(r['measured'])} points {_points_interval(r['interval'])} "
            f"({r['verdict']}, {r['size']})")


def sources_text(rows: Sequence[dict[str, Any]]) -> str:
    """One sentence on a setting's rows of the decomposition table (training, distillation and
    noise apart): each decided row with its value, interval and size, the undecided ones
    counted (their values are in the table), then what the verdicts say
    (:func:`source_of_gain`)."""
    decided = [r for r in rows if r["verdict"] in ("confirmed", "refuted")]
    parts = [f"{r['comparison']}: {_row_text(r)}" for r in decided]
    rest = len(rows) - len(decided)
    if not decided:
        parts.append(f"none of its {rest} rows is decided at these seeds")
    elif rest:
        parts.append(f"the other {rest} row{'s' if rest != 1 else ''} undecided at these seeds")
    return "; ".join(parts) + f"; so {source_of_gain(rows)}"


def source_of_gain(rows: Sequence[dict[str, Any]]) -> str:
    """Where a setting's gain over the teacher comes from, read off its rows of the
    decomposition table (:func:`dsmlib.chapters.sec5_distillation.claims.distillation_rows`), each by its
    verdict, which is its direction: more training (the continued teacher over the teacher),
    distillation (a noiseless student over the teacher or the continued teacher), noise (the
    selected noisy student over a noiseless one), and the selected noisy student over the
    teacher. It never speaks of a gain the table does not show."""
    def where(kind: str, verdict: str) -> list[str]:
        return [r["comparison"].split(" − ")[0] for r in rows
                if r["measures"] == kind and r["verdict"] == verdict]
    longer = ("training longer alone raises test accuracy (the continued teacher beats the "
              "teacher); " if where("more training", "confirmed") else "")
    if where("noise", "confirmed"):
        return longer + "noise adds test accuracy beyond what distillation gives"
    noise = (", and the noise costs accuracy" if where("noise", "refuted") else
             ", and what the noise adds cannot be told at these seeds")
    distilled = where("distillation", "confirmed")
    base = "the continued teacher" if any(r["measures"] == "more training" for r in rows) \
        else "the teacher"
    if distilled and where("both", "confirmed"):
        return (longer + "the selected noisy student's gain over its teacher comes from "
                f"distillation itself (the {' and the '.join(distilled)} also beat the "
                f"teacher){noise}")
    if distilled:
        return (longer + f"distillation itself raises test accuracy (the "
                f"{' and the '.join(distilled)} beat{'s' if len(distilled) == 1 else ''} "
                f"{base}){noise}"
                + ("; the selected noisy student's own gain over its teacher is not established"
                   if any(r["measures"] == "both" for r in rows) else ""))
    if where("noise", "refuted"):
        return longer + "the noise costs test accuracy, and distillation gains nothing measurable"
    return longer + ("neither distillation nor the noise changes test accuracy measurably at "
                     "these seeds")


def finding(res: DistillResults, claims: Sequence[Any],
            rows: Sequence[dict[str, Any]] = ()) -> str:
    """The page's finding, from this execution's claims: what was measured (network, data,
    settings and seeds), whether label noise lowers G(θ) against its control, and, in the
    settings whose accuracy is judged (the others named as not judged, with why), the selected
    noisy student's gain over its teacher and over the noiseless student (verdict, points, 99 %
    interval, δ, direction), and where the gain comes from (``rows``: the
    distillation-against-noise table, :func:`dsmlib.chapters.sec5_distillation.claims.distillation_rows`)."""
    words = [_setting_words(res, s) for s in res.settings]
    settings = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    lowers = [c for c in (_claim(claims, R.NOISE_LOWERS_GRADNORM_SIGMA2),
                          _claim(claims, R.NOISE_LOWERS_GRADNORM_P)) if c is not None]
    verdicts = {c.verdict for c in lowers}
    if len(verdicts) == 1:
        g_text = f"{verdicts.pop()} for Gaussian noise and for the swap"
    else:
        g_text = ", ".join(f"{c.verdict} for "
                           f"{'Gaussian noise' if c.id == R.NOISE_LOWERS_GRADNORM_SIGMA2 else 'the swap'}"
                           for c in lowers)
    first = (f"Measured with ResNet-{res.grid.depth} teachers and students in {settings}: "
             "that label noise lowers the "
             "students' gradient norm G(θ) below that of its control (a student trained "
             f"without noise on the noisy targets' average) is {g_text}.")
    gate = not_judged(res)
    skipped = " ".join(f"{s[0].upper()}{s[1:]} is {why}." for s, why in gate.items())
    teacher = _claim(claims, R.NOISY_BEATS_TEACHER)
    if teacher is None or not teacher.details:
        return f"{first} No setting is judged for accuracy. {skipped}".strip()
    judged = [s for s in res.settings if s not in gate]
    fit = ("every teacher fits its training images" if all(
        baseline(res, s) is res.teacher(s) for s in judged) else
        "the teachers are judged as trained on as long as a student (the continued teacher)")
    base = (heading_row(teacher) or {}).get("baseline", "teacher")
    second = (f"Accuracy is judged on {' and '.join(judged)}, where {fit} and the teachers "
              f"miss at least {GATE_IMAGES} test images: the gain of the noisy student that "
              f"the validation set picks over the {base} is {accuracy_reading(teacher)}")
    itself = [d for d in teacher.details if d.get("beside")]
    if itself:
        second += ("; over the teacher itself " + ", ".join(
            f"{d['verdict']} ({_points(d['measured'])} points "
            f"{_points_interval(d['interval'])})" for d in itself))
    noiseless = _claim(claims, R.NOISY_BEATS_NOISELESS)
    if noiseless is not None:
        second += f", and over the noiseless students {accuracy_reading(noiseless)}"
    text = f"{first} {second}."
    for s in judged:
        mine = [r for r in rows if r["setting"] == s]
        if mine:
            text += (f" Training, distillation and noise apart ({s}; the table under *Distillation "
                     f"or noise?*): {sources_text(mine)}.")
    return f"{text} {skipped}".strip()


def in_short(claims: Sequence[Any]) -> list[str]:
    """The page's summary: one line per verdict (confirmed, refuted, inconclusive), each naming
    its claims in a few words (:data:`~.registry.SHORT`), an accuracy claim with its gain in points, 99 %
    interval, δ and direction (:func:`accuracy_reading`). Each claim's full statement, note and
    cases are in the claims table and the ledger."""
    lines = []
    for v in VERDICT_ORDER:
        these = [c for c in claims if c.verdict == v]
        if not these:
            continue
        parts = []
        for c in these:
            text = R.SHORT.get(c.id, c.statement.split(". ")[0])
            if c.id == R.SWAP_FLATTER_AND_BETTER:
                text += f" ({swap_parts(c)})"
            elif c.unit == "points":
                text += " (" + accuracy_reading(c).split(" (", 1)[1].replace("; case:", ", case:")
            parts.append(text)
        lines.append(f"**{v.capitalize()}** ({len(these)} of {len(claims)}): "
                     + "; ".join(parts) + ".")
    return lines
