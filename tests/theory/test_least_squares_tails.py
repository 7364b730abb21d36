"""The moment-stability limits of SGD on least squares (heavy tails of the stationary law)."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.theory import least_squares as ols
from dsmlib.theory.least_squares_tails import (fourth_moment_limit, moment_operator,
                                               moment_stability_limit, operator_coefficients)


@pytest.fixture(scope="module")
def problem():
    return ols.make_problem(100, 100 * np.eye(2), [1.0, 1.0], 0.5, seed=0)


@pytest.mark.parametrize("replace", [False, True])
def test_second_order_monte_carlo_limit_matches_the_exact_one(problem, replace):
    """The p = 2 limit from sampled minibatches agrees with the exact eta_max to 0.5 %
    (its Monte-Carlo error at 2e5 draws is ~0.1 %)."""
    exact = ols.stability_limit(problem, 5, replace=replace)
    mc = moment_stability_limit(problem, 5, replace=replace, order=2)
    assert mc == pytest.approx(exact, rel=5e-3)


def test_fourth_moment_limit_lies_below_the_second(problem):
    e2 = ols.stability_limit(problem, 5, replace=False)
    e4 = fourth_moment_limit(problem, 5, replace=False)
    assert 0.6 * e2 < e4 < e2


def test_operator_is_the_expected_kronecker_power_for_a_deterministic_h():
    """With every minibatch matrix equal to H, E[(I - eta H)^{(x)2}] = (I - eta H) (x) (I - eta H)."""
    H = np.array([[2.0, 0.5], [0.5, 1.0]])
    moments = [H, np.einsum("ab,cd->abcd", H, H)]
    A = np.eye(2) - 0.1 * H
    got = moment_operator(operator_coefficients(moments, 2, 2), 0.1)
    want = np.einsum("ab,cd->acbd", A, A).reshape(4, 4)
    np.testing.assert_allclose(got, want, atol=1e-14)


def test_bad_order_is_refused(problem):
    with pytest.raises(ValueError, match="order"):
        moment_stability_limit(problem, 5, order=5)
