"""The settings of the noise chapters (dsmlib.models.settings): seeded, float64, labels from
the stated teacher."""
from __future__ import annotations

import pytest
import torch

from dsmlib.models import settings
from dsmlib.models.networks import tanh_mlp


def test_least_squares_setting():
    s = settings.least_squares_setting(50, theta=(0.3, 1.8), seed=2)
    assert s.n == 50 and s.d == 2 and s.X.dtype == torch.float64
    torch.testing.assert_close(s.y_clean[:, 0], s.X @ torch.ones(2, dtype=torch.float64))
    torch.testing.assert_close(s.model(s.X)[:, 0], s.X @ torch.tensor([0.3, 1.8], dtype=torch.float64))
    again = settings.least_squares_setting(50, theta=(0.3, 1.8), seed=2)
    assert torch.equal(again.X, s.X)
    assert not torch.equal(settings.least_squares_setting(50, seed=3).X, s.X)


def test_mlp_setting_is_labelled_by_the_teacher():
    s = settings.mlp_setting(20, in_dim=3, hidden=4, seed=5)
    teacher = tanh_mlp(3, 4, 1, seed=6, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(s.y_clean, teacher(s.X))
    assert s.d == (3 + 1) * 4 + (4 + 1) * 1
    assert torch.equal(settings.mlp_setting(20, in_dim=3, hidden=4, seed=5).X, s.X)


def test_cnn_setting_on_digits():
    s = settings.cnn_setting(12, width=2, seed=0)
    assert s.X.shape == (12, 1, 8, 8) and s.y_clean.shape == (12, 10)
    assert s.X.dtype == s.y_clean.dtype == torch.float64
    with pytest.raises(ValueError, match="n must be"):
        settings.cnn_setting(1)
