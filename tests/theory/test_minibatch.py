"""The book's one minibatch sampler and Prop. 1's sampling factors (dsmlib.theory.minibatch),
checked against brute-force enumeration of every minibatch."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from dsmlib.theory import minibatch as mb


def _all_batches(n: int, b: int, replace: bool) -> list[tuple[int, ...]]:
    """Every ordered minibatch, each equally likely under the sampler's scheme."""
    if replace:
        return list(itertools.product(range(n), repeat=b))
    return list(itertools.permutations(range(n), b))


def test_minibatch_indices_and_factors():
    i = mb.draw_minibatches(10, 10, 1, replace=False, seed=0)[0]
    assert sorted(i.tolist()) == list(range(10))
    assert np.array_equal(mb.draw_minibatches(10, 4, 3, replace=True, seed=1),
                          mb.draw_minibatches(10, 4, 3, replace=True, seed=1))
    assert mb.draw_minibatches(10, 4, 0, replace=True, seed=1).shape == (0, 4)
    with pytest.raises(ValueError, match="batch_size"):
        mb.draw_minibatches(5, 6, 1, replace=False, seed=0)
    with pytest.raises(ValueError, match="replace"):
        mb.draw_minibatches(5, 2, 1, replace="yes", seed=0)
    assert mb.finite_population_factor(12, 4, replace=True) == 1.0
    assert mb.finite_population_factor(12, 4, replace=False) == 8 / 11
    assert mb.prop1_covariance_factors(12, 12, replacement=False, noise_mode="fresh")[0] == 0.0
    with pytest.raises(ValueError, match="noise_mode"):
        mb.prop1_covariance_factors(12, 4, replacement=True, noise_mode="sometimes")


@pytest.mark.parametrize("replace", [True, False])
def test_sampler_draws_uniform_independent_batches(replace):
    """Chi-square goodness of fit of 40,000 consecutive minibatches (N = 4, b = 2): the
    ordered batch is uniform over its N^b (or N!/(N-b)!) values, and pairs of consecutive
    batches are uniform over the product (the permutation carried from step to step must
    not couple them). Two tests at p > 1e-4 each: false-failure rate 2e-4. Power: the
    floor(u N) off-by-one or a permutation reset that favours index 0 gives p < 1e-30."""
    n, b, count = 4, 2, 40_000
    batches = mb.draw_minibatches(n, b, count, replace=replace, seed=11)
    cells = {t: k for k, t in enumerate(_all_batches(n, b, replace))}
    codes = np.array([cells[tuple(r)] for r in batches.tolist()])
    m = len(cells)
    assert stats.chisquare(np.bincount(codes, minlength=m)).pvalue > 1e-4
    pairs = codes[:-1] * m + codes[1:]
    assert stats.chisquare(np.bincount(pairs, minlength=m * m)).pvalue > 1e-4


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("noise_mode", ["fresh", "fixed"])
def test_prop1_factors_equal_brute_force_enumeration(replacement, noise_mode):
    """Exact covariances of Prop. 1's two terms by enumerating every minibatch (N = 5,
    b = 3) and integrating the label noise analytically, against the factors
    ``(c_sgd, c_uln)`` times the paper's ``(1/b) Sigma^SGD`` and ``(1/b) (1/N) sum J^T C J``.

    xi* ~ mean_{j in B} g_j - g_bar; xi^ULN ~ -(1/b) sum_j J_{i_j}^T eps_(j): with fresh
    noise every slot has its own eps ~ N(0, C); with a fixed table slot j carries
    eps_{i_j}, so two slots holding the same sample share it:
    E[xi xi^T | B] = (1/b^2) sum_{j,k} [i_j = i_k] J_{i_j}^T C J_{i_k}.
    """
    rng = np.random.default_rng(0)
    n, b, d, L = 5, 3, 4, 2
    g = rng.standard_normal((n, d))
    J = rng.standard_normal((n, L, d))
    A = rng.standard_normal((L, L))
    C = A @ A.T
    g_bar = g.mean(0)
    batches = _all_batches(n, b, replacement)
    cov_star = np.zeros((d, d))
    cov_uln = np.zeros((d, d))
    for B in batches:
        m = g[list(B)].mean(0) - g_bar
        cov_star += np.outer(m, m)
        for j, k in itertools.product(range(b), repeat=2):
            if j == k or (noise_mode == "fixed" and B[j] == B[k]):
                cov_uln += J[B[j]].T @ C @ J[B[k]] / b ** 2
    cov_star /= len(batches)
    cov_uln /= len(batches)
    sigma_sgd = (g - g_bar).T @ (g - g_bar) / n
    sigma_uln = np.einsum("nld,lm,nme->de", J, C, J) / n
    c_sgd, c_uln = mb.prop1_covariance_factors(n, b, replacement=replacement,
                                               noise_mode=noise_mode)
    np.testing.assert_allclose(cov_star, c_sgd * sigma_sgd / b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(cov_uln, c_uln * sigma_uln / b, rtol=1e-12, atol=1e-14)
    if not replacement or noise_mode == "fixed":   # the paper's factor 1 is wrong here
        assert not np.allclose(cov_star, sigma_sgd / b) or not np.allclose(cov_uln, sigma_uln / b)


def test_fill_minibatch_carries_the_permutation():
    """Without replacement the permutation is updated in place, so the same uniforms give
    different batches on a carried permutation (the kernel's contract)."""
    u = np.array([[0.1, 0.9], [0.1, 0.9]])
    perm = np.arange(6)
    out = mb.minibatches_from_uniforms(u, 6, False, perm)
    assert sorted(perm.tolist()) == list(range(6))
    assert len(set(out[0])) == 2 and len(set(out[1])) == 2
    assert out[0].tolist() == [0, 5] and out[1].tolist() == [0, 1]   # worked by hand
    fresh = mb.minibatches_from_uniforms(u[:1], 6, False, np.arange(6))
    np.testing.assert_array_equal(out[0], fresh[0])
    with_repl = mb.minibatches_from_uniforms(np.array([[0.0, 0.999999]]), 6, True, np.arange(6))
    np.testing.assert_array_equal(with_repl[0], [0, 5])


def test_check_indices_accepts_integer_indices_and_names_what_is_wrong():
    import torch
    idx = mb.check_indices([0, 4, 4], 5)
    assert idx.dtype == torch.long and idx.tolist() == [0, 4, 4]
    assert mb.check_indices(np.array([2], dtype=np.int32), 3).dtype == torch.long
    assert mb.check_indices(torch.tensor([1], dtype=torch.int16), 2).tolist() == [1]
    with pytest.raises(ValueError, match="^batch_idx must be a 1-D integer tensor of sample "
                                         "indices$"):
        mb.check_indices("ab", 5)
    for bad in ([0.0, 1.0], [True, False], [[0, 1]], [], "ab"):
        with pytest.raises(ValueError, match="^batch_idx must be"):
            mb.check_indices(bad, 5)
    with pytest.raises(ValueError, match=r"^batch_idx must be a non-empty 1-D integer tensor of "
                                         r"sample indices, got dtype torch.float32 and shape \(2,\)"):
        mb.check_indices(torch.tensor([0.0, 1.0]), 5)
    for bad in ([5], [-1], [0, 5]):
        with pytest.raises(ValueError, match=r"^batch_idx must lie in \[0, 4\] for N=5 samples"):
            mb.check_indices(bad, 5)
    assert mb.check_indices([4], 5).tolist() == [4] and mb.check_indices([0], 1).tolist() == [0]


@pytest.mark.parametrize("call, match", [
    (lambda: mb.draw_minibatches(0, 1, 1, replace=True, seed=0), "^n must be >= 1"),
    (lambda: mb.draw_minibatches(3, 0, 1, replace=True, seed=0), "^batch_size must be >= 1"),
    (lambda: mb.draw_minibatches(3, 4, 1, replace=False, seed=0), "^batch_size must be <= 3"),
    (lambda: mb.draw_minibatches(3, 1, -1, replace=True, seed=0), "^count must be >= 0"),
    (lambda: mb.prop1_covariance_factors(0, 1, replacement=True, noise_mode="fresh"),
     "^n must be >= 1"),
    (lambda: mb.prop1_covariance_factors(3, 0, replacement=True, noise_mode="fresh"),
     "^batch_size must be >= 1"),
    (lambda: mb.prop1_covariance_factors(3, 4, replacement=False, noise_mode="fresh"),
     "^batch_size must be <= 3"),
    (lambda: mb.prop1_covariance_factors(3, 1, replacement=True, noise_mode="often"),
     r"^noise_mode must be one of \['fixed', 'fresh'\]"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_smallest_settings_and_factors():
    """N = 1 and b = 1 are valid; with replacement b may exceed N. The factors at the edges:
    (N - b)/(N - 1) is 0 for b = N = 2 (every batch is the full set) and 1 for b = 1."""
    assert mb.draw_minibatches(1, 1, 2, replace=False, seed=0).tolist() == [[0], [0]]
    assert mb.draw_minibatches(2, 5, 1, replace=True, seed=0).shape == (1, 5)
    assert mb.finite_population_factor(2, 2, replace=False) == 0.0
    assert mb.finite_population_factor(2, 1, replace=False) == 1.0
    assert mb.finite_population_factor(1, 1, replace=False) == 1.0
    assert mb.prop1_covariance_factors(1, 1, replacement=False, noise_mode="fresh") == (0.0, 1.0)
    assert mb.prop1_covariance_factors(1, 1, replacement=True, noise_mode="fixed") == (1.0, 1.0)
    assert mb.prop1_covariance_factors(4, 6, replacement=True, noise_mode="fixed") == (1.0, 2.25)
    assert mb.prop1_covariance_factors(4, 3, replacement=False, noise_mode="fixed") == (1 / 3, 1.0)
    assert mb.prop1_covariance_factors(4, 3, replacement=True, noise_mode="fresh") == (1.0, 1.0)
    assert mb.prop1_covariance_factors(2, 1, replacement=False, noise_mode="fresh") == (1.0, 1.0)
