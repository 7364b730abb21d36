"""Figures of the ``prop2_convergence`` chapter (figures layer): the constant of Eq. (18) against
the step size with each claim's local slope, the constant against sigma^2, the weak comparison of
SGD with Eq. (17), and the explorer of sample paths of the three processes. Every interval in a
legend is its claim's (read from the :class:`~dsmlib.foundation.claims.Case`, or built by
:func:`~dsmlib.foundation.claims.interval`)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..foundation.claims import interval
from .common import error_bars, state_explorer

__all__ = ["fit_label", "case_label", "local_slopes_table", "constant_table",
           "constant_growth_text", "strong_error_figure", "weak_figure", "weak_figures",
           "moments_figure", "moments_figures", "path_explorer"]

PROCESS_STYLE = {"sgd": ("(a) SGD with label noise", "#1f77b4", "dot"),
                 "dsm": ("(b) Eq. (17), step η", "#d62728", "solid"),
                 "sde": ("(c) Eq. (16), fine grid", "#111111", "solid")}
SWEEP_COLORS = {(False, True): "#d62728", (False, False): "#ff7f0e",
                (True, True): "#1f77b4", (True, False): "#2ca02c"}


def fit_label(fit: Any, se: float, alpha: float) -> str:
    """``slope [99 % interval], lack of fit p`` (``law rejected`` below ``alpha``); the
    interval is :func:`~dsmlib.foundation.claims.interval` of ``se``, never widened."""
    lo, hi = interval(fit.slope, se)
    text = f"slope {fit.slope:.2f} [{lo:.2f}, {hi:.2f}], lack of fit p = {fit.p_value:.2g}"
    if fit.p_value is not None and fit.p_value < alpha:
        text += " (law rejected)"
    return text


def case_label(c: Any, what: str = "slope") -> str:
    """``what value [lo, hi]``, the numbers of a claim's case as its table shows them."""
    return f"{what} {c.measured:.3g} [{c.interval[0]:.3g}, {c.interval[1]:.3g}]"


def local_slopes_table(sweeps: Sequence[Any]) -> Any:
    """An HTML table of the slopes of the peak error between successive step sizes, one row
    per sweep."""
    from IPython.display import HTML
    etas = sweeps[0].etas
    head = "".join(f"<th>{a:g} → {b:g}</th>" for a, b in zip(etas[:-1], etas[1:]))
    rows = "".join(
        f"<tr><td>{s.label}</td><td>{'fixed diffusion' if s.fixed_diffusion else 'Eq. 16'}</td>"
        + "".join(f"<td>{v:.2f}</td>" for v in s.local_slopes) + "</tr>" for s in sweeps)
    return HTML("<table class='claims-table'><thead><tr><th>model, noise</th><th>diffusion</th>"
                f"{head}</tr></thead><tbody>{rows}</tbody></table>")


def constant_table(sweeps: Sequence[Any]) -> Any:
    """An HTML table of ``C = max_k E||.||^2 / eta^2`` at the smallest step (99 % interval)
    and the last local slope, one row per sigma^2, beside the factor ``(4 + 2 sigma^2)`` by
    which the proof's constant grows, relative to the first row."""
    from IPython.display import HTML
    rows = []
    for s in sweeps:
        r, se = s.ratio
        lo, hi = interval(r[-1], se[-1])
        c = s.case()
        rows.append(f"<tr><td>{s.sigma2:g}</td><td>{r[-1]:.4g} [{lo:.4g}, {hi:.4g}]</td>"
                    f"<td>{r[-1] / sweeps[0].ratio[0][-1]:.3g}</td>"
                    f"<td>{(4 + 2 * s.sigma2) / (4 + 2 * sweeps[0].sigma2):.3g}</td>"
                    f"<td>{c.measured:.2f} [{c.interval[0]:.2f}, {c.interval[1]:.2f}]</td></tr>")
    return HTML("<table class='claims-table'><thead><tr><th>σ²</th>"
                f"<th>C at η = {sweeps[0].etas[-1]:g}</th><th>C / C(first σ²)</th>"
                "<th>proof's (4 + 2σ²), relative</th><th>last local slope</th></tr></thead>"
                f"<tbody>{''.join(rows)}</tbody></table>")


def constant_growth_text(sweeps: Sequence[Any]) -> Any:
    """One sentence (Markdown, for ``glue:md``): how much ``C`` grew from the smallest to the
    largest ``sigma^2``, against the proof's factor ``(4 + 2 sigma^2)``."""
    from IPython.display import Markdown
    first, last = sweeps[0], sweeps[-1]
    grow = last.ratio[0][-1] / first.ratio[0][-1]
    proof = (4 + 2 * last.sigma2) / (4 + 2 * first.sigma2)
    return Markdown(f"From σ² = {first.sigma2:g} to {last.sigma2:g} the measured C at η = "
                    f"{first.etas[-1]:g} grew by a factor {grow:.3g}; the proof's factor "
                    f"(4 + 2σ²), which its constant tends to as η → 0, grows by {proof:.3g}.")


def _eta_axes(fig: go.Figure, rows: int, title: str) -> None:
    """The x axes of ``rows`` stacked panels: log step sizes on one shared range (every panel
    ``matches`` the first, so one η sits at one place in every panel, however few steps a
    model was run at), each with its own tick labels and ``title`` (issue 63: the upper panels'
    ticks had no title, and on a phone the one at the bottom was a screen away)."""
    for row in range(1, rows + 1):
        fig.update_xaxes(type="log", exponentformat="power", title_text=title,
                         matches=None if row == 1 else "x", row=row, col=1)


def strong_error_figure(sweeps: Sequence[Any]) -> go.Figure:
    """One log-log panel per model (stacked, so the figure fits a phone): the constant
    ``max_k E||Theta(k eta) - theta_bar_k||^2 / eta^2`` against the step, with 99 % error bars,
    for Eq. (16) and the control; the exact value where theory gives it (dotted). Each legend
    entry gives the claim's local slope between the two smallest steps with its interval."""
    names = list(dict.fromkeys(s.name for s in sweeps))
    fig = make_subplots(len(names), 1, subplot_titles=names, vertical_spacing=0.12)
    for s in sweeps:
        row = names.index(s.name) + 1
        color = SWEEP_COLORS[(s.fixed_diffusion, s.sgd_noise)]
        kind = "control: fixed diffusion" if s.fixed_diffusion else "Eq. 16"
        noise = "SGD + label noise" if s.sgd_noise else "label noise only"
        r, se = s.ratio
        fig.add_trace(go.Scatter(
            x=s.etas, y=r, mode="lines+markers", marker=dict(color=color, size=8),
            line=dict(color=color, dash="dash" if s.fixed_diffusion else "solid"),
            error_y=error_bars(se), legendgroup=s.name, legendgrouptitle_text=s.name,
            name=f"{noise}, {kind}<br>  {case_label(s.case(), 'last local slope')}"),
            row=row, col=1)
        if s.exact_peak is not None:
            fig.add_trace(go.Scatter(
                x=s.etas, y=s.exact_peak / s.etas ** 2, mode="lines", legendgroup=s.name,
                line=dict(color=color, dash="dot", width=1.5), showlegend=False,
                name=f"{noise}, {kind}: exact"), row=row, col=1)
    _eta_axes(fig, len(names), "step size η (control: h)")
    fig.update_yaxes(type="log", exponentformat="power", title_text="max<sub>k</sub> MSE / η²")
    fig.update_layout(height=360 * len(names) + 60 * len(sweeps),
                      legend=dict(orientation="v", y=-0.08, x=0, yanchor="top",
                                  font=dict(size=11), tracegroupgap=12,
                                  groupclick="toggleitem"),
                      margin=dict(l=60, r=10, t=40, b=20))
    return fig


def weak_figure(weak: Any) -> go.Figure:
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
                                 name="fit: " + case_label(weak.case(), "rate")))
    fig.update_xaxes(type="log", title_text="step size η")
    fig.update_yaxes(type="log", title_text="energy coefficient H = D² / (2 E|X − Y|)")
    fig.update_layout(height=480, legend=dict(orientation="h", y=-0.25, x=0, yanchor="top"),
                      margin=dict(l=60, r=20, t=30, b=40))
    return fig


def weak_figures(weaks: Sequence[Any]) -> go.Figure:
    """:func:`weak_figure` for each model, stacked (one panel per model)."""
    figs = [weak_figure(w) for w in weaks]
    fig = make_subplots(len(weaks), 1, subplot_titles=[w.name for w in weaks],
                        vertical_spacing=0.14)
    for row, f in enumerate(figs, start=1):
        for tr in f.data:
            is_fit = tr.name.startswith("fit")
            tr.update(showlegend=is_fit or row == 1,
                      legendgroup=f"fit {row}" if is_fit else tr.name,
                      name=(f"{weaks[row - 1].name}, fit:<br>  "
                            f"{case_label(weaks[row - 1].case(), 'rate')}" if is_fit else tr.name))
            fig.add_trace(tr, row=row, col=1)
    _eta_axes(fig, len(weaks), "step size η")
    fig.update_yaxes(type="log", exponentformat="power", title_text="energy coefficient H")
    fig.update_layout(height=340 * len(weaks) + 200, margin=dict(l=60, r=10, t=40, b=20),
                      legend=dict(orientation="v", y=-0.08, x=0, yanchor="top",
                                  font=dict(size=11)))
    return fig


def moments_figures(weaks: Sequence[Any]) -> go.Figure:
    """:func:`moments_figure` for each model, one panel per model and moment, stacked (so the
    figure fits a phone): the mean gap, then the covariance ratio."""
    titles = [t for w in weaks for t in (f"{w.name}: gap of the means",
                                         f"{w.name}: ratio of the covariance traces")]
    n = 2 * len(weaks)
    fig = make_subplots(n, 1, vertical_spacing=0.45 / n, subplot_titles=titles)
    for k, w in enumerate(weaks):
        for j, tr in enumerate(moments_figure(w).data):
            row = 2 * k + j + 1
            fig.add_trace(tr, row=row, col=1)
            fig.add_hline(y=float(j), line=dict(color="#111111", dash="dash"), row=row, col=1)
            fig.update_yaxes(title_text="gap / √tr C" if j == 0 else "tr C_SGD / tr C_DSM",
                             row=row, col=1)
    _eta_axes(fig, n, "step size η")
    fig.update_layout(height=260 * n + 60, margin=dict(l=60, r=10, t=40, b=40))
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
