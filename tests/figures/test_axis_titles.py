"""The axis-title rule of this folder's figures (tests/figures/conftest.py and
helpers.missing_axis_titles) sees what it looks for: a planted untitled axis fails it, an x
title shared by the axes above it in the same column does not (issue 53)."""
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


def test_a_titled_grid_passes_and_its_bottom_x_titles_are_shared_upwards():
    assert missing_axis_titles(_grid(shared=True)) == []
    assert missing_axis_titles(_grid(shared=False)) == []       # same column: still shared


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
    # xaxis3 (bottom left) has only a title above it; xaxis2 (top right) shares xaxis4's
    assert missing_axis_titles(fig) == ["xaxis3"]


def test_every_figure_function_records_what_it_builds():
    """The conftest's wrapper is on every figure function, so no figure escapes the check."""
    assert figure_functions()
    assert getattr(sec5.figure1, "records_figures", False)
    assert getattr(sec5.figure1, "__wrapped__", None) is not None
