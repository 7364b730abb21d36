"""Tests of dsmlib.theory.dsm: the three processes of Proposition 2."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dsmlib.models.networks import Linear2, tanh_mlp
from dsmlib.theory import diffusion, dsm
from dsmlib.theory.brownian import BrownianIncrements
from dsmlib.theory.sde import solve


def mlp_problem(device, n=12):
    X = torch.as_tensor(np.random.default_rng(0).standard_normal((n, 2)), device=device)
    model = tanh_mlp(2, 3, 1, seed=0, dtype=torch.float64, device=device)
    y = tanh_mlp(2, 3, 1, seed=1, dtype=torch.float64, device=device)(X).detach()
    return model, X, y


def ls_problem(device, n=10):
    X = torch.as_tensor(np.random.default_rng(1).standard_normal((n, 2)), device=device)
    model = Linear2([0.3, 1.8]).to(device)
    return model, X, X @ torch.ones(2, dtype=torch.float64, device=device)


@pytest.mark.parametrize("make", [mlp_problem, ls_problem])
def test_batched_diffusion_matrices_agree_with_the_single_theta_ones(make, device):
    """For every path, Eq. (15) computed in batch equals dsmlib.theory.diffusion's value."""
    model, X, y = make(device)
    p = dsm.as_problem(model, X, y)
    g = torch.Generator(device=device).manual_seed(0)
    thetas = p.theta0 + 0.3 * torch.randn(4, p.dim, generator=g, dtype=torch.float64,
                                          device=device)
    drift, s_sgd, s_uln = dsm.diffusion_terms(p, thetas)
    for k in range(4):
        torch.nn.utils.vector_to_parameters(thetas[k], model.parameters())
        torch.testing.assert_close(s_sgd[k], diffusion.sigma_sgd(model, X, y))
        torch.testing.assert_close(s_uln[k], diffusion.sigma_uln(model, X))
        from dsmlib.theory.jacobians import loss_gradient
        torch.testing.assert_close(drift[k], -loss_gradient(model, X, y))


def test_a_function_of_theta_is_the_same_problem_as_the_module(device):
    model, X, y = ls_problem(device)
    a = dsm.as_problem(model, X, y)
    b = dsm.as_problem(lambda th, x: x @ th[:, None], X, y, dim=2)
    thetas = torch.tensor([[0.0, 1.0], [2.0, -1.0]], dtype=torch.float64, device=device)
    for u, v in zip(dsm.diffusion_terms(a, thetas), dsm.diffusion_terms(b, thetas)):
        torch.testing.assert_close(u, v)


def test_eq17_is_euler_maruyama_of_eq16(device):
    """One step of Eq. (17) with z = dW_1/sqrt(eta), z' = dW_2/sqrt(eta) is the Euler-Maruyama
    step of Eq. (16) with step eta (to rounding)."""
    p = dsm.as_problem(*mlp_problem(device))
    eta, b, s2 = 0.05, 2, 0.7
    theta = p.theta0.expand(6, -1).clone()
    bm = BrownianIncrements(horizon=eta, fine_dt=eta, n_paths=6, dim=2 * p.dim, seed=4,
                            device=device)
    dW = bm.increments(eta)
    z, z2 = dW[0, :, :p.dim] / math.sqrt(eta), dW[0, :, p.dim:] / math.sqrt(eta)
    by_eq17 = dsm.dsm_step(p, theta, eta=eta, batch_size=b, sigma2=s2, z=z, z_prime=z2)
    by_em = solve(dsm.dsm_sde(p, eta=eta, batch_size=b, sigma2=s2), theta, dW, eta)
    torch.testing.assert_close(by_eq17, by_em, rtol=1e-12, atol=1e-13)
    path = dsm.dsm_iteration(p, theta, eta=eta, steps=1, batch_size=b, sigma2=s2, seed=4)
    torch.testing.assert_close(path, by_em, rtol=1e-12, atol=1e-13)


def test_control_and_label_noise_only_diffusions(device):
    """diffusion_eta replaces the eta inside the coefficient; sgd_noise=False drops W_1."""
    p = dsm.as_problem(*ls_problem(device))
    th = p.theta0[None]
    G = dsm.dsm_sde(p, eta=0.1, batch_size=2, sigma2=1.0).coefficients(th)[1]
    G4 = dsm.dsm_sde(p, eta=0.05, batch_size=2, sigma2=1.0, diffusion_eta=0.4).coefficients(th)[1]
    torch.testing.assert_close(G4, 2 * G)
    G0 = dsm.dsm_sde(p, eta=0.1, batch_size=2, sigma2=1.0, sgd_noise=False).coefficients(th)[1]
    assert torch.equal(G0[..., :2], torch.zeros_like(G0[..., :2]))
    torch.testing.assert_close(G0[..., 2:], G[..., 2:])


def test_sgd_without_noise_is_gradient_descent(device):
    """sigma2 = 0 and the full data set as one batch (without replacement): plain GD."""
    model, X, y = mlp_problem(device, n=8)
    p = dsm.as_problem(model, X, y)
    theta = p.theta0.expand(2, -1).clone()
    out = dsm.sgd_label_noise(p, theta, eta=0.1, steps=3, batch_size=8, noise=0.0,
                              replace=False, seed=0)
    gd = theta
    for _ in range(3):
        gd = gd + 0.1 * dsm.diffusion_terms(p, gd)[0]
    torch.testing.assert_close(out, gd)


@pytest.mark.parametrize("process", ["sgd", "dsm"])
def test_one_step_covariance_is_proposition_1(process, device):
    """Seeded: the covariance of one step from a fixed theta is (eta^2/b)(Sigma^SGD +
    sigma^2 Sigma^ULN) for SGD with replacement and fresh noise (Prop. 1) and for Eq. (17)
    (by construction). Compared by trace over 20,000 paths; the tolerance is 5 standard errors
    of the trace estimate (from the spread of ||step||^2; false-failure rate < 1e-6)."""
    model, X, y = mlp_problem(device)
    p = dsm.as_problem(model, X, y)
    eta, b, s2, P = 0.1, 3, 0.5, 20_000
    theta = p.theta0.expand(P, -1).clone()
    kw = dict(eta=eta, steps=1, batch_size=b, seed=5)
    out = (dsm.sgd_label_noise(p, theta, noise=s2, **kw) if process == "sgd"
           else dsm.dsm_iteration(p, theta, sigma2=s2, **kw))
    drift, s_sgd, s_uln = dsm.diffusion_terms(p, p.theta0[None])
    dev = (out - theta - eta * drift).cpu().numpy()
    sq = (dev ** 2).sum(1)
    predicted = float(torch.diagonal(eta ** 2 / b * (s_sgd + s2 * s_uln)[0]).sum())
    assert abs(sq.mean() - predicted) <= 5 * sq.std(ddof=1) / math.sqrt(P)
    assert np.linalg.norm(dev.mean(0)) <= 5 * math.sqrt(predicted / P)


def test_paths_are_reproducible_and_saved(device):
    p = dsm.as_problem(*ls_problem(device))
    theta = p.theta0.expand(3, -1).clone()
    a = dsm.sgd_label_noise(p, theta, eta=0.1, steps=4, batch_size=2, noise=1.0, seed=2,
                            save=True)
    b = dsm.sgd_label_noise(p, theta, eta=0.1, steps=4, batch_size=2, noise=1.0, seed=2)
    assert a.shape == (5, 3, 2) and torch.equal(a[-1], b)
    c = dsm.dsm_iteration(p, theta, eta=0.1, steps=4, batch_size=2, sigma2=1.0, seed=2,
                          save=True)
    assert c.shape == (5, 3, 2) and c.device.type == device.type


@pytest.mark.parametrize("call, match", [
    (lambda p, th: dsm.dsm_sde(p, eta=0.0, batch_size=1, sigma2=1.0), "eta must be > 0"),
    (lambda p, th: dsm.dsm_sde(p, eta=0.1, batch_size=0, sigma2=1.0), "batch_size must be >= 1"),
    (lambda p, th: dsm.dsm_sde(p, eta=0.1, batch_size=1, sigma2=-1.0), "sigma2 must be >= 0"),
    (lambda p, th: dsm.dsm_sde(p, eta=0.1, batch_size=1, sigma2=1.0, diffusion_eta=-1),
     "diffusion_eta must be > 0"),
    (lambda p, th: dsm.diffusion_terms(p, th[:, :1]), "theta must be a tensor of shape"),
    (lambda p, th: dsm.sgd_label_noise(p, th[0], eta=0.1, steps=1, batch_size=1, noise=1.0,
                                       seed=0), "theta0 must be a tensor of shape"),
    (lambda p, th: dsm.sgd_label_noise(p, th, eta=-0.1, steps=1, batch_size=1, noise=1.0,
                                       seed=0), "eta must be > 0"),
    (lambda p, th: dsm.sgd_label_noise(p, th, eta=0.1, steps=1, batch_size=99, noise=1.0,
                                       replace=False, seed=0), "batch_size must be <="),
    (lambda p, th: dsm.dsm_iteration(p, th, eta=0.1, steps=0, batch_size=1, sigma2=1.0,
                                     seed=0), "steps must be >= 1"),
    (lambda p, th: dsm.dsm_step(p, th, eta=0.1, batch_size=1, sigma2=1.0, z=th[:, :1],
                                z_prime=th), "z must be a tensor of shape"),
    (lambda p, th: dsm.as_problem(lambda t, x: x @ t[:, None], p.X, p.y),
     "dim .* is required"),
    (lambda p, th: dsm.as_problem(lambda t, x: x @ t[:, None], p.X, p.y[:5], dim=2),
     "same number N"),
    (lambda p, th: dsm.as_problem(lambda t, x: torch.cat([x, x], 1), p.X, p.y, dim=2),
     "outputs have shape"),
    (lambda p, th: dsm.as_problem("model", p.X, p.y), "torch.nn.Module or a function"),
])
def test_bad_input(call, match):
    p = dsm.as_problem(*ls_problem("cpu"))
    with pytest.raises(ValueError, match=match):
        call(p, p.theta0.expand(2, -1).clone())
