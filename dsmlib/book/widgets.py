"""Live ipywidgets explorers (book layer; they need a running kernel, the static book uses
plotly sliders).

Each explorer re-simulates when a control moves. Its update function is exposed as
``widget.update`` so tests (and papermill runs) can drive it without a browser.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..chapters.ols import COVARIANCES, Panel, run_panel
from ..foundation.stats import covariance
from ..theory import least_squares as ols


def ols_explorer(*, steps: int = 100_000, n: int = 100, seed: int = 0,
                 replace: bool = False) -> Any:
    """An explorer of the least-squares cloud over σ², η, B and Σ.

    Moving a control re-runs label-noisy SGD (``steps`` iterations) and redraws the cloud with
    its empirical, exact and paper ellipses. A learning rate beyond the mean-square stability
    limit shows that limit instead of a plot.
    """
    import ipywidgets as W
    from IPython.display import display

    from ..figures.ols import figure3

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

    for w in (sigma2, eta, batch, cov):
        w.observe(update, names="value")
    box = W.VBox([W.HBox([sigma2, eta]), W.HBox([batch, cov]), status, out])
    box.update = update  # type: ignore[attr-defined]
    box.controls = dict(sigma2=sigma2, eta=eta, batch_size=batch, cov=cov)  # type: ignore[attr-defined]
    box.status = status  # type: ignore[attr-defined]
    box.output = out  # type: ignore[attr-defined]
    update()
    return box


def noise_explorer(*, n_samples: int = 4000, seed: int = 0) -> Any:
    """Prop. 1 live: samples of ξ* and ξ^ULN for the two-parameter least-squares model.

    Controls: σ², b, η, and the minibatch scheme. Moving one re-samples the noise terms and
    redraws them with their predicted 2σ ellipses.
    """
    import ipywidgets as W
    from IPython.display import display

    from ..chapters.prop1_noise import sample_noise_terms
    from ..figures.prop1_noise import noise_explorer as figure
    from ..models.settings import least_squares_setting

    setting = least_squares_setting()
    sigma2 = W.FloatLogSlider(value=0.5, base=2, min=-4, max=2, step=0.25, description="σ²",
                              continuous_update=False)
    batch = W.IntSlider(value=8, min=1, max=setting.n, description="b", continuous_update=False)
    eta = W.FloatLogSlider(value=0.1, base=10, min=-3, max=0, step=0.1, description="η",
                           continuous_update=False)
    replace = W.Checkbox(value=True, description="with replacement")
    status = W.HTML()
    out = W.Output()

    def update(*_: Any) -> None:
        out.clear_output(wait=True)
        try:
            r = sample_noise_terms(setting, sigma2=float(sigma2.value), batch_size=int(batch.value),
                                   eta=float(eta.value), n_samples=n_samples,
                                   replacement=bool(replace.value), n_real_steps=0, seed=seed)
        except ValueError as err:
            status.value = f"<b style='color:#d62728'>{err}</b>"
            return
        tr = lambda a: float(np.trace(covariance(a)))  # noqa: E731
        status.value = (f"tr Cov ξ*: measured {tr(r.xi_star):.3g}, Prop. 1 "
                        f"{np.trace(r.predicted['cov_star_paper']):.3g}, exact "
                        f"{np.trace(r.predicted['cov_star']):.3g} &nbsp;|&nbsp; tr Cov ξ^ULN: "
                        f"measured {tr(r.xi_uln):.3g}, Prop. 1 "
                        f"{np.trace(r.predicted['cov_uln_paper']):.3g}")
        state = dict(xi_star=r.xi_star[:800], xi_uln=r.xi_uln[:800],
                     cov_star=r.predicted["cov_star"], cov_uln=r.predicted["cov_uln"])
        fig = figure([state], [int(batch.value)], [f"σ² = {sigma2.value:.3g}"])
        fig.update_layout(sliders=[], updatemenus=[], height=520, width=560)
        with out:
            display(fig)

    for w in (sigma2, batch, eta, replace):
        w.observe(update, names="value")
    box = W.VBox([W.HBox([sigma2, batch]), W.HBox([eta, replace]), status, out])
    box.update = update  # type: ignore[attr-defined]
    box.controls = dict(sigma2=sigma2, batch_size=batch, eta=eta, replace=replace)  # type: ignore[attr-defined]
    box.status = status  # type: ignore[attr-defined]
    update()
    return box


__all__ = ["ols_explorer", "noise_explorer"]
