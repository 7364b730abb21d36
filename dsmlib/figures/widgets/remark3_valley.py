"""Live ipywidgets explorer of the ``remark3_valley`` chapter (book layer; it needs a running
kernel, the static book uses plotly drop-downs and a slider).

The update function is exposed as ``widget.update`` so tests can drive it without a browser.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .common import assemble, refuse, show

__all__ = ["valley_explorer"]


def valley_explorer(*, steps: int = 5000, n_runs: int = 8, n: int = 64, seed: int = 0) -> Any:
    """Remarks 3-4 live: label-noisy SGD on the scalar product model ``theta_1 theta_2 x``.

    Controls: σ², η, B, the start point (θ₁, 1/θ₁) on the valley θ₁θ₂ = 1, label noise fresh or drawn once,
    and the number of steps. Moving one re-runs ``n_runs`` runs and redraws their paths on the
    loss landscape; the status line compares the measured drift speed with ησ²m₂/B.
    """
    import ipywidgets as W
    import plotly.graph_objects as go

    from ..remark3_valley import landscape_traces
    from ...theory import valley as V
    from ...theory.valley_sgd import run_valley_sgd

    problem = V.scalar_product_problem(n, seed=seed)
    sigma2 = W.FloatLogSlider(value=1.0, base=2, min=-4, max=3, step=0.5, description="σ²",
                              continuous_update=False)
    eta = W.FloatLogSlider(value=0.02, base=10, min=-3, max=-0.5, step=0.1, description="η",
                           continuous_update=False)
    batch = W.IntSlider(value=4, min=1, max=n, description="B", continuous_update=False)
    start = W.FloatSlider(value=3.0, min=1.25, max=4.0, step=0.25, description="start θ₁",
                          continuous_update=False)
    mode = W.Dropdown(options=["fresh", "fixed"], value="fresh", description="label noise")
    n_steps = W.IntSlider(value=steps, min=500, max=50_000, step=500, description="steps",
                          continuous_update=False)
    status = W.HTML()
    out = W.Output()

    def update(*_: Any) -> None:
        u0, v0 = V.scalar_start(1.0, float(start.value))      # (θ₁, 1/θ₁) on θ₁θ₂ = 1
        try:
            r = run_valley_sgd(problem, u0, v0, eta=float(eta.value), sigma2=float(sigma2.value),
                               batch_size=int(batch.value), steps=int(n_steps.value), n_runs=n_runs,
                               noise_mode=mode.value, record_every=max(1, int(n_steps.value) // 300),
                               seed=seed)
        except ValueError as err:
            refuse(out, status, err)
            return
        theory = V.imbalance_decay_rate(float(eta.value), float(sigma2.value), int(batch.value))
        drift = r.imbalance_rate()[:, 0]
        status.value = (f"final G / G_min: {np.mean(r.G[-1]) / 2.0:.3f} &nbsp;|&nbsp; drift speed "
                        f"−d log|θ₁²−θ₂²|/dt: measured {drift.mean():.3g}, leading-order theory "
                        f"ησ²m₂/B = {theory:.3g}")
        lim = (-0.25, 1.15 * float(u0[0]))
        fig = go.Figure(landscape_traces(problem, lim))
        for k in range(n_runs):
            fig.add_trace(go.Scatter(x=r.u[:, k, 0], y=r.v[:, k, 0], mode="lines", showlegend=k == 0,
                                     line=dict(color="#1f77b4", width=1), name="SGD paths"))
        fig.add_trace(go.Scatter(x=r.u[-1, :, 0], y=r.v[-1, :, 0], mode="markers", name="end points",
                                 marker=dict(color="#d62728", size=7)))
        fig.update_layout(height=560, width=640, xaxis=dict(title="θ₁", range=list(lim)),
                          yaxis=dict(title="θ₂", range=list(lim), scaleanchor="x", scaleratio=1),
                          legend=dict(orientation="h", y=-0.15))
        show(out, fig)

    controls = dict(sigma2=sigma2, eta=eta, batch_size=batch, start=start, noise_mode=mode,
                    steps=n_steps)
    return assemble(controls, [["sigma2", "eta", "batch_size"], ["start", "noise_mode", "steps"]],
                    status, out, update)
