"""Tests of dsmlib.chapters.prop2_convergence (small, seeded runs)."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.chapters import prop2_convergence as p2

ETAS = [0.125, 0.0625, 0.03125]


@pytest.fixture(scope="module")
def problems():
    return p2.prop2_problems()


def test_problems_and_steps(problems):
    assert problems["least squares"].dim == 2 and problems["tanh MLP"].dim == 7
    assert p2.step_sizes(0.5, 3) == [0.5, 0.25, 0.125, 0.0625]
    with pytest.raises(ValueError, match="halvings must be >= 2"):
        p2.step_sizes(0.5, 1)
    with pytest.raises(ValueError, match="eta_max must be > 0"):
        p2.step_sizes(0.0, 3)


@pytest.mark.parametrize("fixed, sgd_noise, predicted, band", [
    (False, True, 2.0, p2.STRONG_BAND), (True, True, 1.0, p2.CONTROL_BANDS[1.0]),
    (True, False, 2.0, p2.CONTROL_BANDS[2.0])])
def test_strong_sweep(problems, fixed, sgd_noise, predicted, band):
    s = p2.strong_sweep(problems["least squares"], "least squares", etas=ETAS, horizon=0.25,
                        refine=2, n_paths=50, batch_size=1, sigma2=1.0, fixed_diffusion=fixed,
                        sgd_noise=sgd_noise, seed=0)
    assert s.mean.shape == (3,) and s.cov.shape == (3, 3) and np.all(s.mean > 0)
    assert s.predicted == predicted and s.local_slopes.shape == (2,)
    c = s.case()
    assert c.band == [None if b is None else b for b in band]
    assert c.source == ("book" if fixed else "paper") and c.se >= s.fit.se


def test_strong_sweep_bad_input(problems):
    with pytest.raises(ValueError, match="horizon / eta must be an integer"):
        p2.strong_sweep(problems["least squares"], "ls", etas=[0.3, 0.15, 0.075], horizon=1.0,
                        refine=2, n_paths=10, batch_size=1, sigma2=1.0)
    with pytest.raises(ValueError, match="n_paths must be >= 3"):
        p2.strong_sweep(problems["least squares"], "ls", etas=ETAS, horizon=0.25, refine=2,
                        n_paths=1, batch_size=1, sigma2=1.0)


def test_power_fit_keeps_values_at_or_below_zero():
    x = np.array([1.0, 0.5, 0.25, 0.125])
    y = 2 * x ** 1.5
    y[-1] = -0.01                                   # an unbiased estimate may dip below zero
    f = p2.power_fit(x, y, np.full(4, 0.05))
    assert f is not None and 1.2 < f.slope < 1.8 and f.dof == 2
    exact = p2.power_fit(x, 2 * x ** 1.5, np.full(4, 1e-3))
    assert exact.slope == pytest.approx(1.5, abs=1e-6) and exact.chi2 < 1e-6


def test_weak_comparison_least_squares_moments_agree(problems):
    """Seeded: for least squares SGD (with replacement, fresh noise) and Eq. (17) have the
    same mean and covariance at every step, exactly. With 2,000 paths each, the standardised
    mean gap and the covariance ratio must lie within 5 jackknife SEs of 0 and 1 (a gap is a
    norm, so |gap| <= 5 SE is one-sided; false-failure rate < 1e-5 per quantity and level).
    The naive energy coefficient exceeds the unbiased one by its positive bias."""
    w = p2.weak_comparison(problems["least squares"], "least squares", etas=ETAS[:2],
                           horizon=0.25, n_paths=2000, batch_size=1, sigma2=1.0,
                           n_directions=4, n_groups=20, seed=0)
    assert w.H.shape == (2,) and np.all(w.H_naive > w.H)
    assert np.all(w.mean_gap <= 5 * w.mean_gap_se + 1e-12)
    assert np.all(np.abs(w.cov_ratio - 1) <= 5 * w.cov_ratio_se)


def test_claims(problems):
    sweeps = [p2.strong_sweep(problems["least squares"], "least squares", etas=ETAS,
                              horizon=0.25, refine=2, n_paths=20, batch_size=1, sigma2=1.0,
                              fixed_diffusion=f, seed=0) for f in (False, True)]
    w = p2.weak_comparison(problems["least squares"], "least squares", etas=ETAS,
                           horizon=0.25, n_paths=40, batch_size=1, sigma2=1.0, n_directions=2,
                           n_groups=4, seed=0)
    claims = p2.prop2_claims(sweeps, [w])
    assert [c.id for c in claims] == ["prop2.strong_order", "prop2.fixed_diffusion_control",
                                      "prop2.weak_sgd_vs_dsm"]
    by_id = {c.id: c for c in claims}
    assert by_id["prop2.strong_order"].scope == "setting"
    assert by_id["prop2.weak_sgd_vs_dsm"].scope == "reading"
    assert by_id["prop2.fixed_diffusion_control"].source == "book"
    assert all("Lack of fit" in c.note for c in claims)


def test_coupled_paths(problems):
    p = problems["least squares"]
    st = p2.coupled_paths(p, eta=0.125, horizon=0.5, batch_size=1, sigma2=1.0, n_paths=2,
                          refine=4, seed=0)
    assert st["sgd"].shape == (5, 2, 2) and st["dsm"].shape == (5, 2, 2)
    assert st["sde"].shape == (17, 2, 2)
    for k in st:
        assert np.allclose(st[k][0], p.theta0.numpy())
    states = p2.path_explorer_states(p, etas=[0.25, 0.125], sigma2s=[1.0, 2.0], horizon=0.5,
                                     batch_size=1, n_paths=1)
    assert len(states) == 4 and states[1]["dsm"].shape == (5, 1, 2)
