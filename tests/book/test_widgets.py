"""The live explorer, driven without a browser: moving a control re-simulates."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from dsmlib.figures.widgets.ols import ols_explorer


def test_explorer_updates_and_refuses_unstable_eta():
    box = ols_explorer(steps=3000)
    assert "tr Cov: empirical" in box.status.value
    first = box.status.value
    box.controls["sigma2"].value = 2.0          # observe() re-runs the simulation
    assert box.status.value != first and "tr Cov: empirical" in box.status.value
    box.controls["eta"].value = 0.1            # beyond the stability limit for Σ = 20·I
    assert "stability limit" in box.status.value and "η_max" in box.status.value
    assert "panel (live)" not in box.status.value
    box.controls["eta"].value = 0.01
    box.controls["cov"].value = "Σ = diag(10, 100)"
    assert "tr Cov: empirical" in box.status.value


def test_noise_explorer_updates():
    from dsmlib.figures.widgets.prop1_noise import noise_explorer
    box = noise_explorer(n_samples=500)
    first = box.status.value
    assert "tr Cov ξ*" in first
    box.controls["batch_size"].value = 32
    assert box.status.value != first
    box.controls["replace"].value = False
    assert "tr Cov ξ^ULN" in box.status.value


def test_assemble_places_every_control_once_and_draws():
    import ipywidgets as W

    from dsmlib.figures.widgets.common import assemble

    calls = []
    a, b = W.IntSlider(value=1), W.IntSlider(value=2)
    box = assemble(dict(a=a, b=b), [["b"], ["a"]], W.HTML(), W.Output(), lambda *_: calls.append(1))
    assert len(calls) == 1 and box.controls == dict(a=a, b=b)
    assert box.children[0].children == (b,) and box.children[1].children == (a,)
    a.value = 5
    assert len(calls) == 2
    with pytest.raises(ValueError, match="^rows must place every control exactly once"):
        assemble(dict(a=a, b=b), [["a"]], W.HTML(), W.Output(), lambda *_: None)


def _refuse_prop1(box, _):
    box.controls["eta"].value = 1.0     # refused by the patched sampler (see the test)


REFUSALS = {   # explorer, small settings, how to make it refuse, what its message says
    "ols": ("dsmlib.figures.widgets.ols:ols_explorer", dict(steps=3000),
            lambda box, _: setattr(box.controls["eta"], "value", 0.1), "stability limit"),
    "prop1_noise": ("dsmlib.figures.widgets.prop1_noise:noise_explorer", dict(n_samples=300),
                    _refuse_prop1, "eta must be"),
    "prop2_convergence": ("dsmlib.figures.widgets.prop2_convergence:paths_explorer",
                          dict(n_paths=2),
                          lambda box, _: setattr(box.controls["seed"], "value", -1), "seed"),
    "remark3_valley": ("dsmlib.figures.widgets.remark3_valley:valley_explorer",
                       dict(steps=500, n_runs=2),
                       lambda box, _: (setattr(box.controls["start"], "value", 4.0),
                                       setattr(box.controls["eta"], "value", 0.2)),
                       "2/sharpness"),
}


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_refused_input_leaves_the_message_alone(name, monkeypatch):
    """Issue 18, item 6: after refused input the output holds no figure from an earlier
    setting, only the status line's message; valid input brings a figure back."""
    import importlib

    from dsmlib.figures.common import setup

    setup()
    target, kw, provoke, message = REFUSALS[name]
    module, func = target.split(":")
    if name == "prop1_noise":     # its controls cannot refuse: its sampler refuses η = 1
        from dsmlib.chapters import prop1_noise as chapter
        real = chapter.sample_noise_terms

        def sampler(*args, eta, **kw):
            if eta >= 1.0:
                raise ValueError(f"eta must be < 1, got {eta:g}")
            return real(*args, eta=eta, **kw)
        monkeypatch.setattr(chapter, "sample_noise_terms", sampler)
    box = getattr(importlib.import_module(module), func)(**kw)
    assert len(box.output.outputs) == 1
    assert "application/vnd.plotly.v1+json" in box.output.outputs[0]["data"]
    provoke(box, monkeypatch)
    assert box.output.outputs == (), f"{name}: a figure is left standing after refused input"
    assert message in box.status.value and "color:#d62728" in box.status.value
    box.controls["sigma2"].value = 2.0                    # any valid move redraws
    if name in ("ols", "remark3_valley", "prop1_noise"):
        box.controls["eta"].value = 0.01
    if name == "prop2_convergence":
        box.controls["seed"].value = 1
    assert len(box.output.outputs) == 1, f"{name}: no figure after valid input"
