"""Data sets that need no download (models and data layer).

Today: scikit-learn's bundled 8x8 digits (1,797 real images, 10 classes), the offline data of
the deep-learning chapters and of the tests.
"""
from __future__ import annotations

import numpy as np

from ..foundation.checks import check_int

__all__ = ["DIGITS_SIZE", "digits"]

DIGITS_SIZE = 1797


def digits(n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n`` digits (all by default): images ``(n, 1, 8, 8)`` scaled to [0, 1] and
    integer labels ``(n,)``."""
    from sklearn.datasets import load_digits
    n = DIGITS_SIZE if n is None else check_int("n", n, minimum=1, maximum=DIGITS_SIZE)
    d = load_digits()
    return d.images[:n, None] / 16.0, d.target[:n].astype(np.int64)
