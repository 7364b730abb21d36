"""Figures of the ``prop3_regularizer`` chapter (figures layer): the strength of the label-noise
term against Eq. (22), and the perturbation curves of Remark 2."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..foundation.claims import quantile
from ..foundation.stats import loglog_fit
from .common import error_bars

__all__ = ["strength_loglog", "perturbation_plot"]


def strength_loglog(cases) -> go.Figure:
    """Prop. 3: measured E‖ξ^ULN‖² against (ησ²/(bN))Σ‖∇f‖², log-log, fitted slope in legend."""
    fig = go.Figure()
    pred = np.array([c.predicted for c in cases])
    meas = np.array([c.measured for c in cases])
    se = np.array([c.se for c in cases])
    for name in dict.fromkeys(c.setting for c in cases):
        sel = [i for i, c in enumerate(cases) if c.setting == name]
        fig.add_trace(go.Scatter(
            x=pred[sel], y=meas[sel], mode="markers", name=name,
            error_y=error_bars(se[sel]),
            text=[f"σ²={cases[i].sigma2:g}, b={cases[i].batch_size}, η={cases[i].eta:g}"
                  for i in sel], hovertemplate="%{text}<br>predicted %{x:.3g}<br>measured %{y:.3g}"))
    fit = loglog_fit(pred, meas, se)
    half = quantile() * fit.se                         # never widened (claims.fit_case)
    lof = (f"lack of fit p = {fit.p_value:.2g}{' (law rejected)' if fit.lack_of_fit else ''}"
           if fit.dof else "2 points")
    lo, hi = pred.min() / 1.5, pred.max() * 1.5
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(dash="dot", color="#555"),
                             name=f"Eq. 22 (slope 1);<br>fitted slope {fit.slope:.4f} "
                                  f"[{fit.slope - half:.4f}, {fit.slope + half:.4f}] (99 %),"
                                  f"<br>{lof}"))
    fig.update_layout(xaxis=dict(type="log", title="predicted (ησ²/(bN))·Σ‖∇θ f‖²"),
                      yaxis=dict(type="log", title="measured E‖ξᵁᴸᴺ‖² (99% CI)"),
                      height=480, legend=dict(orientation="h", y=-0.25),
                      margin=dict(l=60, r=20, t=30, b=40))
    return fig


def perturbation_plot(curves) -> go.Figure:
    """Remark 2: E‖Δf‖²/(s²G(θ)) against the perturbation size s (log x), with 99% CIs."""
    fig = go.Figure()
    for c in curves:
        fig.add_trace(go.Scatter(x=c.scales, y=c.ratio, mode="lines+markers", name=c.setting,
                                 error_y=error_bars(c.se)))
    fig.add_hline(y=1.0, line=dict(dash="dot", color="#555"))
    fig.update_layout(xaxis=dict(type="log", title="perturbation size s  (δ ~ N(0, s²I))"),
                      yaxis=dict(type="log", title="E‖f(x,θ+δ) − f(x,θ)‖² / (s²·G(θ))"),
                      height=440, legend=dict(orientation="h", y=-0.25),
                      margin=dict(l=60, r=20, t=30, b=40))
    return fig
