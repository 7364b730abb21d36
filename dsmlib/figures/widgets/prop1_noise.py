"""Live ipywidgets explorer of the ``prop1_noise`` chapter (book layer; it needs a running
kernel, the static book uses plotly sliders).

The update function is exposed as ``widget.update`` so tests can drive it without a browser.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...foundation.stats import covariance, thin
from .common import assemble, refuse, show

__all__ = ["noise_explorer"]


def noise_explorer(*, n_samples: int = 4000, max_points: int = 800, seed: int = 0) -> Any:
    """Prop. 1 live: samples of ξ* and ξ^ULN for the two-parameter least-squares model.

    Controls: σ², b, η, and the minibatch scheme. Moving one re-samples the noise terms and
    redraws them with their predicted 2σ ellipses (``max_points`` of the draws are plotted; the
    traces in the status line use all of them).
    """
    import ipywidgets as W

    from ...chapters.prop1_noise import sample_noise_terms
    from ..prop1_noise import noise_explorer as figure
    from ...models.settings import least_squares_setting

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
        try:
            r = sample_noise_terms(setting, sigma2=float(sigma2.value), batch_size=int(batch.value),
                                   eta=float(eta.value), n_samples=n_samples,
                                   replacement=bool(replace.value), n_real_steps=0, seed=seed)
        except ValueError as err:
            refuse(out, status, err)
            return
        tr = lambda a: float(np.trace(covariance(a)))  # noqa: E731
        status.value = (f"tr Cov ξ*: measured {tr(r.xi_star):.3g}, Prop. 1 "
                        f"{np.trace(r.predicted['cov_star_paper']):.3g}, exact "
                        f"{np.trace(r.predicted['cov_star']):.3g} &nbsp;|&nbsp; tr Cov ξ^ULN: "
                        f"measured {tr(r.xi_uln):.3g}, Prop. 1 "
                        f"{np.trace(r.predicted['cov_uln_paper']):.3g}")
        state = dict(xi_star=thin(r.xi_star, max_points), xi_uln=thin(r.xi_uln, max_points),
                     cov_star=r.predicted["cov_star"], cov_uln=r.predicted["cov_uln"])
        fig = figure([state], [int(batch.value)], [f"σ² = {sigma2.value:.3g}"])
        fig.update_layout(sliders=[], updatemenus=[], height=520, width=560)
        show(out, fig)

    controls = dict(sigma2=sigma2, batch_size=batch, eta=eta, replace=replace)
    return assemble(controls, [["sigma2", "batch_size"], ["eta", "replace"]], status, out, update)
