"""Figures of the ``ols`` chapter (dsmlib.figures.ols), built from small synthetic results:
every figure builds, every shown axis has a title, and the explorer shows state
j * len(sigma2s) + i for covariance j and noise level i."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.chapters.ols import BETA_STAR, Panel, PanelResult
from dsmlib.figures import ols as figs
from dsmlib.theory import least_squares as ls
from helpers import missing_axis_titles


def _panel_result(key: str, cov, sigma2: float, seed: int) -> PanelResult:
    rng = np.random.default_rng(seed)
    p = ls.make_problem(30, cov, BETA_STAR, sigma2, seed=seed)
    exact_cov = np.diag([0.002, 0.001])
    noisy = p.beta_hat + rng.multivariate_normal([0, 0], exact_cov, 400)
    noisy[:50] = np.linspace([0, 0], p.beta_hat, 50)            # a transient from the origin
    clean = np.linspace([0, 0], BETA_STAR, 400)
    return PanelResult(panel=Panel(key, f"panel {key}", np.asarray(cov, float), sigma2,
                                   f"σ²={sigma2:g}"),
                       problem=p, noisy=noisy, clean=clean, burn_in=50, exact_mean=p.beta_hat,
                       exact_cov=exact_cov, paper_cov=0.01 * sigma2 / 5 * p.sample_cov,
                       n_batches=10)


@pytest.fixture(scope="module")
def results():
    return [_panel_result("a", 20 * np.eye(2), 0.5, 1), _panel_result("b", 20 * np.eye(2), 2.0, 2),
            _panel_result("c", np.diag([10.0, 100.0]), 0.5, 3)]


@pytest.mark.parametrize("build", [figs.figure3, figs.figure3_zoom])
def test_panel_figures_build_with_one_subplot_per_panel(results, build):
    fig = build(results, max_cloud_points=100)
    fig.to_json()                                               # serialises (validated)
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["(a) σ²=0.5", "(b) σ²=2", "(c) σ²=0.5"]
    assert {tr.xaxis for tr in fig.data} == {"x", "x2", "x3"}
    clouds = [tr for tr in fig.data if tr.mode == "markers" and tr.marker.size == 2]
    assert len(clouds) == 3 and all(len(c.x) <= 100 for c in clouds)


@pytest.mark.parametrize("build", [figs.figure3, figs.figure3_zoom])
def test_panel_figures_have_axis_titles(results, build):
    assert missing_axis_titles(build(results, max_cloud_points=100)) == []


def _explorer_state(k: int, cov_scale: float) -> dict:
    """A state whose cloud's x-coordinates all equal k (to identify it in the figure)."""
    return dict(cloud=np.column_stack([np.full(5, float(k)), np.arange(5.0)]),
                clean=np.zeros((3, 2)), mean_emp=[1.0, 1.0], cov_emp=0.01 * np.eye(2),
                mean_exact=[1.0, 1.0], cov_exact=0.01 * np.eye(2), beta_star=BETA_STAR,
                cov_paper=cov_scale * np.eye(2))


def test_cloud_explorer_order_and_axes():
    sigma2s, labels = [0.25, 1.0, 2.0], ["Σ = 20·I", "Σ = 100·I"]
    ns = len(sigma2s)
    states = [_explorer_state(j * ns + i, (j + 1) * sigma2s[i] * 1e-3)
              for j in range(len(labels)) for i in range(ns)]
    fig = figs.cloud_explorer(states, sigma2s, labels)
    fig.to_json()
    assert missing_axis_titles(fig) == []

    def shown(visible) -> set[float]:
        return {tr.x[0] for tr, v in zip(fig.data, visible) if v and tr.name == "label-noisy SGD"}

    assert shown([tr.visible for tr in fig.data]) == {0.0}
    for j, button in enumerate(fig.layout.updatemenus[0].buttons):
        assert button.label == labels[j]
        steps = button.args[1]["sliders"][0]["steps"]
        assert [s["label"] for s in steps] == ["0.25", "1", "2"]
        assert [shown(s["args"][0]["visible"]) for s in steps] == [{j * ns + i} for i in range(ns)]
        # the axes of entry j span its own states: 3 paper sigmas of its largest sigma^2
        half = 3 * np.sqrt((j + 1) * max(sigma2s) * 1e-3)
        np.testing.assert_allclose(button.args[1]["xaxis.range"], [1 - half, 1 + half])


def test_sweep_figure_and_shape_table(results):
    """Issue 31's figures: tr C against η and B (measured with 99 % bars, exact, paper's and
    first-order lines, log axes, titles), and the shape table (one row per panel, with the
    eighth-moment bound)."""
    import dataclasses
    etas = [dataclasses.replace(results[0], eta=e) for e in (0.005, 0.01)]
    bs = [dataclasses.replace(results[0], batch_size=b) for b in (2, 5)]
    fig = figs.sweep_figure(etas, bs)
    assert not missing_axis_titles(fig)
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    measured = [t for t in fig.data if t.name == "measured"]
    assert len(measured) == 2 and list(measured[0].x) == [0.005, 0.01]
    assert measured[0].error_y.array is not None
    assert {t.name for t in fig.data} == {"measured", "exact", "paper, Eq. 30",
                                          "first order ησ²d/(2B)"}
    html = figs.shape_table(results).data
    assert html.count("<tr") == len(results) + 1 and "E‖I − ηH‖⁸" in html
