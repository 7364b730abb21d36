"""The kernel manager the runner starts notebooks with (book layer).

ipykernel warns, on every execution, that the kernel "is running over TCP without
encryption". Rather than hide the warning, the runner's kernels use the encryption that
jupyter_client offers: CurveZMQ keys provisioned by the manager, whenever the kernelspec
declares support and pyzmq has Curve (``transport_encryption = "auto"``); otherwise the
default, unencrypted transport.
"""
from __future__ import annotations

import zmq
from jupyter_client.manager import AsyncKernelManager
from traitlets import default

__all__ = ["QuietKernelManager"]


class QuietKernelManager(AsyncKernelManager):
    """An :class:`AsyncKernelManager` with CurveZMQ transport encryption where available."""

    @default("transport_encryption")
    def _transport_encryption_default(self) -> str:
        return "auto" if zmq.has("curve") else "disabled"
