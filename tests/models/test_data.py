"""The offline data sets (dsmlib.models.data)."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.models import data


def test_digits_are_real_images_in_unit_range():
    X, y = data.digits(100)
    assert X.shape == (100, 1, 8, 8) and y.shape == (100,) and y.dtype == np.int64
    assert X.min() == 0.0 and X.max() == 1.0
    assert set(y.tolist()) == set(range(10))
    X_all, _ = data.digits()
    assert X_all.shape[0] == data.DIGITS_SIZE
    np.testing.assert_array_equal(X_all[:100], X)
    with pytest.raises(ValueError, match="n must be"):
        data.digits(data.DIGITS_SIZE + 1)
