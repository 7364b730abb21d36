"""Every interval-producing statistic of dsmlib.foundation.stats and .claims covers at its stated
level: not less (too narrow) and not more (too wide, e.g. a standard error silently doubled).

Each test simulates a setting whose sampling distribution is known exactly (Gaussian data, so
the interval's pivot is exactly normal or Student-t), counts the intervals that contain the
true value and requires the count to lie in the two-sided Binomial acceptance region of the
stated level at ``ALPHA`` = 1e-4. Fifteen such checks: a false-failure rate below 1.5e-3 for
the file. Power: an interval with its standard error doubled covers at
P(|Z| < 2 * 2.576) = 1 - 2.6e-7 at 99 %, far above the region's upper end (which with 4,000
replicates allows at most ~0.4 % fewer misses than expected); at 50 % and 80 % the
checks also catch a standard error 25 % off.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from dsmlib.foundation import claims, stats

ALPHA = 1e-4   # false-failure rate of each coverage check
REPS = 4_000


def assert_coverage(hits: np.ndarray, level: float, *, alpha: float = ALPHA) -> None:
    """``hits`` (booleans, one per independent replicate) is Binomial(R, level) when the
    intervals cover at ``level``; fail outside its two-sided acceptance region at ``alpha``."""
    hits = np.asarray(hits, dtype=bool)
    r = hits.size
    lo, hi = st.binom.ppf(alpha / 2, r, level), st.binom.isf(alpha / 2, r, level)
    k = int(hits.sum())
    assert lo <= k <= hi, f"coverage {k / r:.4f} outside [{lo / r:.4f}, {hi / r:.4f}] at level {level}"


# ------------------------------------------------------------------------------------ stats.py
@pytest.mark.parametrize("level", [0.5, 0.99])
def test_batch_means_interval(level):
    """i.i.d. N(1.5, 4) series of 300 steps in 20 batches: the 20 block means are i.i.d.
    normal and the estimate is their mean, so (est - mu) / se ~ t_19 exactly."""
    rng = np.random.default_rng(101)
    x = 1.5 + 2.0 * rng.standard_normal((300, REPS))
    est, se = stats.batch_means(x, n_batches=20)
    q = stats.t_quantile(level, 19)
    assert_coverage(np.abs(est - 1.5) <= q * se, level)


def test_batch_statistic_interval_vector_valued():
    """A two-coordinate statistic (means of two columns with different scales); 10 batches
    of 40 steps, both coordinates at 80 % (t_9)."""
    rng = np.random.default_rng(102)
    q = stats.t_quantile(0.8, 9)
    hits = []
    for _ in range(REPS // 2):
        x = rng.standard_normal((400, 2)) * [1.0, 5.0] + [0.0, -3.0]
        est, se = stats.batch_statistic(x, lambda b: b.mean(axis=0), n_batches=10)
        hits.extend(np.abs(est - [0.0, -3.0]) <= q * se)
    assert_coverage(np.array(hits), 0.8)


def test_block_moments_statistic_interval():
    """BlockMoments.statistic of the mean's first coordinate (10 batches, t_9) at 80 %."""
    rng = np.random.default_rng(103)
    q = stats.t_quantile(0.8, 9)
    hits = []
    for _ in range(REPS):
        x = rng.standard_normal((200, 2)) @ np.array([[1.0, 0.5], [0.0, 2.0]]) + [2.0, 0.0]
        est, se = stats.block_moments(x, n_batches=10).statistic(lambda m, c: m[0])
        hits.append(abs(float(est) - 2.0) <= q * float(se))
    assert_coverage(np.array(hits), 0.8)


def _power_law_draws(rng, n_reps, k=6, rel=0.05):
    """``log y = log 3 - 0.7 log x + rel * z``; with ``y_se = rel * y`` the delta method's
    se(log y) is exactly ``rel``, so the weighted fit's slope is exactly normal."""
    x = np.geomspace(1.0, 100.0, k)
    y = 3.0 * x ** -0.7 * np.exp(rel * rng.standard_normal((n_reps, k)))
    return x, y, rel * y


def test_log_log_slope_interval():
    rng = np.random.default_rng(104)
    x, ys, ses = _power_law_draws(rng, REPS)
    z = st.norm.isf(0.1)    # 80 %
    hits = []
    for y, s in zip(ys, ses):
        slope, se = stats.log_log_slope(x, y, s)
        hits.append(abs(slope + 0.7) <= z * se)
    assert_coverage(np.array(hits), 0.8)


@pytest.mark.parametrize("level", [0.5, 0.99])
def test_loglog_fit_interval_with_independent_errors(level):
    rng = np.random.default_rng(105)
    x, ys, ses = _power_law_draws(rng, REPS)
    z = st.norm.isf((1 - level) / 2)
    fits = [stats.loglog_fit(x, y, s) for y, s in zip(ys, ses)]
    assert_coverage(np.array([abs(f.slope + 0.7) <= z * f.se for f in fits]), level)
    # the intercept is log 3 in the same fit (a sanity check of the model, not of the interval):
    # the mean over the replicates within 5 of its standard errors (false failure < 1e-6)
    icpt = np.array([f.intercept for f in fits])
    assert abs(icpt.mean() - math.log(3.0)) < 5 * icpt.std(ddof=1) / math.sqrt(icpt.size)


def test_loglog_fit_interval_with_correlated_errors():
    """Errors correlated across points (as when several step sizes share Brownian paths):
    with ``y_cov = S * y y^T`` the log-errors have covariance ``S``, the GLS slope is exactly
    normal with the reported standard error; an OLS-like fit ignoring ``S`` would not be."""
    rng = np.random.default_rng(106)
    k = 5
    x = np.geomspace(1.0, 30.0, k)
    idx = np.arange(k)
    S = 0.04 * 0.7 ** np.abs(idx[:, None] - idx[None, :]) * np.outer(1 + idx, 1 + idx) / k
    Lc = np.linalg.cholesky(S)
    z = st.norm.isf(0.1)
    hits = []
    for _ in range(REPS):
        y = 2.0 * x ** 1.5 * np.exp(Lc @ rng.standard_normal(k))
        f = stats.loglog_fit(x, y, y_cov=S * np.outer(y, y))
        hits.append(abs(f.slope - 1.5) <= z * f.se)
    assert_coverage(np.array(hits), 0.8)


def test_loglog_fit_birge_widened_interval_when_errors_are_understated():
    """The stated errors are 30 times too small: the lack-of-fit test rejects (chi2 ~ 900
    chi2_4, p < 0.01 except with probability 2.7e-5) and ``slope +- t_4 * se_widened`` is
    the classical unknown-scale interval, exactly Student-t with 4 degrees of freedom (the
    slope is independent of the residuals, so conditioning on the rejection changes
    nothing)."""
    rng = np.random.default_rng(107)
    x, ys, ses = _power_law_draws(rng, REPS, rel=0.05)
    q = st.t.isf(0.1, 4)
    hits, rejected = [], 0
    for y, s in zip(ys, ses):
        f = stats.loglog_fit(x, y, s / 30)
        rejected += f.lack_of_fit
        assert f.dof_interval == (4.0 if f.lack_of_fit else math.inf)
        hits.append(abs(f.slope + 0.7) <= q * f.se_widened)
    assert rejected >= REPS - 3   # P(more than 3 misses) ~ 5e-10
    assert_coverage(np.array(hits), 0.8)


# ----------------------------------------------------------------------------------- claims.py
@pytest.mark.parametrize("level, dof", [(claims.CONFIDENCE, math.inf), (0.8, 5)])
def test_case_interval(level, dof):
    """``case`` with a Student-t(dof) (or normal) estimate: its interval covers at ``level``
    (the ledger's CONFIDENCE by default)."""
    rng = np.random.default_rng(108)
    t = rng.standard_normal(REPS) if math.isinf(dof) else rng.standard_t(dof, REPS)
    se = 0.3
    hits = []
    for ti in t:
        kw = {} if level == claims.CONFIDENCE else {"level": level}
        c = claims.case(paper=1.0, measured=1.0 + se * ti, se=se, band=(0.9, 1.1), dof=dof,
                        **kw)
        hits.append(c.interval[0] <= 1.0 <= c.interval[1])
    assert_coverage(np.array(hits), level)


def test_measure_and_ratio_case_intervals():
    """``measure`` (a claim) and ``ratio_case`` (estimate / predicted, here negative) both
    cover at CONFIDENCE."""
    rng = np.random.default_rng(109)
    z = rng.standard_normal((REPS, 2))
    hit_m, hit_r = [], []
    for zm, zr in z:
        m = claims.measure("x", "s", paper=2.0, measured=2.0 + 0.1 * zm, se=0.1, band=(1, 3))
        hit_m.append(m.interval[0] <= 2.0 <= m.interval[1])
        r = claims.ratio_case(-4.0 + 0.2 * zr, 0.2, -4.0, band=(0.9, 1.1))
        hit_r.append(r.interval[0] <= 1.0 <= r.interval[1])
    assert_coverage(np.array(hit_m), claims.CONFIDENCE)
    assert_coverage(np.array(hit_r), claims.CONFIDENCE)


def test_joint_case_box_covers_at_the_bonferroni_level():
    """Four independent coordinates of true mean 0 judged against the degenerate band
    (0, 0): every coordinate's interval overlaps it (verdict ``inconclusive``) exactly when
    the whole box covers 0, which for independent coordinates happens with probability
    ``joint_level(4) ** 4`` (= 0.99004, at least the ledger's 99 %)."""
    rng = np.random.default_rng(110)
    ses = np.array([0.5, 1.0, 2.0, 4.0])
    hits = [claims.joint_case(ses * z, ses, paper=0.0, band=(0.0, 0.0)).verdict == "inconclusive"
            for z in rng.standard_normal((REPS, 4))]
    assert_coverage(np.array(hits), claims.joint_level(4) ** 4)


def test_slope_claim_interval():
    """``slope_claim`` on exact power laws with Gaussian log-errors: its interval (the fit's
    normal interval, widened by the Birge ratio on the ~1 % of fits where lack of fit is
    rejected by chance) covers the true slope at CONFIDENCE; the widening adds at most
    0.01 * 0.01 = 1e-4 of coverage (the slope is independent of the residuals), far inside
    the acceptance region."""
    rng = np.random.default_rng(111)
    x, ys, ses = _power_law_draws(rng, REPS)
    hits = []
    for y, s in zip(ys, ses):
        c = claims.slope_claim("s", "slope", x, y, s, paper=-0.7, band=(-0.8, -0.6))
        hits.append(c.interval[0] <= -0.7 <= c.interval[1])
    assert_coverage(np.array(hits), claims.CONFIDENCE)
