"""How Section 5's training runs on its device (models layer), decided once per run and nowhere
else: precision, memory format, chunk sizes, and the form of the training step -- ``eager``,
``graph`` (the whole step replayed from a CUDA graph) or ``compiled`` (its forward pass and
losses through ``torch.compile``). None of it changes what a run computes, up to rounding.

The eager loop is :mod:`dsmlib.models.sec5_distillation.loop`; the graph and compiled forms, which run that same
loop, are :mod:`dsmlib.models.sec5_distillation.graph`.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from ...foundation.checks import check_choice

__all__ = ["STEP_MODES", "Capture", "DevicePolicy", "device_policy", "resolved_precision",
           "group_members", "execution"]

STEP_MODES = ("auto", "eager", "graph", "compiled")

# capture(fn, pool) -> (replay, pool): records fn without running it; replay() runs it
Capture = Callable[[Callable[[], None], Any], tuple[Callable[[], None], Any]]


@dataclass(frozen=True)
class DevicePolicy:
    """How a run executes on its device (never what it computes, up to rounding).

    ``dtype``: parameters, targets and losses (float64 only when asked for, e.g. by tests);
    ``amp``: bf16 autocast of the forward passes; ``channels_last``: the memory format of
    images and weights; ``eval_batch`` and ``gradnorm_chunk``: images per evaluation batch and
    per chunk of the per-sample probes of ``G``; ``step``: the form of the training step,
    ``eager``, ``graph`` or ``compiled``; ``capture``: how the ``graph`` step captures (None:
    :func:`dsmlib.models.sec5_distillation.graph.cuda_capture`; a test may put a recording one in its place, which
    is how the CPU checks the graph path); ``compile_backend`` and ``compile_mode``:
    ``torch.compile``'s backend and mode on the ``compiled`` step (``inductor``,
    ``reduce-overhead`` on CUDA and inductor's default elsewhere; a test may trace with the
    backend ``eager`` instead, in seconds)."""
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
    compile_mode: str = "default"

    @property
    def compiled(self) -> bool:
        return self.step == "compiled"

    @property
    def graphed(self) -> bool:
        return self.step == "graph"

    @property
    def reusable(self) -> bool:
        """The step bakes in tensors' addresses (a graph) or compiled code: what it runs with
        is built once per shape and reused (:class:`dsmlib.models.sec5_distillation.graph.Trainers`)."""
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
        # channels-last on both (ResNet-8 training on 2 CPU cores: 542 against 464 images/s);
        # the CPU evaluates in small batches (a forward pass at 64 images: 2.3 k images/s,
        # at 1,024: 1.1 k; benchmarks/bench_cpu_cifar10.py)
        amp=precision == "bf16", channels_last=True, eval_batch=1024 if cuda else 64,
        # a captured G pass holds its chunk's per-sample gradients for the whole run; the CPU
        # pulls probes back 8 images at a time (12 ResNet-8 members on 64 images: 2.9 s, at 64
        # a chunk 6.2 s; benchmarks/bench_cpu_cifar10.py)
        gradnorm_chunk=(256 if step != "graph" else 64) if cuda else 8, step=step,
        # reduce-overhead: inductor's kernels replayed as CUDA graphs, no per-kernel launches
        compile_mode="reduce-overhead" if cuda else "default")


def resolved_precision(precision: str, device: torch.device) -> str:
    """``"auto"`` -> bf16 autocast on CUDA, float32 on the CPU; any other precision as it is."""
    return device_policy(precision, device).precision


def group_members(device: torch.device) -> int | None:
    """How many runs of several seeds one group may hold on ``device`` (the runs of one lane,
    the students of one teacher, always train together): on CUDA None, measured where the runs
    train on their own shapes (:func:`dsmlib.models.sec5_distillation.grouping.measured_members`: memory and
    throughput; a ResNet step of one run is launch-bound there).

    On the CPU 1, no group across seeds, by the same measurement (2026-11-28, a 2-core Intel
    Xeon shared with other work, one thread, the quick profile's shapes, eager steps
    interleaved): groups of 2 and 4 seeds' students trained 0.92x and 0.86x as many
    student-images per second as one teacher's students (full data), 1.01x and 1.02x (50
    images; ``make bench``'s ``students_across_seeds``, 22 students of 2 teachers: 1.005x) --
    and students are most of the quick profile's training -- while teachers gained 1.14x and
    1.11x (full data) and 1.23x and 1.68x (50 images; ``teachers_across_seeds``, 6 teachers:
    1.66x). On the quick grid's 2 workers the teachers took 33-35 s grouped against 42-44 s
    alone, of a grid of about 4 minutes: 9 s, within a shared machine's spread between runs,
    is not worth numbers that hinge on a timing (a group moves a run's numbers by rounding,
    which training amplifies) or on a gain near :data:`dsmlib.models.sec5_distillation.grouping.GAIN`. Ask for
    groups on the CPU with ``members`` (``measure`` measures there too)."""
    return None if device.type == "cuda" else 1


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
