"""Tests of dsmlib.foundation.rng: the seed tree, generators on the work's device, device choice."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from dsmlib.foundation import rng


def test_child_seeds_are_a_deterministic_tree():
    a = rng.as_generator(rng.child_seed(3, 1, 2)).random(4)
    np.testing.assert_array_equal(a, rng.as_generator(rng.child_seed(3, 1, 2)).random(4))
    assert not np.array_equal(a, rng.as_generator(rng.child_seed(3, 2, 1)).random(4))
    g = np.random.default_rng(0)
    assert rng.as_generator(g) is g
    for bad in (-1, 1.5, "x", True):
        with pytest.raises(ValueError, match="seed"):
            rng.child_seed(bad)


def test_torch_generator_lives_on_the_device(device):
    g = rng.as_torch_generator(7, device)
    assert g.device.type == device.type
    a = torch.randn(5, generator=g, device=device)
    b = torch.randn(5, generator=rng.as_torch_generator(7, device), device=device)
    assert torch.equal(a, b)
    # a numpy Generator or SeedSequence seeds it reproducibly
    c = rng.as_torch_generator(np.random.default_rng(1), device)
    d = rng.as_torch_generator(np.random.default_rng(1), device)
    assert torch.equal(torch.rand(3, generator=c, device=device),
                       torch.rand(3, generator=d, device=device))
    assert rng.as_torch_generator(rng.child_seed(1, 2), device).device.type == device.type
    own = torch.Generator(device=device).manual_seed(0)
    assert rng.as_torch_generator(own, device) is own


def test_torch_generator_on_another_device_is_refused():
    with pytest.raises(ValueError, match="create the generator on"):
        rng.as_torch_generator(torch.Generator(), "meta")
    with pytest.raises(ValueError, match="seed"):
        rng.as_torch_generator(-3)
    with pytest.raises(ValueError, match="seed"):
        rng.as_torch_generator("seven")


def test_chain_streams_are_independent_and_reproducible():
    s = rng.chain_streams(5, 3)
    t = rng.chain_streams(5, 3)
    draws = [(b.random(), n.random()) for b, n in s]
    assert draws == [(b.random(), n.random()) for b, n in t]
    assert len({x for pair in draws for x in pair}) == 6
    with pytest.raises(ValueError, match="seed"):
        rng.chain_streams("x", 2)


def test_resolve_device():
    assert rng.resolve_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert rng.resolve_device("auto").type == expected
    with pytest.raises(ValueError, match="device"):
        rng.resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            rng.resolve_device("cuda")
