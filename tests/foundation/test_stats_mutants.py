"""Exact checks of dsmlib.foundation.stats that the mutation run (`make mutants`) showed were
missing: defaults, boundaries, the two-point and no-lack-of-fit branches of LogLogFit, and the
note a reader sees (``describe``). All deterministic."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from dsmlib.foundation import stats


def test_batch_means_default_is_fifty_batches():
    x = np.random.default_rng(0).standard_normal(1_000)
    est, se = stats.batch_means(x)
    blocks = x.reshape(50, 20).mean(axis=1)
    assert est == pytest.approx(x.mean(), rel=1e-12)
    assert se == pytest.approx(blocks.std(ddof=1) / np.sqrt(50), rel=1e-12)
    est2, se2 = stats.batch_statistic(x, lambda b: b.mean(axis=0))
    assert [float(est2), float(se2)] == pytest.approx([float(est), float(se)], rel=1e-12)


def test_series_of_exactly_two_per_batch_is_enough():
    x = np.arange(20.0)
    est, se = stats.batch_means(x, n_batches=10)
    assert est == pytest.approx(9.5)
    assert se == pytest.approx(np.arange(0.5, 20, 2).std(ddof=1) / np.sqrt(10))
    with pytest.raises(ValueError, match=r"^series must have at least 2 \* n_batches = 20 "
                                         r"samples along axis 0, got 19"):
        stats.batch_means(x[:19], n_batches=10)


def test_block_moments_are_the_blocks_moments():
    """Means and covariances (normalised by n) of each block and of the whole series; the
    tail that does not fill a block is dropped from the blocks only."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((53, 2)) @ np.array([[1.0, 0.3], [0.0, 2.0]]) + [1.0, -2.0]
    bm = stats.block_moments(x, n_batches=5)
    blocks = np.split(x[:50], 5)
    np.testing.assert_allclose(bm.means, [b.mean(axis=0) for b in blocks], rtol=1e-12)
    np.testing.assert_allclose(bm.covs, [stats.covariance(b) for b in blocks], rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(bm.mean, x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(bm.cov, np.cov(x.T, bias=True), rtol=1e-10)
    est, se = bm.statistic(lambda m, c: np.array([m[1], c[0, 0]]))
    vals = np.array([[b.mean(axis=0)[1], stats.covariance(b)[0, 0]] for b in blocks])
    np.testing.assert_allclose(est, [x[:, 1].mean(), np.var(x[:, 0])], rtol=1e-10)
    np.testing.assert_allclose(se, vals.std(axis=0, ddof=1) / np.sqrt(5), rtol=1e-10)
    assert stats.block_moments(x[:10], n_batches=5).means.shape == (5, 2)   # 2 per block
    assert stats.block_moments(np.zeros((100, 1))).means.shape == (50, 1)    # default 50
    with pytest.raises(ValueError, match=r"^series must be \(n, d\) with n >= 2 \* n_batches = 10, "
                                         r"got shape \(9, 2\)"):
        stats.block_moments(x[:9], n_batches=5)
    with pytest.raises(ValueError, match="^series must be"):
        stats.block_moments(x[:, 0], n_batches=5)
    with pytest.raises(ValueError, match="^n_batches must be >= 2"):
        stats.block_moments(x, n_batches=1)


def test_log_log_slope_checks_its_input():
    stats.log_log_slope([1, 2], [1, 2], [1, 1])          # integers are accepted
    with pytest.raises(ValueError, match="^x, y and y_se must be 1-D arrays of the same length"):
        stats.log_log_slope([1.0], [1.0], [0.1])
    for x, y, s in [([0.0, 1.0], [1.0, 2.0], [0.1, 0.1]), ([1.0, 2.0], [0.0, 2.0], [0.1, 0.1]),
                    ([1.0, 2.0], [1.0, 2.0], [0.0, 0.1])]:
        with pytest.raises(ValueError, match="^x, y and y_se must be positive for a log-log fit"):
            stats.log_log_slope(x, y, s)
    # values below 1 are fine (only zero and negatives are not)
    slope, _ = stats.log_log_slope([0.5, 1.0], [0.5, 0.25], [0.05, 0.025])
    assert slope == pytest.approx(-1.0)


def test_thin_keeps_every_kth_point():
    pts = np.arange(10.0)[:, None]
    assert stats.thin(pts, 1).tolist() == [[0.0]]
    assert stats.thin(pts, 4).ravel().tolist() == [0.0, 3.0, 6.0, 9.0]
    with pytest.raises(ValueError, match="^max_points must be >= 1"):
        stats.thin(pts, 0)


def test_two_point_fit_keeps_its_numbers():
    fit = stats.LogLogFit.from_chi2(1.5, 0.2, 0.1, 0.0, 0)
    assert (fit.slope, fit.intercept, fit.se, fit.chi2, fit.dof) == (1.5, 0.2, 0.1, 0.0, 0)
    assert fit.p_value is None and fit.lack_of_fit is False
    assert fit.se_widened == 0.1 and fit.dof_interval == math.inf
    assert fit.inflation == 1.0 and fit.widened_se() == 0.1
    assert fit.describe() == "two points: lack of fit cannot be tested"


def test_no_widening_without_lack_of_fit():
    """chi2 / dof = 2 on 4 dof (p = 0.092 > 0.01): the line is not rejected, so the interval
    is not widened, although the Birge ratio would be sqrt(2)."""
    fit = stats.LogLogFit.from_chi2(1.0, 0.0, 0.1, 8.0, 4)          # default alpha 0.01
    assert fit.p_value == pytest.approx(st.chi2.sf(8.0, 4))
    assert not fit.lack_of_fit
    assert fit.se_widened == 0.1 and fit.dof_interval == math.inf
    assert fit.inflation == pytest.approx(math.sqrt(2))
    assert fit.widened_se() == 0.1
    assert fit.widened_se(alpha=0.1) == pytest.approx(0.1 * math.sqrt(2))
    assert fit.describe() == ("lack of fit χ² = 8 on 4 dof, p = 0.0916: consistent with a "
                              "straight line")
    assert fit.describe("a parabola").endswith("consistent with a parabola")


def test_widening_is_the_birge_ratio_even_below_two():
    """chi2 = 14 on 4 dof: rejected (p = 0.0073), widened by sqrt(14 / 4) = 1.87 exactly."""
    fit = stats.LogLogFit.from_chi2(1.0, 0.0, 0.1, 14.0, 4)
    assert fit.lack_of_fit and fit.dof_interval == 4.0
    assert fit.se_widened == pytest.approx(0.1 * math.sqrt(3.5), rel=1e-12)
    assert fit.widened_se() == pytest.approx(0.1 * math.sqrt(3.5), rel=1e-12)
    assert fit.describe() == ("lack of fit χ² = 14 on 4 dof, p = 0.0073: the points are not "
                              "on a straight line: the law is rejected and decides nothing (they "
                              "scatter 1.87 times their errors)")
    # an explicit alpha decides the test
    assert not stats.LogLogFit.from_chi2(1.0, 0.0, 0.1, 14.0, 4, alpha=0.005).lack_of_fit


@pytest.mark.parametrize("args, kw, match", [
    (([1.0], [1.0]), {"y_se": [0.1]}, "x, y and y_se must be 1-D arrays of the same length >= 2"),
    (([[1.0, 2.0]], [[1.0, 2.0]]), {"y_se": [[0.1, 0.1]]}, "x, y and y_se must be 1-D arrays"),
    (([1.0, 2.0], [1.0, 2.0]), {}, "give exactly one of y_se and y_cov"),
    (([0.0, 2.0], [1.0, 2.0]), {"y_se": [0.1, 0.1]}, "x, y and y_se must be positive"),
    (([1.0, 2.0], [0.0, 2.0]), {"y_se": [0.1, 0.1]}, "x, y and y_se must be positive"),
    (([1.0, 2.0], [1.0, 2.0]), {"y_cov": np.diag([0.0, 0.1])}, "x, y and y_se must be positive"),
    (([2.0, 2.0, 2.0], [1.0, 2.0, 3.0]), {"y_se": [0.1] * 3},
     "x must take at least two distinct values for a slope"),
    (([1.0, 2.0], [1.0, 2.0]), {"y_cov": [[1.0, 1.0], [1.0, 1.0]]}, "y_cov must be positive definite"),
])
def test_loglog_fit_bad_input(args, kw, match):
    with pytest.raises(ValueError, match="^" + match):
        stats.loglog_fit(*args, **kw)


def test_loglog_fit_takes_values_below_one():
    fit = stats.loglog_fit([0.5, 1.0, 2.0], [0.25, 1.0, 4.0], [0.01, 0.04, 0.16])
    assert fit.slope == pytest.approx(2.0) and fit.chi2 == pytest.approx(0.0, abs=1e-20)


def test_t_quantile_levels_are_open_and_named():
    assert stats.t_quantile(0.95, 10) == pytest.approx(st.t.ppf(0.975, 10), rel=1e-12)
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match=r"^level must lie in \(0, 1\)"):
            stats.t_quantile(bad, 10)
    with pytest.raises(ValueError, match="^level must be a real number"):
        stats.t_quantile("high", 10)


def test_loglog_fit_passes_its_alpha_on():
    """Residuals (+-0.1 on a line, se 0.1): chi2 = 2 on 2 dof, p = 0.37: not rejected at the
    book's 0.01, rejected at alpha = 0.5."""
    x = np.array([1.0, 2.0, 4.0, 8.0])
    y = x * np.exp([0.1, -0.1, -0.1, 0.1])
    fit = stats.loglog_fit(x, y, 0.1 * y)
    assert fit.dof == 2 and not fit.lack_of_fit
    assert stats.loglog_fit(x, y, 0.1 * y, alpha=0.5).lack_of_fit
