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


def test_bounds_are_inclusive():
    """The edges of every range are allowed: 0 and 1 for a probability, ``minimum`` and
    ``maximum`` themselves for an integer."""
    assert checks.check_probability("p", 0) == 0.0
    assert checks.check_probability("p", 0.5) == 0.5
    assert checks.check_int("n", 1, minimum=1) == 1
    assert checks.check_int("n", 8, maximum=8) == 8
    assert checks.check_nonnegative("s", 0.0) == 0.0


@pytest.mark.parametrize("check", [checks.check_positive, checks.check_nonnegative,
                                   checks.check_probability])
def test_non_finite_values_name_the_parameter(check):
    with pytest.raises(ValueError, match="^eta must be finite"):
        check("eta", math.inf)
    with pytest.raises(ValueError, match="^eta must be a real number"):
        check("eta", "x")


def test_psd_returns_floats_and_scales_its_tolerance():
    """The tolerance of the symmetry and eigenvalue checks is ``tol * max(1, max |m|)``:
    absolute for small matrices, relative for large ones; never a relative tolerance on top."""
    out = checks.check_psd("cov", [[2, 1], [1, 2]])
    assert out.dtype == np.float64
    # PSD with a zero eigenvalue, and eigenvalues just at the tolerance, are accepted
    checks.check_psd("cov", [[1, 1], [1, 1]])
    checks.check_psd("cov", np.diag([1.0, -1e-10]))
    checks.check_psd("cov", np.diag([100.0, -9e-9]))              # tol * 100 = 1e-8
    checks.check_psd("cov", [[100.0, 50.0], [50.0 + 5e-9, 100.0]])  # asymmetry < 1e-8
    with pytest.raises(ValueError, match="^cov must be symmetric"):
        checks.check_psd("cov", [[1.0, 1.5e-10], [0.0, 1.0]])    # > tol * 1
    with pytest.raises(ValueError, match="^cov must be symmetric"):
        checks.check_psd("cov", [[1.0, 100.0], [100.0 + 1e-4, 1.0]])
    with pytest.raises(ValueError, match="^cov must be positive semi-definite"):
        checks.check_psd("cov", np.diag([1.0, -2e-10]))
    with pytest.raises(ValueError, match="^cov must be a square matrix of real numbers"):
        checks.check_psd("cov", [["a", "b"], ["c", "d"]])
