"""The remark3_valley chapter: power-law fits, the experiments and their claims."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.chapters import remark3_valley as C
from dsmlib.foundation.stats import LACK_OF_FIT_ALPHA
from dsmlib.foundation.stats import loglog_fit as _fit_power_law
from dsmlib.foundation.claims import SCOPES
from dsmlib.theory import valley as V
from pins import assert_claim_pinned, interval_se, near


def test_power_law_fit_recovers_an_exact_law():
    x = np.array([0.5, 1.0, 2.0, 4.0])
    f = _fit_power_law(x, 3.0 * x ** -1.5, 0.01 * x ** -1.5)
    assert f.slope == pytest.approx(-1.5) and f.intercept == pytest.approx(np.log(3.0))
    assert f.chi2 == pytest.approx(0.0, abs=1e-18) and f.dof == 2 and f.p_value == pytest.approx(1.0)
    assert f.se_widened == f.se


def test_power_law_intervals_cover_and_lack_of_fit_is_calibrated():
    """Simulation: 4000 fits of 6 points with log-normal errors of known size. The 99 % interval
    covers the true slope, and the chi-square rejects a true law at p < 0.01, with the stated
    frequencies: both within 4 binomial standard errors (false-failure rate ~1e-4)."""
    rng = np.random.default_rng(5)
    x = np.array([0.25, 0.5, 1.0, 2.0, 4.0, 8.0])
    s = np.array([0.02, 0.05, 0.03, 0.04, 0.02, 0.06])
    cover, reject, n = 0, 0, 4000
    for _ in range(n):
        y = 2.0 * x ** 0.7 * np.exp(s * rng.standard_normal(6))
        f = _fit_power_law(x, y, y * s)
        cover += abs(f.slope - 0.7) <= 2.5758 * f.se
        reject += f.p_value < 0.01
    tol = 4 * np.sqrt(0.01 * 0.99 / n)
    assert abs(cover / n - 0.99) < tol and abs(reject / n - 0.01) < tol


def test_lack_of_fit_widens_the_interval():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    y = x * (1 + 0.2 * np.log(x) ** 2)                      # curved on log-log axes
    f = _fit_power_law(x, y, 1e-3 * y)
    assert f.p_value < LACK_OF_FIT_ALPHA and f.se_widened == pytest.approx(f.se * np.sqrt(f.chi2 / f.dof))


@pytest.mark.parametrize("args, match", [
    (([1.0], [1.0], [1.0]), "length >= 2"),
    (([1.0, -2.0], [1.0, 2.0], [0.1, 0.1]), "must be positive"),
    (([1.0, 2.0], [1.0, 2.0], [0.1]), "same length"),
])
def test_power_law_fit_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        _fit_power_law(*args)


@pytest.fixture(scope="module")
def experiments():
    s = V.scalar_product_problem(32, seed=0)
    d = V.diagonal_problem(3, 6, seed=1)
    return [C.valley_experiment(s, *V.scalar_start(1.0, 3.0), eta=0.02, sigma2=2.0, batch_size=4,
                                steps=3000, n_runs=16, record_every=100, seed=0),
            C.valley_experiment(d, *V.min_norm_start(d), eta=0.1, sigma2=0.25, batch_size=1,
                                steps=3000, n_runs=16, record_every=100, seed=1)]


def test_experiment_runs_and_end_points(experiments):
    for ex in experiments:
        assert set(ex.runs) == {"label noise", "no label noise", "label noise drawn once", "Eq. 17 model"}
        rows = {r["runs"]: r for r in C.end_points(ex)}
        assert rows["no label noise"]["displacement"][0] < 1e-12
        assert rows["label noise"]["displacement"][0] > 0.2
    # the over-parameterised network memorises labels drawn once: no drift to the minimum-G point
    rows = {r["runs"]: r for r in C.end_points(experiments[1])}
    assert rows["label noise drawn once"]["excess_G"][0] > 1.0


@pytest.mark.stored_values
def test_remark3_claims_pinned(experiments):
    """Seeded, 3000 steps: the scalar runs have covered 39 % of the way (below the 50 % band: too
    short, as the condition says), the diagonal ones 70 %; the noiseless controls do not move."""
    claims = {c.id: c for c in C.remark3_claims(experiments)}
    assert list(claims) == ["remark3.valley_drift", "remark3.valley_control", "remark3.low_gradnorm"]
    drift, control, low = claims.values()
    assert drift.source == low.source == "paper" and drift.scope == low.scope == "assumptions"
    assert control.source == "book" and control.scope is None and "Control" in control.statement
    # values pinned within 1e-3 of their SE (measured moves: 1.6e-6 SE across CPUs, 2.5e-9 SE
    # across the kernel configurations of tests/reduced_simd.py; ``tests/pins.py``)
    assert {d["case"]: (d["verdict"], d["measured"], interval_se(d["interval"]))
            for d in drift.details} == {
        "scalar product θ₁θ₂x, label noise": ("refuted", near(0.3910737766264774, 2.95e-3),
                                              pytest.approx(2.95e-3, rel=1e-2)),
        "diagonal network, N=3, d=6, label noise": ("confirmed", near(0.7035665663098067, 2.74e-3),
                                                    pytest.approx(2.74e-3, rel=1e-2))}
    assert_claim_pinned(drift, "refuted", 0.3910737766264774, [0.3834740253504546, 0.3986735279025002])
    assert control.verdict == "confirmed" and 0 <= control.measured < 1e-15 and len(control.details) == 2
    assert_claim_pinned(low, "refuted", 1.494501153043659, [1.4383247449826988, 1.550677561104619])


def test_a_control_that_moves_is_refuted(experiments):
    ex = experiments[0]
    moved = C.ValleyExperiment(ex.problem, ex.u0, ex.v0, ex.minimum, dict(ex.runs))
    moved.runs["no label noise"] = ex.runs["label noise"]
    control = C.remark3_claims([moved])[1]
    assert control.id == "remark3.valley_control" and control.verdict == "refuted"


def test_stability_comparison_matches_its_exact_value(experiments):
    """Seeded: the measured end/start sensitivity ratio lies within z = 4 of the exact one at every
    scale, for both models (10 checks: false-failure rate < 10 * 6.3e-5). The end is the mean over
    all runs' end points, not one run's."""
    for k, ex in enumerate(experiments):
        comp = C.stability_comparison(ex, scales=[1e-3, 0.1, 0.3, 1.0, 2.0], n_draws=3000, seed=k)
        q, se = comp.ratio()
        assert np.all(np.abs(q - comp.exact_end / comp.exact_start) < 4 * se)
        G_runs = ex.runs["label noise"].G[-1]
        assert comp.end.gradient_norm == pytest.approx(G_runs.mean())
        assert comp.end.gradient_norm != pytest.approx(G_runs[0])
        assert comp.end.n_draws == ex.runs["label noise"].n_runs * (3000 // 16)
    claims = C.remark2_claims([comp])
    assert claims[0].id == "remark2.valley_stability" and claims[0].scope in SCOPES
    assert "identity" in claims[0].note


@pytest.mark.stored_values
def test_remark2_claim_pinned(experiments):
    comps = [C.stability_comparison(ex, scales=[1e-3, 0.1], n_draws=400, seed=k)
             for k, ex in enumerate(experiments)]
    (c,) = C.remark2_claims(comps)
    assert_claim_pinned(c, "confirmed", 0.6130969771644966, [0.4536214280328066, 0.7725725262961867])
    assert c.exact == near(0.5475734734954222, interval_se(c.interval))  # at the runs' end points


def test_drift_sweep_and_remark4_claims():
    s = V.scalar_product_problem(16, seed=0)
    sw = C.drift_sweep(s, *V.scalar_start(1.0, 2.0), etas=[0.005, 0.01, 0.02], sigma2s=[0.5, 1.0, 2.0],
                       batch_sizes=[2, 4, 8], reference=(0.01, 1.0, 4), steps=400, n_runs=32, seed=0)
    assert len(sw.configs) == 7 and sw.reference in sw.configs
    idx, x = sw.sweep("B")
    assert sorted(x) == [2, 4, 8] and all(sw.configs[i][:2] == (0.01, 1.0) for i in idx)
    assert np.all(sw.rate > 0) and np.all(sw.se > 0) and np.all(sw.rate_dsm > 0)
    np.testing.assert_allclose(sw.theory, [e * s2 / b for e, s2, b in sw.configs])
    assert set(sw.fits) == set(sw.fits_dsm) == {"sigma2", "eta", "B", "eta sigma2 / B"}
    strength, corr = C.remark4_claims(sw)
    assert strength.id == "remark4.sigma2_strength" and strength.scope == "reading"
    # issue 31: scoped to eta -> 0 where the law is a law; the all-configurations exponent is
    # reported with its lack-of-fit p-value, not judged, and no interval is widened
    assert [d["case"] for d in strength.details] == [
        "exponent of σ²", "exponent of B", "η → 0 limit of speed / (ησ²m₂/B)"]
    assert "per step" in strength.note.lower() and "all configurations" in strength.note
    assert "lack of fit p = " in strength.note
    assert strength.verdict == "confirmed" and strength.measured == pytest.approx(-1.024648, rel=1e-5)   # deciding: B
    assert strength.details[0]["measured"] == pytest.approx(0.978167, rel=1e-5)
    assert strength.details[-1]["measured"] == pytest.approx(1.000504, rel=1e-5)
    assert corr.id == "remark4.eta_correction" and corr.source == "book"
    assert corr.verdict == "inconclusive" and corr.measured == pytest.approx(4.400994, rel=1e-5)
    fit = C.eta_correction_fit(sw)
    assert fit.poly.degree == 1 and fit.poly.p_value > LACK_OF_FIT_ALPHA   # the line holds here
    i, eta = sw.sweep("eta")
    np.testing.assert_allclose(fit.fit.intercept + fit.fit.slope * eta, sw.rate[i] / sw.theory[i],
                               rtol=0.05)


def test_a_rejected_law_makes_remark4_inconclusive_and_a_bent_eta_law_is_a_parabola():
    """Issue 31: speeds that follow eta sigma^2 / B times (1 + 3 eta + 400 eta^2)(1 + 0.3/B)
    with 0.1 % errors: the straight line in eta fails its lack of fit, so the eta -> 0 limit
    comes from the parabola (c0 = 1.075 at B = 4, c1 = 3 * 1.075); the bent B law is rejected,
    and the claim is inconclusive rather than confirmed on a widened interval."""
    etas, s2s, bs = [0.005, 0.01, 0.02, 0.04], [0.5, 1.0, 2.0], [2, 4, 8]
    ref = (0.01, 1.0, 4)
    configs = sorted({(e, 1.0, 4) for e in etas} | {(0.01, s, 4) for s in s2s}
                     | {(0.01, 1.0, b) for b in bs})
    cfg = np.array(configs)
    theory = cfg[:, 0] * cfg[:, 1] / cfg[:, 2]
    rate = theory * (1 + 3 * cfg[:, 0] + 400 * cfg[:, 0] ** 2) * (1 + 0.3 / cfg[:, 2])
    sw = C.DriftSweep(configs, ref, rate, 1e-3 * rate, rate, 1e-3 * rate, theory, steps=1)
    for name in ("sigma2", "eta", "B"):
        i, x = sw.sweep(name)
        sw.fits[name] = _fit_power_law(x, rate[i], sw.se[i])
    sw.fits["eta sigma2 / B"] = _fit_power_law(theory, rate, sw.se)
    fit = C.eta_correction_fit(sw)
    assert fit.poly.degree == 2
    assert "c₂η²" in fit.describe() and "a parabola" in fit.describe()   # not "a straight line"
    assert "straight line" not in fit.describe()
    assert fit.fit.intercept == pytest.approx(1.075, abs=0.02)
    assert fit.fit.slope == pytest.approx(3 * 1.075, abs=1.5)
    strength, corr = C.remark4_claims(sw)
    rows = {d["case"]: d for d in strength.details}
    assert rows["exponent of σ²"]["verdict"] == "confirmed"
    assert "caveat" in rows["exponent of B"] and rows["exponent of B"]["verdict"] == "inconclusive"
    assert rows["η → 0 limit of speed / (ησ²m₂/B)"]["verdict"] == "confirmed"
    assert strength.verdict == "inconclusive" and "rejected by its lack of fit" in strength.note
    # the B exponent's interval is its own: slope +- z se, never widened
    f = sw.fits["B"]
    lo, hi = rows["exponent of B"]["interval"]
    assert (hi - lo) / 2 == pytest.approx(2.5758293035489 * f.se, rel=1e-6)
    with pytest.raises(ValueError, match="scalar model"):
        C.drift_sweep(V.diagonal_problem(), *V.min_norm_start(V.diagonal_problem()), etas=[0.01],
                      sigma2s=[1.0], batch_sizes=[1], reference=(0.01, 1.0, 1), steps=10, n_runs=2)


def test_eta_correction_recovers_a_known_line():
    sw = C.DriftSweep(configs=[(e, 1.0, 1) for e in (0.01, 0.02, 0.04)], reference=(0.01, 1.0, 1),
                      rate=np.array([1.0, 2.0, 4.0]) * (1 + 3.0 * np.array([0.01, 0.02, 0.04])),
                      se=np.full(3, 1e-3), rate_dsm=np.ones(3), se_dsm=np.ones(3),
                      theory=np.array([1.0, 2.0, 4.0]), steps=1)
    fit = C.eta_correction_fit(sw)
    assert fit.fit.intercept == pytest.approx(1.0) and fit.fit.slope == pytest.approx(3.0)
    assert fit.fit.chi2 == pytest.approx(0.0, abs=1e-12)
    assert fit.poly.degree == 1 and fit.describe().endswith("consistent with a straight line")


def test_explorer_states_order_and_shapes():
    s = V.scalar_product_problem(16, seed=0)
    starts = {"a": V.scalar_start(1.0, 2.0), "b": V.scalar_start(1.0, 3.0)}
    st = C.explorer_states(s, starts, sigma2s=[0.0, 1.0], etas=[0.01], batch_sizes=[1, 4],
                           steps=200, n_seeds=2, max_points=20)
    assert len(st) == 2 * 2 * 1 * 2
    assert st[0]["end"].shape == (2, 2) and np.allclose(st[0]["end"], [[2.0, 0.5]] * 2)  # σ² = 0
    assert np.allclose(st[4]["end"][:, 0], 3.0)             # start b, B = 1, σ² = 0
    assert not np.allclose(st[5]["end"][:, 0], 3.0)         # start b, B = 1, σ² = 1
    with pytest.raises(ValueError, match="needs d = 1"):
        C.explorer_states(V.diagonal_problem(), starts, sigma2s=[1.0], etas=[0.01],
                          batch_sizes=[1], steps=10, n_seeds=1)
