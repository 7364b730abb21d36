"""Tests of dsmlib.theory.psd: the robust symmetric square root."""
from __future__ import annotations

import pytest
import torch

from dsmlib.theory.psd import psd_sqrt


def test_square_root_of_a_batch(device):
    g = torch.Generator(device=device).manual_seed(0)
    A = torch.randn(50, 4, 4, generator=g, dtype=torch.float64, device=device)
    S = A @ A.transpose(-1, -2)
    R = psd_sqrt(S)
    assert R.device == S.device and R.dtype == S.dtype
    torch.testing.assert_close(R, R.transpose(-1, -2))
    torch.testing.assert_close(R @ R, S, rtol=1e-10, atol=1e-10)
    assert torch.linalg.eigvalsh(R).min() > -1e-12          # the PSD root, not another one


def test_rank_deficient_and_zero_matrices(device):
    """Rank 1 (Cholesky would fail) and the zero matrix (Sigma^SGD at an interpolating
    minimiser) have PSD roots; a rounding-level negative eigenvalue is clipped. The root of a
    zero eigenvalue computed as eps is sqrt(eps) ~ 1e-8: the square root is not Lipschitz at 0,
    so that is the accuracy to expect in the null space."""
    v = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64, device=device)
    S = torch.outer(v, v)
    R = psd_sqrt(S)
    torch.testing.assert_close(R @ R, S, rtol=0, atol=1e-12)
    torch.testing.assert_close(R, S / v.norm(), rtol=0, atol=1e-7)   # sqrt(v v^T) = v v^T/|v|
    assert torch.equal(psd_sqrt(torch.zeros(2, 3, 3, device=device)),
                       torch.zeros(2, 3, 3, device=device))
    wobble = S - 1e-15 * torch.eye(3, dtype=torch.float64, device=device)
    assert torch.isfinite(psd_sqrt(wobble)).all()


def test_float32_scalar_case(device):
    S = torch.tensor([[[4.0]]], device=device)
    assert psd_sqrt(S).item() == pytest.approx(2.0)


@pytest.mark.parametrize("matrix, match", [
    ([[1.0, 0.5], [0.0, 1.0]], "symmetric"),
    ([[1.0, 0.0], [0.0, -0.1]], "positive semi-definite"),
    ([[1.0, 2.0], [2.0, 1.0]], "positive semi-definite"),        # eigenvalues 3 and -1
    ([1.0, 2.0], "shape"),
    ([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], "square"),
    ([[float("nan"), 0.0], [0.0, 1.0]], "finite"),
])
def test_bad_input(matrix, match):
    with pytest.raises(ValueError, match=match):
        psd_sqrt(torch.tensor(matrix, dtype=torch.float64))


def test_error_names_the_parameter():
    with pytest.raises(ValueError, match="Sigma must be symmetric"):
        psd_sqrt(torch.tensor([[1.0, 1.0], [0.0, 1.0]]), name="Sigma")
    with pytest.raises(ValueError, match="rtol must be > 0"):
        psd_sqrt(torch.eye(2), rtol=0.0)
