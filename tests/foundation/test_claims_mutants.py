"""Every field a claim builder of dsmlib.foundation.claims hands to the ledger, checked whole:
the mutation run (`make mutants`) showed that a builder could drop its ``source`` (a book claim
counted as the paper's), its ``exact`` value, ``scope``, ``condition``, ``note`` or a details
column without any test noticing. All deterministic."""
from __future__ import annotations

import math
from dataclasses import asdict

import pytest
from scipy import stats as st

from dsmlib.foundation import claims as C
from dsmlib.foundation.stats import loglog_fit

Z99 = st.norm.isf(0.005)


def test_measure_forwards_every_field():
    c = C.measure("a.b", "A statement.", paper=2.0, measured=2.1, se=0.1, band=(1.5, None),
                  quantity="ratio", source="book", note="A note.", dof=9,
                  details=[{"case": "x"}], exact=2.05, scope="setting",
                  condition="if so", caveat="heavy tails", kind="identity", bounds=(0, 2.2),
                  unit="points")
    q = st.t.ppf(0.995, 9)
    assert asdict(c) == {
        "id": "a.b", "statement": "A statement.", "paper": 2.0, "measured": 2.1,
        "interval": pytest.approx([2.1 - q * 0.1, 2.2]), "band": [1.5, None],
        "verdict": "inconclusive", "quantity": "ratio", "source": "book", "se": 0.1,
        "note": "A note. heavy tails", "details": [{"case": "x"}], "exact": 2.05,
        "scope": "setting", "condition": "if so", "kind": "identity", "p_value": 1.0,
        "bounds": [0.0, 2.2], "unit": "points", "size": "", "case": ""}


def test_measure_defaults():
    c = C.measure("a", "s", paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1))
    assert (c.quantity, c.source, c.note, c.details, c.exact, c.scope, c.condition, c.kind) == \
        ("", "paper", "", [], None, None, "", "empirical")
    assert c.verdict == "confirmed"
    assert c.interval == pytest.approx([1 - Z99 * 0.01, 1 + Z99 * 0.01])


def test_from_case_adds_the_caveat_once():
    k = C.case(paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1), caveat="no fourth moment")
    assert C.from_case("i", "s", k).note == "no fourth moment"
    assert C.from_case("i", "s", k, note="Mind: no fourth moment.").note == "Mind: no fourth moment."
    plain = C.case(paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1))
    assert C.from_case("i", "s", plain).note == ""
    assert C.from_case("i", "s", plain, note="n").note == "n"
    assert C.from_case("i", "s", plain).condition == ""
    with pytest.raises(ValueError, match="^scope must be one of"):
        C.from_case("i", "s", plain, scope="everything")


def test_ratio_case_forwards_every_field():
    r = C.ratio_case(3.0, 0.3, -2.0, band=(-2.0, -1.0), quantity="q", source="book", dof=4,
                     exact=-1.4)
    q = st.t.ppf(0.995, 4)
    assert (r.paper, r.measured, r.se, r.quantity, r.source, r.exact) == \
        (1.0, -1.5, 0.15, "q", "book", -1.4)
    assert r.interval == pytest.approx([-1.5 - q * 0.15, -1.5 + q * 0.15])
    d = C.ratio_case(1.0, 0.1, 1.0, band=(0.5, 2.0))
    assert (d.quantity, d.source, d.exact) == ("", "paper", None)
    with pytest.raises(ValueError, match="^predicted must be non-zero for a ratio"):
        C.ratio_case(1.0, 0.1, 0.0, band=(0.5, 2.0))
    with pytest.raises(ValueError, match="^predicted must be a real number"):
        C.ratio_case(1.0, 0.1, "two", band=(0.5, 2.0))


def _case(measured, band=(0.9, 1.1), **kw):
    return C.case(paper=1.0, measured=measured, se=0.01, band=band, **kw)


def test_every_case_details_note_and_headline():
    cases = {"a": _case(1.0, exact=1.0),
             "b": _case(1.0, caveat="heavy tails"),
             "c": C.measure("m", "s", paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1))}
    claim = C.every_case("x.y", "All hold.", cases, note="N.", scope="reading",
                         condition="cond")
    assert (claim.id, claim.statement, claim.scope, claim.condition) == \
        ("x.y", "All hold.", "reading", "cond")
    assert claim.verdict == "inconclusive"          # the caveat makes b inconclusive
    assert claim.note == "N. Untrustworthy intervals: (b) heavy tails"
    # a caveat case never heads a claim while one that can decide is there (issue 62)
    assert (claim.case, claim.quantity) == ("a", "")
    iv = pytest.approx([1 - Z99 * 0.01, 1 + Z99 * 0.01])
    p = pytest.approx(2 * st.norm.sf(10.0))                 # 0.1 from the edges, se 0.01
    assert claim.details == [
        {"case": "a", "paper": 1.0, "measured": 1.0, "interval": iv, "band": [0.9, 1.1],
         "verdict": "confirmed", "p": p, "exact": 1.0},
        {"case": "b", "paper": 1.0, "measured": 1.0, "interval": iv, "band": [0.9, 1.1],
         "verdict": "inconclusive", "p": 1.0, "caveat": "heavy tails"},
        {"case": "c", "paper": 1.0, "measured": 1.0, "interval": iv, "band": [0.9, 1.1],
         "verdict": "confirmed", "p": p}]
    two = C.every_case("x", "s", {"a": _case(1.0), "b": _case(1.0, caveat="t1"),
                                  "c": _case(1.0, caveat="t2")})
    assert two.note == "Untrustworthy intervals: (b) t1; (c) t2"
    plain = C.every_case("x", "s", {"a": _case(1.0)})
    assert (plain.note, plain.condition, plain.scope) == ("", "", None)
    with pytest.raises(ValueError, match="^cases must not be empty"):
        C.every_case("x", "s", {})


def test_every_case_headline_is_a_claim_when_a_claim_decides():
    """A Claim (no caveat field) can be the deciding case."""
    m = C.measure("m", "s", paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1), source="book",
                  exact=1.0)
    claim = C.every_case("x", "s", {"only": m})
    assert (claim.verdict, claim.source, claim.exact, claim.measured) == \
        ("confirmed", "book", 1.0, 1.0)


def test_every_case_picks_the_deciding_case():
    """Refuted: the case furthest outside its band (not the last key, not the first);
    otherwise the case nearest to changing the verdict (issue 18 item 7), first on a tie."""
    refuted = {"z": _case(1.3), "a": _case(2.0), "m": _case(1.5)}
    claim = C.every_case("x", "s", refuted)
    assert claim.verdict == "refuted" and claim.measured == 2.0
    assert (claim.case, claim.quantity) == ("a", "")
    confirmed = {"a": _case(1.0), "b": _case(1.05, band=(0.0, 10.0))}
    assert C.every_case("x", "s", confirmed).case == "a"
    assert C.every_case("x", "s", confirmed).band == [0.9, 1.1]
    # not refuted: the case nearest its band's edge decides, wherever it stands
    first_wide = {"a": _case(1.05, band=(0.0, 10.0)), "b": _case(1.0)}
    assert C.every_case("x", "s", first_wide).case == "b"
    tie = {"a": _case(1.0), "b": _case(1.0)}
    assert C.every_case("x", "s", tie).case == "a"


def test_slope_claim_defaults_and_note():
    c = C.slope_claim("s", "slope", [1.0, 2.0, 4.0], [1.0, 2.0, 4.0], [0.01, 0.02, 0.04],
                      paper=1.0, band=(0.9, 1.1))
    assert (c.source, c.condition, c.scope, c.exact, c.kind) == ("paper", "", None, None,
                                                                   "empirical")
    assert c.quantity == "(lack of fit p = 1)"
    assert c.note.startswith("Fit: lack of fit χ² = ")
    assert c.verdict == "confirmed" and c.measured == pytest.approx(1.0)
    fit = c.details[-1]
    assert fit["case"] == "fit" and fit["dof"] == 1 and "se_widened" not in fit


def test_joint_level():
    assert C.joint_level(1) == pytest.approx(C.CONFIDENCE)
    assert C.joint_level(4) == pytest.approx(1 - (1 - C.CONFIDENCE) / 4)
    with pytest.raises(ValueError, match="^n_coordinates must be >= 1"):
        C.joint_level(0)


def test_quantile_defaults_to_the_ledger_level_and_normal():
    assert C.quantile() == pytest.approx(Z99, rel=1e-6)
    assert C.quantile(5) == pytest.approx(st.t.ppf(0.995, 5))
    assert C.quantile(math.inf, 0.9) == pytest.approx(st.norm.isf(0.05), rel=1e-6)


@pytest.mark.parametrize("interval, band, expected", [
    ([0.9, 1.1], (0.9, 1.1), "confirmed"),      # touching both edges is inside
    ([0.5, 0.9], (0.9, 1.1), "inconclusive"),   # touching the lower edge is overlap
    ([1.1, 1.5], (0.9, 1.1), "inconclusive"),   # touching the upper edge is overlap
    ([0.0, 0.0], (0.0, 0.0), "confirmed"),      # a degenerate band is allowed
])
def test_verdict_at_the_edges(interval, band, expected):
    assert C.verdict(interval, band) == expected


def test_bad_bands_and_intervals_name_themselves():
    with pytest.raises(ValueError, match="^band must not contain NaN"):
        C.parse_band((math.nan, 1.0))
    with pytest.raises(ValueError, match="^band must not contain NaN"):
        C.parse_band((0.0, math.nan))
    with pytest.raises(ValueError, match="^interval must be finite"):
        C.verdict([0.0, math.inf], (0, 1))
    with pytest.raises(ValueError, match="^verdicts must not be empty"):
        C.combine_all([])
    with pytest.raises(ValueError, match="^se must be a real number"):
        C.case(paper=1.0, measured=1.0, se="x", band=(0, 1))
    with pytest.raises(ValueError, match=r"^source must be one of \['paper', 'book'\]"):
        C.case(paper=1.0, measured=1.0, se=0.1, band=(0, 1), source="mine")


def test_case_forwards_fields_and_opens_band_ends():
    k = C.case(paper=1.0, measured=1.0, se=0.1, band=(None, 2.0), quantity="q", source="book")
    assert (k.band, k.quantity, k.source) == ([None, 2.0], "q", "book")
    assert C.case(paper=1.0, measured=1.0, se=0.1, band=(0.5, math.inf)).band == [0.5, None]
    assert C.case(paper=1.0, measured=1.0, se=0.1, band=(0.5, 2)).quantity == ""


def test_band_gap_measures_from_the_near_edge():
    above = C.case(paper=1.0, measured=1.65, se=0.01, band=(0.9, 1.1))     # [1.62, 1.68]
    assert C.band_gap(above) == pytest.approx(1.65 - Z99 * 0.01 - 1.1)
    below = C.case(paper=1.0, measured=0.5, se=0.01, band=(0.9, 1.1))
    assert C.band_gap(below) == pytest.approx(0.9 - 0.5 - Z99 * 0.01)
    # refuted above the band: the case whose nearest point is furthest decides, not the one
    # with the widest reach
    near = C.case(paper=1.0, measured=1.65, se=0.3, band=(0.9, 1.1))       # [0.88, 2.4]: overlaps
    wide = C.case(paper=1.0, measured=2.0, se=0.3, band=(0.9, 1.1))        # [1.23, 2.77]
    far = C.case(paper=1.0, measured=1.65, se=0.01, band=(0.9, 1.1))       # [1.62, 1.68]
    assert near.verdict == "inconclusive"
    claim = C.every_case("x", "s", {"wide": wide, "far": far})
    assert claim.case == "far"


def test_joint_case_forwards_every_field():
    c = C.joint_case([0.1, -0.2, 0.05], [0.1, 0.1, 0.1], paper=0.0, band=(-1.0, 1.0),
                     quantity="mean", source="book", dof=7, exact=[0.0, -0.1, 0.2],
                     caveat="")
    q = st.t.ppf(1 - (1 - C.CONFIDENCE) / 3 / 2, 7)
    assert c.verdict == "confirmed" and c.source == "book"
    # not refuted: the coordinate reaching furthest from zero is the headline
    assert c.measured == -0.2 and c.exact == -0.1
    assert c.interval == pytest.approx([-0.2 - q * 0.1, -0.2 + q * 0.1])
    assert c.quantity == "mean, coordinate 2 of 3 (joint 99% box)"
    d = C.joint_case([0.1], [0.1], paper=0.0, band=(-1.0, 1.0))
    assert (d.source, d.exact, d.quantity) == ("paper", None, ", coordinate 1 of 1 (joint 99% box)")
    assert d.interval == pytest.approx([0.1 - Z99 * 0.1, 0.1 + Z99 * 0.1])
    cav = C.joint_case([0.1, 0.0], [0.1, 0.1], paper=0.0, band=(-1.0, 1.0), caveat="tails")
    assert cav.verdict == "inconclusive" and cav.caveat == "tails"


def test_joint_case_refuted_headline_is_the_furthest_coordinate():
    """Refuted: the coordinate furthest outside the band decides (by band gap, not by its
    position or by the largest endpoint)."""
    c = C.joint_case([5.0, -1.5, 3.0], [2.0, 0.01, 0.01], paper=0.0, band=(-1.0, 1.0))
    assert c.verdict == "refuted" and c.measured == 3.0
    # the furthest by band gap (4 +- 0.03), not the one reaching furthest (6 +- 4.7)
    c = C.joint_case([4.0, 6.0], [0.01, 1.6], paper=0.0, band=(-1.0, 1.0))
    assert c.verdict == "refuted" and c.measured == 4.0
    # the interval's upper end decides "furthest from zero" when nothing is refuted
    d = C.joint_case([0.3, -0.2], [0.01, 0.2], paper=0.0, band=(-5.0, 5.0))
    assert d.measured == -0.2


def test_joint_case_bad_input():
    with pytest.raises(ValueError, match="^estimates and ses must be non-empty and of the same"):
        C.joint_case([], [], paper=0.0, band=(-1, 1))
    with pytest.raises(ValueError, match="^estimates and ses must be non-empty and of the same"):
        C.joint_case([1.0, 2.0], [0.1], paper=0.0, band=(-1, 1))
    with pytest.raises(ValueError, match="^exact must have one value per coordinate"):
        C.joint_case([1.0, 2.0], [0.1, 0.1], paper=0.0, band=(-1, 1), exact=[0.0])


def test_slope_claim_forwards_every_field_and_never_widens():
    x = [1.0, 2.0, 4.0, 8.0, 16.0]
    y = [1.0, 2.6, 3.6, 9.5, 15.0]                      # not on a line at 1 % errors
    se = [0.01 * v for v in y]
    c = C.slope_claim("s.id", "Slope.", x, y, se, paper=1.0, band=(0.9, 1.1), quantity="q",
                      source="book", note="N.", details=[{"case": "extra"}], exact=1.0,
                      scope="setting", condition="cond", kind="identity")
    fit = loglog_fit(x, y, se)
    assert fit.lack_of_fit
    assert (c.id, c.statement, c.source, c.exact, c.scope, c.condition, c.kind) == \
        ("s.id", "Slope.", "book", 1.0, "setting", "cond", "identity")
    assert c.quantity == f"q (lack of fit p = {fit.p_value:.2g})"
    caveat = C.rejected_law_caveat(fit)
    assert caveat and c.note == f"N. Fit: {fit.describe()}. {caveat}"
    assert c.verdict == "inconclusive"              # a rejected law decides nothing
    assert c.details == [{"case": "extra"},
                         {"case": "fit", "slope": fit.slope, "se": fit.se, "chi2": fit.chi2,
                          "dof": 3, "p_value": fit.p_value}]
    assert c.interval == pytest.approx([fit.slope - Z99 * fit.se, fit.slope + Z99 * fit.se])


def test_exact_verdict():
    single = C.measure("a", "s", paper=1.0, measured=1.0, se=0.5, band=(0.9, 1.1), exact=1.05)
    assert C.exact_verdict(single) == "confirmed"
    assert C.exact_verdict(C.measure("a", "s", paper=1.0, measured=1.0, se=0.5,
                                     band=(0.9, 1.1), exact=2.0)) == "refuted"
    assert C.exact_verdict(C.measure("a", "s", paper=1.0, measured=1.0, se=0.5,
                                     band=(0.9, 1.1))) is None
    # detail rows without a band (e.g. a fit's numbers) are not cases
    noted = C.measure("a", "s", paper=1.0, measured=1.0, se=0.5, band=(0.9, 1.1), exact=1.0,
                      details=[{"case": "fit", "verdict": "confirmed"}, {"case": "b", "band": [0, 1]}])
    assert C.exact_verdict(noted) == "confirmed"
    multi = C.every_case("m", "s", {"a": _case(1.0, exact=1.0), "b": _case(1.0, exact=1.5)})
    assert C.exact_verdict(multi) == "refuted"
    assert C.exact_verdict(C.every_case("m", "s", {"a": _case(1.0, exact=1.0),
                                                   "b": _case(1.0)})) is None
