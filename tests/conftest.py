"""Shared fixtures: the devices torch tests run on, and a throw-away copy of the book executed
and built under the smoke profile."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import (ROOT, copy_book, files_using,  # noqa: F401  (ROOT re-exported)
                     install_fixture_reference, xdist_scope)


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


def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadfile`` (`make test` runs ``-n auto --dist loadfile``) each test file
    runs on one worker, so its module-scoped fixtures are built once, and every file that uses
    the session's ``smoke_book`` runs on the same worker, in one process as without xdist: that
    worker builds the book once, and the tests that re-execute it never race another's reads.

    (xdist's ``loadgroup`` would say this with marks, but it renames node ids through a field
    pytest 9.2 no longer reads; the scheduler sees node ids only, so the book's files are found
    by their text.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling
    together = files_using(config.rootpath, "smoke_book")

    class BookFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid, together)

    return BookFilesTogether(config, log)


@pytest.fixture(scope="session", autouse=True)
def share_of_the_cores():
    """Under pytest-xdist, each worker's torch (and the processes it starts) uses its share of
    the cores: two workers with two busy-waiting OpenMP threads each on two cores made small
    torch tests ten times slower (measured: 2.9 s against 74 s)."""
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not count:
        yield
        return
    import torch
    share = max(1, (os.cpu_count() or 1) // int(count))
    before = torch.get_num_threads()
    torch.set_num_threads(share)
    with pytest.MonkeyPatch.context() as mp:
        for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            mp.setenv(key, str(share))
        yield
    torch.set_num_threads(before)
