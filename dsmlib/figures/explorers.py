"""Explorers that work in a static page (figures layer, shared by the chapters): drop-downs and
a slider over precomputed states, wired in the figure itself so that no Python runs in the page."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go

__all__ = ["MENU_TOP", "MENU_ROW", "nested_explorer"]

MENU_TOP, MENU_ROW = 40, 36   # px: the explorer's drop-downs start below the modebar, one a row


def nested_explorer(state_traces: list[list[Any]], *, menus: Sequence[tuple[str, Sequence[str]]],
                    slider_prefix: str, slider_values: Sequence[Any],
                    static_traces: Sequence[Any] = (), height: int = 760) -> go.Figure:
    """Several drop-downs and one slider over precomputed states, working in a static page.

    ``state_traces`` is ordered with the first menu slowest and the slider fastest (every state
    the same number of traces); ``static_traces`` stay visible. Choosing an entry of menu ``l``
    rewrites the menus after it (reset to their first entry) and the slider, so every control
    knows the others' state with no Python running in the page; ``layout.meta.dsm_grid`` lets
    the site's loader (``dsm-plotly.js``) keep the slider's position on a menu change.
    """
    sizes, ns = [len(v) for _, v in menus], len(slider_values)
    if len(state_traces) != int(np.prod(sizes)) * ns:
        raise ValueError(f"state_traces must have {int(np.prod(sizes)) * ns} entries (menus × slider), "
                         f"got {len(state_traces)}")
    n_tr, n_st = len(state_traces[0]), len(static_traces)
    if any(len(t) != n_tr for t in state_traces):
        raise ValueError("every state must have the same number of traces")
    fig = go.Figure(list(static_traces))
    for k, traces in enumerate(state_traces):
        for tr in traces:
            tr.visible = k == 0   # hidden traces leave the legend, so every state keeps its own
            fig.add_trace(tr)

    def first(prefix: tuple[int, ...]) -> int:
        idx = 0
        for p, n in zip(prefix, sizes):
            idx = idx * n + p
        return idx * ns

    def vis(k: int) -> list[bool]:
        v = [True] * n_st + [False] * (n_tr * len(state_traces))
        v[n_st + k * n_tr:n_st + (k + 1) * n_tr] = [True] * n_tr
        return v

    def slider(prefix: tuple[int, ...]) -> dict[str, Any]:
        return dict(active=0, currentvalue=dict(prefix=slider_prefix), pad=dict(t=50), len=0.9, x=0.05,
                    steps=[dict(label=f"{v:g}" if isinstance(v, float) else str(v), method="restyle",
                                args=[{"visible": vis(first(prefix) + i)}])
                           for i, v in enumerate(slider_values)])

    def menu(level: int, prefix: tuple[int, ...]) -> dict[str, Any]:
        buttons = []
        for i, lab in enumerate(menus[level][1]):
            full = prefix + (i,) + (0,) * (len(sizes) - level - 1)
            layout: dict[str, Any] = {}
            for m in range(level + 1, len(sizes)):   # a whole object would be INSERTED by plotly
                layout[f"updatemenus[{m}].buttons"] = menu(m, full[:m])["buttons"]
                layout[f"updatemenus[{m}].active"] = 0
            layout["sliders"] = [slider(full)]
            buttons.append(dict(label=f"{menus[level][0]}{lab}", method="update",
                                args=[{"visible": vis(first(full))}, layout]))
        # one drop-down per row, left-aligned, below the modebar's row: side by side they
        # overlap one another, the legend and the modebar on a phone. The height is fixed, so
        # paper coordinates are fixed pixels: row ``level`` starts MENU_TOP + level rows down.
        return dict(type="dropdown", buttons=buttons, active=0, showactive=True, x=0.0,
                    xanchor="left", yanchor="top",
                    y=1.0 + (top - MENU_TOP - MENU_ROW * level) / plot_h)

    zeros = (0,) * len(sizes)
    top, bottom = MENU_TOP + MENU_ROW * len(sizes) + 10, 210
    plot_h = height - top - bottom
    if plot_h < 100:
        raise ValueError(f"height must leave >= 100 px for the plot, got {height}")
    fig.update_layout(updatemenus=[menu(m, zeros[:m]) for m in range(len(sizes))],
                      sliders=[slider(zeros)], height=height,
                      margin=dict(l=50, r=20, t=top, b=bottom),
                      legend=dict(orientation="h", x=0.0, y=0.0, yanchor="bottom", xanchor="left",
                                  yref="container"),
                      meta=dict(dsm_grid=dict(n_slider=ns, n_menu=int(np.prod(sizes)),
                                              n_traces=n_tr, n_static=n_st, menus=sizes)))
    return fig
