"""Figures of the ``prop1_noise`` chapter (dsmlib.figures.prop1_noise): the noise explorer
builds from small states, titles its axes, and shows state j * len(batch_sizes) + i for noise
level j and batch size i."""
from __future__ import annotations

import numpy as np

from dsmlib.figures.prop1_noise import noise_explorer
from helpers import missing_axis_titles


def test_noise_explorer_order_and_axes():
    batch_sizes, labels = [2, 8, 32], ["σ² = 0.5", "σ² = 2"]
    nb = len(batch_sizes)
    states = []
    for j in range(len(labels)):
        for i, b in enumerate(batch_sizes):
            k = j * nb + i
            pts = np.column_stack([np.full(4, float(k)), np.arange(4.0)])
            states.append(dict(xi_star=pts, xi_uln=pts + 0.5,
                               cov_star=np.eye(2) / b, cov_uln=(j + 1) * np.eye(2) / b))
    fig = noise_explorer(states, batch_sizes, labels)
    fig.to_json()
    assert missing_axis_titles(fig) == []

    def shown(visible) -> set[float]:
        return {tr.x[0] for tr, v in zip(fig.data, visible)
                if v and tr.name == "ξ* (minibatch noise) samples"}

    assert shown([tr.visible for tr in fig.data]) == {0.0}
    for j, button in enumerate(fig.layout.updatemenus[0].buttons):
        assert button.label == labels[j]
        steps = button.args[1]["sliders"][0]["steps"]
        assert [s["label"] for s in steps] == ["2", "8", "32"]
        assert [shown(s["args"][0]["visible"]) for s in steps] == [{j * nb + i} for i in range(nb)]
        half = 2.6 * np.sqrt(max(1.0, j + 1.0) / 2)               # largest sd in block j (b = 2)
        np.testing.assert_allclose(button.args[1]["xaxis.range"], [-half, half])
