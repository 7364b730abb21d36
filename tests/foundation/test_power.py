"""The planning figure for undecided cases (dsmlib.foundation.power): its probability is the
exact noncentral-t one, and it is the rate at which the ledger's own machinery (claims.case with
seeds as the unit) reaches a verdict, checked by simulation."""
import math

import numpy as np
import pytest
from scipy import stats

from dsmlib.foundation.claims import CONFIDENCE, case, joint_level
from dsmlib.foundation.power import POWER, decision_power, units_to_decide


@pytest.mark.parametrize("distance,spread,units,level", [
    (0.3, 1.0, 10, 0.99), (0.3, 1.0, 100, 0.99), (0.168, 0.0556, 5, 0.995),
    (0.04, 0.1, 76, 0.99), (1.0, 0.5, 3, 0.9)])
def test_decision_power_is_the_noncentral_t_probability(distance, spread, units, level):
    q = stats.t.ppf(0.5 + level / 2, units - 1)
    nc = distance * math.sqrt(units) / spread
    exact = stats.nct.sf(q, units - 1, nc) + stats.nct.cdf(-q, units - 1, nc)
    assert decision_power(distance, spread, units, level) == pytest.approx(exact, abs=1e-7)
    assert decision_power(-distance, spread, units, level) == pytest.approx(exact, abs=1e-7)


def _measured_case(values, band, level):
    v = np.asarray(values)
    return case(paper=0.0, measured=float(v.mean()), se=float(v.std(ddof=1) / math.sqrt(v.size)),
                band=band, dof=v.size - 1, level=level)


@pytest.mark.parametrize("mean,band,level", [
    (-0.04, (None, -1e-12), CONFIDENCE),          # the gpu profile's sigma2 = 1 case
    (0.02, (None, 0.05), CONFIDENCE),              # inside a one-sided band: confirmation
    (-0.03, (1e-12, None), joint_level(6)),        # outside, at a joint level: refutation
])
def test_units_to_decide_is_the_ledgers_decision_rate(mean, band, level):
    """Measure a case with a few seeds, plan with it, then simulate the planned experiment
    through claims.case: the share of decided verdicts is the planned power (20,000 repeats,
    tolerance 4.5 binomial standard errors: false failure about 1e-5 per case), and one seed
    fewer has less than the power (exactly, by decision_power)."""
    rng = np.random.default_rng(20261126)
    spread, n = 0.1, 6
    pilot = _measured_case(mean + spread * rng.standard_normal(n), band, level)
    m = units_to_decide(pilot.measured, pilot.se, pilot.interval, band, n)
    assert m is not None and m > 2
    s_planned = pilot.se * math.sqrt(n)
    lo, hi = (b for b in band)
    edge = min((e for e in (lo, hi) if e is not None), key=lambda e: abs(pilot.measured - e))
    d = abs(pilot.measured - edge)
    assert decision_power(d, s_planned, m, level) >= POWER > decision_power(d, s_planned, m - 1, level)
    reps = 20_000
    draws = pilot.measured + s_planned * rng.standard_normal((reps, m))
    decided = np.mean([_measured_case(row, band, level).verdict != "inconclusive" for row in draws])
    tol = 4.5 * math.sqrt(POWER * (1 - POWER) / reps)
    assert abs(decided - decision_power(d, s_planned, m, level)) < tol, (decided, m)


def test_two_sided_band_gives_an_upper_bound():
    """With two finite edges the figure ignores the far one: the simulated rate is no higher."""
    rng = np.random.default_rng(7)
    band, level, m, s = (-0.1, 0.1), CONFIDENCE, 12, 0.08
    p = decision_power(0.1 - 0.02, s, m, level)
    rate = np.mean([_measured_case(0.02 + s * rng.standard_normal(m), band, level).verdict
                    != "inconclusive" for _ in range(20_000)])
    assert rate <= p + 4.5 * math.sqrt(p * (1 - p) / 20_000)


def test_units_to_decide_edges_and_bad_input():
    iv = [-0.2, 0.1]
    assert units_to_decide(0.0, 0.05, iv, (None, 0.0), 6) is None       # on the edge
    assert units_to_decide(-0.05, 0.0, iv, (None, 0.0), 6) is None      # no spread
    assert units_to_decide(-1e-6, 0.05, iv, (None, 0.0), 6) is None     # beyond max_units
    big = units_to_decide(-0.05, 0.05, [-0.2, 0.1], (None, 0.0), 6)
    assert big > units_to_decide(-0.5, 0.05, [-0.65, -0.35], (None, 0.0), 6) >= 2
    with pytest.raises(ValueError, match="power must lie in"):
        units_to_decide(-0.05, 0.05, iv, (None, 0.0), 6, power=1.0)
    with pytest.raises(ValueError, match="units"):
        units_to_decide(-0.05, 0.05, iv, (None, 0.0), 1)


def test_decision_power_where_scipys_noncentral_t_fails(monkeypatch):
    """At some large noncentralities scipy's nct returns NaN, and the integral is taken instead.
    Forced onto that path (nct made to fail), it gives the exact values; at a point where this
    scipy really fails (level 99 %, 20 units, noncentrality 10: ``nct.cdf(-q)`` is NaN) it
    agrees with the finite half, ``nct.sf(q)``, the lower tail ``P(T < -q)`` being below
    ``Phi(-q - nc) < 1e-30`` there, to the integral's own absolute tolerance."""
    points = [(0.3, 1.0, 10, 0.99), (0.04, 0.1, 76, 0.99), (1.0, 0.5, 3, 0.9),
              (0.168, 0.0556, 5, 0.995)]
    exact = [decision_power(*pt) for pt in points]
    monkeypatch.setattr(stats.nct, "sf", lambda *a, **k: math.nan)
    for pt, want in zip(points, exact):
        assert decision_power(*pt) == pytest.approx(want, abs=1e-7)
    monkeypatch.undo()
    units, level, nc = 20, 0.99, 10.0
    q = stats.t.ppf(0.5 + level / 2, units - 1)
    assert not math.isfinite(stats.nct.sf(q, units - 1, nc) + stats.nct.cdf(-q, units - 1, nc))
    upper = stats.nct.sf(q, units - 1, nc)
    assert math.isfinite(upper) and stats.norm.cdf(-q - nc) < 1e-30
    p = decision_power(nc / math.sqrt(units), 1.0, units, level)
    assert p == pytest.approx(upper, abs=1.49e-8)     # scipy.integrate.quad's default epsabs
