"""Figures of the ``remark3_valley`` chapter (figures layer): paths on the loss landscape, the
gradient norm over time, the drift-speed scaling law, the Remark 2 probe at the start and end
points, and the valley explorer (on :func:`dsmlib.figures.explorers.nested_explorer`)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..chapters.remark3_valley import DriftSweep, StabilityComparison, ValleyExperiment
from ..foundation.claims import quantile
from ..theory import valley as V
from .common import COLORS, error_bars
from .explorers import nested_explorer

__all__ = ["RUN_COLORS", "landscape_traces", "landscape_paths", "gradnorm_over_time",
           "weights_over_time", "drift_scaling", "stability_plot", "fits_table", "end_points_table",
           "valley_explorer"]

RUN_COLORS = {"label noise": COLORS["noisy"], "no label noise": COLORS["clean"],
              "label noise drawn once": "#8c564b", "Eq. 17 model": COLORS["paper"]}
BAND_LEVEL = 0.9   # the G(t) bands cover the central 90 % of the runs


def landscape_traces(problem: V.ValleyProblem, lim: tuple[float, float], n: int = 55) -> list:
    """Contour of log10 of the clean loss over (θ₁, θ₂), the valley and its minimum-G points."""
    g = torch.linspace(lim[0], lim[1], n, dtype=torch.float64)
    T1, T2 = torch.meshgrid(g, g, indexing="xy")
    L = V.loss(T1.reshape(-1, 1), T2.reshape(-1, 1), problem.X, problem.y).reshape(n, n)
    beta = float(torch.linalg.lstsq(problem.X, problem.y[:, None]).solution[0, 0])
    t = np.linspace(lim[0], lim[1], 400)
    with np.errstate(divide="ignore"):
        valley = np.where(np.abs(t) > 1e-9, beta / t, np.nan)
    valley[(valley < lim[0]) | (valley > lim[1])] = np.nan
    m = V.scalar_min_gradnorm(beta, float(problem.a[0]))
    return [go.Contour(x=g.numpy(), y=g.numpy(), z=np.log10(L.numpy() + 1e-4), showscale=True,
                       colorscale="Greys", reversescale=True, opacity=0.55, ncontours=18,
                       colorbar=dict(title="log₁₀ loss", len=0.6), hoverinfo="skip",
                       showlegend=False, line=dict(width=0.5)),
            go.Scatter(x=t, y=valley, mode="lines", name="valley of minima θ₁θ₂ = β",
                       line=dict(color="#111", dash="dot", width=1.5), hoverinfo="skip"),
            go.Scatter(x=[float(m.u[0]), -float(m.u[0])], y=[float(m.v[0]), -float(m.v[0])],
                       mode="markers", name="minimum-G points", hoverinfo="skip",
                       marker=dict(symbol="star", size=14, color="#2ca02c",
                                   line=dict(color="#111", width=1)))]


def _thin_idx(n: int, max_points: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, max_points)).astype(int))


def landscape_paths(ex: ValleyExperiment, *, n_paths: int = 1, max_points: int = 150,
                    lim: tuple[float, float] | None = None) -> go.Figure:
    """Scalar model: the first ``n_paths`` runs of each kind on the loss landscape (the Eq. 17
    model dotted), and the end points of all runs."""
    u0, v0 = float(ex.u0[0]), float(ex.v0[0])
    lim = lim or (-0.25, 1.15 * max(abs(u0), abs(v0)))
    fig = go.Figure(landscape_traces(ex.problem, lim))
    for name, r in ex.runs.items():
        col, sel = RUN_COLORS.get(name, "#555"), _thin_idx(r.u.shape[0], max_points)
        for k in range(min(n_paths, r.n_runs)):
            fig.add_trace(go.Scatter(x=r.u[sel, k, 0], y=r.v[sel, k, 0], mode="lines",
                                     line=dict(color=col, width=1.5,
                                               dash="dot" if name == "Eq. 17 model" else "solid"),
                                     name=f"{name}: paths", legendgroup=name, showlegend=k == 0,
                                     hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=r.u[-1, :, 0], y=r.v[-1, :, 0], mode="markers",
                                 marker=dict(color=col, size=4, opacity=0.6), legendgroup=name,
                                 name=f"{name}: end points ({r.n_runs} runs)"))
    fig.add_trace(go.Scatter(x=[u0], y=[v0], mode="markers", name="start",
                             marker=dict(symbol="x", size=12, color="#111")))
    fig.update_layout(height=620, margin=dict(l=60, r=20, t=30, b=40),
                      legend=dict(orientation="h", y=-0.14),
                      xaxis=dict(title="θ₁", range=list(lim), constrain="domain"),
                      yaxis=dict(title="θ₂", range=list(lim), scaleanchor="x", scaleratio=1,
                                 constrain="domain"))
    return fig


def gradnorm_over_time(experiments: Sequence[ValleyExperiment], *, max_points: int = 400) -> go.Figure:
    """G(θ_k)/G_min against the step k for every model (one panel each): mean over runs and the
    band of the central 90 % of runs; dashed, the leading-order theory of the scalar model."""
    fig = make_subplots(rows=1, cols=len(experiments), subplot_titles=[e.problem.name for e in experiments])
    lo_q, hi_q = (1 - BAND_LEVEL) / 2, (1 + BAND_LEVEL) / 2
    for c, ex in enumerate(experiments, start=1):
        for name, r in ex.runs.items():
            sel = _thin_idx(r.steps.size, max_points)
            col, g = RUN_COLORS.get(name, "#555"), r.G[sel] / ex.minimum.G
            lo, hi = np.quantile(g, lo_q, axis=1), np.quantile(g, hi_q, axis=1)
            x, dsm = r.steps[sel], name == "Eq. 17 model"
            if not dsm:   # the Eq. 17 band would hide SGD's: its mean is drawn dotted instead
                fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[hi, lo[::-1]], fill="toself",
                                         fillcolor=col, opacity=0.18, line=dict(width=0),
                                         hoverinfo="skip", legendgroup=name, showlegend=False),
                              row=1, col=c)
            fig.add_trace(go.Scatter(x=x, y=g.mean(axis=1), mode="lines",
                                     line=dict(color=col, dash="dot" if dsm else "solid"),
                                     name=f"{name} (mean" + (")" if dsm else   # 2 lines: a phone
                                                             f";<br>band: central {BAND_LEVEL:.0%} of runs)"),
                                     legendgroup=name, showlegend=c == 1), row=1, col=c)
        r = ex.runs["label noise"]
        if ex.problem.d == 1:
            rate = V.imbalance_decay_rate(r.eta[0], r.sigma2[0], r.batch_size, float(ex.problem.a[0]), per="step")
            d0 = float(V.imbalance(ex.u0, ex.v0)[0])
            w = float(ex.minimum.w[0])
            x = r.steps
            th = float(ex.problem.a[0]) * np.sqrt((d0 * np.exp(-rate * x)) ** 2 + 4 * w * w)
            fig.add_trace(go.Scatter(x=x, y=th / ex.minimum.G, mode="lines", name="leading-order "
                                     "theory:<br>|u²−v²| decays at η²σ²m₂/B per step",
                                     line=dict(color="#111", dash="dash")), row=1, col=c)
        fig.update_xaxes(title_text="step k", row=1, col=c)
        fig.update_yaxes(title_text="G(θ_k) / G_min", type="log", row=1, col=c)
    fig.update_layout(height=440, legend=dict(orientation="h", y=-0.25),
                      margin=dict(l=60, r=20, t=40, b=40))
    return fig


def weights_over_time(ex: ValleyExperiment, *, max_points: int = 300) -> go.Figure:
    """Diagonal network: each coordinate of w = u∘v (mean over label-noise runs) against the step,
    with the minimum-G point's coordinates dashed."""
    r = ex.runs["label noise"]
    sel = _thin_idx(r.steps.size, max_points)
    fig = go.Figure()
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    for j in range(ex.problem.d):
        col = palette[j % len(palette)]
        fig.add_trace(go.Scatter(x=r.steps[sel], y=r.w[sel, :, j].mean(axis=1), mode="lines",
                                 line=dict(color=col), name=f"w_{j + 1}"))
        fig.add_hline(y=float(ex.minimum.w[j]), line=dict(color=col, dash="dash", width=1))
    fig.update_layout(height=400, xaxis_title="step k", yaxis_title="w_j = u_j v_j (mean over runs)",
                      legend=dict(orientation="h", y=-0.2), margin=dict(l=60, r=20, t=30, b=40))
    return fig


def _slope_label(f) -> str:
    lof = (f"lack of fit p = {f.p_value:.2g}{', rejected' if f.lack_of_fit else ''}" if f.dof
           else "2 points: fit untested")
    return f"slope {f.slope:.3f} ± {quantile() * f.se:.3f} ({lof})"


def drift_scaling(sw: DriftSweep) -> go.Figure:
    """Remark 4: drift speed per unit time against σ², η and B (log-log), SGD and Eq. 17 with 99 %
    intervals, the leading-order theory ησ²m₂/B, fitted slopes in the legend. Each panel is
    named by its x title alone: stacked on a phone, a title above a panel ran into the x title
    of the panel above it."""
    names = [("sigma2", "σ²"), ("eta", "η"), ("B", "B")]
    words = {"sigma2": "noise variance σ²", "eta": "learning rate η", "B": "batch size B"}
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.15)
    for c, (name, lab) in enumerate(names, start=1):
        i, x = sw.sweep(name)
        order = np.argsort(x)
        i, x = i[order], x[order]
        for rate, se, fits, key, label, sym in ((sw.rate, sw.se, sw.fits, "noisy", "SGD", "circle"),
                                                (sw.rate_dsm, sw.se_dsm, sw.fits_dsm, "paper",
                                                 "Eq. 17 model", "diamond-open")):
            fig.add_trace(go.Scatter(x=x, y=rate[i], error_y=error_bars(se[i]), mode="markers",
                                     marker=dict(color=COLORS[key], symbol=sym, size=8),
                                     name=f"{label} vs {lab}:<br>{_slope_label(fits[name])}"), row=1, col=c)
        fig.add_trace(go.Scatter(x=x, y=sw.theory[i], mode="lines", line=dict(color="#111", dash="dash"),
                                 name="theory ησ²m₂/B (slope 1, 1, −1)", showlegend=c == 1), row=1, col=c)
        fig.update_xaxes(type="log", title_text=words[name], row=1, col=c)
        fig.update_yaxes(type="log", title_text="drift speed, 99% CI<br>−d log|u²−v²|/dt",
                         row=1, col=c)
    fig.update_layout(height=480, legend=dict(orientation="h", y=-0.3, font=dict(size=11)),
                      margin=dict(l=70, r=20, t=40, b=40))
    return fig


def stability_plot(comps: Sequence[StabilityComparison]) -> go.Figure:
    """Remark 2: E‖f(θ+δ) − f(θ)‖²/s² against s at the start and the end point (99 % intervals),
    with the exact G + s²Σa_j dashed."""
    fig = make_subplots(rows=1, cols=len(comps), subplot_titles=[c.model for c in comps])
    for k, c in enumerate(comps, start=1):
        for curve, exact, label, col in ((c.start, c.exact_start, "start (high G)", COLORS["clean"]),
                                         (c.end, c.exact_end, "end of a label-noise run", COLORS["noisy"])):
            fig.add_trace(go.Scatter(x=curve.scales, y=curve.ratio * curve.gradient_norm,
                                     error_y=error_bars(curve.se * curve.gradient_norm),
                                     mode="markers", marker=dict(color=col), name=label,
                                     legendgroup=label, showlegend=k == 1), row=1, col=k)
            fig.add_trace(go.Scatter(x=curve.scales, y=exact, mode="lines", showlegend=k == 1,
                                     line=dict(color=col, dash="dash"), legendgroup=label,
                                     name=f"{label}: exact G + s²Σa_j"), row=1, col=k)
        fig.update_xaxes(type="log", title_text="perturbation size s (δ ~ N(0, s²I))", row=1, col=k)
        fig.update_yaxes(type="log", title_text="E‖f(x,θ+δ) − f(x,θ)‖² / s²",
                         row=1, col=k)
    fig.update_layout(height=420, legend=dict(orientation="h", y=-0.25), margin=dict(l=70, r=20, t=40, b=40))
    return fig


def fits_table(sw: DriftSweep) -> Any:
    """The fitted exponents of the drift speed, SGD and Eq. 17, with 99 % intervals from their
    own standard errors and the lack-of-fit check (a law rejected at p < 0.01 is no law: its
    exponent is shown, not judged)."""
    from IPython.display import HTML
    head = ["against", "model", "exponent", "99% interval", "χ²", "dof", "p-value", "law"]
    body = []
    for label, fits in (("SGD", sw.fits), ("Eq. 17 model", sw.fits_dsm)):
        for name, f in fits.items():
            half = quantile() * f.se
            body.append("<tr>" + "".join(f"<td>{x}</td>" for x in [
                name.replace("sigma2", "σ²").replace("eta", "η"), label, f"{f.slope:.4f}",
                f"[{f.slope - half:.4f}, {f.slope + half:.4f}]", f"{f.chi2:.3g}", f.dof,
                "—" if f.p_value is None else f"{f.p_value:.2g}",
                "rejected" if f.lack_of_fit else "holds" if f.dof else "untested"])
                + "</tr>")
    return HTML("<table class='cases'><thead><tr>" + "".join(f"<th>{h}</th>" for h in head)
                + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>")


def end_points_table(rows: Sequence[dict[str, Any]]) -> Any:
    """Where each group of runs ends (``dsmlib.chapters.remark3_valley.end_points``), 99 % CIs."""
    from IPython.display import HTML
    head = ["model", "runs", "n", "steps", "‖θ_K − θ_0‖/‖θ_G − θ_0‖", "(G_K − G_min)/G_min",
            "‖θ_K − θ_G‖", "clean loss"]
    body = []
    for r in rows:
        ci = lambda m_se: f"{m_se[0]:.3g} ± {quantile(r['n_runs'] - 1) * m_se[1]:.2g}"  # noqa: E731
        body.append("<tr>" + "".join(f"<td>{x}</td>" for x in [
            r["model"], r["runs"], r["n_runs"], r["steps"], ci(r["displacement"]),
            ci(r["excess_G"]), ci(r["dist_to_min"]), f"{r['loss']:.2g}"]) + "</tr>")
    return HTML("<table class='cases'><thead><tr>" + "".join(f"<th>{h}</th>" for h in head)
                + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>")


def valley_explorer(problem: V.ValleyProblem, states: list[dict[str, Any]], *, starts: Sequence[str],
                    batch_sizes: Sequence[int], etas: Sequence[float], sigma2s: Sequence[float],
                    lim: tuple[float, float]) -> go.Figure:
    """The scalar model's paths over (start, B, η) drop-downs and a σ² slider
    (``dsmlib.chapters.remark3_valley.explorer_states``, same order)."""
    traces = [[go.Scatter(x=s["theta1"], y=s["theta2"], mode="lines", name="SGD paths",
                          line=dict(color=COLORS["noisy"], width=1.2), hoverinfo="skip"),
               go.Scatter(x=s["end"][:, 0], y=s["end"][:, 1], mode="markers", name="end points",
                          marker=dict(color=COLORS["paper"], size=7), hovertemplate=f"final G = {s['G']:.3g}")]
              for s in states]
    fig = nested_explorer(traces, menus=[("start ", list(starts)), ("B = ", [str(b) for b in batch_sizes]),
                                         ("η = ", [f"{e:g}" for e in etas])],
                          slider_prefix="σ² = ", slider_values=[float(s) for s in sigma2s],
                          static_traces=landscape_traces(problem, lim))
    fig.update_layout(xaxis=dict(title="θ₁", range=list(lim), constrain="domain"),
                      yaxis=dict(title="θ₂", range=list(lim), scaleanchor="x", scaleratio=1,
                                 constrain="domain"))
    return fig
