"""Figures of the ``prop3_regularizer`` chapter (dsmlib.figures.prop3_regularizer), built from
small synthetic results: they build, title every axis, and draw the claims' intervals."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.chapters.prop3_regularizer import PerturbationCurve, StrengthCase
from dsmlib.figures.prop3_regularizer import perturbation_plot, strength_loglog
from dsmlib.foundation.claims import quantile
from dsmlib.foundation.stats import loglog_fit
from helpers import missing_axis_titles


@pytest.fixture
def cases():
    out = []
    for setting in ("least squares", "tanh MLP"):
        for s2, b in ((0.5, 2), (2.0, 8), (1.0, 4)):
            pred = 0.1 * s2 / b * (3.0 if setting == "tanh MLP" else 1.0)
            out.append(StrengthCase(setting, s2, b, 0.1, pred * 1.01, 0.02 * pred, pred))
    return out


def test_strength_loglog(cases):
    fig = strength_loglog(cases)
    fig.to_json()
    assert missing_axis_titles(fig) == []
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    points = [tr for tr in fig.data if tr.mode == "markers"]
    assert [tr.name for tr in points] == ["least squares", "tanh MLP"]
    np.testing.assert_allclose(points[0].error_y.array,
                               quantile() * np.array([c.se for c in cases[:3]]))
    fit = loglog_fit(np.array([c.predicted for c in cases]),
                     np.array([c.measured for c in cases]), np.array([c.se for c in cases]))
    half = quantile() * fit.se
    assert (f"fitted slope {fit.slope:.4f} [{fit.slope - half:.4f}, {fit.slope + half:.4f}] "
            "(99 %),<br>lack of fit p =") in fig.data[-1].name


def test_perturbation_plot():
    curves = [PerturbationCurve(name, np.array([1e-3, 1e-1, 1.0]), np.array([1.0, 1.02, 1.4]),
                                np.array([0.01, 0.01, 0.02]), 2.0) for name in ("a", "b")]
    fig = perturbation_plot(curves)
    fig.to_json()
    assert missing_axis_titles(fig) == []
    assert [tr.name for tr in fig.data] == ["a", "b"]
    np.testing.assert_allclose(fig.data[0].error_y.array, quantile() * np.array([0.01, 0.01, 0.02]))
