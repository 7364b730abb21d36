"""The vectorised label-noise SGD runner on the valley models, and the Eq. 17 model."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from dsmlib.theory import valley as V
from dsmlib.theory.valley_dsm import psd_cholesky, run_dsm_eq17
from dsmlib.theory.valley_sgd import run_valley_sgd, sgd_kernel


@pytest.fixture(scope="module")
def scalar():
    return V.scalar_product_problem(32, seed=0)


@pytest.fixture(scope="module")
def diag():
    return V.diagonal_problem(3, 6, seed=1)


def test_every_step_multiplies_the_imbalance_by_one_minus_eta2_c2():
    rng = np.random.default_rng(0)
    u, v = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    X, y = rng.standard_normal((4, 3)), rng.standard_normal(4)
    idx = rng.integers(0, 4, (1, 5, 2))
    labels = y[idx] + rng.standard_normal((1, 5, 2))
    eta = np.full(5, 0.07)
    d0 = u ** 2 - v ** 2
    c = np.einsum("rb,rbj->rj", np.einsum("rj,rbj->rb", u * v, X[idx[0]]) - labels[0], X[idx[0]]) / 2
    u1, v1 = sgd_kernel(u.copy(), v.copy(), eta, X, idx, labels)
    np.testing.assert_allclose(u1 ** 2 - v1 ** 2, d0 * (1 - 0.07 ** 2 * c ** 2), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mode, replace", [("fresh", True), ("fixed", True), ("fresh", False)])
def test_numba_and_torch_backends_agree_on_the_same_seed(diag, mode, replace):
    u0, v0 = V.min_norm_start(diag)
    kw = dict(eta=0.1, sigma2=0.25, batch_size=2, steps=700, n_runs=5, noise_mode=mode,
              replace=replace, record_every=33, seed=4)
    a = run_valley_sgd(diag, u0, v0, backend="numba", **kw)
    b = run_valley_sgd(diag, u0, v0, backend="torch", **kw)
    np.testing.assert_array_equal(a.steps, b.steps)
    assert a.steps[-1] == 700 and a.steps[1] == 33
    np.testing.assert_allclose(a.u, b.u, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.G, b.G, rtol=1e-9)


def test_same_seed_same_numbers_and_per_run_parameters(scalar):
    u0, v0 = V.scalar_start(1.0, 2.0)
    kw = dict(eta=[0.01, 0.02, 0.01], sigma2=[1.0, 1.0, 0.0], batch_size=4, steps=300, n_runs=3)
    a = run_valley_sgd(scalar, u0, v0, seed=7, **kw)
    b = run_valley_sgd(scalar, u0, v0, seed=7, **kw)
    c = run_valley_sgd(scalar, u0, v0, seed=8, **kw)
    np.testing.assert_array_equal(a.u, b.u)
    assert not np.array_equal(a.u, c.u)
    np.testing.assert_array_equal(a.u[-1, 2], u0.numpy())          # sigma2 = 0: stays exactly


def test_runs_on_every_device(device, scalar):
    u0, v0 = V.scalar_start(1.0, 2.0)
    r = run_valley_sgd(scalar, u0, v0, eta=0.02, sigma2=[1.0, 0.0], batch_size=4, steps=500,
                       n_runs=2, device=device, backend="torch", seed=0)
    assert np.all(np.isfinite(r.u)) and r.u.shape == (6, 2, 1)
    d = np.abs(r.u ** 2 - r.v ** 2)
    assert d[-1, 0] < d[0, 0]                                          # noisy: moved toward balance
    assert np.abs(r.u[-1, 1] - r.u[0, 1]).max() < 1e-12                # noiseless: stayed


def test_noiseless_sgd_stays_put_and_noisy_sgd_balances_in_every_run(diag):
    """Deterministic: on the valley noiseless steps are zero; |delta| can only shrink with noise."""
    u0, v0 = V.min_norm_start(diag)
    quiet = run_valley_sgd(diag, u0, v0, eta=0.1, sigma2=0.0, batch_size=1, steps=2000, n_runs=4)
    assert np.abs(quiet.u - u0.numpy()).max() < 1e-12 and np.abs(quiet.v - v0.numpy()).max() < 1e-12
    noisy = run_valley_sgd(diag, u0, v0, eta=0.1, sigma2=0.25, batch_size=1, steps=2000, n_runs=16)
    d = np.abs(noisy.u ** 2 - noisy.v ** 2)
    assert np.all(d[-1] < d[0])


def test_noisy_sgd_leaves_the_start_at_the_rate_of_eq17(scalar):
    """Seeded statistical test. SGD and the Eq. 17 model share E[c^2] (fluctuations across the
    valley included), so their drift rates agree up to O(eta^2) (relative ~1e-4 here, far below
    the standard error). Two-sided z = 4: false-failure rate 6.3e-5. The leaving test is
    one-sided at z = 4 (3.2e-5) against half the leading-order prediction."""
    u0, v0 = V.scalar_start(1.0, 2.0)
    kw = dict(eta=0.01, sigma2=1.0, batch_size=4, steps=2000, n_runs=256, record_every=2000)
    sgd = run_valley_sgd(scalar, u0, v0, seed=11, **kw).imbalance_rate(per="step")[:, 0]
    dsm = run_dsm_eq17(scalar, u0, v0, seed=12, **kw).imbalance_rate(per="step")[:, 0]
    se = np.hypot(sgd.std(ddof=1), dsm.std(ddof=1)) / np.sqrt(256)
    assert abs(sgd.mean() - dsm.mean()) < 4 * se
    pred = V.imbalance_decay_rate(0.01, 1.0, 4, per="step")
    assert sgd.mean() - 4 * sgd.std(ddof=1) / 16 > 0.5 * pred


def test_psd_cholesky_handles_rank_deficient_matrices():
    rng = np.random.default_rng(1)
    for rank in (0, 1, 3):
        B = rng.standard_normal((rank, 6))
        A, L = B.T @ B, np.empty((6, 6))
        psd_cholesky(A, L)
        np.testing.assert_allclose(L @ L.T, A, atol=1e-12)
        assert np.allclose(L, np.tril(L))


def test_eq17_one_step_has_the_predicted_mean_and_covariance(diag):
    """Seeded statistical test of one Eq. 17 step off the valley: c = (u - u') / (eta v) has mean
    g_bar and trace covariance (1/b) tr[(1/N) sum (r_i^2 + sigma^2) x_i x_i^T - g g^T].
    Each coordinate's mean and the trace are within z = 4 (7 checks: false-failure rate
    below 7 * 6.3e-5 = 4.4e-4)."""
    u = torch.tensor([1.2, -0.4, 0.8, 0.5, 1.1, -0.9], dtype=torch.float64)
    v = torch.tensor([0.7, 0.9, -0.6, 1.3, 0.4, 0.8], dtype=torch.float64)
    eta, s2, b, R = 0.05, 0.5, 2, 40_000
    r = run_dsm_eq17(diag, u, v, eta=eta, sigma2=s2, batch_size=b, steps=1, n_runs=R, seed=3,
                     record_every=1)
    c = (r.u[0] - r.u[1]) / (eta * r.v[0])
    X, res = diag.X.numpy(), (V.predict(u, v, diag.X) - diag.y).numpy()
    g = res @ X / diag.n
    M = ((res ** 2 + s2)[:, None, None] * X[:, :, None] * X[:, None, :]).mean(0) - np.outer(g, g)
    M /= b
    assert np.all(np.abs(c.mean(0) - g) < 4 * c.std(0, ddof=1) / np.sqrt(R))
    q = ((c - g) ** 2).sum(1)
    assert abs(q.mean() - np.trace(M)) < 4 * q.std(ddof=1) / np.sqrt(R)


@pytest.mark.parametrize("kw, match", [
    (dict(eta=5.0), "eta must be < 2/sharpness"),
    (dict(eta=-0.1), "eta must be > 0"),
    (dict(sigma2=-1.0), "sigma2 must be >= 0"),
    (dict(sigma2=[1.0, 2.0]), "one per run"),
    (dict(batch_size=40, replace=False), "batch_size must be <= 32"),
    (dict(noise_mode="sometimes"), "noise_mode must be one of"),
    (dict(replace="yes"), "replace must be True or False"),
    (dict(steps=0), "steps must be >= 1"),
    (dict(record_every=0), "record_every must be >= 1"),
    (dict(backend="jax"), "backend must be one of"),
    (dict(u0=[1.0, 2.0]), "u0 must be finite with shape"),
])
def test_bad_input_is_a_clear_value_error(scalar, kw, match):
    args = dict(u0=[2.0], v0=[0.5], eta=0.01, sigma2=1.0, batch_size=4, steps=10, n_runs=3)
    args.update(kw)
    u0, v0 = args.pop("u0"), args.pop("v0")
    with pytest.raises(ValueError, match=match):
        run_valley_sgd(scalar, u0, v0, **args)


def test_eq17_bad_input(scalar):
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        run_dsm_eq17(scalar, [2.0], [0.5], eta=0.01, sigma2=1.0, batch_size=0, steps=5, n_runs=2)
    with pytest.raises(ValueError, match="sigma2 must be >= 0"):
        run_dsm_eq17(scalar, [2.0], [0.5], eta=0.01, sigma2=-1.0, batch_size=1, steps=5, n_runs=2)
