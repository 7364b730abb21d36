"""Tests of dsmlib.stats."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.foundation import stats


def test_batch_means_standard_error_on_ar1():
    """Seeded statistical test: the batch-means SE matches the known SE of an AR(1) mean.

    For x_t = a x_{t-1} + noise with unit marginal variance, Var(mean) ~ (1+a)/(1-a)/n.
    200 replicate series give the empirical spread of the time average; the mean of the
    batch-means SEs must agree with the theoretical SE within 10 % (the SE of an SE estimate
    from 50 batches is ~10 %/sqrt(200) = 0.7 %, so the band is > 10 standard errors wide:
    the false-failure rate is negligible, < 1e-20).
    """
    rng = np.random.default_rng(0)
    a, n, reps = 0.9, 50_000, 200
    from scipy.signal import lfilter
    noise = rng.standard_normal((reps, n)) * np.sqrt(1 - a * a)
    x = lfilter([1.0], [1.0, -a], noise, axis=1)
    ses = np.array([stats.batch_means(s)[1] for s in x])
    theory = np.sqrt((1 + a) / (1 - a) / n)
    assert ses.mean() == pytest.approx(theory, rel=0.1)
    assert x.mean(axis=1).std() == pytest.approx(theory, rel=0.2)


def test_batch_statistic_of_a_function():
    x = np.arange(1000.0)[:, None] * np.ones((1, 2))
    est, se = stats.batch_statistic(x, lambda b: b.mean(axis=0).sum(), n_batches=10)
    assert est == pytest.approx(999.0) and se > 0


def test_log_log_slope_recovers_a_power_law():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    slope, se = stats.log_log_slope(x, 3 * x ** 0.5, np.full(4, 0.01))
    assert slope == pytest.approx(0.5) and se > 0


@pytest.mark.parametrize("call, match", [
    (lambda: stats.batch_means(np.zeros(10), n_batches=50), "at least 2 \\* n_batches"),
    (lambda: stats.batch_means(np.zeros(100), n_batches=1), "n_batches must be >= 2"),
    (lambda: stats.log_log_slope([1, 2], [1, -1], [1, 1]), "positive"),
    (lambda: stats.t_quantile(1.5, 10), "level must lie in"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
