"""Figures of the remark3_valley chapter: axis titles, captions' traces, the nested explorer."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from dsmlib.chapters import remark3_valley as C
from dsmlib.figures import explorers as E
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


def _visible(vis: list[bool], n_static: int, n_tr: int) -> list[int]:
    on = [i for i, v in enumerate(vis) if v]
    assert on[:n_static] == list(range(n_static))
    states = {(i - n_static) // n_tr for i in on[n_static:]}
    assert len(states) == 1 and len(on) == n_static + n_tr
    return states.pop()


def test_nested_explorer_buttons_select_the_right_state():
    sizes, ns = [2, 3], 4                                   # two menus, a slider of 4 values
    traces = [[go.Scatter(x=[k], y=[k], name=f"s{k}"), go.Scatter(x=[k], y=[0])]
              for k in range(2 * 3 * 4)]
    fig = E.nested_explorer(traces, menus=[("a=", ["0", "1"]), ("b=", ["0", "1", "2"])],
                            slider_prefix="c=", slider_values=[0.0, 1.0, 2.0, 3.0],
                            static_traces=[go.Scatter(x=[0], y=[0])])
    lay = fig.layout
    assert [t.visible for t in fig.data[:3]] == [None, True, True]  # static, then state 0
    assert len(lay.updatemenus) == 2 and len(lay.sliders) == 1
    for i, btn in enumerate(lay.updatemenus[0].buttons):          # menu a: resets b and c
        vis, layout = btn.args
        assert _visible(vis["visible"], 1, 2) == i * 3 * ns
        assert layout["updatemenus[1].active"] == 0
        inner = layout["updatemenus[1].buttons"]
        for j, b2 in enumerate(inner):                           # then menu b, then the slider
            assert _visible(b2["args"][0]["visible"], 1, 2) == (i * 3 + j) * ns
            steps = b2["args"][1]["sliders"][0]["steps"]
            assert [_visible(s["args"][0]["visible"], 1, 2) for s in steps] == \
                [(i * 3 + j) * ns + k for k in range(ns)]
    assert [_visible(s.args[0]["visible"], 1, 2) for s in lay.sliders[0].steps] == [0, 1, 2, 3]
    # the site's loader keeps the slider's place on a menu change (dsm-plotly.js)
    assert lay.meta["dsm_grid"] == dict(n_slider=4, n_menu=6, n_traces=2, n_static=1, menus=[2, 3])
    # one drop-down per row, all above the plot and below the modebar's row (40 px)
    plot_h = lay.height - lay.margin.t - lay.margin.b
    tops = [(1 - m.y) * plot_h + lay.margin.t for m in lay.updatemenus]   # px from the figure top
    assert [m.x for m in lay.updatemenus] == [0.0, 0.0] and all(m.yanchor == "top" for m in lay.updatemenus)
    assert tops[0] == pytest.approx(E.MENU_TOP) and tops[1] - tops[0] == pytest.approx(E.MENU_ROW)
    assert tops[-1] + E.MENU_ROW <= lay.margin.t
    with pytest.raises(ValueError, match="must have 24 entries"):
        E.nested_explorer(traces[:5], menus=[("a", ["0", "1"]), ("b", ["0", "1", "2"])],
                          slider_prefix="", slider_values=[0, 1, 2, 3])


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
