"""Section 5 on CIFAR-10 in its two regimes side by side (book layer, issue 67, item 3): teachers
that do not fit their training images (``cpu-cifar10``: the paper's crops and flips, 30
epochs) and teachers that do, as the paper's well-trained teacher does (``cpu-cifar10-fit``: no
crops or flips, the fit rule's epochs). One row per claim of Figures 1 and 2, one column per
regime headed by its teachers' training and test accuracy, and one sentence, from the two
executions' claims, on what changes when the teacher fits.

A regime is read off an execution's results (:func:`dsmlib.book.references.lead.regime`): its
data and whether its teachers fit; the table needs one fresh-or-stale execution of each CIFAR-10
regime and is empty otherwise.
"""
from __future__ import annotations

import html
from typing import Any, Sequence

from ...figures.tables import data_table
from .contrast import Scale
from .lead import answer_id, claim_cell, first_screen_html, headline, regime, verdict_cell

__all__ = ["DATA", "REGIMES", "regime_scales", "regime_heading", "change_sentence",
           "regimes_html", "opening_html"]

#: The data set whose two regimes are set side by side: the paper's.
DATA = "cifar10"
#: Each regime by whether its teachers fit, with its name on the page.
REGIMES = {False: "teachers that do not fit", True: "teachers that fit"}


def regime_scales(scales: Sequence[Scale]) -> dict[bool, Scale]:
    """Per regime (whether the teachers fit), the first of ``scales`` on :data:`DATA` in it,
    a fresh one before a stale one."""
    out: dict[bool, Scale] = {}
    for sc in sorted(scales, key=lambda sc: not sc.fresh):
        data, fit = regime(sc)
        if data == DATA and fit in REGIMES and fit not in out:
            out[fit] = sc
    return out


def _setting(sc: Scale) -> dict[str, Any]:
    return next(iter((sc.extra.get("settings") or {}).values()), {})


def regime_heading(sc: Scale, fit: bool) -> str:
    """A regime's column heading: its name, its procedure (crops and flips or none, the
    teachers' epochs) and its teachers' training and test accuracy, then the execution, e.g.
    ``teachers that fit: no crops or flips, 100 epochs; teachers 100.0 % train, 44.17 % test
    (cpu-cifar10-fit reference)``."""
    s = _setting(sc)
    crops = "crops and flips" if s.get("augment") == "yes" else "no crops or flips"
    epochs = sc.extra.get("teacher_epochs")
    train, test = s.get("teacher_train_acc"), s.get("teacher_acc")
    teachers = (f"; teachers {train:.1f} % train, {test:.2f} % test"
                if train is not None and test is not None else "")
    return (f"{REGIMES[fit]}: {crops}" + (f", {epochs} epochs" if epochs else "")
            + f"{teachers} ({sc.label})")


def _ids(pair: dict[bool, Scale]) -> list[str]:
    """Every claim either regime measured, in the order of the underfit one's results (then the
    fit one's)."""
    return list(dict.fromkeys(c["id"] for sc in (pair[False], pair[True])
                              for c in sc.doc.get("claims", [])))


def _unit(pair: dict[bool, Scale], cid: str) -> str:
    return next((c.get("unit") for sc in pair.values() for c in [sc.claim(cid)]
                 if c and c.get("unit")), "") or ""


def _accuracy(pair: dict[bool, Scale], cid: str) -> bool:
    """Whether claim ``cid`` is about test accuracy: its unit is points of accuracy."""
    return _unit(pair, cid) == "points"


def _pts(x: float) -> str:
    return f"{x:+.2f}".replace("-", "−")


def _reading(sc: Scale, cid: str) -> str:
    """A claim's verdict and value at one scale, with what it compares with (its heading row's
    ``baseline``): e.g. ``refuted, −7.02 points [−8.16, −5.88] against the continued
    teacher``."""
    c = sc.claim(cid)
    if c is None:
        return "not measured"
    base = (headline(c) or {}).get("baseline")
    against = f" against the {base}" if base else ""
    lo, hi = c["interval"]
    return f"{c['verdict']}, {_pts(c['measured'])} points [{_pts(lo)}, {_pts(hi)}]{against}"


def change_sentence(pair: dict[bool, Scale]) -> str:
    """What changes when the teacher fits, from the two executions' claims: the selected noisy
    student against its teacher (or, where teachers do not fit, the continued teacher) and
    against the noiseless students in each regime, and how many of the G claims keep their
    verdict. "" without both regimes."""
    if set(pair) != set(REGIMES):
        return ""
    under, fit = pair[False], pair[True]
    g_ids = [cid for cid in _ids(pair) if not _accuracy(pair, cid)]
    same = sum(1 for cid in g_ids if under.claim(cid) and fit.claim(cid)
               and under.claim(cid)["verdict"] == fit.claim(cid)["verdict"])
    both = sum(1 for cid in g_ids if under.claim(cid) and fit.claim(cid))
    t, n = answer_id(fit, "baseline"), answer_id(fit, "noiseless")
    return (f"When the teachers fit their training images, the validation-selected noisy student "
            f"against its teacher is {_reading(fit, t)}, where with teachers that do not fit it "
            f"is {_reading(under, t)}; against the noiseless students it is "
            f"{_reading(fit, n)}, where it was {_reading(under, n)}; {same} of the {both} "
            "claims on G(θ) and the losses keep their verdict.")


def regimes_html(scales: Sequence[Scale]) -> str:
    """The two CIFAR-10 regimes side by side (HTML), folded under a one-line summary: a lead
    paragraph with :func:`change_sentence`, then one row per claim of Figures 1 and 2 (in the
    registry's order, each in its few words with its id) and one column per regime
    (:func:`regime_heading`); "" unless both regimes were measured."""
    pair = regime_scales(scales)
    if set(pair) != set(REGIMES):
        return ""
    order = [pair[False], pair[True]]
    head = ["Claim"] + [html.escape(regime_heading(sc, fit))
                        for fit, sc in zip((False, True), order)]
    short = {**(pair[True].extra.get("short") or {}), **(pair[False].extra.get("short") or {})}
    rows = [[claim_cell(cid, short.get(cid, cid), _unit(pair, cid))]
            + [verdict_cell(sc.claim(cid)) for sc in order] for cid in _ids(pair)]
    lead = ("<p class='regimes-lead'>The same grid "
            "on the paper's data, once with the paper's crops and flips, whose teachers do not "
            "fit their training images in the epochs two CPU cores allow, and once without "
            "them, whose teachers do, as the paper's well-trained teacher does (a departure "
            "from its procedure, made for that reason). "
            f"{html.escape(change_sentence(pair))}</p>")
    # folded: the first screen above already holds both regimes' columns, and the answer says
    # what each found; this is the same evidence set regime against regime, for who opens it
    return ("<details class='regimes'><summary><strong>CIFAR-10 in two regimes</strong>: what "
            "changes when the teachers fit their training images, claim by claim</summary>"
            + lead + data_table(head, rows, table_class="cases first-screen cards regimes")
            + "</details>")


def opening_html(scales: Sequence[Scale]) -> str:
    """A chapter page's opening across scales: the first screen
    (:func:`dsmlib.book.references.lead.first_screen_html`), then, for Section 5 with both
    CIFAR-10 regimes measured, the two side by side (:func:`regimes_html`)."""
    first = first_screen_html(scales)
    return first + regimes_html(scales) if first else ""
