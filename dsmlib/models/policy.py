"""One device policy for Section 5's training (models layer): precision, memory format, chunk
sizes and the way the step runs are decided here, once per run, and nowhere else.

Measured figures for the captured step (``step="compiled"`` on CUDA) belong in
``benchmarks/bench_distill.py``'s header, with the card they were measured on.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Iterator

import torch

from ..foundation.checks import check_choice

__all__ = ["STEP_MODES", "DevicePolicy", "device_policy", "execution"]

STEP_MODES = ("auto", "eager", "compiled")


@dataclass(frozen=True)
class DevicePolicy:
    """How a run executes on its device (never what it computes, up to rounding).

    ``dtype``: parameters, targets and losses (float64 only when asked for, e.g. by tests);
    ``amp``: bf16 autocast of the forward passes; ``channels_last``: the memory format of
    images and weights; ``eval_batch`` and ``gradnorm_chunk``: images per evaluation batch and
    per chunk of the per-sample probes of ``G``; ``compiled``: the step through
    ``torch.compile`` (CUDA graphs on CUDA) instead of eagerly."""
    device: torch.device
    precision: str
    dtype: torch.dtype
    amp: bool
    channels_last: bool
    eval_batch: int
    gradnorm_chunk: int
    compiled: bool


def device_policy(precision: str, device: torch.device, step: str = "auto") -> DevicePolicy:
    """The policy of a run with ``precision`` (``auto``: bf16 on CUDA, fp32 on the CPU) on
    ``device``; ``step``: ``auto`` (compiled on CUDA, eager elsewhere), ``eager`` or
    ``compiled``."""
    step = check_choice("step", step, STEP_MODES)
    cuda = device.type == "cuda"
    if precision == "auto":
        precision = "bf16" if cuda else "fp32"
    return DevicePolicy(
        device=device, precision=precision,
        dtype=torch.float64 if precision == "fp64" else torch.float32,
        amp=precision == "bf16", channels_last=cuda, eval_batch=1024,
        gradnorm_chunk=256 if cuda else 64,
        compiled=(step == "compiled") or (step == "auto" and cuda))


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
