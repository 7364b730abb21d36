"""Tests of dsmlib.foundation.stats: batch means, batch statistics, log-log slopes."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st
from scipy.signal import lfilter

from dsmlib.foundation import stats


def _ar1(rng: np.random.Generator, a: float, n: int, reps: int) -> np.ndarray:
    """``reps`` stationary AR(1) series ``x_t = a x_{t-1} + sqrt(1 - a^2) e_t`` (unit marginal
    variance, true mean 0), time along axis 0: shape ``(n, reps)``."""
    x0 = rng.standard_normal(reps)
    e = rng.standard_normal((reps, n)) * np.sqrt(1 - a * a)
    x, _ = lfilter([1.0], [1.0, -a], e, axis=1, zi=(a * x0)[:, None])
    return x.T


def _binomial_band(reps: int, p: float, alpha: float) -> tuple[int, int]:
    """Acceptance region [lo, hi] for a Binomial(reps, p) count, two-sided at ``alpha``."""
    return int(st.binom.ppf(alpha / 2, reps, p)), int(st.binom.isf(alpha / 2, reps, p))


@pytest.mark.parametrize("level", [0.99, 0.90])
def test_batch_means_interval_covers_the_true_mean_of_ar1(level):
    """Seeded coverage simulation of the batch-means interval ``mean +- t_49 * se``.

    2,000 AR(1) series (a = 0.5, integrated autocorrelation time (1 + a)/(1 - a) = 3, length
    5,000, 50 batches of 100 steps) with true mean 0. The number of intervals that miss 0 is
    Binomial(2000, 1 - level) under correct coverage; it must lie in the two-sided
    acceptance region at alpha = 1e-3 (false-failure rate 1e-3 per level, 2e-3 for both).
    Power: the naive i.i.d. standard error std/sqrt(n) is sqrt(3) too small here, and its
    99 % interval misses about 12 % of the time (asserted below, far outside the region);
    an interval twice too wide would miss essentially never (below the region's lower end).
    """
    rng = np.random.default_rng(20240601)
    a, n, reps, n_batches = 0.5, 5_000, 2_000, 50
    x = _ar1(rng, a, n, reps)
    est, se = stats.batch_means(x, n_batches=n_batches)
    assert est.shape == se.shape == (reps,)
    q = stats.t_quantile(level, n_batches - 1)
    misses = int(np.sum(np.abs(est) > q * se))
    lo, hi = _binomial_band(reps, 1 - level, 1e-3)
    assert lo <= misses <= hi, (misses, lo, hi)
    if level == 0.99:
        naive = x.std(axis=0, ddof=1) / np.sqrt(n)
        assert np.sum(np.abs(est) > q * naive) > hi
        assert np.sum(np.abs(est) > 2 * q * se) < lo


def test_batch_statistic_is_the_spread_of_block_values():
    """The estimate is ``fn`` of the whole series; the standard error is the sample standard
    deviation of ``fn`` over the contiguous blocks over sqrt(n_batches) (the tail that does
    not fill a block is dropped), recomputed here block by block."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1003, 2)) * [1.0, 3.0]
    fn = lambda b: np.array([b[:, 0].mean() * b[:, 1].var(), np.median(b[:, 1])])  # noqa: E731
    est, se = stats.batch_statistic(x, fn, n_batches=10)
    np.testing.assert_allclose(est, fn(x), rtol=1e-14)
    blocks = np.array([fn(x[100 * k:100 * (k + 1)]) for k in range(10)])
    np.testing.assert_allclose(se, blocks.std(axis=0, ddof=1) / np.sqrt(10), rtol=1e-12)


def test_covariance_divides_by_n():
    rng = np.random.default_rng(4)
    pts = rng.standard_normal((50, 3))
    np.testing.assert_allclose(stats.covariance(pts), np.cov(pts.T, ddof=0), rtol=1e-12)


def test_log_log_slope_equals_weighted_least_squares():
    """Slope and standard error against numpy's weighted polynomial fit (independent code):
    weights 1/se(log y) = y / y_se, unscaled covariance."""
    rng = np.random.default_rng(5)
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    y = 3 * x ** 0.7 * np.exp(0.05 * rng.standard_normal(5))
    y_se = 0.05 * y * rng.uniform(0.5, 2.0, 5)
    slope, se = stats.log_log_slope(x, y, y_se)
    coef, cov = np.polyfit(np.log(x), np.log(y), 1, w=y / y_se, cov="unscaled")
    assert slope == pytest.approx(coef[0], rel=1e-12)
    assert se == pytest.approx(np.sqrt(cov[0, 0]), rel=1e-10)
    exact, _ = stats.log_log_slope(x, 3 * x ** 0.5, np.full(5, 0.01))
    assert exact == pytest.approx(0.5, rel=1e-12)


def test_log_log_slope_interval_covers():
    """Seeded coverage simulation: y = 2 x^0.8 with 1 % multiplicative Gaussian errors at five
    points; the 99 % normal interval slope +- 2.576 se must miss the true 0.8 a
    Binomial(2000, 0.01) number of times: within the two-sided region at alpha = 1e-3
    (false-failure rate 1e-3). The delta-method error of se(log y) = y_se / y is O(1 %) here."""
    rng = np.random.default_rng(6)
    x = np.array([1.0, 2.0, 5.0, 10.0, 20.0])
    reps, rel = 2_000, 0.01
    misses = 0
    for _ in range(reps):
        y = 2 * x ** 0.8 * (1 + rel * rng.standard_normal(x.size))
        slope, se = stats.log_log_slope(x, y, rel * y)
        misses += abs(slope - 0.8) > 2.5758 * se
    lo, hi = _binomial_band(reps, 0.01, 1e-3)
    assert lo <= misses <= hi, (misses, lo, hi)


def test_thin_keeps_every_kth_row_as_float32():
    pts = np.arange(20.0).reshape(10, 2)
    out = stats.thin(pts, 4)
    assert out.dtype == np.float32 and out.shape == (4, 2)
    np.testing.assert_array_equal(out, pts[::3])
    np.testing.assert_array_equal(stats.thin(pts, 100), pts)


def test_t_quantile_matches_scipy():
    assert stats.t_quantile(0.99, 49) == pytest.approx(st.t.ppf(0.995, 49), rel=1e-12)
    assert stats.t_quantile(0.99, 1e9) == pytest.approx(2.5758293, rel=1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda: stats.batch_means(np.zeros(10), n_batches=50), "at least 2 \\* n_batches"),
    (lambda: stats.batch_means(np.zeros(100), n_batches=1), "n_batches must be >= 2"),
    (lambda: stats.log_log_slope([1, 2], [1, -1], [1, 1]), "positive"),
    (lambda: stats.log_log_slope([1, 2, 3], [1, 2], [1, 1]), "same length"),
    (lambda: stats.t_quantile(1.5, 10), "level must lie in"),
    (lambda: stats.thin(np.zeros((3, 2)), 0), "max_points"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
