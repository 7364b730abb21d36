"""Figures of the ``prop1_noise`` chapter (figures layer): the two noise clouds explorer."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go

from .common import ellipse_xy, square_layout, state_explorer

__all__ = ["noise_explorer"]


def noise_explorer(states: list[dict[str, Any]], batch_sizes: Sequence[int],
                   sigma2_labels: Sequence[str]) -> go.Figure:
    """Prop. 1 for a two-parameter model: samples of ξ* and ξ^ULN with their predicted 2σ
    ellipses, over b (slider) and σ² (drop-down). Each state is a dict with ``xi_star``,
    ``xi_uln`` (points), ``cov_star``, ``cov_uln`` (predicted covariances)."""
    traces = []
    for st in states:
        ts = []
        for key, name, color in (("xi_star", "ξ* (minibatch noise)", "#1f77b4"),
                                 ("xi_uln", "ξᵁᴸᴺ (label noise)", "#d62728")):
            pts = st[key]
            ts.append(go.Scatter(x=pts[:, 0], y=pts[:, 1], mode="markers", name=name + " samples",
                                 marker=dict(size=3, color=color, opacity=0.25),
                                 legendgroup=key, hoverinfo="skip"))
            x, y = ellipse_xy([0.0, 0.0], st["cov_" + key.split("_")[1]])
            ts.append(go.Scatter(x=x, y=y, mode="lines", name=name + ": Prop. 1 (2σ)",
                                 line=dict(color=color, width=2.5), legendgroup=key + "_e"))
        traces.append(ts)
    nb = len(batch_sizes)
    layouts = []
    for j in range(len(sigma2_labels)):
        sts = states[j * nb:(j + 1) * nb]
        half = max(2.6 * np.sqrt(max(np.linalg.eigvalsh(st["cov_star"]).max(),
                                     np.linalg.eigvalsh(st["cov_uln"]).max())) for st in sts)
        layouts.append(square_layout([0.0, 0.0], half))
    fig = state_explorer(traces, slider_values=[int(b) for b in batch_sizes],
                         menu_labels=sigma2_labels, slider_prefix="b = ", menu_layouts=layouts)
    fig.update_layout(height=640, xaxis=dict(title="component θ₁", constrain="domain"),
                      yaxis=dict(title="component θ₂", scaleanchor="x", scaleratio=1,
                                 constrain="domain"))
    return fig
