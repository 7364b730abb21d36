"""The live valley explorer, driven without a browser: moving a control re-runs SGD."""
from __future__ import annotations

import html

import pytest

pytest.importorskip("ipywidgets")

from dsmlib.figures.widgets.remark3_valley import valley_explorer


def test_valley_explorer_updates_and_refuses_unstable_eta():
    box = valley_explorer(steps=500, n_runs=2)
    first = box.status.value
    assert "final G / G_min" in first and "ησ²m₂/B" in first
    box.controls["sigma2"].value = 4.0
    assert box.status.value != first and "drift speed" in box.status.value
    box.controls["noise_mode"].value = "fixed"
    assert "final G / G_min" in box.status.value
    box.controls["start"].value = 4.0
    box.controls["eta"].value = 0.2                  # beyond 2 / sharpness = 0.125 at θ = (4, 1/4)
    assert "eta must be < 2/sharpness" in html.unescape(box.status.value)   # escaped HTML
    assert box.output.outputs == ()                   # the message alone (issue 18, item 6)
