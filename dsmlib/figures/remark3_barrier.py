"""Figures of the ``remark3_valley`` chapter, escape over a barrier (figures layer): the two-basin
landscape with its gradient norm, and the escape probabilities and times against sigma^2, eta and
B with the diffusion prediction. Error bars are the claims' exact intervals."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..chapters.remark3_barrier import STARTS, EscapeSweep
from ..theory import barrier as BR
from .common import COLORS

__all__ = ["START_COLORS", "barrier_landscape", "escape_plot", "escape_table", "constant_noise_table"]

START_COLORS = {"sharp": COLORS["paper"], "flat": COLORS["noisy"]}


def barrier_landscape(problem: BR.BarrierProblem, lim: tuple[float, float] = (-0.6, 1.8)) -> go.Figure:
    """The clean loss and the gradient norm G along ``theta``, the minima and the barrier top."""
    t = np.linspace(*lim, 600)
    tb = BR.barrier_top(problem)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    fig.add_trace(go.Scatter(x=t, y=BR.loss(problem, t), mode="lines", name="clean loss L(θ)",
                             line=dict(color="#111")), row=1, col=1)
    fig.add_trace(go.Scatter(x=t, y=BR.gradient_norm(problem, t), mode="lines",
                             name="gradient norm G(θ)", line=dict(color=COLORS["empirical"])),
                  row=2, col=1)
    for name, th in STARTS.items():
        G = float(BR.gradient_norm(problem, th))
        fig.add_trace(go.Scatter(x=[th], y=[G], mode="markers", name=f"{name} minimum, G = {G:.3g}",
                                 marker=dict(color=START_COLORS[name], size=10)), row=2, col=1)
        fig.add_trace(go.Scatter(x=[th], y=[0.0], mode="markers", showlegend=False,
                                 marker=dict(color=START_COLORS[name], size=10)), row=1, col=1)
    fig.add_trace(go.Scatter(x=[tb], y=[BR.barrier_height(problem)], mode="markers",
                             name=f"barrier top θ_b = {tb:.3g}",
                             marker=dict(symbol="triangle-down", size=11, color="#7f7f7f")),
                  row=1, col=1)
    top = 1.15 * BR.barrier_height(problem)
    fig.update_yaxes(title_text="clean loss L(θ)", range=[-0.08 * top, top], row=1, col=1)
    fig.update_yaxes(title_text="G(θ)", type="log", dtick=1, exponentformat="power", row=2, col=1)
    fig.update_xaxes(title_text="parameter θ", row=2, col=1)
    fig.update_layout(height=540, legend=dict(orientation="h", y=-0.18, yanchor="top"),
                      margin=dict(l=70, r=20, t=45, b=40))
    return fig


def _bars(mid: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> dict:
    return dict(type="data", symmetric=False, array=np.maximum(hi - mid, 0.0),
                arrayminus=np.maximum(mid - lo, 0.0), visible=True)


def escape_plot(sw: EscapeSweep) -> go.Figure:
    """Top: P(escape within the horizon) from each minimum against σ², η and B (Clopper-Pearson
    99 %); bottom: the sharp minimum's mean escape time in steps (exact Poisson 99 %). Dashed:
    the diffusion prediction."""
    names = [("sigma2", "σ²"), ("eta", "η"), ("B", "B")]
    fig = make_subplots(rows=2, cols=3, shared_xaxes=True, horizontal_spacing=0.08,
                        vertical_spacing=0.1, subplot_titles=[f"against {lab}" for _, lab in names])
    for c, (name, lab) in enumerate(names, start=1):
        idx, x = sw.sweep(name)
        order = np.argsort(x)
        idx, x = idx[order], x[order]
        for start in STARTS:
            p = np.array([sw.probability(start, i) for i in idx])
            pred = -np.expm1(-sw.steps / sw.predicted[start][idx])
            fig.add_trace(go.Scatter(x=x, y=p[:, 0], error_y=_bars(*p.T), mode="markers",
                                     marker=dict(color=START_COLORS[start], size=8),
                                     name=f"from the {start} minimum", legendgroup=start,
                                     showlegend=c == 1), row=1, col=c)
            fig.add_trace(go.Scatter(x=x, y=pred, mode="lines", legendgroup=start,
                                     line=dict(color=START_COLORS[start], dash="dash"),
                                     name=f"{start}: diffusion prediction", showlegend=c == 1),
                          row=1, col=c)
        m = np.array([sw.mean_time("sharp", i) for i in idx])
        ok = np.isfinite(m[:, 0])
        hi = np.where(np.isfinite(m[:, 2]), m[:, 2], m[:, 0] * 10)
        fig.add_trace(go.Scatter(x=x[ok], y=m[ok, 0], error_y=_bars(m[ok, 0], m[ok, 1], hi[ok]),
                                 mode="markers", marker=dict(color=START_COLORS["sharp"], symbol="diamond",
                                                             size=8),
                                 name="sharp: mean escape time", showlegend=c == 1), row=2, col=c)
        fig.add_trace(go.Scatter(x=x, y=sw.predicted["sharp"][idx], mode="lines",
                                 line=dict(color=START_COLORS["sharp"], dash="dot"),
                                 name="sharp: predicted mean time", showlegend=c == 1), row=2, col=c)
        ticks = dict(type="log", tickvals=x, ticktext=[f"{v:g}" for v in x])
        fig.update_xaxes(row=1, col=c, **ticks)
        fig.update_xaxes(title_text=lab, row=2, col=c, **ticks)
        fig.update_yaxes(range=[-0.05, 1.05], row=1, col=c,
                         title_text=f"P(escape within {sw.steps} steps)")
        fig.update_yaxes(type="log", dtick=1, exponentformat="power", row=2, col=c,
                         title_text="mean escape time (steps)")
    fig.update_layout(height=660, legend=dict(orientation="h", y=-0.15, yanchor="top"),
                      margin=dict(l=70, r=20, t=60, b=40))
    return fig


def escape_table(rows) -> object:
    """Every configuration and start: escapes, probability and mean time with 99 % intervals,
    beside the diffusion prediction (``dsmlib.chapters.remark3_barrier.escape_rows``)."""
    from IPython.display import HTML
    head = ["start", "η", "σ²", "B", "escaped", "P (99% CI)", "P predicted", "mean time (99% CI)",
            "time predicted"]
    fmt = lambda v: "∞" if math.isinf(v) else f"{v:.3g}"  # noqa: E731
    body = []
    for r in rows:
        p, t = r["probability"], r["mean_time"]
        body.append("<tr>" + "".join(f"<td>{v}</td>" for v in [
            r["start"], f"{r['eta']:g}", f"{r['sigma2']:g}", r["B"], f"{r['escaped']}/{r['n_runs']}",
            f"{p[0]:.3f} [{p[1]:.3f}, {p[2]:.3f}]", f"{r['predicted_probability']:.3f}",
            f"{fmt(t[0])} [{fmt(t[1])}, {fmt(t[2])}]", fmt(r["predicted_time"])]) + "</tr>")
    return HTML("<table class='cases'><thead><tr>" + "".join(f"<th>{h}</th>" for h in head)
                + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>")


def constant_noise_table(rows) -> object:
    """The θ-independent noise control per level and start: the noise variance, escapes and
    probability with its 99 % interval, beside the diffusion's prediction
    (``dsmlib.chapters.remark3_barrier.constant_noise_rows``)."""
    from IPython.display import HTML
    head = ["start", "level (× σ²G(sharp)/B)", "noise variance q", "escaped", "P (99% CI)",
            "P predicted"]
    body = []
    for r in rows:
        p = r["probability"]
        body.append("<tr>" + "".join(f"<td>{v}</td>" for v in [
            r["start"], f"{r['level']:g}", f"{r['noise_var']:.3g}", f"{r['escaped']}/{r['n_runs']}",
            f"{p[0]:.3f} [{p[1]:.3f}, {p[2]:.3f}]", f"{r['predicted_probability']:.3f}"]) + "</tr>")
    return HTML("<table class='cases'><thead><tr>" + "".join(f"<th>{h}</th>" for h in head)
                + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>")
