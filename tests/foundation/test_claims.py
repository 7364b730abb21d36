"""Tests of dsmlib.foundation.claims: the verdict logic, the claim builders and the results files."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as st

from dsmlib.foundation import claims as C

Z99 = st.norm.ppf(0.995)
BAND = (0.9, 1.1)


@pytest.mark.parametrize("interval, band, expected", [
    ((0.9, 1.1), (0.8, 1.25), "confirmed"),
    ((0.5, 0.7), (0.8, 1.25), "refuted"),
    ((1.3, 1.4), (0.8, 1.25), "refuted"),
    ((0.7, 0.9), (0.8, 1.25), "inconclusive"),
    ((0.0, 0.05), (None, 0.1), "confirmed"),
    ((-0.01, 0.2), (None, 0.1), "inconclusive"),
    ((2.0, 3.0), (1.0, None), "confirmed"),
    ((0.1, 0.2), (1.0, math.inf), "refuted"),
])
def test_verdict(interval, band, expected):
    assert C.verdict(interval, band) == expected


def test_verdict_rejects_unordered_input():
    with pytest.raises(ValueError, match="ordered"):
        C.verdict((2.0, 1.0), (0.0, 3.0))
    with pytest.raises(ValueError, match="band must be a pair"):
        C.verdict((0.0, 1.0), (0.0,))


def test_combine_all():
    assert C.combine_all(["confirmed", "confirmed"]) == "confirmed"
    assert C.combine_all(["confirmed", "inconclusive"]) == "inconclusive"
    assert C.combine_all(["inconclusive", "refuted", "confirmed"]) == "refuted"
    with pytest.raises(ValueError, match="verdicts must not be empty"):
        C.combine_all([])
    with pytest.raises(ValueError, match="verdicts must be among"):
        C.combine_all(["likely"])


# -- the builders: every one reaches every verdict, with the interval it states --------------
# (measured, se) around the paper's value 1 with band 1 +- 0.1: well inside and tight,
# far outside, and centred but too uncertain to decide.
SYNTHETIC = {"confirmed": (1.0, 0.01), "refuted": (2.0, 0.01), "inconclusive": (1.0, 0.5)}


@pytest.mark.parametrize("expected", list(SYNTHETIC))
@pytest.mark.parametrize("dof", [math.inf, 7])
def test_case_and_measure_reach_each_verdict(expected, dof):
    measured, se = SYNTHETIC[expected]
    q = st.t.ppf(0.995, dof) if math.isfinite(dof) else Z99
    c = C.case(paper=1.0, measured=measured, se=se, band=BAND, dof=dof)
    m = C.measure("x.y", "s", paper=1.0, measured=measured, se=se, band=BAND, dof=dof)
    for got in (c, m):
        assert got.verdict == expected
        assert got.interval == pytest.approx([measured - q * se, measured + q * se], rel=1e-7)
        assert got.se == se and got.band == list(BAND)


@pytest.mark.parametrize("expected", list(SYNTHETIC))
def test_ratio_case_reaches_each_verdict(expected):
    """The ratio estimate / predicted, with se scaled the same way (predicted = -4: the sign
    of the prediction must not flip the interval)."""
    measured, se = SYNTHETIC[expected]
    predicted = -4.0
    c = C.ratio_case(measured * predicted, se * abs(predicted), predicted, band=BAND)
    assert c.verdict == expected and c.paper == 1.0
    assert c.measured == pytest.approx(measured) and c.se == pytest.approx(se)
    assert c.interval == pytest.approx([measured - Z99 * se, measured + Z99 * se], rel=1e-7)
    with pytest.raises(ValueError, match="predicted must be non-zero"):
        C.ratio_case(1.0, 0.1, 0.0, band=BAND)


@pytest.mark.parametrize("expected", list(SYNTHETIC))
def test_every_case_reaches_each_verdict(expected):
    """Any refuted case refutes; all confirmed confirms; otherwise inconclusive. The headline
    is the deciding case: the refuted case furthest from its band, else the first of the
    combined verdict."""
    ok = C.case(paper=1, measured=1.0, se=0.01, band=BAND)
    near = C.case(paper=1, measured=0.5, se=0.01, band=BAND)
    far = C.case(paper=1, measured=0.1, se=0.01, band=BAND)
    unsure = C.case(paper=1, measured=1.0, se=0.5, band=BAND)
    cases = {"confirmed": {"a": ok, "b": ok},
             "refuted": {"a": ok, "b": near, "c": far, "d": unsure},
             "inconclusive": {"a": ok, "b": unsure}}[expected]
    claim = C.every_case("id", "st", cases)
    assert claim.verdict == expected
    assert [d["case"] for d in claim.details] == list(cases)
    assert [d["verdict"] for d in claim.details] == [c.verdict for c in cases.values()]
    head = {"confirmed": ok, "refuted": far, "inconclusive": unsure}[expected]
    assert claim.measured == head.measured and claim.interval == head.interval
    with pytest.raises(ValueError, match="cases must not be empty"):
        C.every_case("id", "st", {})


@pytest.mark.parametrize("expected, power, y_rel_se", [
    ("confirmed", 1.0, 1e-3), ("refuted", 2.0, 1e-3), ("inconclusive", 1.0, 0.3)])
def test_slope_claim_reaches_each_verdict(expected, power, y_rel_se):
    """An exact power law y = 3 x^power (no lack of fit) with relative standard errors
    ``y_rel_se``: the fitted slope is ``power``; its interval is slope +- z se with
    se = 1/sqrt(Sxx) of the precision-weighted fit."""
    x = np.array([1.0, 2.0, 4.0, 8.0])
    y = 3 * x ** power
    claim = C.slope_claim("id", "st", x, y, y_rel_se * y, paper=1.0, band=BAND)
    assert claim.verdict == expected
    assert claim.measured == pytest.approx(power, rel=1e-12)
    lx = np.log(x)
    se = y_rel_se / np.sqrt(np.sum((lx - lx.mean()) ** 2))
    assert claim.se == pytest.approx(se, rel=1e-9)
    lo, hi = claim.interval
    assert (lo + hi) / 2 == pytest.approx(power, rel=1e-12) and hi - lo >= 2 * Z99 * se * (1 - 1e-9)


def test_measure_rejects_nan_and_negative_se():
    with pytest.raises(ValueError, match="measured must be finite"):
        C.measure("x", "s", paper=1.0, measured=float("nan"), se=0.1, band=(0, 1))
    with pytest.raises(ValueError, match="se must be >= 0"):
        C.case(paper=1.0, measured=1.0, se=-0.1, band=(0, 2))
    with pytest.raises(ValueError, match="source"):
        C.case(paper=1.0, measured=1.0, se=0.1, band=(0, 2), source="blog")
    with pytest.raises(ValueError, match="scope"):
        C.measure("x", "s", paper=1.0, measured=1.0, se=0.1, band=(0, 2), scope="vibes")


def test_interval_is_the_cases_interval():
    """One function builds every interval: Student-t with the given dof, normal if infinite."""
    from scipy import stats as st
    assert C.interval(2.0, 0.1) == pytest.approx([2.0 - Z99 * 0.1, 2.0 + Z99 * 0.1], rel=1e-7)
    t4 = st.t.ppf(0.995, 4)
    assert C.interval(2.0, 0.1, dof=4) == pytest.approx([2.0 - t4 * 0.1, 2.0 + t4 * 0.1])
    c = C.case(paper=2.0, measured=2.0, se=0.1, band=(1.8, None), dof=4)
    assert c.interval == C.interval(2.0, 0.1, dof=4)


def test_every_case_headlines_the_case_nearest_to_changing_the_verdict():
    """Issue 18: all confirmed -> the case whose interval lies nearest a band edge (not the
    first case); refuted -> the refuted case furthest from its band (the verdict changes only
    when it does). Issue 31: inconclusive -> the undecided case that keeps it so, reaching
    furthest beyond the band (tests/foundation/test_verdict_rules.py)."""
    band = (1.8, None)
    first = C.case(paper=2, measured=2.787, se=0.078, band=band)     # far inside the band
    near = C.case(paper=2, measured=2.309, se=0.129, band=band)      # 0.18 inside the band
    claim = C.every_case("id", "st", {"first": first, "near": near})
    assert claim.verdict == "confirmed" and claim.measured == near.measured
    assert claim.case == "near" and "deciding" not in claim.quantity     # the case is data
    assert C.verdict_margin(near) == pytest.approx(near.interval[0] - 1.8)
    # Inconclusive: b reaches 0.25 beyond the band, a 0.2.
    a = C.case(paper=1, measured=0.9, se=0.3 / Z99, band=(0.8, 1.2))     # [0.6, 1.2]: 0.2 out
    b = C.case(paper=1, measured=1.25, se=0.2 / Z99, band=(0.8, 1.2))    # [1.05, 1.45]
    assert (a.verdict, b.verdict) == ("inconclusive", "inconclusive")
    assert C.verdict_margin(a) == pytest.approx(0.2) and C.verdict_margin(b) == pytest.approx(0.15)
    assert C.every_case("id", "st", {"a": a, "b": b}).measured == b.measured
    # Refuted: the furthest refuted case, as before.
    r1 = C.case(paper=1, measured=0.5, se=0.01, band=(0.8, 1.2))
    r2 = C.case(paper=1, measured=0.1, se=0.01, band=(0.8, 1.2))
    assert C.every_case("id", "st", {"r1": r1, "r2": r2, "ok": first}).measured == 0.1
    assert C.deciding_case({"r1": r1, "r2": r2})[0] == "r2"
    # A caveat pins a case to inconclusive, but never heads a claim while a case that can
    # decide is there (issue 62: the one headline rule); alone, it does.
    cav = C.case(paper=1, measured=1.0, se=0.001, band=(0.8, 1.2), caveat="heavy tails")
    claim = C.every_case("id", "st", {"a": a, "cav": cav})
    assert claim.verdict == "inconclusive" and claim.measured == a.measured
    assert C.every_case("id", "st", {"cav": cav}).measured == cav.measured


def test_a_decided_claim_is_headed_by_a_case_with_its_verdict():
    """Issue 62's one rule, on its edge: a refuted claim whose only refuted case has a
    zero-width interval (it cannot decide a headline of its own) is still headed by that case,
    never by a confirmed one; each case's unit is kept in its row."""
    bad = C.case(paper=1, measured=0.1, se=0.0, band=(0.8, 1.2), unit="ln ratio")
    ok = C.case(paper=1, measured=1.0, se=0.01, band=(0.8, 1.2), unit="ln ratio")
    claim = C.every_case("x", "s", {"ok": ok, "bad": bad})
    assert claim.verdict == "refuted" and claim.case == "bad"
    assert all(d["unit"] == "ln ratio" for d in claim.details)
