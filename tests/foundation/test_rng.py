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


def test_torch_seeds_derive_from_the_numpy_seed_as_documented():
    """Every number of a torch experiment follows from the seed through these derivations, so
    they are pinned: a numpy Generator gives one draw from [0, 2^63 - 1); a SeedSequence its
    first 64-bit state word shifted right by one bit; an int itself (0 included)."""
    want = int(np.random.default_rng(1).integers(0, 2**63 - 1))
    assert rng.as_torch_generator(np.random.default_rng(1)).initial_seed() == want
    ss = rng.child_seed(4, 2)
    want = int(np.random.SeedSequence([4, 2]).generate_state(2, dtype=np.uint64)[0]) >> 1
    assert rng.as_torch_generator(ss).initial_seed() == want
    assert rng.as_torch_generator(0).initial_seed() == 0
    assert rng.as_torch_generator(np.int64(12)).initial_seed() == 12


def test_seed_zero_and_zero_paths_are_valid():
    assert rng.child_seed(0).entropy == [0]
    assert rng.child_seed(1, 0, 0).entropy == [1, 0, 0]
    assert rng.child_seed(np.int64(2), np.int64(3)).entropy == [2, 3]
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="^seed path entries must be non-negative integers"):
            rng.child_seed(1, bad)


def test_bad_seeds_give_one_line_errors():
    for bad in ("x", 1.5, None, True):
        with pytest.raises(ValueError, match="^seed must be an int, a numpy SeedSequence or a "
                                             "numpy Generator, got"):
            rng.as_generator(bad)
    with pytest.raises(ValueError, match="^seed must be an int, a numpy SeedSequence, a numpy "
                                         "Generator or a torch.Generator, got 'seven'"):
        rng.as_torch_generator("seven")
    with pytest.raises(ValueError, match="^seed must be a non-negative integer"):
        rng.as_torch_generator(-1)


def test_chain_streams_from_a_generator():
    """A numpy Generator spawns one child per chain and two streams per child: as many pairs
    as chains, reproducible from an equally seeded generator, all streams distinct, and the
    same streams as spawning by hand."""
    s = rng.chain_streams(np.random.default_rng(0), 3)
    t = rng.chain_streams(np.random.default_rng(0), 3)
    assert len(s) == 3 and all(len(pair) == 2 for pair in s)
    draws = [(b.random(), n.random()) for b, n in s]
    assert draws == [(b.random(), n.random()) for b, n in t]
    assert len({x for pair in draws for x in pair}) == 6
    by_hand = [tuple(g.spawn(2)) for g in np.random.default_rng(0).spawn(3)]
    assert draws == [(b.random(), n.random()) for b, n in by_hand]
    # an int and its SeedSequence give the same streams
    a = [g.random() for pair in rng.chain_streams(7, 2) for g in pair]
    b = [g.random() for pair in rng.chain_streams(np.random.SeedSequence(7), 2) for g in pair]
    assert a == b


def test_resolve_device_defaults_to_auto_and_names_what_is_allowed():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert rng.resolve_device().type == expected
    assert rng.cuda_available() == torch.cuda.is_available()
    with pytest.raises(ValueError, match=r"^device must be 'auto', 'cpu', 'cuda' or 'cuda:N', "
                                         r"got 'meta'"):
        rng.resolve_device("meta")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device; use device='auto' or 'cpu'"):
            rng.resolve_device("cuda:0")
