"""Tests of dsmlib.theory.brownian: increments coupled across step sizes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from dsmlib.theory.brownian import BrownianIncrements, coarsen, grid_steps, refinement


def test_coarse_increments_are_exact_sums_of_fine_ones(device):
    """Bit-for-bit: every coarse increment equals the sum of the finest increments it covers,
    and a grid coarsened twice equals the grid coarsened once by the product factor."""
    bm = BrownianIncrements(horizon=1.0, fine_dt=1 / 64, block_dt=0.25, n_paths=5, dim=3,
                            seed=7, device=device)
    fine = bm.increments(1 / 64)
    assert fine.shape == (64, 5, 3) and fine.device.type == device.type
    for dt in (1 / 32, 1 / 16, 1 / 8, 0.25):
        f = round(dt * 64)
        coarse = bm.increments(dt)
        assert coarse.shape == (64 // f, 5, 3)
        for j in range(coarse.shape[0]):
            assert torch.equal(coarse[j], fine[j * f:(j + 1) * f].sum(dim=0))
    assert torch.equal(bm.block(2, 0.25)[0], fine[32:48].sum(dim=0))


def test_coarsen_on_integers_is_exact():
    """On integer-valued floats every sum is exact, so the grouping itself is checked."""
    x = torch.arange(24.0).reshape(12, 2)
    assert torch.equal(coarsen(x, 3), torch.tensor([[6.0, 9.0], [24.0, 27.0], [42.0, 45.0],
                                                    [60.0, 63.0]]))
    assert torch.equal(coarsen(coarsen(x, 2), 3), coarsen(x, 6))
    assert coarsen(x, 1) is x


def test_same_seed_same_path_and_blocks_are_independent_of_block_size():
    a = BrownianIncrements(horizon=1.0, fine_dt=0.125, n_paths=3, dim=2, seed=1)
    b = BrownianIncrements(horizon=1.0, fine_dt=0.125, n_paths=3, dim=2, seed=1)
    c = BrownianIncrements(horizon=1.0, fine_dt=0.125, n_paths=3, dim=2, seed=2)
    assert torch.equal(a.increments(0.125), b.increments(0.125))
    assert not torch.equal(a.increments(0.125), c.increments(0.125))
    ss = np.random.SeedSequence(5)
    d = BrownianIncrements(horizon=1.0, fine_dt=0.125, n_paths=3, dim=2, seed=ss)
    assert torch.equal(d.increments(0.125), d.increments(0.125))


def test_increment_variance():
    """Seeded: the variance of the coarse increments is dt. 40,000 draws of N(0, dt): the
    sample variance has relative SE sqrt(2/40000) = 0.7 %; the 5 % band is 7 SE wide
    (false-failure rate < 1e-11)."""
    bm = BrownianIncrements(horizon=1.0, fine_dt=1 / 16, block_dt=0.5, n_paths=10_000, dim=2,
                            seed=3)
    dW = bm.increments(0.5)
    assert dW.var().item() == pytest.approx(0.5, rel=0.05)


@pytest.mark.parametrize("call, match", [
    (lambda: refinement(0.1, 0.2), "refinement factor must be >= 1"),
    (lambda: refinement(0.1, 0.03), "must be an integer"),
    (lambda: grid_steps(-1.0, 0.1), "horizon must be > 0"),
    (lambda: grid_steps(1.0, 0.0, name="eta"), "eta must be > 0"),
    (lambda: grid_steps(1.0, 0.3, name="eta"), "horizon / eta must be an integer"),
    (lambda: coarsen(torch.zeros(10, 2), 3), "must divide"),
    (lambda: coarsen(torch.zeros(10, 2), 0), "factor must be >= 1"),
    (lambda: BrownianIncrements(horizon=0.0, fine_dt=0.1, n_paths=1, dim=1, seed=0),
     "horizon must be > 0"),
    (lambda: BrownianIncrements(horizon=1.0, fine_dt=0.3, n_paths=1, dim=1, seed=0),
     "must be an integer"),
    (lambda: BrownianIncrements(horizon=1.0, fine_dt=0.1, n_paths=1, dim=1, seed=-1),
     "seed must be"),
    (lambda: BrownianIncrements(horizon=1.0, fine_dt=0.1, block_dt=0.5, n_paths=1, dim=1,
                                seed=0).factor(1.0), "must divide block_dt"),
    (lambda: BrownianIncrements(horizon=1.0, fine_dt=0.1, n_paths=1, dim=1,
                                seed=0).factor(0.05), "must be >= 1"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
