"""Figures of the remark3_valley chapter's escape over a barrier: axis titles, intervals equal to
the claims', the predictions drawn."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from dsmlib.chapters import remark3_barrier as E
from dsmlib.figures import remark3_barrier as F
from dsmlib.theory import barrier as BR
from helpers import barrier_sweep


@pytest.fixture(scope="module")
def sweep():
    return barrier_sweep(steps=600, n_runs=16, seed=1)


def test_barrier_landscape(sweep):
    fig = F.barrier_landscape(sweep.problem)
    assert isinstance(fig, go.Figure)
    lay = fig.layout
    assert lay.yaxis.title.text == "clean loss L(θ)" and lay.yaxis2.title.text == "G(θ)"
    assert lay.xaxis2.title.text == "parameter θ"
    names = " ".join(t.name or "" for t in fig.data)
    assert "sharp minimum" in names and "flat minimum" in names and "barrier top" in names
    top = next(t for t in fig.data if (t.name or "").startswith("barrier top"))
    assert top.y[0] == pytest.approx(BR.barrier_height(sweep.problem))


def test_escape_plot_shows_the_claims_intervals(sweep):
    fig = F.escape_plot(sweep)
    lay = fig.layout
    assert lay.yaxis.title.text.startswith("P(escape within 600 steps)")
    assert lay.yaxis4.title.text == "mean escape time (steps)"
    assert [lay[f"xaxis{k}"].title.text for k in (4, 5, 6)] == ["σ²", "η", "B"]
    sharp = next(t for t in fig.data if t.name == "from the sharp minimum")
    idx, x = sweep.sweep("sigma2")
    for j, i in enumerate(idx[np.argsort(x)]):                 # error bars = Clopper-Pearson
        p, lo, hi = sweep.probability("sharp", i)
        assert sharp.y[j] == pytest.approx(p)
        assert sharp.error_y.array[j] == pytest.approx(hi - p)
        assert sharp.error_y.arrayminus[j] == pytest.approx(p - lo)
    pred = [t for t in fig.data if (t.name or "").endswith("diffusion prediction")]
    assert len(pred) == 6 and all(np.all((np.asarray(t.y) >= 0) & (np.asarray(t.y) <= 1)) for t in pred)
    html = F.escape_table(E.escape_rows(sweep)).data
    assert "<table" in html and "99% CI" in html and html.count("<tr>") == 1 + 2 * len(sweep.configs)


def test_constant_noise_table(sweep):
    """One row per level and start, with the escapes, the Clopper-Pearson interval and the
    diffusion's prediction (issue 31's control)."""
    rows = E.constant_noise_rows(sweep)
    assert [(r["start"], r["level"]) for r in rows] == [("sharp", 1.0), ("flat", 1.0)]
    assert rows[0]["noise_var"] == pytest.approx(sweep.matched_var)
    html = F.constant_noise_table(rows).data
    assert html.count("<tr>") == 3 and f"{rows[0]['escaped']}/{rows[0]['n_runs']}" in html
    assert f"{rows[1]['predicted_probability']:.3f}" in html
