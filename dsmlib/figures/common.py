"""Shared figure conventions (figures layer): the renderer that makes plotly work in a static
site, the palette, the 2-D Gaussian ellipse, square axes, the slider-and-menu explorer over
precomputed states, the log-log plot with its fitted slope, and a chapter's central computation
shown as its library source (:func:`show_source`).

The renderer itself is :mod:`dsmlib.figures.render`; :func:`setup` is re-exported here.

Error bars everywhere are the claims' intervals: ``dsmlib.foundation.claims.quantile(dof) * se``.
"""
from __future__ import annotations

import inspect
import textwrap
from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go

from ..foundation.claims import quantile
from .render import RENDERER, setup

__all__ = ["RENDERER", "COLORS", "setup", "ellipse_xy", "square_axes",
           "square_layout", "state_explorer", "error_bars", "show_source", "bullets"]


COLORS = {"noisy": "#1f77b4", "clean": "#ff7f0e", "empirical": "#2ca02c", "exact": "#111111",
          "paper": "#d62728", "beta_star": "#9467bd", "beta_hat": "#111111"}


def ellipse_xy(mean: Sequence[float], cov: np.ndarray, *, nsig: float = 2.0,
               n: int = 73) -> tuple[np.ndarray, np.ndarray]:
    """Points of the ``nsig``-sigma ellipse ``{m + nsig * C^{1/2} u : |u| = 1}`` of a 2-D Gaussian."""
    cov = np.asarray(cov, dtype=float)
    if cov.shape != (2, 2):
        raise ValueError(f"cov must be 2x2, got shape {cov.shape}")
    w, v = np.linalg.eigh((cov + cov.T) / 2)
    if not np.all(np.isfinite(w)) or w.min() < -1e-12 * max(1.0, abs(w).max()):
        raise ValueError("cov must be a finite positive semi-definite matrix")
    t = np.linspace(0.0, 2.0 * np.pi, n)
    pts = v @ (np.sqrt(np.clip(w, 0.0, None))[:, None] * np.vstack([np.cos(t), np.sin(t)]))
    return mean[0] + nsig * pts[0], mean[1] + nsig * pts[1]


def square_axes(fig: go.Figure, i: int, row: int, col: int, centre, half: float) -> None:
    """Equal scales on both axes (shapes of ellipses matter), ranges kept as given."""
    fig.update_xaxes(range=[centre[0] - half, centre[0] + half], constrain="domain",
                     row=row, col=col, nticks=5)
    fig.update_yaxes(range=[centre[1] - half, centre[1] + half], constrain="domain",
                     scaleanchor=f"x{i + 1 if i else ''}", scaleratio=1, row=row, col=col,
                     nticks=5)


def square_layout(centre, half: float) -> dict[str, Any]:
    """Layout entries for a square view of half-width ``half`` around ``centre``."""
    return {"xaxis.range": [centre[0] - half, centre[0] + half],
            "yaxis.range": [centre[1] - half, centre[1] + half]}


def state_explorer(state_traces: list[list[Any]], *, slider_values: Sequence[Any],
                   menu_labels: Sequence[str], slider_prefix: str,
                   menu_layouts: Sequence[dict[str, Any]] | None = None) -> go.Figure:
    """A figure that works in a static page: a slider and a drop-down over precomputed states.

    ``state_traces[j * len(slider_values) + i]`` holds the traces of menu entry ``j`` at slider
    position ``i`` (every state the same number of traces). The drop-down swaps in the slider
    of its entry (and ``menu_layouts[j]``, e.g. axis ranges), so the two controls compose with
    no Python running in the page. Plotly alone would reset the slider to its first position on
    a menu change; ``layout.meta.dsm_grid`` lets the site's loader (``dsm-plotly.js``) keep the
    slider where it was. Only the first state is visible initially; every state carries its
    own legend entries (a trace's ``showlegend`` is kept), so the legend survives any move.
    """
    ns, nm = len(slider_values), len(menu_labels)
    if len(state_traces) != ns * nm:
        raise ValueError(f"state_traces must have len(slider_values) * len(menu_labels) = "
                         f"{ns * nm} entries, got {len(state_traces)}")
    n_tr = len(state_traces[0])
    if any(len(t) != n_tr for t in state_traces):
        raise ValueError("every state must have the same number of traces")
    menu_layouts = list(menu_layouts or [{}] * nm)
    fig = go.Figure()
    for k, traces in enumerate(state_traces):
        for tr in traces:
            tr.visible = k == 0   # hidden traces leave the legend: every state keeps its own
            fig.add_trace(tr)

    def vis(k: int) -> list[bool]:
        v = [False] * (n_tr * len(state_traces))
        v[k * n_tr:(k + 1) * n_tr] = [True] * n_tr
        return v

    def slider(j: int) -> dict[str, Any]:
        return dict(active=0, currentvalue=dict(prefix=f"{menu_labels[j]},  {slider_prefix}"),
                    pad=dict(t=40), len=0.9, x=0.05,
                    steps=[dict(label=f"{v:g}" if isinstance(v, float) else str(v),
                                method="restyle", args=[{"visible": vis(j * ns + i)}])
                           for i, v in enumerate(slider_values)])

    # The drop-down sits top left, below the row plotly's modebar takes on hover (top right,
    # as wide as the figure on a phone); the legend goes under the slider, where it may wrap
    # into several rows without covering a control.
    fig.update_layout(
        sliders=[slider(0)],
        updatemenus=[dict(type="dropdown", x=0.0, y=1.0, xanchor="left", yanchor="bottom",
                          pad=dict(b=12), showactive=True,
                          buttons=[dict(label=lab, method="update",
                                        args=[{"visible": vis(j * ns)},
                                              {"sliders": [slider(j)], **menu_layouts[j]}])
                                   for j, lab in enumerate(menu_labels)])],
        legend=dict(orientation="h", x=0.0, xanchor="left", y=0.0, yanchor="bottom",
                    yref="container", itemsizing="constant"),
        margin=dict(l=50, r=20, t=80, b=40),
        meta=dict(dsm_grid=dict(n_slider=ns, n_menu=nm, n_traces=n_tr)))
    fig.update_layout(**{k.replace(".", "_"): v for k, v in menu_layouts[0].items()})
    return fig


def error_bars(se: Sequence[float], dof: float = float("inf"), *,
               mean: Sequence[float] | None = None,
               within: tuple[float, float] | None = None) -> dict[str, Any]:
    """Plotly ``error_y`` for the ledger's confidence level (Student-t with ``dof``); with
    ``within`` (the quantity's range, e.g. (0, 1) for an accuracy) each bar is cut at its
    ends around ``mean``: the part of the interval outside the range holds no value."""
    half = quantile(dof) * np.asarray(se, dtype=float)
    if within is None:
        return dict(type="data", array=half, visible=True)
    if mean is None:
        raise ValueError("error_bars: cutting a bar at `within` needs the points' `mean`")
    m = np.asarray(mean, dtype=float)
    lo, hi = within
    return dict(type="data", symmetric=False, visible=True,
                array=np.clip(np.minimum(m + half, hi) - m, 0.0, None),
                arrayminus=np.clip(m - np.maximum(m - half, lo), 0.0, None))


def show_source(*objects: Any) -> Any:
    """The source of library functions (or methods) as a Markdown code block, each under its
    dotted name: how a page shows its central computation, the method and not only the call
    (QuantEcon-style; the cell hides its input). Read from the installed code, so the page
    shows what ran."""
    from IPython.display import Markdown
    parts = []
    for obj in objects:
        name = f"{obj.__module__}.{obj.__qualname__}"
        code = textwrap.dedent(inspect.getsource(obj)).rstrip()
        parts.append(f"`{name}`:\n\n```python\n{code}\n```")
    return Markdown("\n\n".join(parts))


def bullets(lines: Sequence[str]) -> Any:
    """Sentences as a Markdown list: how a page shows read-outs computed from its execution
    (printed text would appear as a grey code block)."""
    from IPython.display import Markdown
    return Markdown("\n".join(f"- {line}" for line in lines))
