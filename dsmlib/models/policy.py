"""One device policy for Section 5's training (models layer): precision, memory format, chunk
sizes and the way the step runs are decided here, once per run, and nowhere else.

The step runs in one of three ways (:mod:`dsmlib.models.replay`): ``eager``; ``graph``, the
whole step -- batch, augmentation, noise, forward, loss, backward and SGD step -- captured once as
a CUDA graph and replayed (the default on CUDA: seconds to capture, no compiler); or
``compiled``, the forward and loss through ``torch.compile(mode="reduce-overhead")`` (inductor's
fused kernels as CUDA graphs, a minute or more of compilation per shape). Measured figures
belong in ``benchmarks/bench_distill.py``'s header, with the card they were measured on.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Iterator

import torch

from ..foundation.checks import check_choice
from .replay import Capture, cuda_capture

__all__ = ["STEP_MODES", "DevicePolicy", "device_policy", "execution"]

STEP_MODES = ("auto", "eager", "graph", "compiled")


@dataclass(frozen=True)
class DevicePolicy:
    """How a run executes on its device (never what it computes, up to rounding).

    ``dtype``: parameters, targets and losses (float64 only when asked for, e.g. by tests);
    ``amp``: bf16 autocast of the forward passes; ``channels_last``: the memory format of
    images and weights; ``eval_batch`` and ``gradnorm_chunk``: images per evaluation batch and
    per chunk of the per-sample probes of ``G``; ``step``: ``eager``, ``graph`` (the whole step
    replayed from a CUDA graph) or ``compiled`` (the forward and loss through
    ``torch.compile``); ``capture``: how the ``graph`` step captures
    (:func:`dsmlib.models.replay.cuda_capture`; a test may put a recording one in its place,
    which is how the CPU checks the graph path), None on the other steps; ``compile_backend``:
    ``torch.compile``'s backend on the ``compiled`` step (``inductor``; a test may trace with
    ``eager`` instead, in seconds)."""
    device: torch.device
    precision: str
    dtype: torch.dtype
    amp: bool
    channels_last: bool
    eval_batch: int
    gradnorm_chunk: int
    step: str
    capture: Capture | None = None
    compile_backend: str = "inductor"

    @property
    def compiled(self) -> bool:
        return self.step == "compiled"

    @property
    def graphed(self) -> bool:
        return self.step == "graph"

    @property
    def reusable(self) -> bool:
        """The step bakes in tensors' addresses (a graph) or compiled code: what it runs with
        is built once per shape and reused (:mod:`dsmlib.models.engine`)."""
        return self.graphed or self.compiled


def device_policy(precision: str, device: torch.device, step: str = "auto") -> DevicePolicy:
    """The policy of a run with ``precision`` (``auto``: bf16 on CUDA, fp32 on the CPU) on
    ``device``; ``step``: ``auto`` (graph on CUDA, eager elsewhere), ``eager``, ``graph`` (CUDA
    only) or ``compiled``."""
    step = check_choice("step", step, STEP_MODES)
    cuda = device.type == "cuda"
    if step == "graph" and not cuda:
        raise ValueError(f"step='graph' needs a CUDA device (CUDA graphs), not {device.type}: "
                         "use step='eager' or 'compiled'")
    if precision == "auto":
        precision = "bf16" if cuda else "fp32"
    if step == "auto":
        step = "graph" if cuda else "eager"
    return DevicePolicy(
        device=device, precision=precision,
        dtype=torch.float64 if precision == "fp64" else torch.float32,
        amp=precision == "bf16", channels_last=cuda, eval_batch=1024,
        # a captured G pass holds its chunk's per-sample gradients for the whole run
        gradnorm_chunk=256 if cuda and step != "graph" else 64, step=step,
        capture=cuda_capture if step == "graph" else None)


@contextlib.contextmanager
def execution(deterministic: bool = False) -> Iterator[None]:
    """Deterministic kernels (and no cuDNN autotuning) inside, when asked; otherwise cuDNN may
    autotune. Torch's settings are restored on exit, so nothing leaks to the caller."""
    old = (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic,
           torch.are_deterministic_algorithms_enabled(), os.environ.get("CUBLAS_WORKSPACE_CONFIG"))
    torch.backends.cudnn.benchmark = not deterministic
    torch.backends.cudnn.deterministic = bool(deterministic)
    if deterministic:
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = old[0], old[1]
        torch.use_deterministic_algorithms(old[2])
        if old[3] is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        else:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = old[3]
