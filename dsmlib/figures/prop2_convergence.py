"""Figures of the ``prop2_convergence`` chapter (figures layer): the strong error against the
step size with its fitted slopes, the weak comparison of SGD with Eq. (17), and the explorer of
sample paths of the three processes."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..foundation.claims import quantile
from .common import error_bars, state_explorer

__all__ = ["fit_label", "local_slopes_table", "strong_error_figure", "weak_figure", "moments_figure",
           "path_explorer"]

PROCESS_STYLE = {"sgd": ("(a) SGD with label noise", "#1f77b4", "dot"),
                 "dsm": ("(b) Eq. (17), step η", "#d62728", "solid"),
                 "sde": ("(c) Eq. (16), fine grid", "#111111", "solid")}
SWEEP_COLORS = {(False, True): "#d62728", (False, False): "#ff7f0e",
                (True, True): "#1f77b4", (True, False): "#2ca02c"}


def fit_label(fit: Any, se: float, alpha: float) -> str:
    """``slope ± 99 % half-width, lack of fit p`` (and the widening factor when applied)."""
    text = f"slope {fit.slope:.2f} ± {quantile() * se:.2f}, lack of fit p = {fit.p_value:.2g}"
    if fit.p_value < alpha and fit.inflation > 1:
        text += f" (interval ×{fit.inflation:.1f})"
    return text


def local_slopes_table(sweeps: Sequence[Any]) -> Any:
    """An HTML table of the slopes between successive step sizes, one row per sweep."""
    from IPython.display import HTML
    etas = sweeps[0].etas
    head = "".join(f"<th>{a:g} → {b:g}</th>" for a, b in zip(etas[:-1], etas[1:]))
    rows = "".join(
        f"<tr><td>{s.label}</td><td>{'fixed diffusion' if s.fixed_diffusion else 'Eq. 16'}</td>"
        + "".join(f"<td>{v:.2f}</td>" for v in s.local_slopes) + "</tr>" for s in sweeps)
    return HTML("<table class='claims-table'><thead><tr><th>model, noise</th><th>diffusion</th>"
                f"{head}</tr></thead><tbody>{rows}</tbody></table>")


def strong_error_figure(sweeps: Sequence[Any], *, alpha: float) -> go.Figure:
    """One log-log panel per model: ``E||Theta(T) - theta_bar_K||^2`` against the step, with
    99 % error bars and the fitted power law of each sweep (Eq. 18 and the control)."""
    names = list(dict.fromkeys(s.name for s in sweeps))
    fig = make_subplots(1, len(names), subplot_titles=names, horizontal_spacing=0.08)
    for s in sweeps:
        col = names.index(s.name) + 1
        color = SWEEP_COLORS[(s.fixed_diffusion, s.sgd_noise)]
        kind = "fixed diffusion (control)" if s.fixed_diffusion else "√η inside (Eq. 16)"
        noise = "" if s.sgd_noise else ", label noise only"
        fig.add_trace(go.Scatter(
            x=s.etas, y=s.mean, mode="markers", marker=dict(color=color, size=8),
            error_y=error_bars(np.sqrt(np.diag(s.cov))), legendgroup=f"{s.label}{kind}",
            name=f"{s.name}{noise}, {kind}"), row=1, col=col)
        grid = np.geomspace(s.etas.min(), s.etas.max(), 50)
        fig.add_trace(go.Scatter(
            x=grid, y=np.exp(s.fit.intercept) * grid ** s.fit.slope, mode="lines",
            line=dict(color=color, dash="dash" if s.fixed_diffusion else "solid"),
            legendgroup=f"{s.label}{kind}", name="   fit: " + fit_label(s.fit, s.se, alpha)),
            row=1, col=col)
    for col in range(1, len(names) + 1):
        fig.update_xaxes(type="log", title_text="step size η (the control: h)", row=1, col=col)
        fig.update_yaxes(type="log", row=1, col=col,
                         title_text="E‖Θ(T) − θ̄_K‖²" if col == 1 else None)
    fig.update_layout(height=620, legend=dict(orientation="h", y=-0.2, x=0, yanchor="top"),
                      margin=dict(l=60, r=20, t=40, b=40))
    return fig


def weak_figure(weak: Any, *, alpha: float) -> go.Figure:
    """The sliced energy coefficient ``H`` of SGD against Eq. (17) at ``T``, unbiased (with 99 %
    bars and its fit) and naive (scipy's V-statistic, which never falls below its ~1/n floor)."""
    fig = go.Figure()
    pos = weak.H > 0
    fig.add_trace(go.Scatter(x=weak.etas[pos], y=weak.H[pos], mode="markers",
                             marker=dict(size=9, color="#1f77b4"),
                             error_y=error_bars(weak.H_se[pos]),
                             name="H, unbiased (U-statistic)"))
    fig.add_trace(go.Scatter(x=weak.etas, y=weak.H_naive, mode="markers",
                             marker=dict(size=9, symbol="circle-open", color="#7f7f7f"),
                             name="H, naive (V-statistic)"))
    floor = weak.H_naive - weak.H
    fig.add_trace(go.Scatter(x=weak.etas, y=floor, mode="lines",
                             line=dict(color="#7f7f7f", dash="dot"),
                             name="bias of the naive H (its noise floor, ~1/n)"))
    if weak.fit is not None:
        grid = np.geomspace(weak.etas.min(), weak.etas.max(), 50)
        fig.add_trace(go.Scatter(x=grid, y=np.exp(weak.fit.intercept) * grid ** weak.fit.slope,
                                 mode="lines", line=dict(color="#1f77b4"),
                                 name="fit: " + fit_label(weak.fit,
                                                          weak.fit.widened_se(alpha), alpha)))
    fig.update_xaxes(type="log", title_text="step size η")
    fig.update_yaxes(type="log", title_text="energy coefficient H = D² / (2 E|X − Y|)")
    fig.update_layout(height=480, legend=dict(orientation="h", y=-0.25, x=0, yanchor="top"),
                      margin=dict(l=60, r=20, t=30, b=40))
    return fig


def moments_figure(weak: Any) -> go.Figure:
    """Mean gap ``||m_a - m_b|| / sqrt(tr C_b)`` and covariance ratio ``tr C_a / tr C_b``
    of the two clouds at ``T``, with 99 % bars (least squares: exactly 0 and 1 in theory)."""
    fig = make_subplots(1, 2, subplot_titles=["standardised gap of the means",
                                              "ratio of the covariance traces"])
    for col, (y, se, ref) in enumerate([(weak.mean_gap, weak.mean_gap_se, 0.0),
                                        (weak.cov_ratio, weak.cov_ratio_se, 1.0)], start=1):
        fig.add_trace(go.Scatter(x=weak.etas, y=y, mode="markers", showlegend=False,
                                 marker=dict(size=8, color="#1f77b4"), error_y=error_bars(se)),
                      row=1, col=col)
        fig.add_hline(y=ref, line=dict(color="#111111", dash="dash"), row=1, col=col)
        fig.update_xaxes(type="log", title_text="step size η", row=1, col=col)
    fig.update_yaxes(title_text="‖m_SGD − m_DSM‖ / √tr C_DSM", row=1, col=1)
    fig.update_yaxes(title_text="tr C_SGD / tr C_DSM", row=1, col=2)
    fig.update_layout(height=380, margin=dict(l=60, r=20, t=40, b=40))
    return fig


def path_explorer(states: list[dict[str, np.ndarray]], etas: Sequence[float],
                  sigma2_labels: Sequence[str]) -> go.Figure:
    """Sample paths of the three processes in the parameter plane (two-parameter models), over
    η (slider) and σ² (drop-down); (b) and (c) share their Brownian paths."""
    traces = []
    for st in states:
        ts = []
        for key, (name, color, dash) in PROCESS_STYLE.items():
            path = st[key]
            for i in range(path.shape[1]):
                ts.append(go.Scatter(
                    x=path[:, i, 0], y=path[:, i, 1], name=name, legendgroup=key,
                    showlegend=i == 0, hoverinfo="skip",
                    mode="lines+markers" if key == "dsm" else "lines",
                    marker=dict(size=4, color=color),
                    line=dict(color=color, dash=dash, width=1.2 if key == "sde" else 1.8)))
        traces.append(ts)
    ne = len(etas)
    layouts = []
    for j in range(len(sigma2_labels)):
        pts = np.concatenate([st[k].reshape(-1, 2) for st in states[j * ne:(j + 1) * ne]
                              for k in PROCESS_STYLE])
        lo, hi = pts.min(0), pts.max(0)
        pad = 0.05 * (hi - lo).max()
        layouts.append({"xaxis.range": [lo[0] - pad, hi[0] + pad],
                        "yaxis.range": [lo[1] - pad, hi[1] + pad]})
    fig = state_explorer(traces, slider_values=[float(e) for e in etas],
                         menu_labels=sigma2_labels, slider_prefix="η = ", menu_layouts=layouts)
    fig.update_layout(height=600, xaxis=dict(title="parameter θ₁"),
                      yaxis=dict(title="parameter θ₂"))
    return fig
