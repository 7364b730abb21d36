"""psd_sqrt decomposes small CPU matrices on one thread (fair under load, issue 15): the
caller's thread count is restored, even after an error, and the numbers are bit-identical."""
from __future__ import annotations

import pytest
import torch

from dsmlib.theory import psd


def test_small_batches_run_single_threaded_and_restore_the_thread_count():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        S = torch.eye(3, dtype=torch.float64).expand(5, 3, 3)
        with psd.single_threaded_if_small(S):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        big = torch.eye(psd.SMALL_DIM + 1, dtype=torch.float64)
        with psd.single_threaded_if_small(big):
            assert torch.get_num_threads() == 2
        with pytest.raises(ValueError, match="positive semi-definite"):
            psd.psd_sqrt(-S)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_single_threaded_roots_are_bit_identical(monkeypatch):
    """The same roots as with two threads (the limit switched off)."""
    g = torch.Generator().manual_seed(0)
    A = torch.randn(500, 7, 7, generator=g, dtype=torch.float64)
    S = A @ A.transpose(-1, -2)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        one = psd.psd_sqrt(S)
        monkeypatch.setattr(psd, "SMALL_DIM", 0)
        two = psd.psd_sqrt(S)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one, two)
