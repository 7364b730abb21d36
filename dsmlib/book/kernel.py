"""The kernel manager the runner starts notebooks with (book layer), the threads its kernels
get, and the papermill log line the runner's seal would cause.

ipykernel warns, on every execution, that the kernel "is running over TCP without
encryption". Rather than hide the warning, the runner's kernels use the encryption that
jupyter_client offers: CurveZMQ keys provisioned by the manager, whenever the kernelspec
declares support and pyzmq has Curve (``transport_encryption = "auto"``); otherwise the
default, unencrypted transport.
"""
from __future__ import annotations

import contextlib
import logging
import os
from typing import Iterator

import zmq
from jupyter_client.manager import AsyncKernelManager
from traitlets import default

from ..foundation.results import SEAL

__all__ = ["QuietKernelManager", "kernel_threads", "quiet_seal"]


class QuietKernelManager(AsyncKernelManager):
    """An :class:`AsyncKernelManager` with CurveZMQ transport encryption where available."""

    @default("transport_encryption")
    def _transport_encryption_default(self) -> str:
        return "auto" if zmq.has("curve") else "disabled"


class _SealFilter(logging.Filter):
    """Drops papermill's "Passed unknown parameter: dsmlib_run" (the seal is meant to be one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return SEAL not in record.getMessage()


@contextlib.contextmanager
def quiet_seal() -> Iterator[None]:
    log, f = logging.getLogger("papermill"), _SealFilter()
    log.addFilter(f)
    try:
        yield
    finally:
        log.removeFilter(f)


@contextlib.contextmanager
def kernel_threads(threads: int | None) -> Iterator[None]:
    """Set the thread count of the kernels started inside (OMP/MKL env), with a passive
    OpenMP wait policy (idle threads sleep instead of spinning on cores other jobs need),
    then restore the environment."""
    keys = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")
    old = {k: os.environ.get(k) for k in keys}
    n = str(threads or os.cpu_count() or 1)
    os.environ.update({"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OMP_WAIT_POLICY": "PASSIVE"})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
