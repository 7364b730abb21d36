"""Lack-of-fit checks of log-log fits, joint (Bonferroni) boxes, caveats and exact verdicts."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.foundation.claims import slope_claim
from dsmlib.foundation.claims import case, every_case, exact_verdict, joint_case, joint_level
from dsmlib.foundation.stats import loglog_fit


def test_loglog_fit_recovers_a_power_law_and_passes_lack_of_fit():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    y = 3.0 * x ** 2
    fit = loglog_fit(x, y, 0.01 * y)
    assert fit.slope == pytest.approx(2.0, abs=1e-12)
    assert fit.dof == 3 and fit.chi2 < 1e-20 and not fit.lack_of_fit
    assert fit.se_widened == fit.se and fit.dof_interval == np.inf


def test_loglog_fit_flags_curvature_and_widens_by_the_birge_ratio():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    y = np.exp(np.log(x) ** 2)            # curved in log-log
    fit = loglog_fit(x, y, 0.01 * y)
    assert fit.lack_of_fit and fit.p_value < 1e-6
    assert fit.se_widened == pytest.approx(fit.se * np.sqrt(fit.chi2 / fit.dof))
    assert fit.dof_interval == 2


def test_lack_of_fit_false_alarm_rate_matches_alpha():
    """Seeded: straight lines with Gaussian noise of the stated SE trip the alpha = 0.01 test
    at about 1 %. With 4,000 fits the count is Binomial(4000, 0.01): mean 40, sd 6.3; the
    band [15, 70] fails with probability < 1e-4."""
    rng = np.random.default_rng(0)
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    alarms = 0
    for _ in range(4000):
        se_log = 0.02
        y = np.exp(0.5 * np.log(x) + se_log * rng.standard_normal(x.size))
        alarms += loglog_fit(x, y, se_log * y).lack_of_fit
    assert 15 <= alarms <= 70, alarms


def test_two_point_fits_cannot_test_lack_of_fit():
    fit = loglog_fit(np.array([1.0, 2.0]), np.array([1.0, 4.0]), np.array([0.1, 0.4]))
    assert fit.dof == 0 and fit.p_value is None and "cannot be tested" in fit.describe()


def test_slope_claim_reports_lack_of_fit_and_does_not_decide():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    y = np.exp(np.log(x) ** 2)
    c = slope_claim("t.slope", "curved", x, y, 0.01 * y, paper=1.0, band=(0.9, 1.1),
                    scope="setting", condition="never")
    assert "lack of fit" in c.note and "law is rejected" in c.note
    fit = loglog_fit(x, y, 0.01 * y)
    assert c.se == pytest.approx(fit.se) and c.verdict == "inconclusive"
    assert c.details[-1]["chi2"] == pytest.approx(fit.chi2)


def test_joint_case_uses_a_bonferroni_level_and_picks_the_deciding_coordinate():
    assert joint_level(4) == pytest.approx(1 - 0.01 / 4)
    c = joint_case([0.0, 0.03], [0.001, 0.001], paper=0.0, band=(-0.01, 0.01))
    assert c.verdict == "refuted" and c.measured == 0.03
    ok = joint_case([0.0, 0.001], [0.001, 0.001], paper=0.0, band=(-0.01, 0.01))
    assert ok.verdict == "confirmed" and ok.measured == 0.001
    half = ok.interval[1] - ok.measured
    z = half / 0.001
    assert z == pytest.approx(2.807, abs=1e-3)   # the normal quantile at 1 - 0.01/4 two-sided
    unsure = joint_case([0.0, 0.009], [0.001, 0.001], paper=0.0, band=(-0.01, 0.01))
    assert unsure.verdict == "inconclusive"


def test_joint_box_covers_a_zero_mean_at_its_level():
    """Seeded: 4,000 zero-mean 3-vectors with known SE. A coordinate's interval misses 0 iff
    the case is refuted against the tiny band (-1e-12, 1e-12); the joint 99 % box misses in
    at most 1 % of draws: Binomial(4000, 0.01) has mean 40, sd 6.3, and more than 70 misses
    fails with probability < 1e-4 (fewer than 15 would mean the box is too wide)."""
    rng = np.random.default_rng(1)
    misses = sum(joint_case(rng.standard_normal(3) * 0.01, [0.01] * 3, paper=0.0,
                            band=(-1e-12, 1e-12)).verdict == "refuted" for _ in range(4000))
    assert 15 <= misses <= 70, misses


def test_a_caveat_makes_a_case_inconclusive_and_reaches_the_note():
    c = case(paper=1.0, measured=1.0, se=0.001, band=(0.9, 1.1), caveat="heavy tails")
    assert c.verdict == "inconclusive"
    claim = every_case("t.c", "s", {"a": c, "b": case(paper=1.0, measured=1.0, se=0.001,
                                                       band=(0.9, 1.1))})
    assert claim.verdict == "inconclusive" and "heavy tails" in claim.note
    assert claim.details[0]["caveat"] == "heavy tails"


def test_exact_verdict_judges_each_case_exact_value():
    a = case(paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1), exact=1.0)
    b = case(paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1), exact=1.5)
    assert exact_verdict(every_case("x", "s", {"a": a})) == "confirmed"
    assert exact_verdict(every_case("x", "s", {"a": a, "b": b})) == "refuted"
    assert exact_verdict(case(paper=1.0, measured=1.0, se=0.0, band=(0, 2))) is None
