"""Tests of dsmlib.ols: the simulator, the exact stationary moments and input validation."""
from __future__ import annotations

import numpy as np
import pytest

from types import SimpleNamespace

from dsmlib.foundation import rng
from dsmlib.theory import least_squares, least_squares_sgd, minibatch

ols = SimpleNamespace(**{**vars(least_squares), **vars(least_squares_sgd), 'finite_population_factor': minibatch.finite_population_factor, '_chain_streams': rng.chain_streams})

BETA = np.array([1.0, 1.0])


@pytest.fixture(scope="module")
def problem() -> ols.OLSProblem:
    return ols.make_problem(100, 20 * np.eye(2), BETA, 0.5, seed=1)


@pytest.fixture(scope="module")
def small() -> ols.OLSProblem:
    # Few samples and a large batch make the finite-population factor (N-B)/(N-1) = 0.63 large.
    return ols.make_problem(20, np.diag([4.0, 9.0]), BETA, 1.0, seed=7)


# -- the problem --------------------------------------------------------------------------------
def test_make_problem_fields(problem):
    assert problem.X.shape == (100, 2) and problem.y.shape == (100,)
    np.testing.assert_allclose(problem.y_clean, problem.X @ BETA)
    np.testing.assert_allclose(problem.beta_hat, np.linalg.lstsq(problem.X, problem.y, rcond=None)[0])
    np.testing.assert_allclose(problem.sample_cov, problem.X.T @ problem.X / 100)


def test_common_random_numbers_rescale_noise_only():
    a = ols.make_problem(50, 20 * np.eye(2), BETA, 0.25, seed=3)
    b = ols.make_problem(50, 20 * np.eye(2), BETA, 1.0, seed=3)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_allclose(b.noise, 2.0 * a.noise)


def test_same_seed_same_numbers(problem):
    t1 = ols.sgd_trajectories(problem, 0.01, 5, 3000, seed=11, n_chains=2)
    t2 = ols.sgd_trajectories(problem, 0.01, 5, 3000, seed=11, n_chains=2)
    np.testing.assert_array_equal(t1, t2)
    assert not np.array_equal(t1[0], t1[1])  # chains are independent streams


# -- the compiled simulator against plain Python -------------------------------------------------
@pytest.mark.parametrize("replace", [True, False])
def test_kernel_matches_python_reference(problem, replace):
    steps, b, eta = 500, 5, 0.01
    traj = ols.sgd_trajectories(problem, eta, b, steps, seed=5, replace=replace)[0]
    u = ols._chain_streams(5, 1)[0][0].random((steps, b))
    beta, perm, ref = np.zeros(2), np.arange(problem.n), [np.zeros(2)]
    for k in range(steps):
        if replace:
            idx = np.floor(u[k] * problem.n).astype(int)
        else:  # partial Fisher-Yates on a persistent permutation
            idx = np.empty(b, dtype=int)
            for j in range(b):
                r = j + int(u[k, j] * (problem.n - j))
                perm[j], perm[r] = perm[r], perm[j]
                idx[j] = perm[j]
            assert len(set(idx)) == b
        xb = problem.X[idx]
        beta = beta - eta / b * xb.T @ (xb @ beta - problem.y[idx])
        ref.append(beta)
    np.testing.assert_allclose(traj, np.array(ref), rtol=1e-12, atol=1e-12)


def test_full_batch_without_replacement_is_gradient_descent(small):
    eta = 0.02
    traj = ols.sgd_trajectories(small, eta, small.n, 200, replace=False, seed=0)[0]
    beta = np.zeros(2)
    for _ in range(200):
        beta = beta - eta * small.X.T @ (small.X @ beta - small.y) / small.n
    np.testing.assert_allclose(traj[-1], beta, rtol=1e-10)


def test_noisy_and_noiseless_share_minibatches():
    p = ols.make_problem(40, 20 * np.eye(2), BETA, 0.0, seed=2)  # noisy labels == clean labels
    a = ols.sgd_trajectories(p, 0.01, 5, 2000, label_noise="fixed", seed=9)
    b = ols.sgd_trajectories(p, 0.01, 5, 2000, label_noise="none", seed=9)
    np.testing.assert_array_equal(a, b)


def test_record_every_and_chunk_boundaries(problem):
    steps = 70_001  # crosses the 2**16-step chunk boundary
    full = ols.sgd_trajectories(problem, 0.01, 5, steps, seed=4)
    sub = ols.sgd_trajectories(problem, 0.01, 5, steps, seed=4, record_every=7)
    assert full.shape == (1, steps + 1, 2)
    assert sub.shape == (1, steps // 7 + 1, 2)
    np.testing.assert_array_equal(sub[0], full[0, ::7][: sub.shape[1]])


def test_noiseless_sgd_converges_to_beta_star(problem):
    traj = ols.sgd_trajectories(problem, 0.01, 5, 20_000, label_noise="none", seed=0)
    assert np.linalg.norm(traj[0, -1] - BETA) < 1e-10


# -- exact moments -------------------------------------------------------------------------------
def test_stability_limit_is_where_second_moment_map_has_unit_radius(problem):
    for replace in (True, False):
        lim = ols.stability_limit(problem, 5, replace=replace)
        _, p, r = ols._moment_operators(problem, 5, replace)
        top = np.linalg.eigvalsh(np.eye(3) - lim * p + lim ** 2 * r).max()
        assert top == pytest.approx(1.0, abs=1e-9)
        assert ols.mean_square_rate(problem, 0.99 * lim, 5, replace=replace) < 1.0


def test_lyapunov_is_the_small_eta_limit(problem):
    eta = 1e-5
    exact = ols.stationary_covariance(problem, eta, 5)
    lyap = ols.lyapunov_covariance(problem, eta, 5)
    np.testing.assert_allclose(exact, lyap, rtol=1e-3)


def test_stationary_mean_and_paper_formula(problem):
    np.testing.assert_array_equal(ols.stationary_mean(problem), problem.beta_hat)
    np.testing.assert_array_equal(ols.stationary_mean(problem, label_noise="fresh"), BETA)
    np.testing.assert_allclose(ols.paper_covariance(problem, 0.01, 5),
                               0.01 * 0.5 / 5 * problem.sample_cov)
    assert np.all(ols.stationary_covariance(problem, 0.01, 5, label_noise="none") == 0)


def _iid_stationary_draws(p, eta, b, *, replace, label_noise, n_chains, seed):
    """One draw per independent chain after a burn-in where the start's weight is < 1e-12."""
    burn = ols.burn_in_steps(p, eta, b, replace=replace)
    traj = ols.sgd_trajectories(p, eta, b, burn, n_chains=n_chains, seed=seed, replace=replace,
                                label_noise=label_noise, record_every=burn)
    return traj[:, -1, :]


@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("label_noise", ["fixed", "fresh"])
def test_empirical_stationary_covariance_matches_exact(small, replace, label_noise):
    """Seeded statistical test of ``stationary_covariance``.

    20,000 independent chains each give one draw from the stationary law. Each entry
    ``C_ab`` is estimated by the mean of ``e_a e_b`` around the exact mean (unbiased), with
    standard error ``std(e_a e_b)/sqrt(n)``, and must lie within z = 4 standard errors of the
    prediction. With 3 entries in each of the 4 parametrisations, the family-wise false-failure
    rate is at most 12 * 6.3e-5 < 1e-3 (normal approximation; the seed is fixed, so a given
    checkout passes or fails deterministically). The same band must *reject* the paper's
    formula, so the test has power.
    """
    eta, b, n_chains = 0.02, 8, 20_000
    draws = _iid_stationary_draws(small, eta, b, replace=replace, label_noise=label_noise,
                                  n_chains=n_chains, seed=123)
    e = draws - ols.stationary_mean(small, label_noise=label_noise)
    exact = ols.stationary_covariance(small, eta, b, replace=replace, label_noise=label_noise)
    paper = ols.paper_covariance(small, eta, b)
    for a, c in [(0, 0), (0, 1), (1, 1)]:
        prod = e[:, a] * e[:, c]
        est, se = prod.mean(), prod.std(ddof=1) / np.sqrt(n_chains)
        assert abs(est - exact[a, c]) < 4 * se, (a, c, est, exact[a, c], se)
        if a == c:
            assert abs(est - paper[a, c]) > 4 * se


def test_replacement_schemes_differ_by_the_finite_population_factor(small):
    """Without replacement the label-noise part of the covariance shrinks by (N-B)/(N-1)."""
    c_with = ols.lyapunov_covariance(small, 0.02, 8, replace=True)
    c_without = ols.lyapunov_covariance(small, 0.02, 8, replace=False)
    np.testing.assert_allclose(c_without, c_with * (20 - 8) / 19, rtol=1e-10)


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, match", [
    (dict(sigma2=-0.1), "sigma2 must be >= 0"),
    (dict(cov=[[1.0, 2.0], [0.0, 1.0]]), "cov must be symmetric"),
    (dict(cov=[[1.0, 2.0], [2.0, 1.0]]), "cov must be positive semi-definite"),
    (dict(cov=np.eye(3)), "cov must be 2x2"),
    (dict(n=0), "n must be >= 1"),
    (dict(beta_star=[np.nan, 1.0]), "beta_star must be"),
])
def test_make_problem_rejects_bad_input(kwargs, match):
    args = dict(n=10, cov=np.eye(2), beta_star=BETA, sigma2=0.5, seed=0) | kwargs
    with pytest.raises(ValueError, match=match):
        ols.make_problem(**args)


@pytest.mark.parametrize("kwargs, match", [
    (dict(batch_size=0), "batch_size must be >= 1"),
    (dict(batch_size=101, replace=False), "batch_size must be <= N = 100"),
    (dict(eta=0.0), "eta must be > 0"),
    (dict(eta=-1.0), "eta must be > 0"),
    (dict(steps=0), "steps must be >= 1"),
    (dict(label_noise="sometimes"), "label_noise must be one of"),
    (dict(n_chains=0), "n_chains must be >= 1"),
    (dict(record_every=0), "record_every must be >= 1"),
    (dict(eta=0.5), r"eta = 0.5 is at or beyond the mean-square stability limit eta_max = 0\.06"),
    (dict(seed="x"), "seed must be"),
])
def test_sgd_rejects_bad_input(problem, kwargs, match):
    args = dict(eta=0.01, batch_size=5, steps=10) | kwargs
    with pytest.raises(ValueError, match=match):
        ols.sgd_trajectories(problem, **args)


def test_batch_larger_than_n_is_fine_with_replacement(problem):
    traj = ols.sgd_trajectories(problem, 0.01, 150, 10, replace=True)
    assert np.all(np.isfinite(traj))


def test_stationary_covariance_rejects_unstable_eta(problem):
    with pytest.raises(ValueError, match="stability limit"):
        ols.stationary_covariance(problem, 1.0, 5)


def test_singular_inputs_have_no_stability_limit():
    p = ols.make_problem(10, np.diag([1.0, 0.0]), BETA, 0.1, seed=0)
    with pytest.raises(ValueError, match="singular"):
        ols.stability_limit(p, 2)
