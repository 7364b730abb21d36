"""Section 5's accuracy verdicts (chapter ``sec5_distillation``): a test-accuracy gain over
seeds judged against the smallest gain worth having, ``delta``, fixed here before measuring
(:func:`dsmlib.foundation.claims.gain_verdict`: confirmed when the interval lies above 0 and
reaches past ``delta``, refuted when it lies below ``delta``), the verdicts at ``delta / 2`` and
``2 delta`` beside it, the rule of claims that hold if *some* case holds, and every claim read
apart in each setting.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..foundation.claims import (CONFIDENCE, Case, Claim, band_gap, case, combine_all, from_case,
                                 gain_verdict, parse_band)
from .sec5_distillation import DistillResults
from .sec5_readouts import setting_of

__all__ = ["STRICT", "DELTA_FRACTION", "ACCURACY_IDS", "SOME_IDS", "smallest_gain", "seed_case",
           "gain_case", "some_case", "verdicts_by_setting", "delta_rows"]

STRICT = 1e-12
# The smallest test-accuracy gain worth having, as a fraction of the teacher's test error in the
# setting: a student must remove a tenth of its teacher's mistakes to be worth a second training
# run of the teacher's length. Fixed before any measurement; never tuned to a result.
DELTA_FRACTION = 0.1
ACCURACY_IDS = ("fig1.noisy_beats_teacher", "fig1.noisy_beats_noiseless",
                "fig1.some_student_beats_teacher", "fig1.validation_selection_beats_average",
                "fig2.swap_flatter_and_better")
SOME_IDS = ("fig1.some_student_beats_teacher",)   # decided by the "some case" rule


def smallest_gain(res: DistillResults, setting: str) -> float:
    """``delta``: :data:`DELTA_FRACTION` of the teachers' mean test error in ``setting`` (at
    least :data:`STRICT`, so that a teacher at 100 % still leaves a band)."""
    err = 1.0 - float(res.teacher(setting).final["test_acc"].mean())
    return max(DELTA_FRACTION * err, STRICT)


def seed_case(values: np.ndarray, band, quantity: str, *, level: float = CONFIDENCE) -> Case:
    """Mean over seeds with its Student-t interval (seeds are independent replicates)."""
    v = np.asarray(values, dtype=float)
    return case(paper=0.0, measured=float(v.mean()), se=float(v.std(ddof=1) / math.sqrt(v.size)),
                band=band, quantity=quantity, dof=v.size - 1, level=level)


def gain_case(values: np.ndarray, delta: float, quantity: str, *,
              level: float = CONFIDENCE) -> tuple[Case, dict[str, Any]]:
    """A test-accuracy gain over seeds judged by :func:`gain_verdict` against ``delta`` (its band
    is ``[delta, inf)``), and the row extras: ``delta`` and the verdicts at ``delta / 2`` and
    ``2 delta``."""
    c = seed_case(values, (delta, None), f"{quantity}; δ = {100 * delta:.3g} points",
                  level=level)
    c.verdict = gain_verdict(c.interval, delta)
    return c, {"delta": delta, "verdicts_at": {"δ/2": gain_verdict(c.interval, delta / 2),
                                               "2δ": gain_verdict(c.interval, 2 * delta)}}


def _depth(c: Case) -> float:
    """How far the interval lies inside the band (its distance to the nearer end)."""
    lo, hi = parse_band(c.band)
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
    overall = ("confirmed" if "confirmed" in vs else "refuted" if set(vs) == {"refuted"}
               else "inconclusive")
    pool = [(k, c) for k, c in cases.items() if c.verdict == overall]
    key, head = (max(pool, key=lambda kc: _depth(kc[1])) if overall == "confirmed"
                 else min(pool, key=lambda kc: band_gap(kc[1])))
    details = [{"case": k, "paper": c.paper, "measured": c.measured, "interval": c.interval,
                "band": c.band, "verdict": c.verdict, "se": c.se, **(extras or {}).get(k, {})}
               for k, c in cases.items()]
    head = Case(**{**head.__dict__, "verdict": overall,
                   "quantity": f"{head.quantity} (deciding case: {key})"})
    return from_case(id, statement, head, note=note, details=details, scope=scope,
                     condition=condition)


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
            if not vs:
                row[s] = None
            elif c.id in SOME_IDS:
                row[s] = ("confirmed" if "confirmed" in vs else
                          "refuted" if set(vs) == {"refuted"} else "inconclusive")
            else:
                row[s] = combine_all(vs)
        rows.append(row)
    return rows


def delta_rows(claims: list[Claim]) -> list[dict[str, Any]]:
    """Every accuracy case judged against a smallest useful gain: its measured gain and
    interval, ``delta``, and its verdicts at ``delta / 2``, ``delta`` and ``2 delta``."""
    return [dict(claim=c.id, case=d["case"], measured=d["measured"], interval=d["interval"],
                 delta=d["delta"], half=d["verdicts_at"]["δ/2"], at=d["verdict"],
                 double=d["verdicts_at"]["2δ"])
            for c in claims for d in c.details if d.get("delta") is not None]
