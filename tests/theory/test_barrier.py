"""The two-basin barrier model (theory): exact closed forms against brute force, the diffusion
prediction, and label-noisy SGD's first passages."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dsmlib.theory import barrier as BR
from dsmlib.theory.barrier_sgd import escape_kernel, run_barrier_sgd


@pytest.fixture(scope="module")
def p():
    return BR.barrier_problem(16, seed=0)


def test_inputs_have_identity_second_moment_and_labels_interpolate(p):
    np.testing.assert_allclose(p.X.T @ p.X / p.n, np.eye(2), atol=1e-12)
    for th in (BR.SHARP, BR.FLAT):
        f = p.X @ (p.beta + BR.curve(p, th))
        np.testing.assert_allclose(f, p.y, atol=1e-12)
        assert BR.loss(p, th) == pytest.approx(0.0, abs=1e-24)


def test_closed_forms_match_brute_force(p):
    t = np.linspace(-0.8, 1.9, 37)
    resid = (BR.curve(p, t) @ p.X.T)                                  # f(x_i) - y_i, (T, N)
    np.testing.assert_allclose(BR.loss(p, t), 0.5 * (resid ** 2).mean(1), rtol=1e-10, atol=1e-14)
    grads = BR.curve_derivative(p, t) @ p.X.T                         # df(x_i)/dtheta
    np.testing.assert_allclose(BR.gradient_norm(p, t), (grads ** 2).mean(1), rtol=1e-10, atol=1e-14)
    h = 1e-6
    np.testing.assert_allclose(BR.loss_derivative(p, t),
                               (BR.loss(p, t + h) - BR.loss(p, t - h)) / (2 * h), rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(BR.curve_derivative(p, t),
                               (BR.curve(p, t + h) - BR.curve(p, t - h)) / (2 * h), rtol=1e-5, atol=1e-8)
    prod = grads * resid
    np.testing.assert_allclose(BR.minibatch_variance(p, t), prod.var(1), rtol=1e-9, atol=1e-14)


def test_minima_barrier_and_sharpness(p):
    tb = BR.barrier_top(p)
    t = np.linspace(0.0, 1.0, 20001)
    assert tb == pytest.approx(t[np.argmax(BR.loss(p, t))], abs=1e-4)
    assert BR.barrier_height(p) == pytest.approx(float(BR.loss(p, tb)), rel=1e-12)
    assert BR.barrier_height(p) == pytest.approx(2 * p.r0 ** 2)
    assert BR.angle(p, [0.0, 1.0, tb])[0] == pytest.approx([0.0, 2 * math.pi, math.pi])
    G0, G1 = BR.gradient_norm(p, [BR.SHARP, BR.FLAT])
    assert G1 == pytest.approx(1.0) and G0 > 10 * G1            # the sharp one has the high G
    h = 1e-4
    for th, G in ((BR.SHARP, G0), (BR.FLAT, G1)):               # L'' = G at a minimum
        curv = (BR.loss(p, th + h) - 2 * BR.loss(p, th) + BR.loss(p, th - h)) / h ** 2
        assert curv == pytest.approx(G, rel=1e-5)
    # no other minimum: the loss only rises away from the two minima
    left, right = np.linspace(-4, 0, 400), np.linspace(1, 5, 400)
    assert np.all(np.diff(BR.loss(p, left)) < 0) and np.all(np.diff(BR.loss(p, right)) > 0)
    assert np.all(BR.gradient_norm(p, np.linspace(0, 1, 1001)) > 0.1)   # noise reaches the top


def test_diffusion_escape_time(p):
    kw = dict(eta=0.01, batch_size=1)
    times = [BR.escape_time_diffusion(p, BR.SHARP, sigma2=s2, **kw) for s2 in (1.0, 2.0, 4.0)]
    assert times[0] > times[1] > times[2] > 0                   # more noise, faster escape
    flat = BR.escape_time_diffusion(p, BR.FLAT, sigma2=2.0, **kw)
    assert flat > 100 * times[1]                                # the flat minimum holds
    assert BR.escape_time_diffusion(p, BR.SHARP, sigma2=0.0, **kw) == math.inf
    # the quadrature has converged and does not depend on where the far end reflects
    fine = BR.escape_time_diffusion(p, BR.SHARP, sigma2=2.0, n_grid=32001, margin=2.0, **kw)
    assert fine == pytest.approx(times[1], rel=2e-3)
    # a constant noise enters the diffusion as D = eta ((sigma^2 G + V)/b + q): with sigma^2 = 0
    # and q the label noise's variance at the sharp minimum, the sharp escape is no slower,
    # and the flat minimum is left far sooner than under label noise
    q = 2.0 * float(BR.gradient_norm(p, BR.SHARP))
    const = {s: BR.escape_time_diffusion(p, s, sigma2=0.0, noise_var=q, **kw)
             for s in (BR.SHARP, BR.FLAT)}
    assert const[BR.FLAT] < flat / 10 and math.isfinite(const[BR.SHARP])
    P = BR.escape_probability_diffusion(p, BR.SHARP, 1000, sigma2=2.0, **kw)
    assert P == pytest.approx(-math.expm1(-1000 / times[1]))
    with pytest.raises(ValueError, match="start must be one of the minima"):
        BR.escape_time_diffusion(p, 0.5, sigma2=1.0, **kw)


def test_one_sgd_step_has_the_predicted_mean_and_variance(p):
    """40 000 one-step runs from theta = 0.2: mean -eta L' and variance eta^2 (sigma^2 G + V)/b,
    each within 5 standard errors (false-failure rate < 1e-6)."""
    th, eta, s2, b, n = 0.2, 0.01, 2.0, 2, 40_000
    theta = np.full(n, th)
    hit = np.full(n, -1, dtype=np.int64)
    rng = np.random.default_rng(1)
    idx = rng.integers(0, p.n, size=(1, n, b))
    eps = np.sqrt(s2) * rng.standard_normal((1, n, b))
    m, w = p.logistic
    escape_kernel(theta, np.full(n, eta), p.X, p.r0, p.psi_lo, p.psi_hi - p.psi_lo, m, w,
                    10.0, 1.0, idx, eps, hit, 0, np.zeros((0, n)))
    step = theta - th
    mean, var = -eta * BR.loss_derivative(p, th), eta ** 2 * (s2 * BR.gradient_norm(p, th)
                                                               + BR.minibatch_variance(p, th)) / b
    assert abs(step.mean() - mean) < 5 * math.sqrt(var / n)
    fourth = ((step - step.mean()) ** 4).mean()                 # se of a variance: sqrt((m4 - v^2)/n)
    assert abs(step.var() - var) < 5 * math.sqrt((fourth - step.var() ** 2) / n)


def test_constant_noise_step_has_a_variance_that_does_not_depend_on_theta(p):
    """The control of Remarks 3-4: no label noise, a gradient noise of variance q. One step from
    theta = 0.2 and from 0.8 (where G differs by orders of magnitude): mean -eta L' and variance
    eta^2 (q + V/b) at both, within 5 standard errors (false-failure rate < 1e-6 each), through
    run_barrier_sgd's own draws."""
    q, eta, b, n = 30.0, 0.01, 2, 40_000
    for th in (0.2, 0.8):
        theta = np.full(n, th)
        hit = np.full(n, -1, dtype=np.int64)
        rng = np.random.default_rng(2)
        idx = rng.integers(0, p.n, size=(1, n, b))
        extra = np.sqrt(q) * rng.standard_normal((1, n))
        m_, w = p.logistic
        escape_kernel(theta, np.full(n, eta), p.X, p.r0, p.psi_lo, p.psi_hi - p.psi_lo, m_, w,
                      10.0, 1.0, idx, np.zeros((1, n, b)), hit, 0, extra)
        step = theta - th
        mean = -eta * BR.loss_derivative(p, th)
        var = eta ** 2 * (q + BR.minibatch_variance(p, th) / b)
        assert abs(step.mean() - mean) < 5 * math.sqrt(var / n)
        fourth = ((step - step.mean()) ** 4).mean()
        assert abs(step.var() - var) < 5 * math.sqrt((fourth - step.var() ** 2) / n)
    # through the public runner: noise_var moves runs without label noise, and is seeded
    a = run_barrier_sgd(p, BR.FLAT, eta=0.01, sigma2=0.0, noise_var=q, batch_size=1, steps=300,
                        n_runs=8, seed=3)
    b2 = run_barrier_sgd(p, BR.FLAT, eta=0.01, sigma2=0.0, noise_var=q, batch_size=1, steps=300,
                         n_runs=8, seed=3)
    assert np.all(a.theta != BR.FLAT) and np.array_equal(a.theta, b2.theta)
    with pytest.raises(ValueError, match="noise_var must be >= 0"):
        run_barrier_sgd(p, BR.FLAT, eta=0.01, sigma2=0.0, noise_var=-1.0, batch_size=1,
                        steps=3, n_runs=2)


def test_noiseless_sgd_never_leaves_a_minimum_and_runs_are_seeded(p):
    for start in (BR.SHARP, BR.FLAT):
        r = run_barrier_sgd(p, start, eta=0.01, sigma2=0.0, batch_size=2, steps=300, n_runs=4)
        assert np.all(r.hit == -1) and np.allclose(r.theta, start, rtol=0, atol=1e-12)   # rounding only
    a = run_barrier_sgd(p, BR.SHARP, eta=0.02, sigma2=4.0, batch_size=1, steps=2000, n_runs=16, seed=3)
    b = run_barrier_sgd(p, BR.SHARP, eta=0.02, sigma2=4.0, batch_size=1, steps=2000, n_runs=16, seed=3)
    np.testing.assert_array_equal(a.hit, b.hit)
    assert a.escaped.all() and np.all(a.theta > BR.barrier_top(p))   # stopped just past the top
    assert np.all(a.theta < BR.barrier_top(p) + 0.5)


@pytest.mark.parametrize("kw, match", [
    (dict(start=0.5), "start must be one of the minima"),
    (dict(eta=0.5), "eta must be <"),
    (dict(sigma2=-1.0), "sigma2 must be >= 0"),
    (dict(batch_size=0), "batch_size"),
])
def test_bad_input(p, kw, match):
    args = dict(start=BR.SHARP, eta=0.01, sigma2=1.0, batch_size=1, steps=10, n_runs=2) | kw
    with pytest.raises(ValueError, match=match):
        run_barrier_sgd(p, args.pop("start"), **args)


@pytest.mark.parametrize("kw, match", [
    (dict(psi_lo=-4.0), "psi_lo must lie in"), (dict(psi_hi=6.0), "psi_hi must lie in"),
    (dict(n=1), "n must be"), (dict(beta=(1.0,)), "beta must be two"),
])
def test_problem_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        BR.barrier_problem(**kw)
