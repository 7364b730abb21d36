"""The diffusion matrices of Eq. (15) and the one-step decomposition of Eq. (12)
(dsmlib.theory.diffusion) against brute-force per-sample loops and a real optimizer step, on
every device. Prop. 1's moments are Monte-Carlo-tested once, in tests/chapters/test_prop1_noise.py,
through ``sample_noise_terms``, whose draws are proven equal to ``decompose_step`` there."""
from __future__ import annotations

import copy
import math

import pytest
import torch

from dsmlib.models import networks
from dsmlib.theory import diffusion as df
from dsmlib.theory import gradient_norm as gn
from dsmlib.theory import jacobians as jc
from dsmlib.theory.label_noise import GaussianNoise
from dsmlib.theory.label_noise import FixedLabelNoise, FreshLabelNoise
from helpers import TORCH_CASES, brute_force, case_data

DT = torch.float64


# --------------------------------------------------------------------------- Eq. (15)


def test_sigma_matrices_match_brute_force(case):
    model, X, y, J, G = case
    n = X.shape[0]
    c = G - G.mean(0)
    S_sgd = df.sigma_sgd(model, X, y, chunk_size=3)
    assert S_sgd.device == X.device
    torch.testing.assert_close(S_sgd, c.T @ c / n, rtol=1e-9, atol=1e-12)
    S_uln = torch.einsum("nld,nle->de", J, J) / n
    torch.testing.assert_close(df.sigma_uln(model, X, chunk_size=3), S_uln, rtol=1e-9, atol=1e-12)
    # Eq. (15) in the paper's scalar form: (1/N) sum_i grad f grad f^T
    if J.shape[1] == 1:
        torch.testing.assert_close(S_uln, J[:, 0].T @ J[:, 0] / n)
    # with a per-sample label-noise covariance C_i (given on the CPU: moved to the device)
    L = J.shape[1]
    g = torch.Generator().manual_seed(3)
    A = torch.randn(n, L, L, generator=g, dtype=DT)
    C = A @ A.transpose(1, 2)
    torch.testing.assert_close(df.sigma_uln(model, X, label_cov=C, chunk_size=2),
                               torch.einsum("nld,nlm,nme->de", J, C.to(X.device), J) / n,
                               rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(df.sigma_uln(model, X, label_cov=2.5 * torch.eye(L)), 2.5 * S_uln)


def test_traces_without_matrices_equal_trace_of_matrices(case):
    model, X, y, J, G = case
    S_sgd = df.sigma_sgd(model, X, y)
    S_uln = df.sigma_uln(model, X)
    assert df.trace_sigma_sgd(model, X, y, chunk_size=2) == pytest.approx(float(torch.trace(S_sgd)), rel=1e-10)
    assert df.trace_sigma_uln(model, X, chunk_size=2) == pytest.approx(float(torch.trace(S_uln)), rel=1e-10)
    # Prop. 3: G(theta) = trace Sigma^ULN = (1/N) sum_i ||grad_theta f(x_i)||^2
    assert gn.gradient_norm(model, X, chunk_size=5) == pytest.approx(
        float(J.pow(2).sum() / X.shape[0]), rel=1e-10)
    L = J.shape[1]
    C = torch.diag(torch.arange(1, L + 1, dtype=DT))
    assert df.trace_sigma_uln(model, X, label_cov=C, chunk_size=4) == pytest.approx(
        float(torch.trace(df.sigma_uln(model, X, label_cov=C))), rel=1e-10)


def test_full_matrix_refused_for_big_models_but_traces_work(device):
    r = networks.resnet20(seed=0, device=device).eval()
    X = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0)).to(device)
    assert jc.parameter_dim(r) > df.MAX_MATRIX_DIM
    with pytest.raises(ValueError, match="^model .*trace_"):
        df.sigma_uln(r, X)
    with pytest.raises(ValueError, match="^model .*trace_"):
        df.sigma_sgd(r, X, torch.zeros(2, 10))
    assert df.trace_sigma_uln(r, X, chunk_size=1) > 0


def test_label_cov_validation(device):
    make, shape, n_out = TORCH_CASES["mlp_vector"]
    m = make(device)
    X, _ = case_data(shape, n_out, device)
    with pytest.raises(ValueError, match="label_cov must have shape"):
        df.sigma_uln(m, X, label_cov=torch.eye(2))
    with pytest.raises(ValueError, match="label_cov must be symmetric"):
        df.sigma_uln(m, X, label_cov=torch.triu(torch.ones(3, 3)))
    with pytest.raises(ValueError, match="label_cov must contain only finite"):
        df.trace_sigma_uln(m, X, label_cov=torch.full((3, 3), math.nan))


# --------------------------------------------------------------------------- Eq. (12)


def _problem(device, n_out: int = 2, n: int = 12, seed: int = 0):
    model = networks.tanh_mlp(2, 3, n_out, seed=seed + 100, dtype=DT, device=device)
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 2, generator=g, dtype=DT).to(device)
    y = torch.randn(n, n_out, generator=g, dtype=DT).to(device)
    return model, X, y


def test_decomposition_terms_match_definitions_and_real_sgd_step(device):
    """Eq. (12)-(13) term by term against per-sample gradients/Jacobians, and the step
    against the parameter change of an actual torch.optim.SGD step."""
    model, X, y = _problem(device, 3, n=9)
    eta = 0.05
    idx = torch.tensor([4, 1, 4, 8])                               # duplicate allowed
    src = FixedLabelNoise(GaussianNoise(0.8), y, seed=2)
    yn = src.batch(idx)
    dec = df.decompose_step(model, X, y, yn, idx, eta)
    assert dec.residual < 1e-14 and dec.step.device == X.device
    J, G = brute_force(model, X, y)
    idx = idx.to(device)
    eps = yn - y[idx]
    torch.testing.assert_close(dec.full_gradient, eta * G.mean(0), rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(dec.sgd_noise, eta * (G[idx].mean(0) - G.mean(0)), rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(dec.uln_noise, -eta / 4 * torch.einsum("bld,bl->d", J[idx], eps),
                               rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(dec.xi_star * math.sqrt(eta), dec.sgd_noise)
    torch.testing.assert_close(dec.xi_uln * math.sqrt(eta), dec.uln_noise)

    stepped = copy.deepcopy(model)
    before = jc.flat_parameters(stepped).clone()
    opt = torch.optim.SGD(stepped.parameters(), lr=eta)
    opt.zero_grad()
    (0.5 * (stepped(X[idx]) - yn).pow(2).sum(1).mean()).backward()
    opt.step()
    torch.testing.assert_close(before - jc.flat_parameters(stepped), dec.step, rtol=1e-10, atol=1e-15)
    torch.testing.assert_close(dec.full_gradient + dec.sgd_noise + dec.uln_noise, dec.step,
                               rtol=1e-12, atol=1e-15)
    # a precomputed full gradient (as Monte-Carlo loops pass it) gives the same split
    again = df.decompose_step(model, X, y, yn, idx, eta, full_gradient=G.mean(0).cpu())
    torch.testing.assert_close(again.uln_noise, dec.uln_noise)


def test_decomposition_with_batchnorm_eval_and_scalar_labels(device):
    m = TORCH_CASES["cnn_bn_eval"][0](device, n_out=1)
    g = torch.Generator().manual_seed(1)
    X = torch.randn(7, 2, 6, 6, generator=g, dtype=DT).to(device)
    y = torch.randn(7, generator=g, dtype=DT).to(device)          # scalar labels (N,)
    idx = torch.tensor([0, 5, 6])
    yn = FreshLabelNoise(GaussianNoise(0.3), y).batch(idx, 0)
    dec = df.decompose_step(m, X, y, yn, idx, 0.1, chunk_size=2)
    J, G = brute_force(m, X, y)
    idx = idx.to(device)
    torch.testing.assert_close(dec.uln_noise, -0.1 / 3 * ((yn - y[idx])[:, None] * J[idx, 0]).sum(0))
    torch.testing.assert_close(dec.sgd_noise, 0.1 * (G[idx].mean(0) - G.mean(0)))
    assert dec.residual < 1e-13


def test_decompose_step_bad_input(device):
    model, X, y = _problem(device)
    idx = torch.tensor([0, 1])
    yn = y[idx.to(device)] + 0.1
    with pytest.raises(ValueError, match="y_noisy"):
        df.decompose_step(model, X, y, yn[:1], idx, 0.1)
    with pytest.raises(ValueError, match="y_clean"):
        df.decompose_step(model, X, y[:5], yn, idx, 0.1)
    with pytest.raises(ValueError, match="y_clean .*outputs"):
        df.decompose_step(model, X, torch.zeros(12, 3, dtype=DT), torch.zeros(2, 3, dtype=DT), idx, 0.1)
    with pytest.raises(ValueError, match="eta"):
        df.decompose_step(model, X, y, yn, idx, 0.0)
    with pytest.raises(ValueError, match="batch_idx"):
        df.decompose_step(model, X, y, yn, torch.tensor([0, 12]), 0.1)
    with pytest.raises(ValueError, match="full_gradient"):
        df.decompose_step(model, X, y, yn, idx, 0.1, full_gradient=torch.zeros(3))
    with pytest.raises(ValueError, match="chunk_size"):
        df.decompose_step(model, X, y, yn, idx, 0.1, chunk_size=0)
    with pytest.raises(ValueError, match="^model .*trainable"):
        df.decompose_step(copy.deepcopy(model).requires_grad_(False), X, y, yn, idx, 0.1)
