"""Tests of dsmlib.theory.sde: every solver is held to the strong order it declares, on
linear SDEs with known solutions, and bad input gets clear errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from sde_cases import gbm, gbm_exact, ou, ou_exact

from dsmlib.foundation.stats import loglog_fit
from dsmlib.theory.brownian import BrownianIncrements
from dsmlib.theory.sde import SDE, declared_order, solve, strong_errors

T = 1.0
STEPS = [T / 2 ** k for k in range(4, 10)]     # 1/16 ... 1/512
FINE = T / 2 ** 11
PATHS = 2000
Z = 5.0                                           # tolerance in standard errors


def measured_order(case: str, method: str, device, seed: int) -> tuple[float, float]:
    """Strong order ``p`` and its SE from the log-log slope ``2p`` of ``E||X_h(T) - X(T)||^2``
    against the exact solution on the same Brownian paths (GLS over the shared paths; the SE
    widened by the Birge ratio when the points scatter more than their errors allow)."""
    x0 = torch.ones(PATHS, 2, dtype=torch.float64, device=device)
    if case == "ou":
        sde, A, G = ou(device)
    else:
        sde = gbm(device, case.split("-")[1])
    bm = BrownianIncrements(horizon=T, fine_dt=FINE, n_paths=PATHS, dim=sde.noise_dim,
                            seed=seed, device=device)
    dW = bm.increments(FINE)
    exact = ou_exact(A, G, x0, dW, FINE) if case == "ou" else gbm_exact(x0, dW.sum(0), T)
    E = torch.stack([(solve(sde, x0, bm.increments(h), h, method=method) - exact)
                     .pow(2).sum(1) for h in STEPS], dim=1).cpu().numpy()
    fit = loglog_fit(np.array(STEPS), E.mean(0), y_cov=np.cov(E, rowvar=False) / PATHS)
    return fit.slope / 2, fit.se * fit.inflation / 2


@pytest.mark.parametrize("case, method", [("ou", "euler"), ("ou", "milstein"),
                                          ("gbm-diagonal", "euler"), ("gbm-general", "euler"),
                                          ("gbm-diagonal", "milstein")])
def test_measured_strong_order_matches_the_declared_one(case, method, device):
    """Seeded statistical test. The measured order must lie within Z = 5 standard errors of
    the declared one. Over 25 seeds per case the z-scores (before the Birge widening) had an
    RMS of about 1.3 and a largest |z| of 4.4 (GBM's lognormal errors have heavy tails, and
    OU's slope carries a small pre-asymptotic bias); with Z = 5, i.e. about 3.8 of those wider
    standard deviations, the false-failure rate is of order 1e-3 per case or below."""
    sde = ou(device)[0] if case == "ou" else gbm(device, case.split("-")[1])
    p, se = measured_order(case, method, device, seed=11)
    assert abs(p - declared_order(method, sde.noise_type)) <= Z * se, (p, se)


def test_the_order_test_has_power(device):
    """Euler-Maruyama on GBM would fail the order Milstein declares: the test can tell 1/2
    from 1 (the gap is more than 10 standard errors)."""
    p, se = measured_order("gbm-diagonal", "euler", device, seed=11)
    assert abs(p - 1.0) > 2 * Z * se


def test_declared_orders():
    assert declared_order("euler", "general") == 0.5
    assert declared_order("euler", "additive") == 1.0
    assert declared_order("milstein", "diagonal") == 1.0
    with pytest.raises(ValueError, match="noise_type must be one of"):
        declared_order("milstein", "general")


def test_strong_errors_on_coupled_paths(device):
    """``strong_errors`` solves each level twice on one Brownian path: for additive OU its
    level-j error equals the error computed by hand from the same increments."""
    sde, A, G = ou(device)
    x0 = torch.zeros(64, 2, dtype=torch.float64, device=device)
    steps = [0.25, 0.125]
    E = strong_errors([sde, sde], x0, steps, horizon=1.0, refine=4, seed=3)
    assert E.shape == (64, 2) and E.device.type == device.type
    bm = BrownianIncrements(horizon=1.0, fine_dt=0.125 / 4, block_dt=0.25, n_paths=64, dim=3,
                            seed=3, device=device)
    for j, h in enumerate(steps):
        by_hand = (solve(sde, x0, bm.increments(h), h)
                   - solve(sde, x0, bm.increments(h / 4), h / 4)).pow(2).sum(1)
        torch.testing.assert_close(E[:, j], by_hand, rtol=1e-12, atol=1e-14)


def test_solve_saves_the_path(device):
    sde, A, _ = ou(device)
    x0 = torch.ones(3, 2, dtype=torch.float64, device=device)
    dW = torch.zeros(5, 3, 3, dtype=torch.float64, device=device)
    path = solve(sde, x0, dW, 0.1, save=True)
    assert path.shape == (6, 3, 2)
    torch.testing.assert_close(path[0], x0)
    torch.testing.assert_close(path[1], x0 - 0.1 * x0 @ A.T)
    torch.testing.assert_close(path[-1], solve(sde, x0, dW, 0.1))


@pytest.mark.parametrize("call, match", [
    (lambda s, x, w: solve(s, x[:, :1], w, 0.1), "x0 must be a tensor of shape"),
    (lambda s, x, w: solve(s, x, w[:, :, :2], 0.1), "dW must have shape"),
    (lambda s, x, w: solve(s, x, w[:, :2], 0.1), "dW must have shape"),
    (lambda s, x, w: solve(s, x, w, 0.0), "dt must be > 0"),
    (lambda s, x, w: solve(s, x, w, -0.1), "dt must be > 0"),
    (lambda s, x, w: solve(s, x, w, 0.1, method="rk4"), "method must be one of"),
    (lambda s, x, w: solve(s, x, w, 0.1, method="milstein") if s.noise_type == "general"
     else solve(SDE(s.coefficients, 2, 3, "general"), x, w, 0.1, method="milstein"),
     "noise_type"),
    (lambda s, x, w: strong_errors([s], x, [0.1], horizon=0.0, refine=2, seed=0),
     "horizon must be > 0"),
    (lambda s, x, w: strong_errors([s], x, [0.1], horizon=1.0, refine=0, seed=0),
     "refine must be >= 1"),
    (lambda s, x, w: strong_errors([s], x, [0.1], horizon=1.0, refine=1.5, seed=0),
     "refine must be an integer"),
    (lambda s, x, w: strong_errors([s, s], x, [0.1, 0.03], horizon=1.0, refine=2, seed=0),
     "must be an integer"),
    (lambda s, x, w: strong_errors([s, s], x, [0.3, 0.1], horizon=1.0, refine=2, seed=0),
     "must be an integer"),
    (lambda s, x, w: strong_errors([s], x, [0.1, 0.05], horizon=1.0, refine=2, seed=0),
     "same length"),
    (lambda s, x, w: strong_errors([s], x, [-0.1], horizon=1.0, refine=2, seed=0),
     "steps must be > 0"),
    (lambda s, x, w: SDE(s.coefficients, 2, 3, "diagonal"), "noise_dim == dim"),
    (lambda s, x, w: SDE(s.coefficients, 2, 3, "multiplicative"), "noise_type must be one of"),
    (lambda s, x, w: solve(SDE(lambda y: (y[:, :1], torch.zeros(2, 3, dtype=y.dtype)), 2, 3,
                               "additive"), x, w, 0.1), "drift must have shape"),
    (lambda s, x, w: solve(SDE(lambda y: (y, torch.zeros(3, 3, dtype=y.dtype)), 2, 3,
                               "additive"), x, w, 0.1), "diffusion"),
])
def test_bad_input(call, match):
    sde, _, _ = ou("cpu")
    x0 = torch.zeros(4, 2, dtype=torch.float64)
    dW = torch.zeros(3, 4, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match=match):
        call(sde, x0, dW)


def test_strong_error_paths_record_every_coarse_step(device):
    """The errors at every coarse step equal those computed by hand from the same increments
    (the reference's state taken every ``refine`` fine steps); the last column is
    ``strong_errors``."""
    from dsmlib.theory.sde import strong_error_paths
    sde, _, _ = ou(device)
    x0 = torch.ones(16, 2, dtype=torch.float64, device=device)
    steps = [0.25, 0.125]
    paths = strong_error_paths([sde, sde], x0, steps, horizon=0.5, refine=2, seed=5)
    assert [tuple(p.shape) for p in paths] == [(16, 2), (16, 4)]
    bm = BrownianIncrements(horizon=0.5, fine_dt=0.125 / 2, block_dt=0.25, n_paths=16, dim=3,
                            seed=5, device=device)
    for j, h in enumerate(steps):
        c = solve(sde, x0, bm.increments(h), h, save=True)[1:]
        f = solve(sde, x0, bm.increments(h / 2), h / 2, save=True)[2::2]
        torch.testing.assert_close(paths[j], (c - f).pow(2).sum(2).T, rtol=1e-12, atol=1e-14)
    E = strong_errors([sde, sde], x0, steps, horizon=0.5, refine=2, seed=5)
    torch.testing.assert_close(E, torch.stack([p[:, -1] for p in paths], 1))
