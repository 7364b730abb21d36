"""Figures of the ``ols`` chapter (figures layer): Figure 3, its zoom, the cloud explorer, the
cloud's shape table and the sweeps of the learning rate and the batch size."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..chapters.ols import PanelResult, moment_bound, shape_moments
from ..foundation.stats import thin
from .common import COLORS, ellipse_xy, error_bars, square_axes, square_layout, state_explorer
from .tables import data_table, fmt_number

__all__ = ["figure3", "figure3_zoom", "cloud_explorer", "panel_table", "shape_table",
           "sweep_figure"]


def _ellipse_traces(mean_emp, cov_emp, mean_exact, cov_exact, mean_paper, cov_paper, *,
                    showlegend: bool, legendgroup_suffix: str = "") -> list[go.Scatter]:
    specs = [("empirical", "empirical cloud (2σ)", mean_emp, cov_emp, "solid"),
             ("exact", "exact SGD recursion (2σ)", mean_exact, cov_exact, "dash"),
             ("paper", "paper: N(β*, ησ²Σ̄/B) (2σ)", mean_paper, cov_paper, "dot")]
    out = []
    for key, name, m, c, dash in specs:
        x, y = ellipse_xy(m, c)
        out.append(go.Scatter(x=x, y=y, mode="lines", name=name,
                              line=dict(color=COLORS[key], dash=dash, width=2),
                              legendgroup=key + legendgroup_suffix, showlegend=showlegend,
                              hoverinfo="skip"))
    return out


def _panel_grid(results, titles: list[str]):
    """Two panels a row: readable in a book column and, scaled down, on a phone."""
    ncols = min(2, len(results))
    nrows = -(-len(results) // ncols)
    specs = [[{} if r * ncols + c < len(results) else None for c in range(ncols)]
             for r in range(nrows)]                       # no empty axes in a ragged last row
    fig = make_subplots(rows=nrows, cols=ncols, horizontal_spacing=0.12,
                        vertical_spacing=0.22 / max(nrows - 1, 1) if nrows > 1 else 0.1,
                        subplot_titles=titles, specs=specs)
    fig.update_annotations(font_size=12)
    return fig, ncols, nrows


def _cloud_trace(r, max_points: int, showlegend: bool) -> go.Scatter:
    cloud = thin(r.cloud, max_points)
    return go.Scatter(x=cloud[:, 0], y=cloud[:, 1], mode="markers",
                      marker=dict(size=2, color=COLORS["noisy"], opacity=0.3),
                      name="label-noisy SGD (stationary)", legendgroup="noisy",
                      showlegend=showlegend, hoverinfo="skip")


def _points(fig: go.Figure, r, showlegend: bool, row: int, col: int) -> None:
    for key, pt, name, sym in [("beta_star", r.problem.beta_star, "β*", "x"),
                               ("beta_hat", r.problem.beta_hat, "β̂ (OLS fit to noisy labels)",
                                "circle-open")]:
        fig.add_trace(go.Scatter(x=[pt[0]], y=[pt[1]], mode="markers", name=name,
                                 marker=dict(color=COLORS[key], size=9, symbol=sym,
                                             line=dict(width=2)),
                                 legendgroup=key, showlegend=showlegend), row=row, col=col)


def _panel_figure(results: Sequence[PanelResult], draw: Callable[[go.Figure, PanelResult, bool, int, int], None],
                  view: Callable[[PanelResult], tuple[np.ndarray, float]], title: str) -> go.Figure:
    """One subplot per panel: ``draw`` adds a panel's traces, ``view`` gives its square view."""
    fig, ncols, nrows = _panel_grid(results, [f"({r.panel.key}) {r.panel.short}" for r in results])
    for i, r in enumerate(results):
        row, col = i // ncols + 1, i % ncols + 1
        draw(fig, r, i == 0, row, col)
        _points(fig, r, i == 0, row, col)
        centre, half = view(r)
        square_axes(fig, i, row, col, centre, half)
        fig.update_xaxes(title_text="β₁", title_standoff=2, row=row, col=col)
        fig.update_yaxes(title_text="β₂", title_standoff=2, row=row, col=col)
    fig.update_layout(height=330 * nrows + 120, margin=dict(l=40, r=10, t=60, b=30),
                      legend=dict(orientation="h", y=-0.04, yanchor="top"), title=title,
                      font_size=11)
    return fig


def figure3(results, *, max_cloud_points: int = 250, transient_steps: int = 300) -> go.Figure:
    """Figure 3: eight panels of label-noisy trajectories, noiseless companions and ellipses.

    ``results`` are :class:`dsmlib.chapters.ols.PanelResult`. Each panel shows the first
    ``transient_steps`` of both runs as lines, the stationary cloud as points (thinned), and
    the three 2-sigma ellipses: empirical, exact recursion and the paper's formula. The axes
    span the paper's ellipse.
    """
    def draw(fig: go.Figure, r: PanelResult, first: bool, row: int, col: int) -> None:
        fig.add_trace(_cloud_trace(r, max_cloud_points, first), row=row, col=col)
        head = r.noisy[: transient_steps + 1: 2]
        fig.add_trace(go.Scatter(x=head[:, 0], y=head[:, 1], mode="lines",
                                 line=dict(color=COLORS["noisy"], width=1),
                                 name="label-noisy SGD (first steps)", legendgroup="noisy_head",
                                 showlegend=first), row=row, col=col)
        clean = r.clean[: transient_steps + 1: 2]
        fig.add_trace(go.Scatter(x=clean[:, 0], y=clean[:, 1], mode="lines",
                                 line=dict(color=COLORS["clean"], width=1.5),
                                 name="label-noiseless SGD (same minibatches)",
                                 legendgroup="clean", showlegend=first), row=row, col=col)
        for tr in _ellipse_traces(r.empirical_mean, r.empirical_cov, r.exact_mean, r.exact_cov,
                                  r.problem.beta_star, r.paper_cov, showlegend=first):
            fig.add_trace(tr, row=row, col=col)

    def view(r: PanelResult) -> tuple[np.ndarray, float]:
        """The paper's ellipse and the start of both runs (the origin), squared."""
        start = r.noisy[0]
        reach = 2.2 * np.sqrt(np.linalg.eigvalsh(r.paper_cov).max())
        lo = np.minimum(start, r.problem.beta_star - reach)
        hi = np.maximum(start, r.problem.beta_star + reach)
        return (lo + hi) / 2, 0.55 * float((hi - lo).max())
    return _panel_figure(results, draw, view, "Figure 3, reproduced")


def figure3_zoom(results, *, max_cloud_points: int = 250) -> go.Figure:
    """The stationary clouds up close: measured and exact 2-sigma ellipses, β̂ and β*.

    The axes span four exact standard deviations around the midpoint of β* and β̂, so the
    offset of the centre and the agreement of the two ellipses are visible.
    """
    def draw(fig: go.Figure, r: PanelResult, first: bool, row: int, col: int) -> None:
        fig.add_trace(_cloud_trace(r, max_cloud_points, first), row=row, col=col)
        for tr in _ellipse_traces(r.empirical_mean, r.empirical_cov, r.exact_mean, r.exact_cov,
                                  r.problem.beta_star, r.paper_cov, showlegend=first)[:2]:
            fig.add_trace(tr, row=row, col=col)

    def view(r: PanelResult) -> tuple[np.ndarray, float]:
        centre = (r.problem.beta_star + r.exact_mean) / 2
        half = (4.0 * np.sqrt(np.linalg.eigvalsh(r.exact_cov).max())
                + np.abs(r.problem.beta_star - r.exact_mean).max() / 2)
        return centre, half
    return _panel_figure(results, draw, view, "The stationary clouds up close")


def cloud_explorer(states: list[dict[str, Any]], sigma2s: Sequence[float],
                   cov_labels: Sequence[str]) -> go.Figure:
    """The least-squares cloud over σ² (slider) and Σ (drop-down), all states precomputed.

    ``states[j * len(sigma2s) + i]`` is the state for ``cov_labels[j]`` and ``sigma2s[i]``, a
    dict with ``cloud``, ``clean``, ``mean_emp``, ``cov_emp``, ``mean_exact``, ``cov_exact``,
    ``beta_star``, ``cov_paper``. Axes are fixed per Σ (so the slider shows the span's change
    as it is), wide enough for the paper's largest ellipse at that Σ.
    """
    ns = len(sigma2s)
    traces = []
    for st in states:
        traces.append([go.Scatter(x=st["cloud"][:, 0], y=st["cloud"][:, 1], mode="markers",
                                  marker=dict(size=3, color=COLORS["noisy"], opacity=0.4),
                                  name="label-noisy SGD", legendgroup="noisy"),
                       go.Scatter(x=st["clean"][:, 0], y=st["clean"][:, 1], mode="lines",
                                  line=dict(color=COLORS["clean"], width=1.5),
                                  name="label-noiseless SGD", legendgroup="clean"),
                       *_ellipse_traces(st["mean_emp"], st["cov_emp"], st["mean_exact"],
                                        st["cov_exact"], st["beta_star"], st["cov_paper"],
                                        showlegend=True)])
    layouts = []
    for j in range(len(cov_labels)):
        sts = states[j * ns:(j + 1) * ns]
        half = max(3.0 * np.sqrt(np.linalg.eigvalsh(st["cov_paper"]).max()) for st in sts)
        layouts.append(square_layout(sts[0]["beta_star"], half))
    fig = state_explorer(traces, slider_values=list(sigma2s), menu_labels=cov_labels,
                         slider_prefix="σ² = ", menu_layouts=layouts)
    fig.update_layout(height=680, xaxis=dict(title="β₁", constrain="domain"),
                      yaxis=dict(title="β₂", scaleanchor="x", scaleratio=1, constrain="domain"))
    return fig


def panel_table(results) -> Any:
    """Per panel: the traces of the measured, exact and paper's covariances, their ratio, the
    offset of β̂ from β*, and the two stability limits (an HTML table for the notebook)."""
    from IPython.display import HTML
    rows = [[f"({r.panel.key}) {r.panel.title}",
             *(fmt_number(float(np.trace(c))) for c in (r.empirical_cov, r.exact_cov, r.paper_cov)),
             f"{np.trace(r.paper_cov) / np.trace(r.exact_cov):.1f}",
             f"{np.linalg.norm(r.problem.beta_hat - r.problem.beta_star):.4f}",
             f"{r.eta_max:.4f}", f"{r.eta_4:.4f}"] for r in results]
    head = ["panel", "tr C measured", "tr C exact", "tr C paper", "paper / exact", "‖β̂ − β*‖",
            "η<sub>max</sub>", "η₄"]
    return HTML(data_table(head, rows))


def shape_table(results) -> Any:
    """Per panel: Mardia's moments of the cloud against the exact Gaussian (the four third
    moments and the kurtosis excess, each ± its standard error), ``η / η_max`` and the
    eighth-moment bound ``E‖I − ηH‖⁸`` (below 1: the intervals can be trusted)."""
    from IPython.display import HTML
    rows = []
    for r in results:
        est, se = shape_moments(r)
        rows.append([f"({r.panel.key}) {r.panel.title}",
                     *(f"{e:+.3f} ± {s:.3f}" for e, s in zip(est, se)),
                     f"{r.eta / r.eta_max:.2f}", f"{moment_bound(r):.3g}"])
    head = ["panel", "E z₁³", "E z₁²z₂", "E z₁z₂²", "E z₂³", "E|z|⁴/8 − 1", "η / η<sub>max</sub>",
            "E‖I − ηH‖⁸"]
    return HTML(data_table(head, rows))


def sweep_figure(eta_runs: Sequence[PanelResult], batch_runs: Sequence[PanelResult]) -> go.Figure:
    """``tr C`` against η (B fixed) and against B (η fixed): measured with 99 % error bars, the
    exact recursion, the paper's ``(ησ²/B) tr Σ̄_N`` and the first-order ``ησ²d/(2B)``."""
    fig = make_subplots(1, 2, subplot_titles=["against η", "against B"], horizontal_spacing=0.12)
    for col, (runs, x_of, name) in enumerate(((eta_runs, lambda r: r.eta, "η"),
                                              (batch_runs, lambda r: r.batch_size, "B")), start=1):
        runs = sorted(runs, key=x_of)
        x = np.array([x_of(r) for r in runs], dtype=float)
        stats = [r.stat(lambda m, c: np.trace(c)) for r in runs]
        fig.add_trace(go.Scatter(x=x, y=[float(e) for e, _ in stats], mode="markers",
                                 error_y=error_bars([float(s) for _, s in stats], runs[0].n_batches - 1),
                                 marker=dict(color=COLORS["noisy"], size=8),
                                 name="measured", showlegend=col == 1), row=1, col=col)
        for y, dash, label in (([np.trace(r.exact_cov) for r in runs], "solid", "exact"),
                               ([np.trace(r.paper_cov) for r in runs], "dot", "paper, Eq. 30"),
                               ([r.eta * r.problem.sigma2 * r.problem.d / (2 * r.batch_size)
                                 for r in runs], "dash", "first order ησ²d/(2B)")):
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line=dict(color="#111", dash=dash),
                                     name=label, showlegend=col == 1), row=1, col=col)
        fig.update_xaxes(type="log", title_text=name, row=1, col=col)
        fig.update_yaxes(type="log", title_text="tr C, stationary covariance (99% CI)", row=1,
                         col=col)
    fig.update_layout(height=420, legend=dict(orientation="h", y=-0.25),
                      margin=dict(l=60, r=20, t=40, b=40))
    return fig
