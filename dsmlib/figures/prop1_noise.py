"""Figures of the ``prop1_noise`` chapter (figures layer): the two noise clouds explorer and
the table of Prop. 1's factors per sampling scheme."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go

from ..foundation.stats import covariance
from .common import ellipse_xy, square_layout, state_explorer
from .tables import data_table, math_html

__all__ = ["noise_explorer", "scheme_table"]


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



def scheme_table(results) -> Any:
    """Per model and sampling scheme: Prop. 1's exact factors beside the measured ratios of
    the two covariances, and the size of the label-noise term's mean (HTML)."""
    from IPython.display import HTML
    rows = []
    for r in results:
        p = r.predicted
        tr = lambda a: float(np.trace(covariance(a)))  # noqa: E731
        rms = np.sqrt((r.xi_uln ** 2).sum(1).mean())
        rows.append([r.setting, "with" if r.replacement else "without", r.noise_mode,
                     f"{p['c_sgd']:.4f}", f"{tr(r.xi_star) / np.trace(p['cov_star_paper']):.4f}",
                     f"{p['c_uln']:.4f}", f"{tr(r.xi_uln) / np.trace(p['cov_uln_paper']):.4f}",
                     f"{np.linalg.norm(r.xi_uln.mean(0)) / rms:.4f}"])
    head = [math_html(h) for h in [
        "model", "replacement", "noise", "exact factor, $\\xi^*$", "measured / Prop. 1, $\\xi^*$",
        "exact factor, $\\xi^{\\mathrm{ULN}}$", "measured / Prop. 1, $\\xi^{\\mathrm{ULN}}$",
        "$\\|$mean $\\xi^{\\mathrm{ULN}}\\|$ / RMS"]]
    labels = ["model", "replacement", "noise", "exact factor, ξ*", "measured / Prop. 1, ξ*",
              "exact factor, ξᵁᴸᴺ", "measured / Prop. 1, ξᵁᴸᴺ", "‖mean ξᵁᴸᴺ‖ / RMS"]
    return HTML(data_table(head, rows, labels))
