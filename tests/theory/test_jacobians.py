"""Per-sample Jacobians and loss gradients (dsmlib.theory.jacobians) against brute-force
per-sample autograd loops, for MLPs (vector, scalar, partly frozen) and a BatchNorm CNN in
eval mode, on every device."""
from __future__ import annotations

import pytest
import torch

from dsmlib.models import networks
from dsmlib.theory import jacobians as jc
from helpers import TORCH_CASES, brute_force, case_data

DT = torch.float64


@pytest.mark.parametrize("chunk_size", [1, 4, 100])
def test_per_sample_jacobians_and_gradients_match_autograd_loop(case, chunk_size):
    model, X, y, J, G = case
    got = jc.per_sample_jacobians(model, X, chunk_size=chunk_size)
    assert got.device == X.device
    torch.testing.assert_close(got, J, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(jc.per_sample_loss_gradients(model, X, y, chunk_size=chunk_size), G,
                               rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(jc.per_sample_jacobian_sq_norms(model, X, chunk_size=chunk_size),
                               J.pow(2).sum((1, 2)), rtol=1e-10, atol=1e-12)


def test_loss_gradient_and_flat_layout(case):
    model, X, y, J, G = case
    torch.testing.assert_close(jc.loss_gradient(model, X, y, chunk_size=2), G.mean(0),
                               rtol=1e-10, atol=1e-12)
    d = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert jc.parameter_dim(model) == d == J.shape[2]
    theta = jc.flat_parameters(model)
    assert theta.shape == (d,) and theta.device == X.device
    torch.testing.assert_close(theta, torch.cat([p.detach().reshape(-1) for p in model.parameters()
                                                 if p.requires_grad]))


def test_inputs_on_another_device_or_dtype_are_moved(device):
    """Inputs arrive where the model lives (CPU arrays, float32) and come back there."""
    make, shape, n_out = TORCH_CASES["mlp_vector"]
    model = make(device)
    X, _ = case_data(shape, n_out, "cpu")
    J = jc.per_sample_jacobians(model, X.float().numpy())
    assert J.device.type == device.type and J.dtype == DT
    torch.testing.assert_close(J, jc.per_sample_jacobians(model, X.to(device)), rtol=1e-6, atol=1e-7)


def test_buffers_are_used_bn_eval(device):
    """Changing BatchNorm running statistics changes f, hence the Jacobian norm: the
    buffers really reach functional_call (deterministic)."""
    make, shape, n_out = TORCH_CASES["cnn_bn_eval"]
    m = make(device)
    X, _ = case_data(shape, n_out, device)
    j0 = jc.per_sample_jacobian_sq_norms(m, X)
    with torch.no_grad():
        m.bn1.running_var.mul_(4.0)
    J, _ = brute_force(m, X, torch.zeros(X.shape[0], n_out, dtype=DT, device=device))
    j1 = jc.per_sample_jacobian_sq_norms(m, X)
    torch.testing.assert_close(j1, J.pow(2).sum((1, 2)), rtol=1e-10, atol=1e-12)
    assert (j1 - j0).abs().max() > 1e-3 * j0.abs().max()


def test_bad_inputs_raise_value_error_naming_parameter(device):
    make, shape, n_out = TORCH_CASES["mlp_vector"]
    m = make(device)
    X, y = case_data(shape, n_out, device)
    with pytest.raises(ValueError, match="chunk_size"):
        jc.per_sample_jacobians(m, X, chunk_size=0)
    with pytest.raises(ValueError, match="^y "):
        jc.per_sample_loss_gradients(m, X, y[:5])
    with pytest.raises(ValueError, match="^y .*outputs"):
        jc.per_sample_loss_gradients(m, X, y[:, :2])
    with pytest.raises(ValueError, match="^X "):
        jc.per_sample_jacobians(m, torch.zeros(0, 3, dtype=DT))
    with pytest.raises(ValueError, match="^X "):
        jc.per_sample_jacobians(m, object())
    frozen = make(device).requires_grad_(False)
    with pytest.raises(ValueError, match="^model .*trainable"):
        jc.per_sample_jacobians(frozen, X)
    with pytest.raises(ValueError, match="^model "):
        jc.per_sample_jacobians("not a model", X)
    bn_train = networks.small_cnn(2, 3, width=3, batchnorm=True, seed=1, dtype=DT,
                                  device=device).train()
    with pytest.raises(ValueError, match="^model .*training mode"):
        jc.per_sample_jacobians(bn_train, torch.zeros(2, 2, 6, 6, dtype=DT, device=device))
