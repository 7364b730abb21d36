"""The shared static-page explorer (dsmlib.figures.explorers): every drop-down and slider
position shows exactly its state, and the menus sit in fixed rows above the plot."""
from __future__ import annotations

import plotly.graph_objects as go
import pytest

from dsmlib.figures import explorers as E


def _visible(vis: list[bool], n_static: int, n_tr: int) -> int:
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
