"""Plotly figures for the book, and the renderer that makes them work in a static site.

Under ipykernel plotly >= 6 emits only ``application/vnd.plotly.v1+json``, which myst-nb drops.
:func:`setup` registers a renderer that also emits ``text/html`` *without* plotly.js or MathJax;
the book serves one local copy of plotly.js to every page (see ``dsmlib.runner``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.io._base_renderers import MimetypeRenderer, PlotlyRenderer
from plotly.subplots import make_subplots

RENDERER = "dsm_book"
COLORS = {"noisy": "#1f77b4", "clean": "#ff7f0e", "empirical": "#2ca02c", "exact": "#111111",
          "paper": "#d62728", "beta_star": "#9467bd", "beta_hat": "#111111"}


class BookRenderer(MimetypeRenderer):
    """Emit the plotly JSON mimetype (for Jupyter) next to a script-free ``text/html`` div."""

    def to_mimebundle(self, fig_dict: dict[str, Any]) -> dict[str, Any]:
        html = pio.to_html(fig_dict, include_plotlyjs=False, include_mathjax=False,
                           full_html=False, validate=False,
                           config={"displaylogo": False, "responsive": True})
        bundle = PlotlyRenderer().to_mimebundle(fig_dict)
        bundle["text/html"] = html
        return bundle


def setup() -> None:
    """Make :data:`RENDERER` plotly's default renderer and use a clean template."""
    pio.renderers[RENDERER] = BookRenderer()
    pio.renderers.default = RENDERER
    pio.templates.default = "plotly_white"


def ellipse_xy(mean: Sequence[float], cov: np.ndarray, *, nsig: float = 2.0,
               n: int = 121) -> tuple[np.ndarray, np.ndarray]:
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


def thin(points: np.ndarray, max_points: int) -> np.ndarray:
    """Every k-th row so that at most ``max_points`` remain (float32 keeps the page small)."""
    step = max(1, int(np.ceil(points.shape[0] / max_points)))
    return np.asarray(points[::step], dtype=np.float32)


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
    ncols = min(4, len(results))
    nrows = -(-len(results) // ncols)
    fig = make_subplots(rows=nrows, cols=ncols, horizontal_spacing=0.04, vertical_spacing=0.1,
                        subplot_titles=titles)
    return fig, ncols, nrows


def _cloud_trace(r, max_points: int, showlegend: bool) -> go.Scatter:
    cloud = thin(r.cloud, max_points)
    return go.Scatter(x=cloud[:, 0], y=cloud[:, 1], mode="markers",
                      marker=dict(size=2, color=COLORS["noisy"], opacity=0.3),
                      name="label-noisy SGD (stationary)", legendgroup="noisy",
                      showlegend=showlegend, hoverinfo="skip")


def _square_axes(fig: go.Figure, i: int, row: int, col: int, centre, half: float) -> None:
    """Equal scales on both axes (shapes of ellipses matter), ranges kept as given."""
    fig.update_xaxes(range=[centre[0] - half, centre[0] + half], constrain="domain",
                     row=row, col=col, nticks=4)
    fig.update_yaxes(range=[centre[1] - half, centre[1] + half], constrain="domain",
                     scaleanchor=f"x{i + 1 if i else ''}", scaleratio=1, row=row, col=col,
                     nticks=4)


def figure3(results, *, max_cloud_points: int = 1500, transient_steps: int = 300) -> go.Figure:
    """Figure 3: eight panels of label-noisy trajectories, noiseless companions and ellipses.

    ``results`` are :class:`dsmlib.ols_experiment.PanelResult`. Each panel shows the first
    ``transient_steps`` of both runs as lines, the stationary cloud as points (thinned), and
    the three 2-sigma ellipses: empirical, exact recursion and the paper's formula. The axes
    span the paper's ellipse.
    """
    fig, ncols, nrows = _panel_grid(results, [f"({r.panel.key}) {r.panel.short}" for r in results])
    for i, r in enumerate(results):
        row, col = i // ncols + 1, i % ncols + 1
        first = i == 0
        fig.add_trace(_cloud_trace(r, max_cloud_points, first), row=row, col=col)
        head = r.noisy[: transient_steps + 1]
        fig.add_trace(go.Scatter(x=head[:, 0], y=head[:, 1], mode="lines",
                                 line=dict(color=COLORS["noisy"], width=1),
                                 name="label-noisy SGD (first steps)", legendgroup="noisy_head",
                                 showlegend=first), row=row, col=col)
        clean = r.clean[: transient_steps + 1]
        fig.add_trace(go.Scatter(x=clean[:, 0], y=clean[:, 1], mode="lines",
                                 line=dict(color=COLORS["clean"], width=1.5),
                                 name="label-noiseless SGD (same minibatches)",
                                 legendgroup="clean", showlegend=first), row=row, col=col)
        for tr in _ellipse_traces(r.empirical_mean, r.empirical_cov, r.exact_mean, r.exact_cov,
                                  r.problem.beta_star, r.paper_cov, showlegend=first):
            fig.add_trace(tr, row=row, col=col)
        _points(fig, r, first, row, col)
        half = 3.2 * np.sqrt(np.linalg.eigvalsh(r.paper_cov).max())
        _square_axes(fig, i, row, col, r.problem.beta_star, half)
    fig.update_layout(height=290 * nrows + 110, margin=dict(l=30, r=10, t=60, b=30),
                      legend=dict(orientation="h", y=-0.06), title="Figure 3, reproduced")
    return fig


def _points(fig: go.Figure, r, showlegend: bool, row: int, col: int) -> None:
    for key, pt, name, sym in [("beta_star", r.problem.beta_star, "β*", "x"),
                               ("beta_hat", r.problem.beta_hat, "β̂ (OLS fit to noisy labels)",
                                "circle-open")]:
        fig.add_trace(go.Scatter(x=[pt[0]], y=[pt[1]], mode="markers", name=name,
                                 marker=dict(color=COLORS[key], size=9, symbol=sym,
                                             line=dict(width=2)),
                                 legendgroup=key, showlegend=showlegend), row=row, col=col)


def figure3_zoom(results, *, max_cloud_points: int = 1500) -> go.Figure:
    """The stationary clouds up close: measured and exact 2-sigma ellipses, β̂ and β*.

    The axes span four exact standard deviations around the midpoint of β* and β̂, so the
    offset of the centre and the agreement of the two ellipses are visible.
    """
    fig, ncols, nrows = _panel_grid(results, [f"({r.panel.key}) {r.panel.short}" for r in results])
    for i, r in enumerate(results):
        row, col = i // ncols + 1, i % ncols + 1
        first = i == 0
        fig.add_trace(_cloud_trace(r, max_cloud_points, first), row=row, col=col)
        for tr in _ellipse_traces(r.empirical_mean, r.empirical_cov, r.exact_mean, r.exact_cov,
                                  r.problem.beta_star, r.paper_cov, showlegend=first)[:2]:
            fig.add_trace(tr, row=row, col=col)
        _points(fig, r, first, row, col)
        centre = (r.problem.beta_star + r.exact_mean) / 2
        half = (4.0 * np.sqrt(np.linalg.eigvalsh(r.exact_cov).max())
                + np.abs(r.problem.beta_star - r.exact_mean).max() / 2)
        _square_axes(fig, i, row, col, centre, half)
    fig.update_layout(height=290 * nrows + 110, margin=dict(l=30, r=10, t=60, b=30),
                      legend=dict(orientation="h", y=-0.06),
                      title="The stationary clouds up close")
    return fig


def state_explorer(state_traces: list[list[Any]], *, slider_values: Sequence[Any],
                   menu_labels: Sequence[str], slider_prefix: str,
                   menu_layouts: Sequence[dict[str, Any]] | None = None) -> go.Figure:
    """A figure that works in a static page: a slider and a drop-down over precomputed states.

    ``state_traces[j * len(slider_values) + i]`` holds the traces of menu entry ``j`` at slider
    position ``i`` (every state the same number of traces). The drop-down swaps in the slider
    of its entry (and ``menu_layouts[j]``, e.g. axis ranges), so the two controls compose with
    no Python running in the page. Only the first state is visible initially.
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
            tr.visible = k == 0
            tr.showlegend = k == 0 and tr.showlegend is not False
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

    fig.update_layout(
        sliders=[slider(0)],
        updatemenus=[dict(type="dropdown", x=1.0, y=1.16, xanchor="right", yanchor="bottom",
                          showactive=True,
                          buttons=[dict(label=lab, method="update",
                                        args=[{"visible": vis(j * ns)},
                                              {"sliders": [slider(j)], **menu_layouts[j]}])
                                   for j, lab in enumerate(menu_labels)])],
        legend=dict(orientation="h", x=0.0, y=1.02, yanchor="bottom", xanchor="left"),
        margin=dict(l=50, r=20, t=110, b=40))
    fig.update_layout(**{k.replace(".", "_"): v for k, v in menu_layouts[0].items()})
    return fig


def _square_layout(centre, half: float) -> dict[str, Any]:
    return {"xaxis.range": [centre[0] - half, centre[0] + half],
            "yaxis.range": [centre[1] - half, centre[1] + half]}


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
        layouts.append(_square_layout(sts[0]["beta_star"], half))
    fig = state_explorer(traces, slider_values=list(sigma2s), menu_labels=cov_labels,
                         slider_prefix="σ² = ", menu_layouts=layouts)
    fig.update_layout(height=680, xaxis=dict(title="β₁", constrain="domain"),
                      yaxis=dict(title="β₂", scaleanchor="x", scaleratio=1, constrain="domain"))
    return fig


def noise_explorer(states: list[dict[str, Any]], batch_sizes: Sequence[int],
                   sigma2_labels: Sequence[str]) -> go.Figure:
    """Prop. 1 for a two-parameter model: samples of ξ* and ξ^ULN with their predicted 2σ
    ellipses, over b (slider) and σ² (drop-down). Each state is a dict with ``xi_star``,
    ``xi_uln`` (points), ``cov_star``, ``cov_uln`` (predicted covariances)."""
    traces = []
    for st in states:
        ts = []
        for key, name, color in (("xi_star", "ξ* (minibatch noise)", "#1f77b4"),
                                 ("xi_uln", "ξ^ULN (label noise)", "#d62728")):
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
        layouts.append(_square_layout([0.0, 0.0], half))
    fig = state_explorer(traces, slider_values=[int(b) for b in batch_sizes],
                         menu_labels=sigma2_labels, slider_prefix="b = ", menu_layouts=layouts)
    fig.update_layout(height=640, xaxis=dict(title="component θ₁", constrain="domain"),
                      yaxis=dict(title="component θ₂", scaleanchor="x", scaleratio=1,
                                 constrain="domain"))
    return fig


def strength_loglog(cases) -> go.Figure:
    """Prop. 3: measured E‖ξ^ULN‖² against (ησ²/(bN))Σ‖∇f‖², log-log, fitted slope in legend."""
    from .stats import log_log_slope
    fig = go.Figure()
    pred = np.array([c.predicted for c in cases])
    meas = np.array([c.measured for c in cases])
    se = np.array([c.se for c in cases])
    for name in dict.fromkeys(c.setting for c in cases):
        sel = [i for i, c in enumerate(cases) if c.setting == name]
        fig.add_trace(go.Scatter(
            x=pred[sel], y=meas[sel], mode="markers", name=name,
            error_y=dict(type="data", array=2.576 * se[sel], visible=True),
            text=[f"σ²={cases[i].sigma2:g}, b={cases[i].batch_size}, η={cases[i].eta:g}"
                  for i in sel], hovertemplate="%{text}<br>predicted %{x:.3g}<br>measured %{y:.3g}"))
    slope, s_se = log_log_slope(pred, meas, se)
    lo, hi = pred.min() / 1.5, pred.max() * 1.5
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(dash="dot", color="#555"),
                             name=f"Eq. 18 (slope 1); fitted slope {slope:.4f} ± {s_se:.4f}"))
    fig.update_layout(xaxis=dict(type="log", title="predicted (ησ²/(bN))·Σ‖∇θ f‖²"),
                      yaxis=dict(type="log", title="measured E‖ξ^ULN‖² (99% CI)"),
                      height=480, legend=dict(orientation="h", y=-0.25),
                      margin=dict(l=60, r=20, t=30, b=40))
    return fig


def perturbation_plot(curves) -> go.Figure:
    """Remark 2: E‖Δf‖²/(s²G(θ)) against the perturbation size s (log x), with 99% CIs."""
    fig = go.Figure()
    for c in curves:
        fig.add_trace(go.Scatter(x=c.scales, y=c.ratio, mode="lines+markers", name=c.setting,
                                 error_y=dict(type="data", array=2.576 * c.se, visible=True)))
    fig.add_hline(y=1.0, line=dict(dash="dot", color="#555"))
    fig.update_layout(xaxis=dict(type="log", title="perturbation size s  (δ ~ N(0, s²I))"),
                      yaxis=dict(type="log", title="E‖f(x,θ+δ) − f(x,θ)‖² / (s²·G(θ))"),
                      height=440, legend=dict(orientation="h", y=-0.25),
                      margin=dict(l=60, r=20, t=30, b=40))
    return fig


def cases_table(claims) -> Any:
    """An HTML table of the per-case details of claims that must hold in every case."""
    from IPython.display import HTML

    from .claims import _BADGE, _fmt
    rows = []
    for c in claims:
        for d in c.details:
            rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in [
                f"<code>{c.id}</code>", d["case"], _fmt(d["paper"]), _fmt(d["measured"]),
                f"[{_fmt(d['interval'][0])}, {_fmt(d['interval'][1])}]",
                f"[{_fmt(d['band'][0], '−∞')}, {_fmt(d['band'][1], '∞')}]",
                _BADGE[d["verdict"]]]) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ["Claim", "Case", "Paper", "Measured",
                                             "99% interval", "Band", "Verdict"])
    return HTML(f"<table class='claims-table'><thead><tr>{head}</tr></thead><tbody>"
                + "".join(rows) + "</tbody></table>")


def claims_table(claims) -> Any:
    """An HTML table of claims (dataclasses or dicts) for display in a notebook."""
    from dataclasses import asdict, is_dataclass
    from IPython.display import HTML

    from .claims import _BADGE, _fmt
    rows = []
    for c in claims:
        c = asdict(c) if is_dataclass(c) else c
        rows.append(
            "<tr>" + "".join(f"<td>{x}</td>" for x in [
                f"<code>{c['id']}</code>" + (" <em>(book)</em>" if c.get("source") == "book" else ""),
                c["statement"], c.get("quantity", ""), _fmt(c["paper"]), _fmt(c["measured"]),
                f"[{_fmt(c['interval'][0])}, {_fmt(c['interval'][1])}]",
                f"[{_fmt(c['band'][0], '−∞')}, {_fmt(c['band'][1], '∞')}]",
                _BADGE[c["verdict"]]]) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ["Claim", "Statement", "Quantity", "Paper",
                                             "Measured", "99% interval", "Band", "Verdict"])
    return HTML(f"<table class='claims-table'><thead><tr>{head}</tr></thead><tbody>"
                + "".join(rows) + "</tbody></table>")
