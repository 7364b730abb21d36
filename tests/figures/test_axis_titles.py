"""The axis-title rule of this folder's figures (tests/figures/conftest.py and
helpers.missing_axis_titles) sees what it looks for: a planted untitled axis fails it (issue
53), and so does an upper panel's x axis that shows tick labels of its own under no title
(issue 63); an x axis shared with the titled one under it (``matches``, no tick labels of its
own) does not."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

import dsmlib.figures.sec5_distillation as sec5
from helpers import figure_functions, missing_axis_titles


def _grid(shared: bool) -> go.Figure:
    """Two columns of two rows, every panel drawn on, titled as the chapters title them."""
    fig = make_subplots(rows=2, cols=2, shared_xaxes=shared)
    for r in (1, 2):
        for c in (1, 2):
            fig.add_trace(go.Scatter(x=[1, 2], y=[r, c]), row=r, col=c)
            fig.update_yaxes(title_text=f"y {r}{c}", row=r, col=c)
    for c in (1, 2):
        fig.update_xaxes(title_text=f"x {c}", row=2, col=c)
    return fig


def test_a_titled_grid_passes_and_a_shared_x_axis_takes_the_title_under_it():
    assert missing_axis_titles(_grid(shared=True)) == []


def test_an_upper_x_axis_with_tick_labels_of_its_own_needs_its_own_title():
    """Issue 63: Prop. 2's stacked panels each had tick labels, and only the bottom one a
    title; a reader of an upper panel (on a phone, a screen above the title) could not tell
    what its ticks count, nor that the panels' ranges differed."""
    assert missing_axis_titles(_grid(shared=False)) == ["xaxis", "xaxis2"]
    fig = _grid(shared=True)
    fig.update_xaxes(showticklabels=True, row=1, col=1)        # shared, but ticks of its own
    assert missing_axis_titles(fig) == ["xaxis"]
    fig = _grid(shared=False)
    fig.update_xaxes(title_text="η", row=1)                    # each its own title: passes
    assert missing_axis_titles(fig) == []


def test_a_shared_x_axis_takes_its_title_only_from_under_it_in_its_column():
    fig = _grid(shared=True)
    fig.update_xaxes(matches="x4", row=1, col=1)               # the other column's bottom
    assert missing_axis_titles(fig) == ["xaxis"]
    fig = make_subplots(rows=2, cols=1)
    for r in (1, 2):
        fig.add_trace(go.Scatter(x=[1, 2], y=[1, 2]), row=r, col=1)
        fig.update_yaxes(title_text="y", row=r, col=1)
    fig.update_xaxes(title_text="top", row=1, col=1)
    fig.update_xaxes(matches="x", showticklabels=False, row=2, col=1)   # shares from above
    assert missing_axis_titles(fig) == ["xaxis2"]


def test_a_planted_untitled_axis_fails():
    fig = _grid(shared=True)
    fig.update_yaxes(title_text=None, row=1, col=2)              # the right column's top y
    assert missing_axis_titles(fig) == ["yaxis2"]
    fig = _grid(shared=True)
    fig.update_xaxes(title_text=None, row=2, col=2)              # a bottom x: no one below
    assert missing_axis_titles(fig) == ["xaxis2", "xaxis4"]
    fig = go.Figure(go.Scatter(x=[1], y=[1], xaxis="x2", yaxis="y2"),
                    layout=dict(xaxis=dict(title="x"), yaxis=dict(title="y"),
                                xaxis2=dict(anchor="y2", overlaying="x"),
                                yaxis2=dict(anchor="x2", overlaying="y", side="right")))
    assert missing_axis_titles(fig) == ["xaxis2", "yaxis2"]     # an overlaying pair
    assert missing_axis_titles(go.Figure(go.Scatter(x=[1], y=[1]))) == ["xaxis", "yaxis"]


def test_an_untitled_x_is_not_shared_from_another_column_or_from_above():
    fig = make_subplots(rows=2, cols=2)
    for r in (1, 2):
        for c in (1, 2):
            fig.add_trace(go.Scatter(x=[1], y=[1]), row=r, col=c)
            fig.update_yaxes(title_text="y", row=r, col=c)
    fig.update_xaxes(title_text="top left", row=1, col=1)
    fig.update_xaxes(title_text="bottom right", row=2, col=2)
    # xaxis3 (bottom left) has only a title above it; xaxis2 (top right), with tick labels of
    # its own, does not take xaxis4's
    assert missing_axis_titles(fig) == ["xaxis2", "xaxis3"]


def test_every_figure_function_records_what_it_builds():
    """The conftest's wrapper is on every figure function, so no figure escapes the check."""
    assert figure_functions()
    assert getattr(sec5.figure1, "records_figures", False)
    assert getattr(sec5.figure1, "__wrapped__", None) is not None
