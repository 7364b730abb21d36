"""The verdict of a gain judged against the smallest gain worth having (issue 30's rule):
confirmed when the interval lies above 0 and reaches past delta, refuted when it lies below
delta, inconclusive otherwise; each boundary checked from both sides, and the rule's coverage
checked by simulation."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dsmlib.foundation.claims import gain_verdict, verdict


@pytest.mark.parametrize("interval, want", [
    ((0.5, 3.0), "confirmed"),        # above 0, reaches past delta = 1
    ((1.5, 3.0), "confirmed"),        # wholly past delta
    ((0.01, 1.01), "confirmed"),
    ((0.2, 0.9), "refuted"),          # a real gain, but below delta: no gain of useful size
    ((-2.0, 0.9), "refuted"),         # below delta, whatever its sign
    ((-3.0, -1.0), "refuted"),
    ((0.0, 0.0), "refuted"),          # seeds tied at zero
    ((-0.5, 2.0), "inconclusive"),    # reaches 0 and delta
    ((0.0, 2.0), "inconclusive"),     # touches 0: not above it
    ((-0.5, 1.0), "inconclusive"),    # touches delta: not below it
])
def test_gain_verdict_rule(interval, want):
    assert gain_verdict(interval, 1.0) == want


def test_refutation_is_the_band_verdict_and_confirmation_asks_less():
    """Against the band [delta, inf): the same refutations; every band confirmation is a gain
    confirmation, and some gain confirmations (above 0, straddling delta) are not."""
    rng = np.random.default_rng(0)
    for lo, w in zip(rng.normal(0, 2, 2000), rng.exponential(1, 2000)):
        iv, band = (lo, lo + w), verdict((lo, lo + w), (1.0, None))
        g = gain_verdict(iv, 1.0)
        assert (g == "refuted") == (band == "refuted")
        if band == "confirmed":
            assert g == "confirmed"
    assert verdict((0.5, 3.0), (1.0, None)) == "inconclusive"


def test_bad_input():
    with pytest.raises(ValueError, match="delta > 0"):
        gain_verdict((0.0, 1.0), 0.0)
    with pytest.raises(ValueError, match="ordered"):
        gain_verdict((1.0, 0.0), 0.5)
    with pytest.raises(ValueError, match="interval must be finite"):
        gain_verdict((0.0, float("nan")), 0.5)


def test_error_rates_by_simulation():
    """99 % Student-t intervals over 8 seeds: with a true gain of 0 a confirmation is a false
    positive (at most 0.5 %: the interval's lower end above the truth); with a true gain of
    delta a refutation is (at most 0.5 %: its upper end below the truth). 20,000 simulated
    claims each; the bound plus 5 binomial standard errors (false-failure rate < 1e-6)."""
    rng = np.random.default_rng(1)
    n, sims, delta = 8, 20_000, 1.0
    q = stats.t.ppf(0.995, n - 1)
    for truth, bad in ((0.0, "confirmed"), (delta, "refuted")):
        x = rng.normal(truth, 1.5, (sims, n))
        m, se = x.mean(1), x.std(1, ddof=1) / np.sqrt(n)
        rate = np.mean([gain_verdict((a - q * s, a + q * s), delta) == bad
                        for a, s in zip(m, se)])
        assert rate <= 0.005 + 5 * np.sqrt(0.005 * 0.995 / sims), (truth, rate)
