"""Figures of the ``sec5_distillation`` chapter (figures layer): the teachers' test accuracy
against the training-set size (how the headroom setting was chosen), Figure 1 (gradient norm,
validation and test accuracy against the noise level, with the swap's controls), G per epoch
against each student's control, Figure 2 (losses per epoch), and the chapter's tables: the
swap's shrinkage ``kappa^2`` beside the measured G ratios, the noise in the teacher's logit
units, the verdicts per setting, the accuracy verdicts at ``delta / 2``, ``delta`` and
``2 delta``, and the seeds that would decide each case.

Every figure has one column per setting (the full data, the headroom setting). Figure 1's points
are means over seeds with the ledger's 99 % Student-t intervals over seeds
(:func:`dsmlib.figures.common.error_bars`); Figure 2 draws every seed's curve and their mean.
"""
from __future__ import annotations

import html
from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from ..chapters.sec5_distillation.claims import family_level_text
from ..chapters.sec5_distillation.results import DistillResults, selected_levels, shrinkage_rows
from ..chapters.sec5_distillation.grid import KINDS
from ..chapters.sec5_distillation.gains import MIN_SEEDS
from ..chapters.sec5_distillation.readouts import TARGET_ACCURACY, teacher_curve
from ..foundation.claims import CONFIDENCE
from ..foundation.power import MAX_UNITS, RESOLUTION
from ..models.sec5_distillation.dataset_specs import SPECS
from ..models.sec5_distillation.run_config import Noise
from .common import error_bars
from .tables import BADGES, data_table, fmt_number

__all__ = ["KIND_COLORS", "CONTROL_NAME", "curve_title", "curve_figure", "figure1", "gradnorm_epochs",
           "figure2", "shrinkage_table", "noise_table", "settings_table", "delta_table",
           "speaks_for", "error_table", "divergence_table", "readings_table", "seeds_table",
           "distillation_table", "target_sources"]

KIND_COLORS = {Noise.GAUSSIAN: "#1f77b4", Noise.SYMMETRIC: "#d62728", Noise.NONE: "#2ca02c",
               "teacher": "#555555", Noise.CONTROL: "#ff9896", Noise.HINTON: "#9467bd"}
CONTROL_NAME = "swap control (no noise, target E[ỹ] = M_p y)"
_ROWS1 = (("gradnorm", "G(θ) (log scale)"), ("val_acc", "validation accuracy (%)"),
          ("test_acc", "test accuracy (%)"))
_RANGE = {"val_acc": (0.0, 100.0), "test_acc": (0.0, 100.0)}   # accuracy bars stop at 0 and 100 %
_SCALE = {"val_acc": 100.0, "test_acc": 100.0}     # accuracies are drawn in percent


def _mean_se(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over seeds (axis 0) and its standard error."""
    return v.mean(axis=0), v.std(axis=0, ddof=1) / np.sqrt(v.shape[0])


def _inside(values: Sequence[float], within: tuple[float, float]) -> list[float]:
    """An axis range around ``values`` (points and bar ends) with a margin of 2 % of their span
    that never leaves ``within`` by more than the margin above its top (a point at 100 % stays
    whole): plotly's own padding ran an accuracy axis from −0.06 to 1.06."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    lo, hi = within
    if v.size == 0:
        return [lo, hi]
    a, b = max(lo, float(v.min())), min(hi, float(v.max()))
    pad = 0.02 * max(b - a, 0.01 * (hi - lo))
    return [max(lo, a - pad), b + pad]


def _titles(res: DistillResults) -> list[str]:
    return list(res.settings)


def _eta_eff(res: DistillResults) -> str:
    """The students' learning rate in Eq. 13's units, 2 eta / L (their loss is per logit)."""
    ls = sorted({SPECS[d].num_classes for d in res.grid.datasets})
    return ", ".join(f"{2 * res.grid.lr / n:g}" + (f" (L = {n})" if len(ls) > 1 else "")
                     for n in ls)


def curve_title(res: DistillResults) -> str:
    """The curve figure's title, from the grid: how many settings it has and which, and whether
    the headroom size was read off the curve (a shaded target) or fixed without one."""
    n = len(res.settings)
    names = "; ".join(res.settings)
    read = any(s.headroom for s in res.grid.settings) and bool(res.grid.curve_sizes)
    how = ("shaded: the target the headroom size was read off" if read else
           "no curve: every size was fixed before the runs")
    return f"{n} setting{'s' if n != 1 else ''} (diamonds): {names}<br>{how}"


def curve_figure(res: DistillResults) -> go.Figure:
    """The teachers' test accuracy in percent (mean over seeds, 99 % interval, cut to [0, 100]
    as :func:`dsmlib.chapters.sec5_distillation.readouts.teacher_curve` cuts it: the bars are the interval,
    not a symmetric half-width around the mean; a size with fewer than three seeds has no bar,
    and each seed's accuracy is drawn as a small cross instead) and training accuracy (dotted;
    a single size as an open circle, which a line would not show) against the number of training
    images, per data set; diamonds: the grid's settings, named in the title
    (:func:`curve_title`); shaded, only where the headroom setting's size was read off the curve
    (the grid has curve sizes): its target range :data:`TARGET_ACCURACY`. The accuracy axis
    spans the points and their bars (and the band where drawn), never beyond [0, 100]."""
    fig = go.Figure()
    rows = teacher_curve(res)
    band = any(s.headroom for s in res.grid.settings) and bool(res.grid.curve_sizes)
    lows = [100 * a for a in TARGET_ACCURACY] if band else []
    for d in res.grid.datasets:
        pts = [r for r in rows if r["dataset"] == d]
        x = [r["n_train"] for r in pts]
        mean = np.array([r["mean"] for r in pts])
        lo = np.array([r["interval"][0] for r in pts], dtype=float)
        hi = np.array([r["interval"][1] for r in pts], dtype=float)
        lows += [*lo, *hi, *mean, *(r["train_acc"] for r in pts)]
        fig.add_trace(go.Scatter(
            x=x, y=mean, mode="lines+markers", name=f"{d}: test accuracy",
            error_y=dict(type="data", symmetric=False, visible=True,
                         array=np.nan_to_num(np.clip(hi - mean, 0.0, None)),
                         arrayminus=np.nan_to_num(np.clip(mean - lo, 0.0, None))),
            marker=dict(symbol=["diamond" if r["setting"] else "circle" for r in pts], size=9),
            text=[f"{r['seeds']} seeds" + (f", the {r['setting']} setting" if r["setting"] else "")
                  for r in pts],
            hovertemplate="%{x} training images: %{y:.2f} % (%{text})<extra></extra>"))
        few = [r for r in pts if np.isnan(r["interval"][0])]
        if few:
            seeds_x = [r["n_train"] for r in few for _ in r["points"]]
            seeds_y = [v for r in few for v in r["points"]]
            lows += seeds_y
            fig.add_trace(go.Scatter(
                x=seeds_x, y=seeds_y, mode="markers", name=f"{d}: each seed (fewer than 3 "
                "seeds: no interval)", marker=dict(symbol="x-thin", size=8,
                                                   line=dict(width=1.5), color="#555555"),
                hovertemplate="%{x} training images, one seed: %{y:.2f} %<extra></extra>"))
        one = len(x) == 1
        fig.add_trace(go.Scatter(
            x=x, y=[r["train_acc"] for r in pts], mode="markers" if one else "lines",
            name=f"{d}: training accuracy", line=dict(dash="dot", width=1.2),
            marker=dict(symbol="circle-open", size=10, line=dict(width=2)),
            hovertemplate="%{x} training images: %{y:.2f} % on them<extra></extra>"))
    if band:
        fig.add_hrect(y0=100 * TARGET_ACCURACY[0], y1=100 * TARGET_ACCURACY[1],
                      fillcolor="#ffbb78", opacity=0.25, line_width=0)
    fig.update_xaxes(type="log", title_text="training images (log scale)")
    fig.update_yaxes(title_text="teacher accuracy (%)", range=_inside(lows, (0.0, 100.0)))
    fig.update_layout(height=440, legend=dict(orientation="h", y=-0.25),
                      title=dict(text=curve_title(res), font=dict(size=12), x=0.0,
                                 xanchor="left"),
                      margin=dict(l=70, r=20, t=70, b=60))
    return fig


def _ticks(res: DistillResults, setting: str) -> list[str]:
    """The noise levels at each grid position of a setting's column."""
    s = res.setting(setting)
    width = max(len(s.sigma2s), len(res.grid.ps))
    return ["<br>".join(f"{sym} {levels[k]:g}" for sym, levels in
                        (("σ²", (0.0, *s.sigma2s)), ("p", (0.0, *res.grid.ps))) if k < len(levels))
            for k in range(width + 1)]


def figure1(res: DistillResults) -> go.Figure:
    """Figure 1: per setting (columns), G(θ), validation and test accuracy (rows) along the
    noise grid, both noise kinds and the swap's controls (dashed, light red: trained without
    noise on the swap's mean target); the teacher (dashed), the noiseless student (dotted) and
    the Hinton student (dash-dot) as reference lines. Grid position 0 is the noiseless student
    (σ² = p = 0); σ² is the variance per logit of the noise on the teacher's logits."""
    ss = res.settings
    fig = make_subplots(rows=3, cols=len(ss), column_titles=_titles(res), shared_xaxes=True,
                        vertical_spacing=0.06, horizontal_spacing=0.08)
    for j, s in enumerate(ss, start=1):
        n_seeds = res.n_seeds(s)
        dof = n_seeds - 1
        ticks = _ticks(res, s)
        width = len(ticks) - 1
        for i, (metric, _) in enumerate(_ROWS1, start=1):
            first = i == 1 and j == 1
            span: list[float] = []          # an accuracy row's points and bars: its axis range
            for kind, label in [(k, f"{k} noise ({sym})") for k, sym in KINDS.items()] + [
                    (Noise.CONTROL, CONTROL_NAME)]:
                cells = [res.noiseless(s)] + res.noisy(s, kind)
                if len(cells) < 2:
                    continue
                v = _SCALE.get(metric, 1.0) * np.stack([c.final[metric] for c in cells], axis=1)
                mean, se = _mean_se(v)
                if n_seeds >= MIN_SEEDS:
                    bars = error_bars(se, dof, mean=mean, within=_RANGE.get(metric))
                else:       # two seeds: t = 63.7, a bar across the axis that says nothing
                    bars = dict(visible=False, array=np.zeros_like(mean),
                                arrayminus=np.zeros_like(mean))
                if metric in _RANGE:
                    span += [*(mean + bars["array"]), *(mean - bars["arrayminus"])]
                fig.add_trace(go.Scatter(
                    x=list(range(len(cells))), y=mean, mode="lines+markers",
                    error_y=bars,
                    name=label, legendgroup=kind,
                    showlegend=first, line=dict(color=KIND_COLORS[kind],
                                                dash="dash" if kind == Noise.CONTROL else "solid"),
                    text=[c.name for c in cells],
                    hovertemplate="%{text}: %{y:.4g}<extra>" + kind + "</extra>"), row=i, col=j)
            for cell, dash, key in ((res.teacher(s), "dash", "teacher"),
                                    (res.noiseless(s), "dot", Noise.NONE),
                                    (res.hinton(s), "dashdot", Noise.HINTON)):
                m = _SCALE.get(metric, 1.0) * float(cell.final[metric].mean())
                span.append(m)
                fig.add_trace(go.Scatter(
                    x=[0, width], y=[m, m], mode="lines", name=cell.name, legendgroup=key,
                    showlegend=first, line=dict(color=KIND_COLORS[key], dash=dash, width=1.5),
                    hovertemplate=f"{cell.name}: {m:.4g} (mean of {n_seeds} seeds)<extra></extra>"),
                    row=i, col=j)
            fig.update_yaxes(type="log" if metric == "gradnorm" else "linear", row=i, col=j,
                             title_text=_ROWS1[i - 1][1])
            if metric in _RANGE:
                fig.update_yaxes(range=_inside(span, _RANGE[metric]), row=i, col=j)
        fig.update_xaxes(tickvals=list(range(width + 1)), ticktext=ticks, row=3, col=j,
                         title_text="noise level (grid position);<br>students at Eq. 13's "
                                    f"η_eff = 2η/L = {_eta_eff(res)}")
    fig.update_layout(height=820, legend=dict(orientation="h", y=-0.16),
                      margin=dict(l=70, r=20, t=40, b=60))
    return fig


def figure2(res: DistillResults) -> go.Figure:
    """Figure 2: per setting (columns), the training and validation loss against E[ỹ] per epoch
    (rows, log scale, from epoch 1: at epoch 0 a student is its teacher, and without noise or
    with Gaussian noise its loss is zero) of the noiseless student and of each noise kind at its
    validation-optimal level: the mean over seeds (bold) and every seed (thin); dashed: the
    noisy objective SGD minimised (training row only)."""
    ss = res.settings
    fig = make_subplots(rows=2, cols=len(ss), column_titles=_titles(res), shared_xaxes=True,
                        vertical_spacing=0.08, horizontal_spacing=0.08)
    for j, s in enumerate(ss, start=1):
        for kind, cell in selected_levels(res, s).items():
            label = "no noise" if kind == Noise.NONE else f"{kind} noise, {cell.name}"
            color = KIND_COLORS[kind]
            for i, metric in ((1, "train_loss"), (2, "val_loss")):
                curves = cell.curves[metric][:, 1:]
                x = np.arange(1, curves.shape[1] + 1)
                # every seed's curve in one trace, the seeds apart by a gap (NaN): one trace
                # instead of one per seed keeps a page with several references light
                gap = np.full((curves.shape[0], 1), np.nan)
                seeds = np.repeat(np.asarray(cell.seeds), curves.shape[1] + 1)
                fig.add_trace(go.Scatter(
                    x=np.tile(np.append(x, np.nan), curves.shape[0]),
                    y=np.hstack([curves, gap]).ravel(), customdata=seeds, mode="lines",
                    opacity=0.3, line=dict(color=color, width=0.8), showlegend=False,
                    legendgroup=kind, connectgaps=False,
                    hovertemplate="seed %{customdata}: %{y:.3g}<extra>" + label + "</extra>"),
                    row=i, col=j)
                fig.add_trace(go.Scatter(x=x, y=curves.mean(axis=0), mode="lines", name=label,
                                         legendgroup=kind, showlegend=i == 1 and j == 1,
                                         line=dict(color=color, width=2.5)), row=i, col=j)
            obj = cell.curves["train_objective"][:, 1:].mean(axis=0)
            fig.add_trace(go.Scatter(x=np.arange(1, obj.size + 1), y=obj, mode="lines",
                                     name="noisy objective SGD saw (mean)",
                                     legendgroup="objective", showlegend=j == 1 and kind == Noise.NONE,
                                     line=dict(color=color, dash="dash", width=1.2)), row=1, col=j)
        fig.update_yaxes(type="log", row=1, col=j, title_text="training loss")
        fig.update_yaxes(type="log", row=2, col=j, title_text="validation loss")
        fig.update_xaxes(title_text="epoch", row=2, col=j)
    fig.update_layout(height=620, legend=dict(orientation="h", y=-0.18),
                      margin=dict(l=70, r=20, t=40, b=60))
    return fig


def gradnorm_epochs(res: DistillResults) -> go.Figure:
    """G(θ) per epoch (log scale; mean over seeds) of every noisy student (solid, one colour per
    level) beside its control (dotted, same colour; for Gaussian noise the noiseless student, in
    green): rows are the noise kinds, columns the settings. Shaded: the second half of the
    epochs, which ``fig1.gradnorm_below_control_over_epochs`` averages."""
    ss = res.settings
    fig = make_subplots(rows=len(KINDS), cols=len(ss), column_titles=_titles(res),
                        shared_xaxes=True, vertical_spacing=0.1, horizontal_spacing=0.08)
    for j, s in enumerate(ss, start=1):
        none = res.noiseless(s)
        epochs = np.arange(none.curves["gradnorm"].shape[1])
        for i, (kind, sym) in enumerate(KINDS.items(), start=1):
            cells = res.noisy(s, kind)
            colors = sample_colorscale("Plasma", np.linspace(0.0, 0.8, max(len(cells), 2)).tolist())
            pairs = [(c, res.control(c), col) for c, col in zip(cells, colors)]
            for cell, ctrl, color in pairs:
                for c, dash in ((cell, "solid"), (ctrl, "dot")):
                    if c is none and cell is not cells[0]:
                        continue
                    g = np.exp(np.log(c.curves["gradnorm"]).mean(axis=0))
                    fig.add_trace(go.Scatter(
                        x=epochs, y=g, mode="lines", name=f"{c.name}", showlegend=j == 1,
                        legendgroup=f"{kind}-{c.name}", line=dict(
                            color=KIND_COLORS[Noise.NONE] if c is none else color, dash=dash),
                        hovertemplate=f"{c.name}, epoch %{{x}}: %{{y:.4g}}<extra>{s}</extra>"),
                        row=i, col=j)
            fig.add_vrect(x0=(epochs[-1]) / 2, x1=epochs[-1], fillcolor="#999999", opacity=0.12,
                          line_width=0, row=i, col=j)
            fig.update_yaxes(type="log", row=i, col=j,
                             title_text=f"G(θ), {kind} noise ({sym})")
        fig.update_xaxes(title_text="epoch", row=len(KINDS), col=j)
    fig.update_layout(height=640, legend=dict(orientation="h", y=-0.16),
                      margin=dict(l=70, r=20, t=40, b=60))
    return fig


def shrinkage_table(res: DistillResults) -> Any:
    """The swap's shrinkage: per setting and p, κ² beside G / G(noiseless) of the swap student
    and of its control (geometric means over seeds), as an HTML table (one card per row on a
    phone; a Markdown table was printed as text by the site)."""
    from IPython.display import HTML
    return HTML(data_table(
        ["setting", "p", "κ²", "swap student", "its control"],
        [[html.escape(str(r["setting"])), f"{r['p']:g}", f"{r['kappa2']:.2f}",
          f"{r['swap']:.2f}", f"{r['control']:.2f}"] for r in shrinkage_rows(res)],
        table_class="cases shrinkage cards"))


def noise_table(rows: Sequence[dict[str, Any]]) -> Any:
    """The noise in the teacher's logit units (:func:`dsmlib.chapters.sec5_distillation.readouts.
    noise_rows`): per setting and level, the noise variance per logit, the teachers' logit
    scale s², their ratio, and the students' test accuracy beside the teachers'."""
    from IPython.display import HTML
    table = data_table(
        ["Setting", "Noise", "Noise variance per logit", "Teacher's logit scale s²",
         "Noise / s²", "Student's test accuracy", "Teacher's"],
        [[html.escape(r["setting"]), html.escape(r["name"]), fmt_number(r["noise_var"]),
          fmt_number(r["logit_var"]), fmt_number(r["ratio"]), f"{100 * r['test_acc']:.2f} %",
          f"{100 * r['teacher_acc']:.2f} %"] for r in rows],
        table_class="cases noise-units cards")
    return HTML(table)


def settings_table(rows: Sequence[dict[str, Any]], settings: Sequence[str]) -> Any:
    """Per claim, its verdict over all settings and restricted to each one
    (:func:`dsmlib.chapters.sec5_distillation.gains.verdicts_by_setting`); "not judged" where a setting is
    below the accuracy gate."""
    from IPython.display import HTML
    head = ["Claim", "All settings"] + [html.escape(s) for s in settings]
    body = [[f"<code>{html.escape(r['claim'])}</code>", BADGES[r["verdict"]]]
            + [BADGES.get(r[s], html.escape(str(r[s]))) if r[s] else "—" for s in settings]
            for r in rows]
    return HTML(data_table(head, body, table_class="cases by-setting cards"))


def _case_cell(claim: str, case: str) -> str:
    """A table's first cell: the case, with its claim's id above it in small type."""
    return (f"<span class='claim-id'><code>{html.escape(claim)}</code></span><br>"
            f"{html.escape(case)}")


def _points(x: float) -> str:
    """A value already in points (or percent), to two decimals."""
    return f"{x:.2f}".replace("-", "−")


def _points_interval(iv: Sequence[float]) -> str:
    return "[" + ", ".join(_points(v) for v in iv) + "]"


def delta_table(rows: Sequence[dict[str, Any]]) -> Any:
    """Every accuracy case's value (a gain, or the validation-selected student's shortfall less
    δ) with its interval, its verdict, δ, and what δ decides at δ/2, δ and 2δ
    (:func:`dsmlib.chapters.sec5_distillation.claims.delta_table_rows`): a directional case's size (its
    verdict is its direction, whatever δ), the shortfall's verdict; in points of accuracy."""
    from IPython.display import HTML

    def read(r: dict[str, Any], k: str) -> str:
        return BADGES[r[k]] if r.get("sense") == "shortfall" else html.escape(r[k])
    table = data_table(
        ["Case", "Value (points), 99 % interval, verdict", "δ (points)",
         "At δ/2 · δ · 2δ (size, or the shortfall's verdict)"],
        [[_case_cell(r["claim"], r["case"]),
          f"{'shortfall − δ ' if r.get('sense') == 'shortfall' else ''}{_points(r['measured'])}"
          f"<br><span class='interval'>{_points_interval(r['interval'])}</span>"
          f"<br>{BADGES[r['verdict']]}",
          _points(r["delta"]),
          " · ".join(read(r, k) for k in ("half", "at", "double"))] for r in rows],
        row_classes=[f"v-{r['verdict']}" for r in rows], table_class="cases delta-verdicts cards")
    return HTML(table)


def speaks_for(row: dict[str, Any]) -> str:
    """What an accuracy case's interval speaks for, in words that hold for every data set: its
    population's first clause, the test set named as images (the words once said "test
    digits" of CIFAR-10's test images too)."""
    return row["population"].split(":")[0].replace("test digits", "test images")


def error_table(claims: Sequence[Any]) -> Any:
    """Where each accuracy case's error comes from: the standard error over seeds (what more
    seeds shrink) and over the test images (what only more test images shrink), in points, and
    the population its interval speaks for."""
    from IPython.display import HTML
    rows = [(c.id, d) for c in claims for d in c.details if d.get("delta") is not None]
    table = data_table(
        ["Case", "SE from the seeds", "SE from the test images", "Speaks for"],
        [[_case_cell(cid, d["case"]), _points(d["se_seeds"]),
          "—" if d.get("se_images") is None else _points(d["se_images"]),
          html.escape(speaks_for(d))] for cid, d in rows],
        table_class="cases error-sources cards")
    return HTML(table)


def divergence_table(rows: Sequence[dict[str, Any]]) -> Any:
    """Each arm's runs and how many diverged (:attr:`DistillResults.divergence`), with a 99 %
    Clopper-Pearson interval of its divergence rate; arms with none are summed in one line."""
    from IPython.display import HTML
    from scipy.stats import beta
    bad = [r for r in rows if r["diverged"]]
    if not bad:
        n = sum(r["runs"] for r in rows)
        return HTML(f"<p>No run diverged: 0 of {n:,} runs.</p>")

    def cp(k: int, n: int) -> str:
        lo = 0.0 if k == 0 else beta.ppf(0.005, k, n - k + 1)
        hi = 1.0 if k == n else beta.ppf(0.995, k + 1, n - k)
        return f"[{100 * lo:.0f}, {100 * hi:.0f}] %"
    table = data_table(
        ["Setting", "Arm", "Diverged", "Rate, 99 % interval", "Seeds"],
        [[html.escape(r["setting"]), html.escape(r["arm"]), f"{r['diverged']} of {r['runs']}",
          cp(r["diverged"], r["runs"]), ", ".join(map(str, r["seeds"]))] for r in bad],
        table_class="cases divergence cards")
    calm = sum(r["runs"] for r in rows if not r["diverged"])
    return HTML(f"{table}<p>Every other arm: none of its {calm:,} runs diverged.</p>")


def readings_table(rows: Sequence[dict[str, Any]]) -> Any:
    """Each accuracy claim over the seeds judged and over every seed (a diverged run counted at
    its measured accuracy, or at chance) (:func:`dsmlib.chapters.sec5_distillation.claims.accuracy_readings`)."""
    from IPython.display import HTML
    if not rows:
        return HTML("<p>No run diverged: every seed is judged, and there is no second reading.</p>")
    table = data_table(
        ["Claim", "Seeds judged", "Every seed"],
        [[f"<code>{html.escape(r['claim'])}</code>",
          f"{BADGES[r['kept']]}<br><span class='interval'>{_points(r['kept_measured'])} "
          f"{_points_interval(r['kept_interval'])}</span>",
          f"{BADGES[r['every']]}<br><span class='interval'>{_points(r['every_measured'])} "
          f"{_points_interval(r['every_interval'])}</span>"] for r in rows],
        row_classes=[f"v-{r['kept']}" for r in rows], table_class="cases readings cards")
    return HTML(table)


def seeds_table(rows: Sequence[dict[str, Any]], seeds: str) -> Any:
    """The cases and the seeds that would decide them
    (:func:`dsmlib.chapters.sec5_distillation.readouts.seeds_to_decide`): one card per case on a phone;
    four columns, so that the projection fits a 1,280 px page."""
    from IPython.display import HTML
    if not rows:
        return HTML(f"<p>Every case is decided with these seeds ({html.escape(seeds)}).</p>")

    def plan(r: dict[str, Any]) -> str:
        if not r.get("resolved", True):
            return (f"none: the value is within the resolution ({RESOLUTION:g}) of the band's "
                    "edge, a rounding residue rather than an effect")
        if r["seeds"] is None:
            return ("not by seeds alone: no spread measured, or the test images' own error "
                    f"keeps it undecided beyond {MAX_UNITS:,} seeds")
        lo, hi = r.get("seeds_range") or (None, None)
        t_lo, t_hi = r.get("towards_range") or (None, None)

        def end(n: int | None, towards: str | None, last: bool) -> str:
            count = (f"more than {MAX_UNITS:,}" if last else "—") if n is None else f"{n:,}"
            return count + (f" → {BADGES[towards]}" if towards and n is not None else "")
        span = ("" if lo is None and hi is None else
                f" (value ± 1 SE: {end(lo, t_lo, False)} to {end(hi, t_hi, True)})")
        return f"{r['seeds']:,} seeds → {BADGES[r['towards']]}{span}"
    table = data_table(
        ["Case", "Value ± half-width", "Now", "Seeds to decide → verdict"],
        [[_case_cell(r["claim"], r["case"]),
          f"{fmt_number(r['measured'])} ± {fmt_number(r['half_width'])}",
          BADGES[r["verdict"]], plan(r)] for r in rows],
        row_classes=[f"v-{r['towards'] or 'inconclusive'}" for r in rows],
        table_class="cases seeds-to-decide cards")
    return HTML(f"<p>This run has {html.escape(seeds)} seeds.</p>{table}")


def distillation_table(rows: Sequence[dict[str, Any]]) -> Any:
    """Training, distillation and noise apart (:func:`dsmlib.chapters.sec5_distillation.claims.distillation_rows`):
    per judged setting, each row's gain in points with its 99 % interval, its verdict (its
    direction) and its size against δ; a row also judged in a claim under Holm's rule shows
    that verdict where it differs, and says why."""
    from IPython.display import HTML
    if not rows:
        return HTML("<p>No setting is judged for accuracy, so there is nothing to separate.</p>")

    def verdict(r: dict[str, Any]) -> str:
        own = BADGES[r["verdict"]]
        if r.get("claim_verdict") in (None, r["verdict"]):
            return own
        return (f"{own} alone; {BADGES[r['claim_verdict']]} in <code>"
                f"{html.escape(r['in_claim'])}</code> (Holm's rule over its cases)")
    table = data_table(
        ["Setting", "Gain (points): what it measures", "Value, 99 % interval",
         "Verdict · size against δ"],
        [[html.escape(r["setting"]), f"{html.escape(r['comparison'])}: "
          f"<em>{html.escape(r['measures'])}</em>",
          f"{_points(r['measured'])} <span class='interval'>{_points_interval(r['interval'])}"
          f"</span>",
          f"{verdict(r)} · {html.escape(r['size'])} (δ = {_points(r['delta'])})"]
         for r in rows],
        row_classes=[f"v-{r['verdict']}" for r in rows],
        table_class="cases distillation-vs-noise cards")
    k = max((sum(1 for x in rows if x["setting"] == r["setting"]) for r in rows), default=0)
    return HTML(f"{table}<p>Each row is judged alone at {CONFIDENCE:.0%}; "
                f"{html.escape(family_level_text(k))} (Bonferroni). The rule is fixed before "
                "measuring; δ is measured, and its error carried.</p>")


def target_sources() -> Any:
    """The source of a student's three targets: Gaussian noise, the symmetric swap, and the
    swap's mean (its control's target), as the page shows them."""
    from ..theory.label_noise import GaussianNoise, SymmetricSwapNoise
    from .common import show_source
    return show_source(GaussianNoise.apply, SymmetricSwapNoise.apply, SymmetricSwapNoise.apply_mean)
