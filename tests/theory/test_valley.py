"""The valley models: gradients, G, the valley's coordinates, and the minimum-G point against
its closed forms."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from dsmlib.theory import valley as V
from dsmlib.theory.gradient_norm import gradient_norm as generic_gradient_norm
from dsmlib.theory.jacobians import per_sample_jacobians


@pytest.mark.parametrize("beta", [1.0, 2.5, -0.7])
def test_scalar_minimum_is_the_balanced_point(beta):
    p = V.scalar_product_problem(32, beta=beta, seed=1)
    assert float(p.a[0]) == pytest.approx(1.0, rel=1e-12)          # m2 normalised to 1
    lp, closed = V.min_gradnorm_point(p), V.scalar_min_gradnorm(beta, 1.0)
    assert lp.G == pytest.approx(2 * abs(beta), rel=1e-10) and closed.G == pytest.approx(2 * abs(beta))
    for a, b in ((lp.u, closed.u), (lp.v, closed.v), (lp.w, closed.w)):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)
    assert float(closed.u[0]) == pytest.approx(np.sqrt(abs(beta)))
    assert float(closed.v[0]) == pytest.approx(np.copysign(np.sqrt(abs(beta)), beta))


@pytest.mark.parametrize("seed", range(5))
def test_lp_minimum_equals_the_best_basic_solution(seed):
    p = V.diagonal_problem(3, 6, seed=seed)
    lp, enum = V.min_gradnorm_point(p), V.min_gradnorm_by_enumeration(p)
    assert lp.G == pytest.approx(enum.G, rel=1e-9)
    torch.testing.assert_close(lp.w, enum.w, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(p.X @ lp.w, p.y)                      # on the valley
    torch.testing.assert_close(V.imbalance(lp.u, lp.v), torch.zeros(6, dtype=torch.float64))


def test_one_sample_minimum_has_a_closed_form():
    """N = 1: min sum a_j |w_j| s.t. x.w = y puts all weight on argmax |x_j| / a_j."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(5), 1.7
    p = V.ValleyProblem("one sample", torch.tensor(x[None, :]), torch.tensor([y], dtype=torch.float64))
    j = int(np.argmax(np.abs(x) / x ** 2))
    w = np.zeros(5)
    w[j] = y / x[j]
    torch.testing.assert_close(V.min_gradnorm_point(p).w, torch.tensor(w), rtol=1e-9, atol=1e-12)


def test_gradient_norm_is_minimal_over_random_valley_points():
    p = V.diagonal_problem(3, 6, seed=1)
    m = V.min_gradnorm_point(p)
    rng = np.random.default_rng(0)
    Z = torch.as_tensor(np.linalg.svd(p.X.numpy())[2][3:].T)          # null space of X
    for _ in range(200):
        w = m.w + Z @ torch.as_tensor(rng.standard_normal(3))
        delta = torch.as_tensor(rng.standard_normal(6))
        u, v = V.valley_point(w, delta)
        torch.testing.assert_close(u * v, w)
        torch.testing.assert_close(V.imbalance(u, v), delta)
        G = V.gradient_norm(u, v, p.a)
        torch.testing.assert_close(G, V.valley_gradient_norm(w, delta, p.a))
        assert float(G) >= m.G - 1e-12
        assert float(V.loss(u, v, p.X, p.y)) < 1e-20


def test_per_sample_gradients_and_G_match_autograd(device):
    p = V.diagonal_problem(4, 5, seed=2).to(device)
    g = torch.Generator(device=device).manual_seed(3)
    u, v = (torch.randn(5, dtype=torch.float64, device=device, generator=g) for _ in range(2))
    model = V.DiagonalLinear(u, v).to(device)
    J = per_sample_jacobians(model, p.X)[:, 0, :]                      # (N, 2d), layout (u, v)
    torch.testing.assert_close(V.per_sample_gradients(u, v, p.X), J)
    assert float(V.gradient_norm(u, v, p.a)) == pytest.approx(generic_gradient_norm(model, p.X), rel=1e-12)
    torch.testing.assert_close(model(p.X)[:, 0], V.predict(u, v, p.X))
    H = J.T @ J / p.n
    assert float(V.sharpness(u, v, p.X)) == pytest.approx(float(torch.linalg.eigvalsh(H).max()), rel=1e-12)


def test_imbalance_decay_rate_is_leading_order():
    assert V.imbalance_decay_rate(0.1, 2.0, 4) == pytest.approx(0.05)
    assert V.imbalance_decay_rate(0.1, 2.0, 4, per="step") == pytest.approx(0.005)
    np.testing.assert_allclose(V.imbalance_decay_rate([0.1, 0.2], 1.0, 1, a=[1.0, 0.5]), [0.1, 0.1])


def test_starts_lie_on_the_valley():
    u, v = V.scalar_start(2.0, 3.0)
    assert float(u * v) == pytest.approx(2.0)
    p = V.diagonal_problem(3, 6, seed=1)
    u, v = V.min_norm_start(p)
    torch.testing.assert_close(V.predict(u, v, p.X), p.y)


@pytest.mark.parametrize("call, match", [
    (lambda: V.ValleyProblem("x", torch.ones(3), torch.ones(3)), "X must be a 2-D array"),
    (lambda: V.ValleyProblem("x", torch.ones(3, 2), torch.ones(2)), "y must have shape"),
    (lambda: V.ValleyProblem("x", torch.ones(3, 1), torch.tensor([1.0, 2.0, 3.0])), "interpolable"),
    (lambda: V.diagonal_problem(3, 4, w_star=[1.0, 2.0]), "w_star must have shape"),
    (lambda: V.scalar_product_problem(0), "n must be >= 1"),
    (lambda: V.scalar_min_gradnorm(1.0, 0.0), "m2 must be > 0"),
    (lambda: V.scalar_start(1.0, -1.0), "stretch must be > 0"),
    (lambda: V.imbalance_decay_rate(0.0, 1.0, 1), "eta must be > 0"),
    (lambda: V.imbalance_decay_rate(0.1, 1.0, 1, per="epoch"), "per must be one of"),
    (lambda: V.DiagonalLinear([1.0, 2.0], [1.0]), "same shape"),
    (lambda: V.min_gradnorm_by_enumeration(V.diagonal_problem(10, 60), max_supports=10), "too many supports"),
])
def test_bad_input_is_a_clear_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()
