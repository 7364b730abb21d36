"""Per-sample Jacobians, Sigma^SGD / Sigma^ULN (Eq. (15)) and the gradient norm G(theta)
(Prop. 3) against brute-force per-sample autograd loops, plus seeded statistical tests
of the random-probe estimator."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from types import SimpleNamespace

from dsmlib.theory import diffusion, gradient_norm, jacobians

cv = SimpleNamespace(**{**vars(jacobians), **vars(gradient_norm), **vars(diffusion)})
from dsmlib.models import networks as models

DT = torch.float64


# --------------------------------------------------------------------------- fixtures


def _mlp_vector() -> torch.nn.Module:
    return models.tanh_mlp(3, 5, 3, seed=11, dtype=DT)


def _mlp_scalar() -> torch.nn.Module:
    return models.tanh_mlp(4, 6, 1, seed=12, dtype=DT)


def _mlp_frozen() -> torch.nn.Module:
    m = models.tanh_mlp(3, 4, 2, seed=13, dtype=DT)
    m.fc1.bias.requires_grad_(False)
    return m


def _cnn_bn() -> torch.nn.Module:
    """Small CNN with BatchNorm in eval mode and non-trivial running statistics."""
    m = models.small_cnn(2, 3, width=3, batchnorm=True, seed=14, dtype=DT)
    g = torch.Generator().manual_seed(15)
    with torch.no_grad():
        for bn in (m.bn1, m.bn2):
            bn.running_mean.copy_(torch.randn(bn.num_features, generator=g, dtype=DT))
            bn.running_var.copy_(0.5 + torch.rand(bn.num_features, generator=g, dtype=DT))
            bn.weight.copy_(1 + 0.3 * torch.randn(bn.num_features, generator=g, dtype=DT))
            bn.bias.copy_(0.3 * torch.randn(bn.num_features, generator=g, dtype=DT))
    return m.eval()


CASES = {
    "mlp_vector": (_mlp_vector, (9, 3), 3),
    "mlp_scalar": (_mlp_scalar, (8, 4), 1),
    "mlp_frozen": (_mlp_frozen, (7, 3), 2),
    "cnn_bn_eval": (_cnn_bn, (6, 2, 6, 6), 3),
}


def _data(shape: tuple[int, ...], n_out: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(shape, generator=g, dtype=DT)
    y = torch.randn(shape[0], n_out, generator=g, dtype=DT)
    return X, (y[:, 0] if n_out == 1 else y)


# --------------------------------------------------------------------------- brute force


def _brute(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor):
    """Per-sample autograd loops: Jacobians (N, L, d) and loss gradients (N, d)."""
    params = [p for p in model.parameters() if p.requires_grad]
    jac, lg = [], []
    for i in range(X.shape[0]):
        out = model(X[i:i + 1]).reshape(-1)
        rows = [torch.cat([g.reshape(-1) for g in torch.autograd.grad(out[l], params, retain_graph=True)])
                for l in range(out.numel())]
        jac.append(torch.stack(rows))
        loss = 0.5 * (out - y[i].reshape(-1)).pow(2).sum()
        lg.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, params)]))
    return torch.stack(jac), torch.stack(lg)


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    make, shape, n_out = CASES[request.param]
    model = make()
    X, y = _data(shape, n_out)
    J, G = _brute(model, X, y)
    return model, X, y, J, G


# --------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("chunk_size", [1, 4, 100])
def test_per_sample_jacobians_and_gradients_match_autograd_loop(case, chunk_size):
    model, X, y, J, G = case
    torch.testing.assert_close(cv.per_sample_jacobians(model, X, chunk_size=chunk_size), J,
                               rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(cv.per_sample_loss_gradients(model, X, y, chunk_size=chunk_size), G,
                               rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(cv.per_sample_jacobian_sq_norms(model, X, chunk_size=chunk_size),
                               J.pow(2).sum((1, 2)), rtol=1e-10, atol=1e-12)


def test_loss_gradient_and_flat_layout(case):
    model, X, y, J, G = case
    torch.testing.assert_close(cv.loss_gradient(model, X, y, chunk_size=2), G.mean(0),
                               rtol=1e-10, atol=1e-12)
    d = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert cv.parameter_dim(model) == d == J.shape[2]
    assert cv.flat_parameters(model).shape == (d,)


def test_sigma_matrices_match_brute_force(case):
    model, X, y, J, G = case
    n = X.shape[0]
    c = G - G.mean(0)
    torch.testing.assert_close(cv.sigma_sgd(model, X, y, chunk_size=3), c.T @ c / n,
                               rtol=1e-9, atol=1e-12)
    S_uln = torch.einsum("nld,nle->de", J, J) / n
    torch.testing.assert_close(cv.sigma_uln(model, X, chunk_size=3), S_uln, rtol=1e-9, atol=1e-12)
    # Eq. (15) in the paper's scalar form: (1/N) sum_i grad f grad f^T
    if J.shape[1] == 1:
        torch.testing.assert_close(S_uln, J[:, 0].T @ J[:, 0] / n)
    # with a per-sample label-noise covariance C_i
    L = J.shape[1]
    g = torch.Generator().manual_seed(3)
    A = torch.randn(n, L, L, generator=g, dtype=DT)
    C = A @ A.transpose(1, 2)
    torch.testing.assert_close(cv.sigma_uln(model, X, label_cov=C, chunk_size=2),
                               torch.einsum("nld,nlm,nme->de", J, C, J) / n, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(cv.sigma_uln(model, X, label_cov=2.5 * torch.eye(L)), 2.5 * S_uln)


def test_traces_without_matrices_equal_trace_of_matrices(case):
    model, X, y, J, G = case
    S_sgd = cv.sigma_sgd(model, X, y)
    S_uln = cv.sigma_uln(model, X)
    assert cv.trace_sigma_sgd(model, X, y, chunk_size=2) == pytest.approx(float(torch.trace(S_sgd)), rel=1e-10)
    assert cv.trace_sigma_uln(model, X, chunk_size=2) == pytest.approx(float(torch.trace(S_uln)), rel=1e-10)
    # Prop. 3: G(theta) = trace Sigma^ULN = (1/N) sum_i ||grad_theta f(x_i)||^2
    G_exact = float(J.pow(2).sum() / X.shape[0])
    assert cv.gradient_norm(model, X, chunk_size=5) == pytest.approx(G_exact, rel=1e-10)
    L = J.shape[1]
    C = torch.diag(torch.arange(1, L + 1, dtype=DT))
    assert cv.trace_sigma_uln(model, X, label_cov=C, chunk_size=4) == pytest.approx(
        float(torch.trace(cv.sigma_uln(model, X, label_cov=C))), rel=1e-10)


def test_buffers_are_used_bn_eval():
    """Changing BatchNorm running statistics changes f, hence the Jacobian norm: the
    buffers really reach functional_call."""
    m = _cnn_bn()
    X, _ = _data((6, 2, 6, 6), 3)
    g0 = cv.gradient_norm(m, X)
    with torch.no_grad():
        m.bn1.running_var.mul_(4.0)
    assert abs(cv.gradient_norm(m, X) - g0) > 1e-3 * g0


# --------------------------------------------------------------------------- probes


def test_probe_vjp_exact_for_scalar_outputs():
    """Rademacher output probes: for L = 1, ||J_i^T u||^2 = ||J_i||^2 whatever u = +-1."""
    m = _mlp_scalar()
    X, _ = _data((8, 4), 1)
    est = cv.gradient_norm_probe(m, X, n_probes=3, seed=1)
    assert est.estimate == pytest.approx(cv.gradient_norm(m, X), rel=1e-12)
    assert est.standard_error == pytest.approx(0.0, abs=1e-12)
    assert est.n_probes == 3


@pytest.mark.parametrize("method", ["vjp", "jvp"])
def test_probe_is_deterministic_given_seed(method):
    m = _mlp_vector()
    X, _ = _data((9, 3), 3)
    a = cv.gradient_norm_probe(m, X, n_probes=3, seed=5, method=method, chunk_size=2)
    b = cv.gradient_norm_probe(m, X, n_probes=3, seed=5, method=method, chunk_size=7)
    c = cv.gradient_norm_probe(m, X, n_probes=3, seed=torch.Generator().manual_seed(5),
                               method=method)
    assert a.estimate == pytest.approx(b.estimate, rel=1e-12) == c.estimate
    assert a.standard_error == pytest.approx(b.standard_error, rel=1e-9)
    assert cv.gradient_norm_probe(m, X, n_probes=3, seed=6, method=method).estimate != a.estimate


@pytest.mark.parametrize("method,probe,n_probes", [("vjp", "rademacher", 2),
                                                   ("vjp", "gaussian", 2),
                                                   ("jvp", "rademacher", 4)])
def test_probe_estimator_unbiased_and_se_calibrated(method, probe, n_probes):
    """R = 200 independent estimates (seeds 0..199) on a vector-output MLP and on the
    BatchNorm CNN.

    (1) Unbiased: |mean(est) - G_exact| <= z * sd(est)/sqrt(R).
    (2) Calibrated SE: SE_r^2 is an unbiased estimate of Var(est), so
        w_r = (est_r - G_exact)^2 - SE_r^2 has mean exactly 0; require
        |mean(w)| <= z * sd(w)/sqrt(R).
    z = 4 throughout: two-sided normal false-failure rate 6.3e-5 per check, so at most
    4 * 6.3e-5 = 2.5e-4 for this test per parametrisation (CLT over R = 200 draws).
    """
    z = 4.0
    for make, shape, n_out in (CASES["mlp_vector"], CASES["cnn_bn_eval"]):
        m = make()
        X, _ = _data(shape, n_out)
        exact = cv.gradient_norm(m, X)
        res = [cv.gradient_norm_probe(m, X, n_probes=n_probes, seed=r, method=method, probe=probe)
               for r in range(200)]
        est = np.array([r.estimate for r in res])
        se = np.array([r.standard_error for r in res])
        R = len(est)
        assert abs(est.mean() - exact) <= z * est.std(ddof=1) / math.sqrt(R), (est.mean(), exact)
        w = (est - exact) ** 2 - se**2
        assert abs(w.mean()) <= z * w.std(ddof=1) / math.sqrt(R), (w.mean(), w.std())


def test_vjp_probe_has_lower_variance_than_jvp_here():
    """The reason vjp is the default: probes independent across samples average out.
    Deterministic comparison of the exact variances on the 9-sample MLP:
    Var_vjp = (1/N^2) sum_i 2(||K_i||_F^2 - sum diag(K_i)^2), K_i = J_i J_i^T (Rademacher);
    Var_jvp = 2(||A||_F^2 - sum diag(A)^2), A = (1/N) sum_i J_i^T J_i (Rademacher)."""
    m = _mlp_vector()
    X, _ = _data((9, 3), 3)
    J = cv.per_sample_jacobians(m, X)
    n = J.shape[0]
    K = J @ J.transpose(1, 2)
    var_vjp = float(2 * (K.pow(2).sum() - K.diagonal(dim1=1, dim2=2).pow(2).sum())) / n**2
    A = torch.einsum("nld,nle->de", J, J) / n
    var_jvp = float(2 * (A.pow(2).sum() - A.diagonal().pow(2).sum()))
    assert var_vjp < var_jvp


# --------------------------------------------------------------------------- bad input


def test_bad_inputs_raise_value_error_naming_parameter():
    m = _mlp_vector()
    X, y = _data((9, 3), 3)
    with pytest.raises(ValueError, match="chunk_size"):
        cv.gradient_norm(m, X, chunk_size=0)
    with pytest.raises(ValueError, match="chunk_size"):
        cv.sigma_sgd(m, X, y, chunk_size=-2)
    with pytest.raises(ValueError, match="^y "):
        cv.sigma_sgd(m, X, y[:5])
    with pytest.raises(ValueError, match="^y .*outputs"):
        cv.per_sample_loss_gradients(m, X, y[:, :2])
    with pytest.raises(ValueError, match="^X "):
        cv.gradient_norm(m, torch.zeros(0, 3, dtype=DT))
    with pytest.raises(ValueError, match="n_probes"):
        cv.gradient_norm_probe(m, X, n_probes=1)
    with pytest.raises(ValueError, match="method"):
        cv.gradient_norm_probe(m, X, method="hutch")
    with pytest.raises(ValueError, match="probe"):
        cv.gradient_norm_probe(m, X, probe="uniform")
    with pytest.raises(ValueError, match="seed"):
        cv.gradient_norm_probe(m, X, seed="abc")
    with pytest.raises(ValueError, match="label_cov"):
        cv.sigma_uln(m, X, label_cov=torch.eye(2))
    frozen = _mlp_vector().requires_grad_(False)
    with pytest.raises(ValueError, match="^model .*trainable"):
        cv.gradient_norm(frozen, X)
    with pytest.raises(ValueError, match="^model "):
        cv.gradient_norm("not a model", X)
    bn_train = _cnn_bn().train()
    with pytest.raises(ValueError, match="^model .*training mode"):
        cv.gradient_norm(bn_train, _data((6, 2, 6, 6), 3)[0])


def test_full_matrix_refused_for_big_models_but_traces_work():
    r = models.resnet20(seed=0).eval()
    X = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="^model .*trace_"):
        cv.sigma_uln(r, X)
    assert cv.gradient_norm(r, X, chunk_size=1) > 0
