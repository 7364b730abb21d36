"""Model builders (dsmlib.models.networks): architecture (He et al. 2016 CIFAR ResNets),
parameter counts, seeded construction without global RNG side effects, the same parameters on
every device, initialisation scale."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from dsmlib.models import networks as models


def _params(m: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in m.parameters()])


def test_parameter_counts():
    # He et al. (2016), Table 6: ResNet-20 0.27M, ResNet-56 0.85M (option A shortcuts)
    assert models.count_parameters(models.resnet20()) == 269_722
    assert models.count_parameters(models.resnet56()) == 853_018
    assert models.count_parameters(models.cifar_resnet(32)) == 464_154
    assert models.count_parameters(models.resnet20(shortcut="B")) > 269_722
    assert models.count_parameters(models.resnet20(100)) == 269_722 + 64 * 90 + 90
    assert models.count_parameters(models.tanh_mlp(3, 5, 2)) == (3 + 1) * 5 + (5 + 1) * 2


def test_resnet_architecture():
    r = models.resnet20()
    convs = [m for m in r.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 19                                     # 1 + 3 stages x 3 blocks x 2
    assert sum(isinstance(m, nn.Linear) for m in r.modules()) == 1
    assert [c.out_channels for c in (r.layer1[0].conv1, r.layer2[0].conv1, r.layer3[0].conv1)] == [16, 32, 64]
    assert r.layer2[0].conv1.stride == (2, 2) and r.layer3[0].conv1.stride == (2, 2)
    assert len([m for m in models.resnet56().modules() if isinstance(m, nn.Conv2d)]) == 55

def test_resnet_forward(device):
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0)).to(device)
    for shortcut in ("A", "B"):
        out = models.resnet20(shortcut=shortcut, seed=1, device=device).eval()(x)
        assert out.shape == (2, 10) and out.device == x.device and bool(torch.isfinite(out).all())


def test_output_shapes(device):
    x = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0)).to(device)
    out = models.small_cnn(seed=0, device=device)(x)
    assert out.shape == (4, 10) and out.device == x.device
    z = torch.zeros(3, 1, 5, 5, device=device)
    assert models.small_cnn(1, 2, batchnorm=True, device=device).eval()(z).shape == (3, 2)
    assert models.tanh_mlp(6, 4, 1, device=device)(torch.zeros(5, 6, device=device)).shape == (5, 1)
    x64 = torch.zeros(5, 6, dtype=torch.float64, device=device)
    assert models.tanh_mlp(6, 4, 3, dtype=torch.float64, device=device)(x64).dtype == torch.float64
    lin = models.Linear2([0.5, 2.0]).to(device)
    torch.testing.assert_close(lin(torch.tensor([[1.0, 1.0], [2.0, 0.0]], dtype=torch.float64,
                                                device=device)),
                               torch.tensor([[2.5], [1.0]], dtype=torch.float64, device=device))
    assert models.count_parameters(lin) == 2


BUILDERS = [lambda s, dev: models.tanh_mlp(3, 7, 2, seed=s, device=dev),
            lambda s, dev: models.small_cnn(seed=s, batchnorm=True, device=dev),
            lambda s, dev: models.resnet20(seed=s, device=dev)]


@pytest.mark.parametrize("build", BUILDERS)
def test_seeded_and_no_global_rng_side_effects(build, device):
    state = torch.random.get_rng_state()
    cuda_state = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    a = build(7, device)
    assert torch.equal(torch.random.get_rng_state(), state)
    if cuda_state is not None:
        assert torch.equal(torch.cuda.get_rng_state(device), cuda_state)
    assert torch.equal(_params(a), _params(build(7, device)))
    assert torch.equal(_params(a), _params(build(torch.Generator().manual_seed(7), device)))
    assert not torch.equal(_params(a), _params(build(8, device)))
    # a numpy Generator is accepted; the same numpy seed gives the same model
    assert torch.equal(_params(build(np.random.default_rng(3), device)),
                       _params(build(np.random.default_rng(3), device)))


@pytest.mark.parametrize("build", BUILDERS)
def test_same_seed_same_parameters_on_every_device(build, device):
    """Parameters are initialised on the CPU and then moved: a seed gives bit-identical
    parameters (and buffers) on every device, all of them on that device."""
    on_dev, on_cpu = build(3, device), build(3, "cpu")
    assert all(p.device.type == device.type for p in on_dev.parameters())
    assert all(b.device.type == device.type for b in on_dev.buffers())
    assert torch.equal(_params(on_dev).cpu(), _params(on_cpu))
    for b_dev, b_cpu in zip(on_dev.buffers(), on_cpu.buffers()):
        assert torch.equal(b_dev.cpu(), b_cpu)


def test_resnet_init_scale(device):
    """Kaiming-normal conv weights: the sample std of layer3's 36 864 conv weights is
    within z = 5 of sqrt(2/fan_in) (SE of a normal sample std = sigma/sqrt(2n), false
    failure 5.7e-7); BatchNorm starts at weight 1, bias 0."""
    r = models.resnet20(seed=3, device=device)
    w = r.layer3[1].conv1.weight.detach()
    sigma = math.sqrt(2.0 / (64 * 9))
    n = w.numel()
    assert abs(float(w.std()) - sigma) < 5 * sigma / math.sqrt(2 * n)
    assert abs(float(w.mean())) < 5 * sigma / math.sqrt(n)
    assert torch.equal(r.bn1.weight.detach(), torch.ones(16, device=device))
    assert torch.equal(r.bn1.bias.detach(), torch.zeros(16, device=device))


def test_bad_arguments():
    with pytest.raises(ValueError, match="depth"):
        models.cifar_resnet(21)
    with pytest.raises(ValueError, match="shortcut"):
        models.resnet20(shortcut="C")
    with pytest.raises(ValueError, match="seed"):
        models.tanh_mlp(2, 2, seed="zero")
    with pytest.raises(ValueError, match="seed"):
        models.tanh_mlp(2, 2, seed=-1)
    with pytest.raises(ValueError, match="in_dim"):
        models.tanh_mlp(0, 2)
    with pytest.raises(ValueError, match="hidden"):
        models.tanh_mlp(2, 1.5)
    with pytest.raises(ValueError, match="dtype"):
        models.small_cnn(dtype=torch.int64)
    with pytest.raises(ValueError, match="num_classes"):
        models.resnet56(0)
    with pytest.raises(ValueError, match="device"):
        models.tanh_mlp(2, 2, device="tpu")
