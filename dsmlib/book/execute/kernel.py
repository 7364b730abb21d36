"""The kernel manager the runner starts notebooks with (book layer), the threads its kernels
get, the papermill log line the runner's seal would cause, and how Ctrl-C reaches kernels.

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
import signal
import sys
import threading
import time
from concurrent.futures import Future, wait
from typing import Iterator, Sequence

import zmq
from jupyter_client.manager import AsyncKernelManager
from traitlets import default

from ...foundation.handoff import SEAL

__all__ = ["QuietKernelManager", "KernelWatch", "kernel_threads", "quiet_seal"]


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


class KernelWatch:
    """The notebooks one ``execute`` is running and their kernels, so that a Ctrl-C reaches
    them: jupyter_client starts each kernel in a session of its own, where a terminal's
    Ctrl-C never arrives, so an interrupted run used to wait for the cell to end."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: list[str] = []
        self._kernels: list[AsyncKernelManager] = []

    def manager_class(self, name: str) -> type[QuietKernelManager]:
        """A kernel manager class (papermill takes a class) whose kernels this watch knows."""
        watch = self

        class WatchedKernelManager(QuietKernelManager):
            async def start_kernel(self, **kw) -> None:      # type: ignore[override]
                await super().start_kernel(**kw)
                with watch._lock:
                    watch._kernels.append(self)
        WatchedKernelManager.__name__ = f"WatchedKernelManager[{name}]"
        return WatchedKernelManager

    @contextlib.contextmanager
    def running(self, name: str) -> Iterator[None]:
        with self._lock:
            self._running.append(name)
        try:
            yield
        finally:
            with self._lock:
                self._running.remove(name)

    def names(self) -> list[str]:
        with self._lock:
            return list(self._running)

    def signal(self, signum: int) -> None:
        """Send ``signum`` to every live kernel's process group."""
        with self._lock:
            kernels = list(self._kernels)
        for km in kernels:
            prov = getattr(km, "provisioner", None)
            proc = getattr(prov, "process", None)
            if proc is None or proc.poll() is not None:
                continue
            try:
                pgid = getattr(prov, "pgid", None)
                if pgid:
                    os.killpg(pgid, signum)
                else:
                    proc.send_signal(signum)
            except OSError:
                pass            # it ended meanwhile

    def interrupt(self, futures: Sequence[Future], grace: float | None = None) -> None:
        """After a first Ctrl-C: say so at once, interrupt the running cells (again every
        second: a kernel between two cells ignores it) until every run has ended; a second
        Ctrl-C, or ``grace`` seconds (``STOP_GRACE_S``) without every run ending, kills the
        kernels, waits at most ``ABORT_WAIT_S`` for their runs to keep what they had, and
        returns.

        The grace bounds a lost reply: an interrupt that lands after a cell's code but before
        ipykernel sends its reply is swallowed by the kernel ("KeyboardInterrupt caught in
        kernel"), no reply ever comes, and the run would wait for it forever."""
        grace = STOP_GRACE_S if grace is None else grace
        names = self.names()
        print(f"[dsmlib] waiting for {', '.join(names) or 'the running notebooks'} to stop; "
              "Ctrl-C again to abort", file=sys.stderr, flush=True)
        for f in futures:
            f.cancel()
        deadline = time.monotonic() + grace
        try:
            self.signal(signal.SIGINT)
            while wait(futures, timeout=min(1.0, grace)).not_done:
                if time.monotonic() > deadline:
                    print(f"[dsmlib] still running {grace:g} s after Ctrl-C: killing the "
                          "kernels", file=sys.stderr, flush=True)
                    break
                self.signal(signal.SIGINT)
            else:
                return
        except KeyboardInterrupt:
            print("[dsmlib] aborting: killing the kernels", file=sys.stderr, flush=True)
        self.signal(signal.SIGKILL)
        wait(futures, timeout=ABORT_WAIT_S)


#: How long a first Ctrl-C waits for the running cells to stop before it kills their kernels.
STOP_GRACE_S = 60.0

#: After an abort, how long the runs get to keep their partial notebooks (a killed kernel is
#: noticed within about a second).
ABORT_WAIT_S = 15.0
