"""Live ipywidgets explorer of the ``ols`` chapter (book layer; it needs a running kernel, the
static book uses plotly sliders).

Each explorer re-simulates when a control moves. Its update function is exposed as
``widget.update`` so tests (and papermill runs) can drive it without a browser.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...chapters.ols import COVARIANCES, Panel, run_panel
from ...theory import least_squares as ols
from .common import assemble


def ols_explorer(*, steps: int = 100_000, n: int = 100, seed: int = 0,
                 replace: bool = False) -> Any:
    """An explorer of the least-squares cloud over σ², η, B and Σ.

    Moving a control re-runs label-noisy SGD (``steps`` iterations) and redraws the cloud with
    its empirical, exact and paper ellipses. A learning rate beyond the mean-square stability
    limit shows that limit instead of a plot.
    """
    import ipywidgets as W
    from IPython.display import display

    from ...figures.ols import figure3

    sigma2 = W.FloatLogSlider(value=0.5, base=2, min=-4, max=2, step=0.25, description="σ²",
                              continuous_update=False)
    eta = W.FloatLogSlider(value=0.01, base=10, min=-4, max=-1, step=0.05, description="η",
                           readout_format=".4f", continuous_update=False)
    batch = W.IntSlider(value=5, min=1, max=50, description="B", continuous_update=False)
    cov = W.Dropdown(options=list(COVARIANCES), value="Σ = 20·I", description="Σ")
    status = W.HTML()
    out = W.Output()

    def update(*_: Any) -> None:
        title = f"{cov.value}, σ² = {sigma2.value:.3g}, η = {eta.value:.4g}, B = {batch.value}"
        panel = Panel("live", title, COVARIANCES[cov.value], float(sigma2.value), title)
        out.clear_output(wait=True)
        try:
            r = run_panel(panel, eta=float(eta.value), batch_size=int(batch.value), steps=steps,
                          n=n, data_seed=seed, sgd_seed=seed, replace=replace)
        except ValueError as err:   # e.g. eta beyond the stability limit: say so, plot nothing
            status.value = f"<b style='color:#d62728'>{err}</b>"
            return
        tr_emp, tr_exact = np.trace(r.empirical_cov), np.trace(r.exact_cov)
        limit = ols.stability_limit(r.problem, int(batch.value), replace=replace)
        status.value = (f"tr Cov: empirical {tr_emp:.3g}, exact {tr_exact:.3g}, paper "
                        f"{np.trace(r.paper_cov):.3g} &nbsp;|&nbsp; stability limit η_max = "
                        f"{limit:.4g}")
        fig = figure3([r])
        fig.update_layout(height=520, width=560, title=None)
        with out:
            display(fig)

    controls = dict(sigma2=sigma2, eta=eta, batch_size=batch, cov=cov)
    return assemble(controls, [["sigma2", "eta"], ["batch_size", "cov"]], status, out, update)


__all__ = ["ols_explorer"]
