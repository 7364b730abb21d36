"""Shared figure conventions (dsmlib.figures.common): the state explorer's order, error bars at
the ledger's level, ellipses, the renderer."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from dsmlib.figures import common
from dsmlib.foundation.claims import quantile

SLIDER = [0.5, 1.0, 2.0]
MENU = ["first", "second"]


def _states(n_traces: int = 2) -> list[list[go.Scatter]]:
    """State k = j * len(SLIDER) + i: traces named 'k:t' whose x holds k."""
    return [[go.Scatter(x=[k, k], y=[t, t], name=f"{k}:{t}") for t in range(n_traces)]
            for k in range(len(SLIDER) * len(MENU))]


def _shown(visible: list[bool], fig: go.Figure) -> set[int]:
    """The states whose traces a visibility list shows (each state shows all or none)."""
    states = {int(tr.name.split(":")[0]) for tr, v in zip(fig.data, visible) if v}
    for k in states:
        assert all(v for tr, v in zip(fig.data, visible) if tr.name.startswith(f"{k}:"))
    return states


def test_state_explorer_maps_menu_j_and_slider_i_to_state_j_times_len_slider_plus_i():
    layouts = [{"xaxis.range": [0, 1]}, {"xaxis.range": [5, 9]}]
    fig = common.state_explorer(_states(), slider_values=SLIDER, menu_labels=MENU,
                                slider_prefix="s = ", menu_layouts=layouts)
    ns = len(SLIDER)
    assert [tr.name for tr in fig.data] == [f"{k}:{t}" for k in range(6) for t in range(2)]
    assert _shown([tr.visible for tr in fig.data], fig) == {0}
    assert list(fig.layout.xaxis.range) == [0, 1]                 # menu entry 0's layout
    first = fig.layout.sliders[0]
    assert [s.label for s in first.steps] == ["0.5", "1", "2"]
    assert [_shown(s.args[0]["visible"], fig) for s in first.steps] == [{0}, {1}, {2}]
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == MENU
    for j, button in enumerate(buttons):
        data_update, layout_update = button.args
        assert _shown(data_update["visible"], fig) == {j * ns}
        assert layout_update["xaxis.range"] == layouts[j]["xaxis.range"]
        slider = layout_update["sliders"][0]
        assert slider["currentvalue"]["prefix"].startswith(MENU[j])
        assert [_shown(s["args"][0]["visible"], fig) for s in slider["steps"]] == \
               [{j * ns + i} for i in range(ns)]


def test_every_state_of_an_explorer_keeps_its_legend_entries():
    """Hidden traces leave plotly's legend, so each state must carry its own entries; a trace
    that opts out (``showlegend=False``) stays out in every state (issue 18, item 1)."""
    states = _states(3)
    for traces in states:
        traces[2].showlegend = False
    fig = common.state_explorer(states, slider_values=SLIDER, menu_labels=MENU, slider_prefix="")
    for k in range(len(states)):
        shown = [tr for tr in fig.data if tr.name.startswith(f"{k}:")]
        assert [tr.showlegend is not False for tr in shown] == [True, True, False], k


def test_state_explorer_rejects_mismatched_states():
    with pytest.raises(ValueError, match="state_traces must have"):
        common.state_explorer(_states()[:5], slider_values=SLIDER, menu_labels=MENU,
                              slider_prefix="")
    ragged = _states()
    ragged[3] = ragged[3][:1]
    with pytest.raises(ValueError, match="same number of traces"):
        common.state_explorer(ragged, slider_values=SLIDER, menu_labels=MENU, slider_prefix="")


def test_error_bars_are_the_claims_intervals():
    bars = common.error_bars([0.1, 0.2], dof=9)
    np.testing.assert_allclose(bars["array"], quantile(9) * np.array([0.1, 0.2]))
    np.testing.assert_allclose(common.error_bars([1.0])["array"], [quantile()])


def test_error_bars_stop_at_the_range_of_the_quantity():
    """An accuracy's bar is its interval cut at 0 and 1; inside the range it is the interval."""
    h = quantile(4) * 0.1
    bars = common.error_bars([0.1, 0.1, 0.1], dof=4, mean=[0.99, 0.5, 0.02], within=(0.0, 1.0))
    np.testing.assert_allclose(bars["array"], [0.01, h, h])
    np.testing.assert_allclose(bars["arrayminus"], [h, h, 0.02])
    assert bars["symmetric"] is False
    with pytest.raises(ValueError, match="mean"):
        common.error_bars([0.1], within=(0.0, 1.0))


def test_figure_ids_are_the_same_in_every_process():
    """A figure's HTML is the same bytes in any process (ids hash the figure; Python's
    ``hash()`` of a string changes with each process), and differs between figures."""
    import subprocess
    import sys
    code = ("import plotly.graph_objects as go; from dsmlib.figures.render import figure_html;"
            "print(figure_html(go.Figure(go.Scatter(x=[1, 2], y=[3, 4]), "
            "layout=dict(title='t')).to_dict()))")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)},
                           check=True).stdout for seed in (1, 2)}
    assert len(runs) == 1
    from dsmlib.figures.render import figure_html
    a = figure_html(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])).to_dict())
    b = figure_html(go.Figure(go.Scatter(x=[1, 2], y=[3, 5])).to_dict())
    assert a.split('"')[1] != b.split('"')[1] and a == figure_html(
        go.Figure(go.Scatter(x=[1, 2], y=[3, 4])).to_dict())


def test_ellipse_is_the_nsig_contour():
    cov = np.array([[4.0, 1.2], [1.2, 1.0]])
    x, y = common.ellipse_xy([1.0, -2.0], cov, nsig=2.0, n=50)
    d = np.stack([x - 1.0, y + 2.0])
    np.testing.assert_allclose(np.einsum("in,ij,jn->n", d, np.linalg.inv(cov), d), 4.0, rtol=1e-10)
    with pytest.raises(ValueError, match="cov must be 2x2"):
        common.ellipse_xy([0, 0], np.eye(3))
    with pytest.raises(ValueError, match="positive semi-definite"):
        common.ellipse_xy([0, 0], np.diag([1.0, -1.0]))


def test_renderer_emits_data_for_the_site_loader_and_slims_it():
    """The site's HTML holds the figure's JSON for ``dsm-plotly.js``: no plotly.js, no inline
    call, float64 data sent as float32 typed arrays."""
    import json
    from dsmlib.figures.render import BookRenderer
    x = np.linspace(0.0, 1.0, 50)
    fig = go.Figure(go.Scatter(x=x, y=x ** 2))
    bundle = BookRenderer().to_mimebundle(fig.to_dict())
    assert "application/vnd.plotly.v1+json" in bundle
    html = bundle["text/html"]
    assert "<script src" not in html and "Plotly.newPlot" not in html
    assert 'class="dsm-plotly-data"' in html and "</script>" in html
    spec = json.loads(html.split('">', 2)[2].rsplit("</script>", 1)[0].replace("<\\/", "</"))
    assert spec["data"][0]["x"]["dtype"] == "f4"
    before = (pio.renderers.default, pio.templates.default)
    try:
        common.setup()
        assert pio.renderers.default == common.RENDERER
    finally:
        pio.renderers.default, pio.templates.default = before


def test_the_embedded_template_keeps_what_the_figure_uses():
    """Each figure embedded the whole template (about 7 KB: defaults of 24 trace types, geo,
    polar, 3-D and ternary subplots); a page of eight figures carried 56 KB of it (issue 46,
    item 10). What stays is what this figure's traces and axes can use, and it draws the same."""
    import json

    import plotly.graph_objects as go
    import plotly.io as pio

    from dsmlib.figures.render import RENDERER, setup, trim_template
    setup()
    fig = go.Figure([go.Scatter(x=[1, 2], y=[3, 4]), go.Contour(z=[[1, 2], [3, 4]])])
    full = fig.to_plotly_json()
    full["layout"]["template"] = pio.templates[pio.templates.default].to_plotly_json()
    small = trim_template(full)
    tpl = small["layout"]["template"]
    assert set(tpl["data"]) == {"scatter", "contour"}
    assert not {"geo", "polar", "scene", "ternary"} & set(tpl["layout"])
    assert tpl["layout"]["xaxis"] == full["layout"]["template"]["layout"]["xaxis"]
    assert len(json.dumps(small)) < len(json.dumps(full)) - 4000
    polar = go.Figure(go.Scatterpolar(r=[1, 2], theta=[0, 90])).to_plotly_json()
    polar["layout"]["template"] = pio.templates[pio.templates.default].to_plotly_json()
    assert "polar" in trim_template(polar)["layout"]["template"]["layout"]
    bundle = pio.renderers[RENDERER].to_mimebundle(full)
    assert len(bundle["text/html"]) < len(json.dumps(full)) - 4000


def test_bullets_are_a_markdown_list():
    """Read-outs computed from an execution appear as a list, not as printed code."""
    from dsmlib.figures.common import bullets
    md = bullets(["one *a*", "two"])
    assert md.data == "- one *a*\n- two" and type(md).__name__ == "Markdown"
