"""Tests of dsmlib.foundation.distances: the unbiased sliced energy distance."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

from dsmlib.foundation import distances as ds


def brute_force(u, v):
    """The three energy terms from all pairs (O(n m)), the definition itself."""
    n, m = len(u), len(v)
    cross = np.abs(u[:, None] - v[None]).mean()
    suu = np.abs(u[:, None] - u[None]).sum()
    svv = np.abs(v[:, None] - v[None]).sum()
    return (2 * cross - suu / (n * (n - 1)) - svv / (m * (m - 1)),
            2 * cross - suu / n ** 2 - svv / m ** 2, cross)


def test_energy_terms_match_the_definition_and_scipy():
    rng = np.random.default_rng(0)
    u, v = rng.standard_normal(57), 0.3 + 1.2 * rng.standard_normal(41)
    t = ds.energy_terms(u, v)
    exact = brute_force(u, v)
    assert (t.unbiased, t.naive, t.cross) == pytest.approx(exact, rel=1e-12)
    assert t.naive == pytest.approx(st.energy_distance(u, v) ** 2, rel=1e-12)


def test_sliced_energy_averages_projections():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((30, 3)), rng.standard_normal((20, 3))
    W = ds.random_directions(3, 4, seed=0)
    assert np.allclose(np.linalg.norm(W, axis=1), 1.0)
    t = ds.sliced_energy(a, b, W)
    each = [brute_force(a @ w, b @ w)[0] for w in W]
    assert t.unbiased == pytest.approx(np.mean(each), rel=1e-12)


def test_unbiased_under_the_null_and_the_naive_floor():
    """Seeded: for two samples of ONE distribution the U-statistic averages to zero while the
    V-statistic (scipy's) sits at its floor E|X-X'|(1/n + 1/m) / (2E|X-Y|) = 1/n for n = m.
    400 replicates of n = m = 50: the mean of H is compared with 0 within 5 standard errors
    of the mean (false-failure rate < 1e-6); the naive mean is 1/50 to within 10 %."""
    rng = np.random.default_rng(2)
    W = ds.random_directions(2, 8, seed=0)
    H = np.array([ds.energy_coefficient(rng.standard_normal((50, 2)),
                                        rng.standard_normal((50, 2)), W) for _ in range(400)])
    assert abs(H[:, 0].mean()) <= 5 * H[:, 0].std(ddof=1) / np.sqrt(400)
    assert H[:, 1].mean() == pytest.approx(1 / 50, rel=0.1)


def test_detects_a_shift_and_is_scale_free():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2000, 2)), rng.standard_normal((2000, 2)) + [0.5, 0.0]
    W = ds.random_directions(2, 16, seed=1)
    h, _ = ds.energy_coefficient(a, b, W)
    h10, _ = ds.energy_coefficient(10 * a, 10 * b, W)
    assert h > 0.01 and h10 == pytest.approx(h, rel=1e-12)


def test_group_jackknife_standard_error():
    """Seeded: the jackknife SE of a mean difference matches the known SE sqrt(2/n) for
    unit-variance samples. The mean of 20 replicates (20 groups each) is compared with it
    within 5 of its own standard errors (measured from the replicates; normal false-failure
    rate < 1e-6) plus the small-sample bias of an SD, E s = sigma (1 - 1/(4 dof)) with
    19 degrees of freedom (1.3 %)."""
    rng = np.random.default_rng(4)
    ses = np.array([ds.group_jackknife(lambda a, b: a.mean() - b.mean(),
                                       rng.standard_normal((400, 1)),
                                       rng.standard_normal((400, 1)), n_groups=20, seed=k)[1]
                    for k in range(20)])
    known = np.sqrt(2 / 400)
    tol = 5 * ses.std(ddof=1) / np.sqrt(ses.size) + known / (4 * 19)
    assert abs(ses.mean() - known) < tol


@pytest.mark.parametrize("call, match", [
    (lambda: ds.energy_terms([1.0], [1.0, 2.0]), "at least 2 points"),
    (lambda: ds.energy_terms(np.zeros((2, 3)), np.zeros((3, 3))), "share their leading axes"),
    (lambda: ds.sliced_energy(np.zeros((3, 2)), np.zeros((3, 3)), np.ones((1, 2))),
     "same d"),
    (lambda: ds.sliced_energy(np.zeros((3, 2)), np.zeros((3, 2)), np.ones((1, 3))),
     "directions must have shape"),
    (lambda: ds.sliced_energy(np.full((3, 2), np.nan), np.zeros((3, 2)), np.ones((1, 2))),
     "finite"),
    (lambda: ds.random_directions(0, 3, 0), "dim must be >= 1"),
    (lambda: ds.group_jackknife(lambda a, b: 0.0, np.zeros((3, 1)), np.zeros((3, 1)),
                                n_groups=5), "n_groups must be <= 3"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_energy_coefficient_is_the_ratio_of_the_terms():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((30, 2)), rng.standard_normal((25, 2)) + 0.3
    W = ds.random_directions(2, 3, seed=2)
    t = ds.sliced_energy(a, b, W)
    assert ds.energy_coefficient(a, b, W) == pytest.approx(
        (t.unbiased / (2 * t.cross), t.naive / (2 * t.cross)), rel=1e-12)
    assert ds.random_directions(2, 1, seed=0).shape == (1, 2)
    with pytest.raises(ValueError, match="^count must be >= 1"):
        ds.random_directions(2, 0, seed=0)


def _jackknife_by_hand(stat, a, b, n_groups, seed):
    """Efron & Tibshirani's delete-a-group jackknife, with the groups drawn as documented."""
    g = np.random.default_rng(seed)
    ga, gb = g.permutation(len(a)) % n_groups, g.permutation(len(b)) % n_groups
    loo = np.array([stat(a[ga != k], b[gb != k]) for k in range(n_groups)], dtype=float)
    dev = loo - loo.mean(axis=0)
    return np.sqrt((n_groups - 1) / n_groups * (dev ** 2).sum(axis=0))


def test_group_jackknife_is_the_documented_formula():
    """Exact: a two-coordinate statistic, the defaults (20 groups, seed 0) and explicit ones;
    the estimate is the statistic of the full clouds."""
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((40, 2)), 2 * rng.standard_normal((30, 2))
    stat = lambda x, y: np.array([x[:, 0].mean() - y[:, 0].mean(), y[:, 1].var()])  # noqa: E731
    full, se = ds.group_jackknife(stat, a, b)
    np.testing.assert_allclose(full, stat(a, b), rtol=1e-12)
    np.testing.assert_allclose(se, _jackknife_by_hand(stat, a, b, 20, 0), rtol=1e-12)
    full, se = ds.group_jackknife(stat, a, b, n_groups=2, seed=3)
    np.testing.assert_allclose(se, _jackknife_by_hand(stat, a, b, 2, 3), rtol=1e-12)
    with pytest.raises(ValueError, match="^n_groups must be >= 2"):
        ds.group_jackknife(stat, a, b, n_groups=1)
    # an integer-valued statistic still gives a float estimate
    full, _ = ds.group_jackknife(lambda x, y: len(x) + len(y), a, b, n_groups=5)
    assert full.dtype == np.float64 and full == 70.0


def test_two_points_per_sample_are_enough_and_clouds_are_checked():
    u, v = np.array([0.0, 1.0]), np.array([0.5, 3.0])
    t = ds.energy_terms(u, v)
    assert (t.unbiased, t.naive, t.cross) == pytest.approx(brute_force(u, v), rel=1e-12)
    with pytest.raises(ValueError, match="^the two clouds must be"):
        ds.sliced_energy(np.zeros(3), np.zeros((3, 2)), np.ones((1, 2)))
    with pytest.raises(ValueError, match="^the two clouds must be"):
        ds.sliced_energy(np.zeros((3, 2)), np.zeros(3), np.ones((1, 2)))
    with pytest.raises(ValueError, match="^the two clouds must contain only finite numbers"):
        ds.sliced_energy(np.zeros((3, 2)), np.full((3, 2), np.inf), np.ones((1, 2)))
