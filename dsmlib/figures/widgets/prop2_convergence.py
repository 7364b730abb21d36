"""Live ipywidgets explorer of the ``prop2_convergence`` chapter (book layer; it needs a
running kernel, the static book uses plotly sliders).

The update function is exposed as ``widget.update`` so tests can drive it without a browser.
"""
from __future__ import annotations

from typing import Any

from .common import assemble, refuse, show

__all__ = ["paths_explorer"]


def paths_explorer(*, horizon: float = 0.5, n_paths: int = 3, refine: int = 8,
                   seed: int = 0) -> Any:
    """Proposition 2 live, on the two-parameter least-squares model: sample paths of (a) SGD
    with label noise, (b) Eq. (17) and (c) Eq. (16) on (b)'s Brownian paths.

    Controls: η (dyadic, so that it divides the horizon), σ², the batch size b and the seed.
    Moving one re-simulates ``n_paths`` paths of each process up to ``horizon``; the status line
    gives the largest distance between (b) and (c) at the horizon.
    """
    import ipywidgets as W
    import numpy as np

    from ...chapters.prop2_convergence import coupled_paths, prop2_problems
    from ..prop2_convergence import path_explorer as figure

    problem = prop2_problems(seed=seed)["least squares"]
    eta = W.SelectionSlider(options=[horizon / 2 ** k for k in range(1, 9)], value=horizon / 8,
                            description="η", continuous_update=False)
    sigma2 = W.FloatLogSlider(value=1.0, base=2, min=-4, max=3, step=0.5, description="σ²",
                              continuous_update=False)
    batch = W.IntSlider(value=1, min=1, max=problem.n, description="b", continuous_update=False)
    path_seed = W.IntText(value=seed, description="seed")
    status = W.HTML()
    out = W.Output()

    def update(*_: Any) -> None:
        try:
            st = coupled_paths(problem, eta=float(eta.value), horizon=horizon,
                               batch_size=int(batch.value), sigma2=float(sigma2.value),
                               n_paths=n_paths, refine=refine, seed=int(path_seed.value))
        except ValueError as err:
            refuse(out, status, err)
            return
        gap = float(np.linalg.norm(st["dsm"][-1] - st["sde"][-1], axis=1).max())
        status.value = (f"largest ‖Θ(T) − θ̄<sub>K</sub>‖ over the {n_paths} paths: {gap:.3g} "
                        f"(η = {eta.value:g}, {round(horizon / eta.value)} steps)")
        fig = figure([st], [float(eta.value)], [f"σ² = {sigma2.value:.3g}"])
        fig.update_layout(sliders=[], updatemenus=[], height=520, width=620)
        show(out, fig)

    controls = dict(eta=eta, sigma2=sigma2, batch_size=batch, seed=path_seed)
    return assemble(controls, [["eta", "sigma2"], ["batch_size", "seed"]], status, out, update)
