"""Live ipywidgets explorer of the ``ols`` chapter (book layer; it needs a running kernel, the
static book uses plotly sliders).

Each explorer re-simulates when a control moves. Its update function is exposed as
``widget.update`` so tests (and papermill runs) can drive it without a browser.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...chapters.ols import BETA_STAR, COVARIANCES, Panel, run_panel
from ...theory import least_squares as ols
from .common import assemble, refuse, show


def ols_explorer(*, steps: int = 100_000, n: int = 100, seed: int = 0,
                 replace: bool = False) -> Any:
    """An explorer of the least-squares cloud over σ², η, B and Σ.

    Moving a control re-runs label-noisy SGD (``steps`` iterations) and redraws the cloud with
    its empirical, exact and paper ellipses. A learning rate beyond the mean-square stability
    limit shows that limit instead of a plot.
    """
    import ipywidgets as W

    from ..ols import figure3

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
        problem = ols.make_problem(n, COVARIANCES[cov.value], BETA_STAR, float(sigma2.value),
                                   seed=seed)
        limit = ols.stability_limit(problem, int(batch.value), replace=replace)
        if eta.value >= limit:      # no stationary cloud to draw: say why, plot nothing
            refuse(out, status, ValueError(
                f"η = {eta.value:.4g} is at or beyond the mean-square stability limit "
                f"η_max = {limit:.4g} for {cov.value}, B = {batch.value}: the iterates' second "
                f"moment grows without bound and there is no stationary cloud. "
                f"Choose η < {limit:.4g}."))
            return
        panel = Panel("live", title, COVARIANCES[cov.value], float(sigma2.value), title)
        try:
            r = run_panel(panel, eta=float(eta.value), batch_size=int(batch.value), steps=steps,
                          n=n, data_seed=seed, sgd_seed=seed, replace=replace)
        except ValueError as err:   # e.g. too few steps for the burn-in at this η
            refuse(out, status, err)
            return
        tr_emp, tr_exact = np.trace(r.empirical_cov), np.trace(r.exact_cov)
        status.value = (f"tr Cov: empirical {tr_emp:.3g}, exact {tr_exact:.3g}, paper "
                        f"{np.trace(r.paper_cov):.3g} &nbsp;|&nbsp; stability limit η_max = "
                        f"{limit:.4g}")
        fig = figure3([r])
        fig.update_layout(height=520, width=560, title=None)
        fig.update_annotations(text=title)      # the panel's title, without a panel letter
        show(out, fig)

    controls = dict(sigma2=sigma2, eta=eta, batch_size=batch, cov=cov)
    return assemble(controls, [["sigma2", "eta"], ["batch_size", "cov"]], status, out, update)


__all__ = ["ols_explorer"]
