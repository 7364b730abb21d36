"""The live explorer, driven without a browser: moving a control re-simulates."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from dsmlib.book.widgets.ols import ols_explorer


def test_explorer_updates_and_refuses_unstable_eta():
    box = ols_explorer(steps=3000)
    assert "tr Cov: empirical" in box.status.value
    first = box.status.value
    box.controls["sigma2"].value = 2.0          # observe() re-runs the simulation
    assert box.status.value != first and "tr Cov: empirical" in box.status.value
    box.controls["eta"].value = 0.1            # beyond the stability limit for Σ = 20·I
    assert "stability limit" in box.status.value and "eta_max" in box.status.value
    box.controls["eta"].value = 0.01
    box.controls["cov"].value = "Σ = diag(10, 100)"
    assert "tr Cov: empirical" in box.status.value


def test_noise_explorer_updates():
    from dsmlib.book.widgets.prop1_noise import noise_explorer
    box = noise_explorer(n_samples=500)
    first = box.status.value
    assert "tr Cov ξ*" in first
    box.controls["batch_size"].value = 32
    assert box.status.value != first
    box.controls["replace"].value = False
    assert "tr Cov ξ^ULN" in box.status.value


def test_assemble_places_every_control_once_and_draws():
    import ipywidgets as W

    from dsmlib.book.widgets.common import assemble

    calls = []
    a, b = W.IntSlider(value=1), W.IntSlider(value=2)
    box = assemble(dict(a=a, b=b), [["b"], ["a"]], W.HTML(), W.Output(), lambda *_: calls.append(1))
    assert len(calls) == 1 and box.controls == dict(a=a, b=b)
    assert box.children[0].children == (b,) and box.children[1].children == (a,)
    a.value = 5
    assert len(calls) == 2
    with pytest.raises(ValueError, match="^rows must place every control exactly once"):
        assemble(dict(a=a, b=b), [["a"]], W.HTML(), W.Output(), lambda *_: None)
