"""Label-noise models (Sec. 5.2) and their fixed / fresh sources (dsmlib.theory.label_noise):
seeded Monte-Carlo checks of the moments, on every device."""
from __future__ import annotations

import math

import pytest
import torch

from dsmlib.theory import label_noise as ln

DT = torch.float64
Y_SWAP = torch.tensor([[1.0, 2.0, 3.0, 4.0], [-2.0, 0.5, 0.0, 5.0]], dtype=DT)


def _z_mean(samples: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-coordinate z-scores of a sample mean against ``target``."""
    se = samples.std(0, unbiased=True) / math.sqrt(samples.shape[0])
    return (samples.mean(0) - target) / se


# --------------------------------------------------------------------------- Gaussian


def test_gaussian_noise_moments_and_determinism(device):
    """200k draws: every coordinate's mean within z = 4.5 SE of y, and the pooled variance
    within z = 4.5 SE of sigma2 (SE from the sample 4th moment).  Two-sided normal
    false-failure rate 6.8e-6 per check, <= 4 checks: <= 2.7e-5."""
    y = torch.tensor([[0.5, -1.0, 2.0]], dtype=DT, device=device).expand(200_000, 3)
    noise = ln.GaussianNoise(0.7)
    yt = noise.draw(y, 0)
    assert yt.device == y.device
    assert torch.equal(yt, noise.draw(y, torch.Generator(device=device).manual_seed(0)))
    assert not torch.equal(yt, noise.draw(y, 1))
    torch.testing.assert_close(noise.residuals(y, 0), yt - y)
    assert _z_mean(yt, y[0]).abs().max() < 4.5
    e2 = (yt - y).pow(2).reshape(-1)
    assert abs(float(e2.mean()) - 0.7) < 4.5 * float(e2.std()) / math.sqrt(e2.numel())
    torch.testing.assert_close(noise.mean(y[:2]), y[:2])
    eye = torch.eye(3, dtype=DT, device=device)
    torch.testing.assert_close(noise.covariance(y[:2]), 0.7 * eye.expand(2, 3, 3))
    assert noise.covariance(torch.zeros(4, dtype=DT, device=device)).shape == (4, 1, 1)
    assert torch.equal(ln.GaussianNoise(0.0).draw(y[:5], 3), y[:5])


# --------------------------------------------------------------------------- symmetric swap


@pytest.mark.parametrize("variant", ["copy", "derangement"])
def test_swap_empirical_mean_matches_paper_formula(variant, device):
    """100k draws of each of two label vectors (L = 4, p = 0.3): every coordinate of the
    empirical mean within z = 4.5 SE of the paper's E[y~_l] = (1-p) y_l + p sum_{m!=l}
    y_m/(L-1).  8 coordinates, two-sided normal false-failure <= 8 * 6.8e-6 = 5.4e-5."""
    p = 0.3
    y0 = Y_SWAP.to(device)
    noise = ln.SymmetricSwapNoise(p, variant)
    paper = ln.symmetric_swap_expectation(y0, p)
    torch.testing.assert_close(noise.mean(y0), paper)
    torch.testing.assert_close(noise.apply_mean(y0), paper)   # the training step's E[y~]
    yt = noise.draw(y0.repeat(100_000, 1, 1), 7)                      # (M, 2, 4)
    assert yt.device == y0.device
    assert _z_mean(yt, paper).abs().max() < 4.5
    torch.testing.assert_close(noise.residuals(y0, 7), noise.draw(y0, 7) - paper)


def test_swap_copy_covariance_matches_empirical(device):
    """Diagonal covariance of the "copy" variant: each empirical variance within z = 4.5 SE
    (SE from the sample 4th moment), and empirical correlations between coordinates
    within z = 4.5 of 0 (SE 1/sqrt(M)).  (8 + 12) checks: false-failure <= 1.4e-4."""
    p = 0.45
    y0 = Y_SWAP.to(device)
    noise = ln.SymmetricSwapNoise(p, "copy")
    M = 100_000
    yt = noise.draw(y0.repeat(M, 1, 1), 8)
    mu = noise.mean(y0)
    C = noise.covariance(y0)
    e2 = (yt - mu) ** 2
    z = (e2.mean(0) - C.diagonal(dim1=-2, dim2=-1)) / (e2.std(0) / math.sqrt(M))
    assert z.abs().max() < 4.5
    for k in range(2):
        corr = torch.corrcoef((yt[:, k] - mu[k]).T)
        off = corr[~torch.eye(4, dtype=torch.bool, device=device)]
        assert (off.abs() * math.sqrt(M)).max() < 4.5


def test_literal_swap_does_not_have_paper_expectation(device):
    """The literal description (per-dimension swap events) has E[y~] = M y with M from
    swap_expectation_matrix; its empirical mean matches M y (z = 4.5, 8 coords, false
    failure <= 5.4e-5) and rejects the paper's formula (|z| > 20 for L = 4, p = 0.3:
    the shift is ~0.3, the SE ~0.003)."""
    p = 0.3
    y0 = Y_SWAP.to(device)
    noise = ln.SymmetricSwapNoise(p, "literal")
    yt = noise.draw(y0.repeat(100_000, 1, 1), 9)
    exact = y0 @ ln.swap_expectation_matrix(4, p, "literal").to(device).T
    torch.testing.assert_close(noise.mean(y0), exact)
    assert _z_mean(yt, exact).abs().max() < 4.5
    assert _z_mean(yt, ln.symmetric_swap_expectation(y0, p)).abs().max() > 20
    # multiset of logits preserved by a real swap
    torch.testing.assert_close(yt.sort(-1).values, y0.sort(-1).values.expand_as(yt))


def test_swap_expectation_matrices():
    for variant in ("copy", "derangement", "literal"):
        for L in (2, 3, 5):
            M = ln.swap_expectation_matrix(L, 0.37, variant)
            torch.testing.assert_close(M.sum(0), torch.ones(L, dtype=DT))   # doubly stochastic
            torch.testing.assert_close(M.sum(1), torch.ones(L, dtype=DT))
    q = 2 * 0.37 * 0.63
    torch.testing.assert_close(ln.swap_expectation_matrix(2, 0.37, "literal"),
                               torch.tensor([[1 - q, q], [q, 1 - q]], dtype=DT))
    torch.testing.assert_close(ln.swap_expectation_matrix(2, 1.0, "literal"), torch.eye(2, dtype=DT))
    torch.testing.assert_close(ln.swap_expectation_matrix(2, 1.0, "copy"),
                               torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=DT))


def test_derangement_draws_are_derangements_or_identity(device):
    """Every draw is either untouched or moves every logit; the moved fraction is
    Binomial(2000, p = 0.5)/2000, within z = 4.5 SE = 4.5 * 0.0112 of 0.5 (false-failure
    6.8e-6)."""
    y = torch.arange(5, dtype=DT, device=device).expand(2000, 5)
    yt = ln.SymmetricSwapNoise(0.5, "derangement").draw(y, 3)
    moved = (yt != y)
    assert torch.equal(yt.sort(-1).values, y)
    assert bool(((moved.all(1)) | (~moved.any(1))).all())      # all moved or none
    frac = float(moved.all(1).double().mean())
    assert abs(frac - 0.5) < 4.5 * math.sqrt(0.25 / 2000)


# --------------------------------------------------------------------------- fixed / fresh


def test_fixed_and_fresh_sources(device):
    y = torch.randn(10, 3, generator=torch.Generator().manual_seed(0), dtype=DT).to(device)
    noise = ln.GaussianNoise(1.0)
    fixed = ln.label_noise_source(noise, y, "fixed", seed=4)
    for idx in (torch.tensor([3, 3, 7]), torch.tensor([3, 3, 7], device=device)):
        a = fixed.batch(idx)                          # indices on the CPU or on the device
        assert a.device == y.device
        assert torch.equal(a[0], a[1])                # same sample, same fixed noise
        assert torch.equal(a, fixed.batch(idx, 123))
    assert torch.equal(fixed.y_noisy, ln.FixedLabelNoise(noise, y, 4).y_noisy)
    fresh = ln.label_noise_source(noise, y, "fresh")
    b1, b2 = fresh.batch(idx, 1), fresh.batch(idx, 2)
    assert b1.device == y.device
    assert not torch.equal(b1[0], b1[1]) and not torch.equal(b1, b2)
    assert torch.equal(b1, fresh.batch(idx, 1))
    assert torch.equal(b1, fresh.batch(idx.cpu(), 1))
    torch.testing.assert_close(fresh.y_clean, y)
    swap = ln.FreshLabelNoise(ln.SymmetricSwapNoise(0.2), y)
    torch.testing.assert_close(swap.y_clean, ln.symmetric_swap_expectation(y, 0.2))
    with pytest.raises(ValueError, match="seed"):
        ln.label_noise_source(noise, y, "fixed")
    with pytest.raises(ValueError, match="mode"):
        ln.label_noise_source(noise, y, "sometimes", seed=0)
    with pytest.raises(ValueError, match="batch_idx"):
        fixed.batch(torch.tensor([0, 10]))
    with pytest.raises(ValueError, match="batch_idx"):
        fresh.batch(torch.tensor([0.5]), 0)


def test_noise_parameter_validation():
    with pytest.raises(ValueError, match="sigma2"):
        ln.GaussianNoise(-0.1)
    with pytest.raises(ValueError, match="sigma2"):
        ln.GaussianNoise(float("nan"))
    for p in (-0.01, 1.01):
        with pytest.raises(ValueError, match="^p "):
            ln.SymmetricSwapNoise(p)
        with pytest.raises(ValueError, match="^p "):
            ln.symmetric_swap_expectation(Y_SWAP, p)
    with pytest.raises(ValueError, match="variant"):
        ln.SymmetricSwapNoise(0.1, "shuffle")
    with pytest.raises(ValueError, match="^y "):
        ln.SymmetricSwapNoise(0.1).draw(torch.zeros(5, 1), 0)
    with pytest.raises(ValueError, match="n_dims"):
        ln.swap_expectation_matrix(1, 0.1)
    with pytest.raises(NotImplementedError):
        ln.SymmetricSwapNoise(0.1, "literal").covariance(Y_SWAP)


def test_sources_report_their_clean_labels_and_errors():
    y = torch.randn(6, 3, generator=torch.Generator().manual_seed(1), dtype=DT)
    swap = ln.SymmetricSwapNoise(0.3)
    fixed = ln.label_noise_source(swap, y, "fixed", seed=2)
    assert fixed.noise is swap
    torch.testing.assert_close(fixed.y_clean, ln.symmetric_swap_expectation(y, 0.3))
    torch.testing.assert_close(fixed.y_noisy, swap.draw(y, 2))
    with pytest.raises(ValueError, match=r"^seed is required for mode='fixed' \(the one draw"):
        ln.label_noise_source(swap, y, "fixed")
    with pytest.raises(ValueError, match=r"^mode must be one of \['fixed', 'fresh'\]"):
        ln.label_noise_source(swap, y, "sometimes", seed=0)
