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

from dsmlib.chapters.sec5_distillation import gains as gains
from dsmlib.chapters.sec5_distillation import readouts as ro
from dsmlib.foundation.claims import can_decide, case, every_case, some_case
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
    claim = every_case("x", "s", {"digits": c})
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
    claim = some_case("x", "s", {"wide": wide, "narrow": narrow})
    assert claim.verdict == "inconclusive"
    assert claim.case == "narrow" and claim.interval == narrow.interval
    assert wide.interval[1] > narrow.interval[1] and narrow.interval[0] > wide.interval[0]


def test_the_headline_is_never_a_case_that_cannot_decide():
    """An inconclusive claim with a tie (caveat), a zero-width and a whole-range case, and one
    judged case: the judged case heads it (the old foundation rule headed it by the caveat)."""
    tie = case(paper=0, measured=0.0, se=0.0, band=(1, None), caveat="a tie", quantity="tie")
    whole = case(paper=0, measured=0.0, se=80.0, band=(1, None), bounds=(-100, 100),
                 quantity="whole")
    judged = case(paper=0, measured=0.8, se=0.2, band=(1, None), quantity="judged")
    assert whole.interval == [-100, 100]
    cases_ = {"tie": tie, "whole": whole, "judged": judged}
    claim = every_case("x", "s", cases_)
    assert claim.verdict == "inconclusive" and claim.case == "judged"
    assert not can_decide(tie) and not can_decide(whole) and can_decide(judged)


def test_inconclusive_every_case_claims_are_headed_by_the_case_that_keeps_them_so():
    """The one rule (issue 62): among the cases that can decide, the undecided case reaching
    furthest beyond its band heads an inconclusive claim over every case; for "some" case, the
    one reaching least beyond it (the best evidence for "some")."""
    near = case(paper=0, measured=2.0, se=0.45, band=(1, None), quantity="near")
    far = case(paper=0, measured=1.1, se=0.5, band=(1, None), quantity="far")
    claim = every_case("x", "s", {"far": far, "near": near})
    assert claim.verdict == "inconclusive" and claim.case == "far"
    assert some_case("x", "s", {"far": far, "near": near}).case == "near"


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
    further from the band's edge (fewer seeds) and one SE nearer it (more, or none), each end
    with the verdict it plans for: an end that crosses the edge plans the other one."""
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
        far, near = r["towards_range"]
        assert lo is not None and lo <= r["seeds"] and far == r["towards"]
        if near == r["towards"]:      # still on the same side of the band's edge: more seeds
            assert hi is None or hi >= r["seeds"]
        else:                         # one SE nearer crosses the edge: it plans the other verdict
            assert near in ("confirmed", "refuted") and near != r["towards"]


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
    full, head = cases(c)[f"{FULL}: vs teacher"], cases(c)[f"{HEAD}: vs teacher"]
    assert full["caveat"].startswith("a tie")
    assert c.verdict == "inconclusive" and c.case == f"{HEAD}: vs teacher"
    # the heading case is stored as data, and it is the one whose numbers the claim shows
    assert head["heads"] and not full["heads"]
    assert c.interval == head["interval"] and c.interval[1] > c.interval[0]


# --- issue 60: direction decides a directional claim; δ's own error is carried ----------------

def _seeds(gain_points: list[float]) -> np.ndarray:
    """Per-seed gains (fractions) from gains in points."""
    return np.asarray(gain_points) / 100.0


def test_direction_decides_and_size_sits_beside_it():
    """A gain of about +2 points with an interval inside (0, δ) at δ = 5.6 (a weak teacher's
    44 % error) is confirmed, by less than δ; the old rule (band [δ, inf)) called it refuted.
    Below 0 it is refuted; across 0, inconclusive. (Mutant: the old rule back fails here.)"""
    rng = np.random.default_rng(0)
    up = _seeds(2.0 + rng.normal(0, 0.6, 10))
    delta = 0.056
    c, extras = gains.gain_case(up, delta, "gain", 10_000)
    assert 0 < c.interval[0] and c.interval[1] < 100 * delta
    assert c.verdict == "confirmed" and c.band == [gains.STRICT, None]
    assert extras["size"] == "by less than δ" and extras["delta"] == pytest.approx(5.6)
    down, _ = gains.gain_case(-up, delta, "gain", 10_000)
    assert down.verdict == "refuted"
    across, x = gains.gain_case(_seeds(rng.normal(0, 2.0, 10)), delta, "gain", 10_000)
    assert across.interval[0] < 0 < across.interval[1] and across.verdict == "inconclusive"
    big, x = gains.gain_case(_seeds(9.0 + rng.normal(0, 0.5, 10)), delta, "gain", 10_000)
    assert big.verdict == "confirmed" and x["size"] == "by at least δ"


def test_an_effect_well_inside_plus_or_minus_delta_is_less_than_delta_either_way():
    small = np.array([0.3, -0.2, 0.1, -0.3, 0.2, -0.1, 0.25, -0.25, 0.05, -0.05])
    c, x = gains.gain_case(_seeds(small), 0.05, "gain", 10_000)
    assert c.verdict == "inconclusive" and x["size"] == "by less than δ"
    c, x = gains.gain_case(_seeds(30 * small), 0.05, "gain", 10_000)
    assert c.verdict == "inconclusive" and x["size"] == "size not decided"


def test_deltas_own_error_enters_the_size():
    """δ per seed is a tenth of that seed's teacher error: teachers whose errors scatter by
    ±15 points give δ a spread of ±1.5 points. The size interval of gain − δ carries it: it is
    wider than the interval with δ taken as its mean (exact), and here that changes the
    reading from "by at least δ" to "size not decided". (Mutant: δ exact fails here.)"""
    rng = np.random.default_rng(4)
    teacher_error = 0.50 + rng.normal(0, 0.15, 6)
    deltas = 0.1 * teacher_error
    gain = deltas + 0.012 + rng.normal(0, 0.002, 6) - (deltas - deltas.mean())   # gain ~ δ̄ + 1.2
    _, carried = gains.gain_case(gain, deltas, "gain", 10_000)
    _, exact = gains.gain_case(gain, np.full(6, deltas.mean()), "gain", 10_000)
    width = lambda x: x["size_interval"][1] - x["size_interval"][0]  # noqa: E731
    assert width(carried) > 3 * width(exact)
    assert exact["size"] == "by at least δ" and carried["size"] == "size not decided"


def test_delta_scores_are_a_tenth_of_each_teachers_error_per_image():
    from .test_sec5_distillation import claims_of, good
    res, _ = claims_of(good)
    for s in res.settings:
        d = gains.delta_scores(res, s)
        t = res.teacher(s).test_correct
        assert d.shape == t.shape and d == pytest.approx(0.1 * (1 - t))
        assert 100 * d.mean() == pytest.approx(gains.smallest_gain(res, s))


def test_the_size_interval_covers_at_its_level():
    """Simulated seeds with a true mean gain − δ of 0.3 points on a gain of about 4.8 points
    (per-seed gains and teacher errors both random): the 99 % interval of gain − δ covers the truth in 99 % of 4,000 runs
    (binomial SE 0.16 %; the tolerance 0.6 % makes a false failure a 3.8-SE event, about 1 in
    10,000)."""
    rng = np.random.default_rng(12)
    hits, runs = 0, 4000
    for _ in range(runs):
        err = rng.normal(0.45, 0.05, 8)
        gain = 0.1 * err + 0.003 + rng.normal(0, 0.01, 8)
        _, x = gains.gain_case(gain, 0.1 * err, "gain", 10_000)
        assert x["size_of"] == "gain − δ"         # the gain lies far above 0 in every run
        lo, hi = x["size_interval"]
        hits += lo <= 0.3 <= hi
    assert abs(hits / runs - 0.99) < 0.006


def test_a_tie_has_no_size_and_holm_undecided_cases_keep_only_an_either_way_size():
    """A tie decides nothing, so its size is not decided either, however δ scatters; a case
    its own interval decides but Holm's rule leaves undecided reports "by less than δ" only
    where the effect is below δ either way, else "size not decided" (never "by at least δ"
    beside an undecided verdict)."""
    table = _table([3, 3, 3, 3])
    teacher_error = np.random.default_rng(2).random(table.shape) < 0.4
    _, x = gains.gain_case(table, 0.1 * teacher_error, "gain", table.shape[1])
    assert x["size"] == "size not decided"
    row = {"verdict": "inconclusive", "size": "by at least δ", "size_either_way": False}
    assert gains.size_in_claim(row) == "size not decided"
    assert gains.size_in_claim({**row, "size": "by less than δ", "size_either_way": True}) \
        == "by less than δ"
    assert gains.size_in_claim({**row, "verdict": "confirmed"}) == "by at least δ"
