"""Tests of dsmlib.figures.prop2_convergence."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.chapters import prop2_convergence as p2
from dsmlib.figures import prop2_convergence as figs


@pytest.fixture(scope="module")
def runs():
    problems = p2.prop2_problems()
    etas = [0.125, 0.0625, 0.03125]
    sweeps = [p2.strong_sweep(problems[n], n, etas=etas, horizon=0.25, refine=2, n_paths=20,
                              batch_size=1, sigma2=1.0, fixed_diffusion=f, seed=0)
              for n in ("least squares", "tanh MLP") for f in (False, True)]
    weak = p2.weak_comparison(problems["least squares"], "least squares", etas=etas,
                              horizon=0.25, n_paths=60, batch_size=1, sigma2=1.0,
                              n_directions=2, n_groups=5, seed=0)
    return sweeps, weak, problems


def test_strong_error_figure(runs):
    sweeps, _, _ = runs
    fig = figs.strong_error_figure(sweeps, alpha=p2.LOF_ALPHA)
    assert len(fig.data) == 2 * len(sweeps)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    fits = [t.name for t in fig.data if "fit:" in t.name]
    assert len(fits) == len(sweeps) and all("lack of fit p" in n for n in fits)
    assert str(figs.local_slopes_table(sweeps).data).count("<tr>") == len(sweeps) + 1


def test_weak_and_moments_figures(runs):
    _, weak, _ = runs
    fig = figs.weak_figure(weak, alpha=p2.LOF_ALPHA)
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.title.text
    assert any("naive" in t.name for t in fig.data)
    m = figs.moments_figure(weak)
    assert len(m.data) == 2


def test_fit_label_mentions_widening():
    from dsmlib.foundation.stats import LogLogFit
    f = LogLogFit.from_chi2(2.0, 0.0, 0.1, 40.0, 4)
    assert "×3.2" in figs.fit_label(f, f.widened_se(0.01), 0.01)
    g = LogLogFit.from_chi2(2.0, 0.0, 0.1, 2.0, 4)
    assert "×" not in figs.fit_label(g, g.se, 0.01)


def test_path_explorer(runs):
    _, _, problems = runs
    states = p2.path_explorer_states(problems["least squares"], etas=[0.25, 0.125],
                                     sigma2s=[1.0, 4.0], horizon=0.5, batch_size=1, n_paths=2)
    fig = figs.path_explorer(states, [0.25, 0.125], ["σ² = 1", "σ² = 4"])
    assert len(fig.data) == 4 * 3 * 2
    assert len(fig.layout.sliders[0].steps) == 2 and len(fig.layout.updatemenus[0].buttons) == 2
    assert sum(t.visible for t in fig.data) == 3 * 2
    assert np.isfinite(fig.layout.xaxis.range).all()
