"""The ``prop3_regularizer`` chapter (dsmlib.chapters.prop3_regularizer): the strength of the
label-noise term (Prop. 3, Eq. 22) and the perturbation curves of Remark 2, on every device."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from dsmlib.chapters import prop3_regularizer as P
from dsmlib.foundation.rng import as_generator, as_torch_generator
from dsmlib.theory import jacobians
from dsmlib.theory.minibatch import draw_minibatches
from pins import assert_claim_pinned, near_each


def test_uln_sq_norm_gram_form_equals_direct_contraction(mlp):
    """The Gram-matrix form of ||xi^ULN||^2 against the direct contraction of Eq. (13) on the
    same minibatches and noise (both streams reproduced from the seed)."""
    J = jacobians.per_sample_jacobians(mlp.model, mlp.X)
    got = P.uln_sq_norm_samples(J, sigma2=0.3, batch_size=6, eta=0.2, n_samples=30, seed=4,
                                chunk=7)
    rng = as_generator(4)
    gen = as_torch_generator(rng, J.device)
    want = []
    for start in range(0, 30, 7):
        m = min(7, 30 - start)
        idx = torch.as_tensor(draw_minibatches(mlp.n, 6, m, replace=True, seed=rng), device=J.device)
        eps = np.sqrt(0.3) * torch.randn((m, 6, J.shape[1]), generator=gen, dtype=J.dtype,
                                         device=J.device)
        xi = -np.sqrt(0.2) / 6 * torch.einsum("mbl,mbld->md", eps, J[idx])
        want.append(xi.pow(2).sum(1).cpu().numpy())
    np.testing.assert_allclose(got, np.concatenate(want), rtol=1e-10)


def test_prop3_strength_cases_by_hand(mlp):
    """Each cell of :func:`prop3_strength` from its own draws, on 5 of them: the mean, the
    standard error sd(ddof=1) / sqrt(5) and Eq. (22)'s eta sigma^2 / b G, with the cells' seeds
    in grid order. (The pins below cannot see an n for an n - 1 over 40,000 draws: it moves an
    interval by 3e-5 of its SE; issue 44.)"""
    from dsmlib.foundation.rng import child_seed
    cases = P.prop3_strength(mlp, sigma2s=[0.5, 2.0], batch_sizes=[3], etas=[0.1], n_samples=5,
                             seed=2)
    J = jacobians.per_sample_jacobians(mlp.model, mlp.X)
    G = float(J.pow(2).sum(dim=(1, 2)).mean())
    for k, (c, s2) in enumerate(zip(cases, [0.5, 2.0])):
        draws = P.uln_sq_norm_samples(J, sigma2=s2, batch_size=3, eta=0.1, n_samples=5,
                                      seed=child_seed(2, k))
        assert (c.sigma2, c.batch_size, c.eta) == (s2, 3, 0.1)
        assert c.measured == pytest.approx(draws.mean(), rel=1e-12)
        assert c.se == pytest.approx(draws.std(ddof=1) / np.sqrt(5), rel=1e-12)
        assert c.predicted == pytest.approx(0.1 * s2 / 3 * G, rel=1e-12)


@pytest.mark.stored_values
def test_prop3_strength_matches_eq22_and_is_confirmed(mlp):
    """Seeded statistical test of Eq. (22) over a 2 x 2 grid of (sigma^2, b) spanning a factor
    128 in the predicted strength, 40,000 draws
    per cell.

    (1) Each cell's Monte-Carlo mean within z = 4.5 of Eq. (22) (4 cells: false-failure
    2.7e-5).
    (2) The claim is *confirmed*, not merely "confirmed or inconclusive": every cell's
    relative standard error is first checked to be below 0.05 / (2.576 + 4.5), so its 99 %
    interval leaves the band 1 +- 5 % only if the estimate is off by more than 4.5 standard
    errors (false-failure 2.7e-5 over the cells); the log-log slope claim (band 0.98-1.02)
    is confirmed likewise when its standard error is below 0.02 / (2.576 + 4.5).
    """
    cases = P.prop3_strength(mlp, sigma2s=[0.25, 4.0], batch_sizes=[2, 16], etas=[0.1],
                             n_samples=40_000, seed=0)
    margin = 2.5758 + 4.5
    for c in cases:
        assert abs(c.measured - c.predicted) < 4.5 * c.se, c
        assert c.se / c.predicted < 0.05 / margin, c
    claims = {c.id: c for c in P.prop3_claims(cases)}
    assert len(claims["prop3.strength"].details) == 4
    assert claims["prop3.strength"].verdict == "confirmed"
    scaling = claims["prop3.strength_scaling"]
    assert scaling.se < 0.02 / margin
    assert scaling.verdict == "confirmed"
    if mlp.X.device.type == "cpu":
        # Seeded on the CPU: the values are pinned within 1e-3 of their SE (measured moves:
        # 1.6e-6 SE across CPUs, 2.5e-9 SE across kernel configurations, ``tests/pins.py``),
        # recorded from this run; any change of Eq. (22)'s formula or of a standard error moves them.
        ses = [0.0001584955797257842, 1.6867035848431072e-05, 0.002510861046421316,
               0.00027946422662527735]
        assert [c.measured for c in cases] == near_each(
            [0.024503310342540278, 0.00304489231569023, 0.3912088804156855, 0.04938077997769911],
            ses)
        assert [c.se for c in cases] == pytest.approx(ses, rel=1e-3)
        assert [c.predicted for c in cases] == pytest.approx(
            [0.024494914489693157, 0.0030618643112116446, 0.3919186318350905,
             0.048989828979386314], rel=1e-9)
        # the headline is the deciding case, the one nearest to changing the verdict
        strength = claims["prop3.strength"]
        assert_claim_pinned(strength, "confirmed", 1.0079802482771945,
                            [0.9932863381206206, 1.0226741584337682])
        assert_claim_pinned(scaling, "confirmed", 1.0012430127893437,
                            [0.9968158794308105, 1.005670146147877])


@pytest.mark.stored_values
def test_perturbation_ratio(ls, mlp):
    """Remark 2, seeded: for the linear model E||J delta||^2 = s^2 G exactly at every scale,
    so the ratio is 1 within z = 4.5 standard errors at s = 1e-4 and at s = 3; for the MLP it
    is 1 + O(s), within z = 4.5 at s = 1e-4, and leaves 1 by more than 4.5 standard errors at
    s = 3 (the first-order picture breaks down). 5 checks at 6.8e-6: false-failure 3.4e-5."""
    lin = P.perturbation_curve(ls, scales=[1e-4, 3.0], n_draws=4000, seed=1)
    assert np.all(np.abs(lin.ratio - 1) < 4.5 * lin.se), (lin.ratio, lin.se)
    net = P.perturbation_curve(mlp, scales=[1e-4, 3.0], n_draws=4000, seed=1)
    assert abs(net.ratio[0] - 1) < 4.5 * net.se[0]
    assert abs(net.ratio[1] - 1) > 4.5 * net.se[1], (net.ratio, net.se)
    claims = P.remark2_claims([lin, net])
    assert [d["case"] for d in claims[0].details] == [ls.name, mlp.name]
    if ls.X.device.type == "cpu":
        # Seeded on the CPU: verdict and numbers pinned within 1e-3 of their SE (measured
        # moves: 1.6e-6 SE across CPUs, 2.5e-9 SE across kernel configurations), recorded from
        # this run (both intervals, +-4.9 % and +-4.5 %, inside the band 1 +- 0.1)
        assert len(claims) == 1
        assert lin.ratio.tolist() == near_each([0.9955025659310957, 0.9989575626465816],
                                               lin.se.tolist())
        assert net.ratio.tolist() == near_each([1.014495782849166, 2.269851363758169],
                                               [0.017306092060160993, 0.03301409693547343])
        assert net.se.tolist() == pytest.approx([0.017306092060160993, 0.03301409693547343],
                                                rel=1e-3)
        # headline: the deciding case (the MLP's, nearer its band's edge)
        assert claims[0].measured == pytest.approx(net.ratio[0], rel=1e-12)
        assert_claim_pinned(claims[0], "confirmed", 1.014495782849166,
                            [0.9698969573511123, 1.05909460834722])


@pytest.mark.parametrize("call, match", [
    (lambda s: P.perturbation_curve(s, scales=[-1.0], n_draws=10), "scales must be"),
    (lambda s: P.perturbation_curve(s, scales=[1.0], n_draws=1), "n_draws must be >= 2"),
    (lambda s: P.uln_sq_norm_samples(jacobians.per_sample_jacobians(s.model, s.X), sigma2=-1.0,
                                     batch_size=2, eta=0.1, n_samples=3), "sigma2"),
    (lambda s: P.uln_sq_norm_samples(jacobians.per_sample_jacobians(s.model, s.X), sigma2=1.0,
                                     batch_size=99, eta=0.1, n_samples=3, replacement=False),
     "batch_size"),
])
def test_bad_input(ls, call, match):
    with pytest.raises(ValueError, match=match):
        call(ls)

