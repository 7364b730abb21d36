"""Shared fixtures: the devices torch tests run on, and a throw-away copy of the book executed
and built under the smoke profile."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import (ROOT, copy_book, files_using,  # noqa: F401  (ROOT re-exported)
                     install_fixture_reference, work_order)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "kernels: compares two computations that run different kernels (a lockstep "
        "group against its members), equal only up to rounding; .ci/run re-runs them under other "
        "kernels, as the stored_values tests (tests/reduced_simd.py)")


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
def smoke_book(tmp_path_factory, worker_id) -> Path:
    """A copy of the book executed with papermill and built, exactly as `make book` does,
    with the committed references and the fixture ``gpu`` reference of Section 5.

    Built once per test session: under pytest-xdist the first worker to ask builds it, under a
    file lock in the session's shared temporary folder, and the others wait for it. It is
    read-only: a test that executes, builds or re-runs anything in it works on a copy
    (:func:`smoke_book_copy`), so that tests on other workers read it undisturbed."""
    from filelock import FileLock
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent
    root, done, failed = (shared / f"smoke_book{s}" for s in ("", ".done", ".failed"))
    with FileLock(str(shared / "smoke_book.lock")):
        if failed.exists():
            pytest.fail(failed.read_text())
        if not done.exists():
            copy_book(root)
            install_fixture_reference(root, "gpu", "sec5_distillation")
            proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), "book",
                                   "--profile", "smoke", "--no-progress"],
                                  capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                failed.write_text(f"smoke book failed:\n{proc.stdout[-5000:]}\n"
                                  f"{proc.stderr[-5000:]}")
                pytest.fail(failed.read_text())
            done.touch()
    return root


@pytest.fixture
def smoke_book_copy(smoke_book, tmp_path) -> Path:
    """A private copy of the session's smoke book, its site included, for a test that runs the
    runner in it (96 MB; copied in about a second)."""
    return Path(shutil.copytree(smoke_book, tmp_path / "smoke_book", symlinks=True))


def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadfile`` (`make test` runs ``-n <cores + 1> --dist loadfile``) each test file
    is one work unit, so its module-scoped fixtures are built once. The units are handed out
    in the order :func:`helpers.work_order` gives: the file that builds the session's smoke
    book first, then the others longest first, so that no long file ends the run alone; a
    file that reads the book only once enough work lies ahead of it for the book to be built
    meanwhile, so that it seldom waits for it. (xdist's ``loadgroup`` would say this with
    marks, but it renames node ids through a field pytest 9.2 no longer reads; the scheduler
    sees node ids only, so the book's files are found by their text.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling
    readers = files_using(config.rootpath, "smoke_book")

    class BookFirst(LoadFileScheduling):
        ordered = False

        def _assign_work_unit(self, node):
            # xdist fills ``workqueue`` (largest unit first), then assigns units from its
            # front: the first assignment reorders it, once
            if not self.ordered:
                self.ordered = True
                order = work_order(list(self.workqueue), readers)
                self.workqueue = type(self.workqueue)((u, self.workqueue[u]) for u in order)
            super()._assign_work_unit(node)

    return BookFirst(config, log)


#: Kernel switches for re-running tests under other kernels (``tests/reduced_simd.py``): torch's
#: intra-op threads per test process; torch's oneDNN (mkldnn) off ("0"); elementary functions
#: rounded as another CPU's may round them ("1": ``tests/ulp_jitter.py``).
TORCH_THREADS, MKLDNN, ULP = "DSM_TEST_TORCH_THREADS", "DSM_TEST_MKLDNN", "DSM_TEST_ULP"


@pytest.fixture(scope="session", autouse=True)
def share_of_the_cores():
    """Under pytest-xdist, each worker's torch (and the processes it starts) uses its share of
    the cores: two workers with two busy-waiting OpenMP threads each on two cores made small
    torch tests ten times slower (measured: 2.9 s against 74 s). The switches above override
    the share and the kernels."""
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    threads, mkldnn = os.environ.get(TORCH_THREADS), os.environ.get(MKLDNN)
    undo = None
    if os.environ.get(ULP) == "1":
        from ulp_jitter import install
        undo = install()
    if not (count or threads or mkldnn == "0"):
        yield
        if undo:
            undo()
        return
    import torch
    before, mkldnn_before = torch.get_num_threads(), torch.backends.mkldnn.enabled
    share = (int(threads) if threads else
             max(1, (os.cpu_count() or 1) // int(count)) if count else before)
    torch.set_num_threads(share)
    torch.backends.mkldnn.enabled = mkldnn != "0"
    with pytest.MonkeyPatch.context() as mp:
        for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            mp.setenv(key, str(share))
        yield
    torch.set_num_threads(before)
    torch.backends.mkldnn.enabled = mkldnn_before
    if undo:
        undo()
