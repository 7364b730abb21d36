"""Argument checks (dsmlib.foundation.checks): clear ValueErrors naming the parameter."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dsmlib.foundation import checks


def test_accepted_values_come_back_normalised():
    assert checks.check_real("x", np.float32(1.5)) == 1.5
    assert checks.check_positive("eta", 0.1) == 0.1
    assert checks.check_nonnegative("sigma2", 0) == 0.0
    assert checks.check_probability("p", 1) == 1.0
    assert checks.check_int("n", np.int64(3), minimum=1) == 3
    assert checks.check_int("n", 4.0) == 4
    assert checks.check_choice("mode", "a", ["a", "b"]) == "a"
    np.testing.assert_array_equal(checks.check_psd("cov", [[2, 1], [1, 2]], dim=2),
                                  [[2.0, 1.0], [1.0, 2.0]])


@pytest.mark.parametrize("call, match", [
    (lambda: checks.check_real("x", math.nan), "^x must be finite"),
    (lambda: checks.check_real("x", "one"), "^x "),
    (lambda: checks.check_positive("eta", 0.0), "^eta must be > 0"),
    (lambda: checks.check_nonnegative("sigma2", -1e-9), "^sigma2 must be >= 0"),
    (lambda: checks.check_probability("p", 1.5), r"^p must lie in \[0, 1\]"),
    (lambda: checks.check_int("n", True), "^n must be an integer"),
    (lambda: checks.check_int("n", 2.5), "^n must be an integer"),
    (lambda: checks.check_int("n", 0, minimum=1), "^n must be >= 1"),
    (lambda: checks.check_int("n", 9, maximum=8), "^n must be <= 8"),
    (lambda: checks.check_choice("mode", "c", ["a", "b"]), r"^mode must be one of \['a', 'b'\]"),
    (lambda: checks.check_psd("cov", [[1, 0]]), "^cov must be a square matrix"),
    (lambda: checks.check_psd("cov", np.eye(3), dim=2), "^cov must be 2x2"),
    (lambda: checks.check_psd("cov", [[1, 2], [0, 1]]), "^cov must be symmetric"),
    (lambda: checks.check_psd("cov", [[1, 2], [2, 1]]), "^cov must be positive semi-definite"),
    (lambda: checks.check_psd("cov", [[1, np.inf], [np.inf, 1]]), "^cov must contain only finite"),
])
def test_bad_values_name_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
