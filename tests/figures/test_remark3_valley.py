"""Figures of the remark3_valley chapter: axis titles, captions' traces, the valley explorer."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from dsmlib.chapters import remark3_valley as C
from dsmlib.figures import remark3_valley as F
from dsmlib.theory import valley as V


@pytest.fixture(scope="module")
def experiments():
    s = V.scalar_product_problem(16, seed=0)
    d = V.diagonal_problem(3, 6, seed=1)
    kw = dict(steps=400, n_runs=6, record_every=20)
    return [C.valley_experiment(s, *V.scalar_start(1.0, 3.0), eta=0.02, sigma2=2.0, batch_size=4, **kw),
            C.valley_experiment(d, *V.min_norm_start(d), eta=0.1, sigma2=0.25, batch_size=1, **kw)]


def titled(fig: go.Figure) -> bool:
    lay = fig.layout
    axes = [k for k in lay.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]
    return bool(axes) and all(lay[k].title.text for k in axes if k in ("xaxis", "yaxis"))


def test_static_figures_have_axis_titles(experiments):
    s = V.scalar_product_problem(16, seed=0)
    sw = C.drift_sweep(s, *V.scalar_start(1.0, 2.0), etas=[0.01, 0.02], sigma2s=[1.0, 2.0],
                       batch_sizes=[2, 4], reference=(0.01, 1.0, 4), steps=100, n_runs=4)
    comps = [C.stability_comparison(ex, scales=[1e-3, 0.1], n_draws=50) for ex in experiments]
    figs = [F.landscape_paths(experiments[0]), F.gradnorm_over_time(experiments),
            F.weights_over_time(experiments[1]), F.drift_scaling(sw), F.stability_plot(comps)]
    for fig in figs:
        assert isinstance(fig, go.Figure) and len(fig.data) > 0 and titled(fig)
    legend = " ".join(t.name or "" for t in figs[3].data)
    # every fitted slope reports its lack-of-fit check, or says a 2-point fit cannot have one
    assert "slope" in legend and "theory" in legend
    assert legend.count("±") == legend.count("χ² p") + legend.count("fit untested") > 0
    assert "log₁₀ loss" in str(figs[0].data[0].colorbar.title.text)
    for html in (F.fits_table(sw), F.end_points_table(C.end_points(experiments[0]))):
        assert "<table" in html.data and ("99%" in html.data or "±" in html.data)


def test_valley_explorer_builds_from_states():
    s = V.scalar_product_problem(16, seed=0)
    starts = {"(2, 1/2)": V.scalar_start(1.0, 2.0), "(3, 1/3)": V.scalar_start(1.0, 3.0)}
    st = C.explorer_states(s, starts, sigma2s=[0.0, 1.0], etas=[0.01, 0.02], batch_sizes=[4],
                           steps=100, n_seeds=2)
    fig = F.valley_explorer(s, st, starts=list(starts), batch_sizes=[4], etas=[0.01, 0.02],
                            sigma2s=[0.0, 1.0], lim=(-0.25, 3.5))
    assert len(fig.data) == 3 + 2 * len(st)
    assert fig.layout.xaxis.title.text == "θ₁" and fig.layout.yaxis.title.text == "θ₂"
    assert [m.buttons[0].label for m in fig.layout.updatemenus] == ["start (2, 1/2)", "B = 4", "η = 0.01"]
    assert np.isnan(fig.data[3].x).sum() == 2               # two runs joined by NaN gaps
    assert fig.layout.legend.yref == "container" and fig.layout.legend.y == 0.0   # below the slider
