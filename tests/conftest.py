"""Shared fixtures: the devices torch tests run on, and a throw-away copy of the book executed
and built under the smoke profile."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, copy_book, install_fixture_reference  # noqa: F401  (ROOT re-exported)


@pytest.fixture(scope="session", params=["cpu", "cuda"])
def device(request):
    """Every torch-facing test runs on the CPU, and on CUDA where a GPU is present.

    Session-scoped (a ``torch.device`` is immutable) so that module-scoped fixtures, e.g. a
    model and its brute-force Jacobians, can be built once per device."""
    import torch
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device(request.param)


@pytest.fixture(scope="session")
def smoke_book(tmp_path_factory) -> Path:
    """A copy of the book executed with papermill and built, exactly as `make book` does,
    with the committed references and the fixture ``gpu`` reference of Section 5."""
    root = copy_book(tmp_path_factory.mktemp("book"))
    install_fixture_reference(root, "gpu", "sec5_distillation")
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), "book",
                           "--profile", "smoke", "--no-progress"],
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"smoke book failed:\n{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}"
    return root

