"""Section 5's accuracy verdicts on their edges (issue 50): a tie, a ceiling setting below the
gate, a wide and a narrow case for "some student", and Satterthwaite's fractional degrees of
freedom. Each checks that the verdict, the headline, the family size and seeds-to-decide agree.

Mutants that must fail here: the gate removed (every setting judged), the headline back on the
caveat case (the foundation's default deciding case), the degrees of freedom rounded down."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dsmlib.chapters import sec5_gains as gains
from dsmlib.chapters import sec5_readouts as ro
from dsmlib.foundation.claims import case, every_case
from dsmlib.foundation.stats import crossed_mean

from .test_sec5_distillation import FULL, HEAD, cases, claims_of, good, jitter


def _table(per_seed_gain: list[int], n: int = 200, seed: int = 0) -> np.ndarray:
    """A seeds x images table of differences of 0/1 correctness: seed ``s`` gains
    ``per_seed_gain[s]`` images net, on images of varying difficulty shared by every seed."""
    rng = np.random.default_rng(seed)
    out = np.zeros((len(per_seed_gain), n))
    for s, k in enumerate(per_seed_gain):
        up = rng.choice(n // 2, size=abs(k) + 5, replace=False)
        down = n // 2 + rng.choice(n // 2, size=5, replace=False)
        out[s, up] = 1.0 if k >= 0 else -1.0
        out[s, down] = -1.0 if k >= 0 else 1.0
    return out


def test_a_tie_decides_nothing_and_plans_no_seeds():
    """Every seed gains the same (a tie: no spread between seeds), though the images differ:
    the case is inconclusive with "a tie", its p-value points nowhere, and seeds-to-decide
    projects nothing (the spread more seeds would shrink is 0), in agreement with the rule."""
    table = _table([3, 3, 3, 3])
    assert len(set(table.mean(axis=1))) == 1
    c, extras = gains.gain_case(table, 1.0, "gain", table.shape[1])
    assert c.caveat.startswith("a tie") and c.verdict == "inconclusive" and c.p_value == 1.0
    assert extras["se_seeds"] == 0.0
    claim = every_case("x", "s", {"digits": c}, headline=gains.judged_headline)
    claim.details[0].update(extras, se=c.se)
    assert claim.verdict == "inconclusive"
    (row,) = ro.seeds_to_decide(_Res(4), [claim])
    assert row["seeds"] is None and row["seeds_range"] == [None, None]


class _Res:
    """The one thing seeds_to_decide reads of a run: the seeds of the setting "digits"."""

    def __init__(self, n: int) -> None:
        self.settings, self._n = ["digits"], n

    def n_seeds(self, setting: str) -> int:
        return self._n


def test_a_case_with_a_spread_is_judged_however_small_its_error():
    """The old rule set aside any case whose SE was below one test image's worth, which more
    seeds always reach: a case with a real spread is now judged at any SE."""
    table = _table([5, 6, 5, 6, 5, 6, 5, 6, 5, 6, 5, 6], n=359)
    c, _ = gains.gain_case(table, 0.5, "gain", 359)
    assert c.se < 100 / 359 and not c.caveat
    assert c.verdict == "confirmed"


def test_satterthwaite_degrees_of_freedom_stay_fractional():
    """The crossed seeds x images interval uses Satterthwaite's degrees of freedom as they
    are (1.98 once became 1, and the half-width ±10.25 points instead of ±1.6)."""
    rng = np.random.default_rng(3)
    table = (rng.random((3, 359)) < 0.5).astype(float) - (rng.random((3, 359)) < 0.45)
    table[0] += 0.0                      # three seeds, images that differ
    c, extras = gains.gain_case(table, 1.0, "gain", 359)
    cm = crossed_mean(100 * table)
    assert cm.dof != math.floor(cm.dof)
    assert extras["dof"] == pytest.approx(cm.dof)
    half = stats.t.ppf(0.995, cm.dof) * cm.se
    assert c.interval == pytest.approx([cm.mean - half, cm.mean + half])
    if cm.item_var == 0:
        assert extras["population"].startswith("seeds only")


def test_an_image_term_of_zero_speaks_for_seeds_only():
    y = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]])
    _, extras = gains.gain_case(y, 1.0, "gain", 4)
    assert extras["se_images"] == 0.0 and extras["population"].startswith("seeds only")


def test_some_student_is_headed_by_the_highest_lower_bound():
    """A wide case (the largest upper bound) and a narrow one (the highest lower bound): the
    claim about *some* student is headed by the narrow one, the best evidence for "some"."""
    wide = case(paper=0, measured=0.3, se=2.0, band=(1, None), quantity="wide")
    narrow = case(paper=0, measured=0.9, se=0.05, band=(1, None), quantity="narrow")
    claim = gains.some_case("x", "s", {"wide": wide, "narrow": narrow})
    assert claim.verdict == "inconclusive"
    assert "(deciding case: narrow)" in claim.quantity and claim.interval == narrow.interval
    assert wide.interval[1] > narrow.interval[1] and narrow.interval[0] > wide.interval[0]


def test_the_headline_is_never_a_case_that_cannot_decide():
    """An inconclusive claim with a tie (caveat), a zero-width and a whole-range case, and one
    judged case: the judged case heads it (the default rule headed it by the caveat)."""
    tie = case(paper=0, measured=0.0, se=0.0, band=(1, None), caveat="a tie", quantity="tie")
    whole = case(paper=0, measured=0.0, se=80.0, band=(1, None), bounds=(-100, 100),
                 quantity="whole")
    judged = case(paper=0, measured=0.8, se=0.2, band=(1, None), quantity="judged")
    assert whole.interval == [-100, 100]
    cases_ = {"tie": tie, "whole": whole, "judged": judged}
    claim = every_case("x", "s", cases_, headline=gains.judged_headline)
    assert claim.verdict == "inconclusive" and "(deciding case: judged)" in claim.quantity
    assert not gains.can_decide(tie) and not gains.can_decide(whole)
    assert "(deciding case: tie)" in every_case("x", "s", cases_).quantity   # the default


def test_inconclusive_claims_are_headed_by_the_case_nearest_a_decision():
    near = case(paper=0, measured=2.0, se=0.45, band=(1, None), quantity="near")
    far = case(paper=0, measured=1.1, se=0.5, band=(1, None), quantity="far")
    claim = every_case("x", "s", {"far": far, "near": near}, headline=gains.judged_headline)
    assert claim.verdict == "inconclusive" and "(deciding case: near)" in claim.quantity
    assert near.p_value < far.p_value


def _ceiling(c) -> dict:
    f = good(c)
    if c.train_limit is None:
        f["test_acc"] = 0.997 + jitter(c, 0.0005)
    return f


def test_a_ceiling_setting_enters_no_family_no_plan_and_no_headline():
    """The full data's teachers miss about one test image: not judged. Its cases leave every
    accuracy claim, so the families are the headroom setting's alone (noisy vs noiseless: 2
    cases, not 4; some student: a joint box over 4 students, not 8), the headline is the
    headroom case, and seeds-to-decide plans only judged cases."""
    res, claims = claims_of(_ceiling)
    assert gains.judged_settings(res) == [HEAD]
    assert "miss 1 of 359" in gains.not_judged(res)[FULL]
    assert list(cases(claims["fig1.noisy_beats_noiseless"])) == [
        f"{HEAD}: vs noiseless student", f"{HEAD}: vs Hinton student (T = 4)"]
    some = claims["fig1.some_student_beats_teacher"]
    assert len(some.details) == 4 and "joint 99% box over 4" in some.quantity
    for cid in gains.ACCURACY_IDS[:-1]:
        assert all(d["case"].startswith(HEAD) for d in claims[cid].details), cid
    rows = ro.seeds_to_decide(res, list(claims.values()), every=gains.ACCURACY_IDS)
    assert rows and not any(r["case"].startswith(FULL) and r["delta"] is not None for r in rows)


def test_seeds_to_decide_shows_a_range_around_the_point_figure():
    """Beside the seeds a case needs at its measured value, the figure at the value one SE
    further from the band's edge (fewer seeds) and one SE nearer it (more, or none)."""
    def spread(c):
        f = good(c)
        f["test_acc"] += jitter(c, 0.02)
        return f
    res, claims = claims_of(spread)
    rows = [r for r in ro.seeds_to_decide(res, list(claims.values()), every=gains.ACCURACY_IDS)
            if r["delta"] is not None and r["seeds"] is not None]
    assert rows
    for r in rows:
        lo, hi = r["seeds_range"]
        assert lo is not None and lo <= r["seeds"]
        assert hi is None or hi >= r["seeds"]


def test_direction_reads_the_interval_against_zero():
    assert gains.direction([0.1, 2.0]) == "higher"
    assert gains.direction([-3.3, -0.4]) == "lower"
    assert gains.direction([-1.0, 0.4]) == "cannot tell"
    # refuted against δ (no useful gain) but pointing up: "refuted" is not "worse"
    c = case(paper=0, measured=0.5, se=0.1, band=(1.15, None))
    assert c.verdict == "refuted" and gains.direction(c) == "higher"


def test_a_claim_is_headed_by_its_judged_case_not_its_tie():
    """Both settings past the gate; the full data's selected student ties its teacher in every
    seed (a caveat), the headroom's gains with a spread: the claim is headed by the headroom
    case, never by the tie."""
    def tied_full(c):
        f = good(c)
        if c.train_limit is None:
            f["test_acc"] = 0.9
        return f
    res, claims = claims_of(tied_full)
    c = claims["fig1.noisy_beats_teacher"]
    assert cases(c)[FULL]["caveat"].startswith("a tie")
    assert c.verdict == "inconclusive" and f"(deciding case: {HEAD})" in c.quantity
    assert c.interval == cases(c)[HEAD]["interval"] and c.interval[1] > c.interval[0]
