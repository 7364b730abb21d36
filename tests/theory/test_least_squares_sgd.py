"""The compiled least-squares SGD kernel and its naive reference loop
(dsmlib.theory.least_squares_sgd): same paths on the same seed, an independent plain-Python
re-implementation of the sampler, and input validation."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.foundation.rng import chain_streams
from dsmlib.theory import least_squares as ls
from dsmlib.theory.least_squares_sgd import naive_sgd, sgd_time_averages, sgd_trajectories

BETA = np.array([1.0, 1.0])


@pytest.fixture(scope="module")
def problem() -> ls.OLSProblem:
    return ls.make_problem(100, 20 * np.eye(2), BETA, 0.5, seed=1)


def test_same_seed_same_numbers(problem):
    t1 = sgd_trajectories(problem, 0.01, 5, 3000, seed=11, n_chains=2)
    t2 = sgd_trajectories(problem, 0.01, 5, 3000, seed=11, n_chains=2)
    np.testing.assert_array_equal(t1, t2)
    assert not np.array_equal(t1[0], t1[1])  # chains are independent streams


@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("label_noise", ["fixed", "none"])
def test_naive_sgd_matches_the_compiled_kernel(problem, replace, label_noise):
    """The benchmark baseline and the kernel share the sampler and the uniform stream, so on
    one seed they follow the same path to rounding (2,000 steps, a start away from beta*)."""
    kw = dict(seed=17, replace=replace, label_noise=label_noise, beta0=[3.0, -2.0])
    fast = sgd_trajectories(problem, 0.02, 7, 2000, **kw)[0]
    slow = naive_sgd(problem, 0.02, 7, 2000, **kw)
    assert slow.shape == fast.shape == (2001, 2)
    np.testing.assert_allclose(slow, fast, rtol=1e-12, atol=1e-12)
    other = naive_sgd(problem, 0.02, 7, 2000, **(kw | dict(seed=18)))
    assert np.abs(other[20] - fast[20]).max() > 1e-6      # the seed does drive the path


@pytest.mark.parametrize("replace", [True, False])
def test_kernel_matches_python_reference(problem, replace):
    """An independent plain-Python sampler (floor(u N) with replacement; a partial
    Fisher-Yates shuffle of a persistent permutation without) on the kernel's uniforms."""
    steps, b, eta = 500, 5, 0.01
    traj = sgd_trajectories(problem, eta, b, steps, seed=5, replace=replace)[0]
    u = chain_streams(5, 1)[0][0].random((steps, b))
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


def test_fresh_noise_uses_the_second_stream(problem):
    """Fresh label noise: the kernel adds sigma * z_{t,j} from chain c's second stream to
    the clean label of slot j at step t."""
    steps, b, eta = 300, 4, 0.01
    traj = sgd_trajectories(problem, eta, b, steps, seed=8, label_noise="fresh")[0]
    batch_rng, noise_rng = chain_streams(8, 1)[0]
    u = batch_rng.random((steps, b))
    z = np.sqrt(problem.sigma2) * noise_rng.standard_normal((steps, b))
    beta = np.zeros(2)
    for k in range(steps):
        idx = np.floor(u[k] * problem.n).astype(int)
        xb = problem.X[idx]
        beta = beta - eta / b * xb.T @ (xb @ beta - problem.y_clean[idx] - z[k])
    np.testing.assert_allclose(traj[-1], beta, rtol=1e-12, atol=1e-12)


def test_full_batch_without_replacement_is_gradient_descent():
    small = ls.make_problem(20, np.diag([4.0, 9.0]), BETA, 1.0, seed=7)
    eta = 0.02
    traj = sgd_trajectories(small, eta, small.n, 200, replace=False, seed=0)[0]
    beta = np.zeros(2)
    for _ in range(200):
        beta = beta - eta * small.X.T @ (small.X @ beta - small.y) / small.n
    np.testing.assert_allclose(traj[-1], beta, rtol=1e-10)


def test_noisy_and_noiseless_share_minibatches():
    p = ls.make_problem(40, 20 * np.eye(2), BETA, 0.0, seed=2)  # noisy labels == clean labels
    a = sgd_trajectories(p, 0.01, 5, 2000, label_noise="fixed", seed=9)
    b = sgd_trajectories(p, 0.01, 5, 2000, label_noise="none", seed=9)
    np.testing.assert_array_equal(a, b)


def test_record_every_and_chunk_boundaries(problem):
    steps = 70_001  # crosses the 2**16-step chunk boundary
    full = sgd_trajectories(problem, 0.01, 5, steps, seed=4)
    sub = sgd_trajectories(problem, 0.01, 5, steps, seed=4, record_every=7)
    assert full.shape == (1, steps + 1, 2)
    assert sub.shape == (1, steps // 7 + 1, 2)
    np.testing.assert_array_equal(sub[0], full[0, ::7][: sub.shape[1]])


def test_noiseless_sgd_converges_to_beta_star(problem):
    traj = sgd_trajectories(problem, 0.01, 5, 20_000, label_noise="none", seed=0)
    assert np.linalg.norm(traj[0, -1] - BETA) < 1e-10


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
    (dict(beta0=[1.0]), "beta0 must be"),
])
def test_sgd_rejects_bad_input(problem, kwargs, match):
    args = dict(eta=0.01, batch_size=5, steps=10) | kwargs
    with pytest.raises(ValueError, match=match):
        sgd_trajectories(problem, **args)


def test_naive_sgd_rejects_bad_input(problem):
    with pytest.raises(ValueError, match="label_noise"):
        naive_sgd(problem, 0.01, 5, 10, label_noise="fresh")
    with pytest.raises(ValueError, match="batch_size"):
        naive_sgd(problem, 0.01, 101, 10, replace=False)


def test_batch_larger_than_n_is_fine_with_replacement(problem):
    traj = sgd_trajectories(problem, 0.01, 150, 10, replace=True)
    assert np.all(np.isfinite(traj))


def test_time_averages_are_the_chains_of_sgd_trajectories(problem):
    """Row m of the labels runs as chain m of sgd_trajectories on the same seed: with the
    problem's own labels the averages over the last ``steps`` iterates agree exactly; another
    label vector gives another centre (its least-squares fit's neighbourhood)."""
    burn, steps = 50, 700
    paths = sgd_trajectories(problem, 0.01, 5, burn + steps, seed=7, n_chains=2, replace=False)
    got = sgd_time_averages(problem, np.stack([problem.y, problem.y]), 0.01, 5, steps,
                            burn_in=burn, seed=7, replace=False)
    np.testing.assert_array_equal(got, paths[:, burn + 1:].mean(axis=1))
    shifted = sgd_time_averages(problem, (problem.y + 5.0)[None], 0.01, 5, steps, burn_in=burn,
                                seed=7, replace=False)
    assert np.linalg.norm(shifted[0] - got[0]) > 0.1
    with pytest.raises(ValueError, match="labels must be an"):
        sgd_time_averages(problem, problem.y, 0.01, 5, steps, burn_in=burn)
