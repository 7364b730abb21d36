"""Tests of dsmlib.figures.prop2_convergence."""
from __future__ import annotations

import re

import numpy as np
import pytest

from dsmlib.chapters import prop2_convergence as p2
from dsmlib.figures import prop2_convergence as figs
from dsmlib.foundation.claims import interval, quantile

ETAS = [0.125, 0.0625, 0.03125]
PHONE_CHARS = 46      # legend lines longer than this do not fit a 390 px screen at 11 px


@pytest.fixture(scope="module")
def runs():
    problems = p2.prop2_problems()
    kw = dict(etas=ETAS, horizon=0.25, refine=2, n_paths=20, batch_size=1, sigma2=1.0, seed=0)
    sweeps = [p2.strong_sweep(problems[n], n, fixed_diffusion=f, sgd_noise=sg, **kw)
              for n, sg in (("least squares", True), ("least squares", False),
                            ("tanh MLP", True)) for f in (False, True)]
    weak = [p2.weak_comparison(problems[n], n, etas=ETAS, horizon=0.25, n_paths=60,
                               batch_size=1, sigma2=1.0, n_directions=2, n_groups=5, seed=0)
            for n in ("least squares", "tanh MLP")]
    return sweeps, weak, problems


def _legend_lines(fig) -> list[str]:
    return [line for t in fig.data if t.showlegend is not False and t.name
            for line in re.sub("<[^>]+>", "\n", t.name).split("\n")]


def test_strong_error_figure(runs):
    sweeps, _, _ = runs
    fig = figs.strong_error_figure(sweeps)
    n_exact = sum(s.exact_peak is not None for s in sweeps)
    assert n_exact == 2 and len(fig.data) == len(sweeps) + n_exact
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    # Stacked panels on one range of η, each with its own x and y titles (issue 63).
    assert fig.layout.xaxis.title.text == fig.layout.xaxis2.title.text
    assert fig.layout.xaxis2.matches == "x" and fig.layout.xaxis2.showticklabels is not False
    assert fig.layout.yaxis.title.text and fig.layout.yaxis2.title.text
    assert fig.layout.xaxis.domain == fig.layout.xaxis2.domain
    assert fig.layout.legend.orientation == "v"
    assert max(map(len, _legend_lines(fig))) <= PHONE_CHARS
    assert str(figs.local_slopes_table(sweeps).data).count("<tr>") == len(sweeps) + 1


def test_legend_interval_is_the_claims(runs):
    """Issue 18: a legend and its claim show the same interval (one function builds both)."""
    sweeps, weak, _ = runs
    fig = figs.strong_error_figure(sweeps)
    names = [t.name for t in fig.data if t.showlegend is not False]
    for s in sweeps:
        c = s.case()
        text = f"{c.measured:.3g} [{c.interval[0]:.3g}, {c.interval[1]:.3g}]"
        assert sum(text in n for n in names) >= 1, (text, names)
    claims = {c.id: c for c in p2.prop2_claims(sweeps, weak)}
    for cid in ("prop2.strong_order", "prop2.strong_order_additive",
                "prop2.fixed_diffusion_control"):
        for d in claims[cid].details:
            text = f"[{d['interval'][0]:.3g}, {d['interval'][1]:.3g}]"
            assert any(text in n for n in names), (text, names)
    wf = figs.weak_figures(weak)
    fits = [t.name for t in wf.data if "fit" in t.name]
    for w, d in zip(weak, claims["prop2.weak_sgd_vs_dsm"].details):
        if w.fit is not None:
            assert any(f"[{d['interval'][0]:.3g}, {d['interval'][1]:.3g}]" in n for n in fits)


def test_weak_and_moments_figures(runs):
    _, weak, _ = runs
    fig = figs.weak_figure(weak[0])
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.title.text
    assert any("naive" in t.name for t in fig.data)
    m = figs.moments_figure(weak[0])
    assert len(m.data) == 2
    both = figs.weak_figures(weak)
    assert both.layout.yaxis2.title.text and both.layout.xaxis2.title.text
    assert max(map(len, _legend_lines(both))) <= PHONE_CHARS
    mm = figs.moments_figures(weak)
    assert len(mm.data) == 4


def test_stacked_panels_share_one_range_of_eta_and_title_each_axis(runs):
    """Issue 63: in the stacked figures B5-B7 the upper panels showed tick labels of their
    own under no title, and the models' panels spanned different ranges of η (the MLP's weak
    comparison runs at fewer steps) under the one title at the bottom. Every panel's x axis
    now has its own title and tick labels, on the first panel's range."""
    sweeps, weak, _ = runs
    for fig in (figs.strong_error_figure(sweeps), figs.weak_figures(weak),
                figs.moments_figures(weak)):
        axes = [k for k in fig.layout.to_plotly_json() if k.startswith("xaxis")]
        assert len(axes) >= 2
        for k in axes:
            axis = fig.layout[k]
            assert axis.title.text and axis.showticklabels is not False, k
            assert axis.matches == (None if k == "xaxis" else "x"), k


def test_constant_table_and_text(runs):
    problems = runs[2]
    sw = p2.sigma2_sweeps(problems["least squares"], "least squares", sigma2s=[1.0, 4.0],
                          etas=ETAS[1:], horizon=0.25, refine=2, n_paths=20, batch_size=1)
    html = str(figs.constant_table(sw).data)
    assert html.count("<tr>") == 3 and "2" in html
    text = figs.constant_growth_text(sw).data   # Markdown, for glue:md
    grow = sw[1].ratio[0][-1] / sw[0].ratio[0][-1]
    assert f"{grow:.3g}" in text and "2" in text


def test_fit_label_uses_the_claims_interval():
    """The label's interval is :func:`interval` of the fit's own standard error, never widened
    (issue 31); a law that lack of fit rejects says so."""
    from dsmlib.foundation.stats import LogLogFit
    f = LogLogFit.from_chi2(2.0, 0.0, 0.1, 40.0, 4)
    lo, hi = interval(2.0, f.se)
    label = figs.fit_label(f, f.se, 0.01)
    assert "(law rejected)" in label and f"[{lo:.2f}, {hi:.2f}]" in label
    assert hi - 2.0 == pytest.approx(f.se * quantile())
    g = LogLogFit.from_chi2(2.0, 0.0, 0.1, 2.0, 4)
    assert "rejected" not in figs.fit_label(g, g.se, 0.01)
    assert f"[{lo:.2f}, {hi:.2f}]" in figs.fit_label(g, g.se, 0.01)


def test_path_explorer(runs):
    _, _, problems = runs
    states = p2.path_explorer_states(problems["least squares"], etas=[0.25, 0.125],
                                     sigma2s=[1.0, 4.0], horizon=0.5, batch_size=1, n_paths=2)
    fig = figs.path_explorer(states, [0.25, 0.125], ["σ² = 1", "σ² = 4"])
    assert len(fig.data) == 4 * 3 * 2
    assert len(fig.layout.sliders[0].steps) == 2 and len(fig.layout.updatemenus[0].buttons) == 2
    assert sum(t.visible for t in fig.data) == 3 * 2
    assert np.isfinite(fig.layout.xaxis.range).all()
