"""The live explorer of the prop2_convergence chapter, driven without a browser."""
from __future__ import annotations


def test_paths_explorer_updates():
    from dsmlib.figures.widgets.prop2_convergence import paths_explorer
    box = paths_explorer(n_paths=2)
    first = box.status.value
    assert "‖Θ(T) − θ̄<sub>K</sub>‖" in first
    box.controls["eta"].value = box.controls["eta"].options[0]
    assert box.status.value != first and "steps" in box.status.value
    box.controls["batch_size"].value = 4
    box.controls["sigma2"].value = 4.0
    assert "‖Θ(T) − θ̄<sub>K</sub>‖" in box.status.value
