"""An epoch of training steps (models layer): each step run eagerly, or the whole step --
batch, augmentation, noise, forward, loss, backward and SGD step -- captured once as a CUDA
graph and replayed, one launch per step.

Measured on one NVIDIA H100 (80 GB HBM3, torch 2.11, 2026-11-26; ``benchmarks/bench_distill.py
--gpu --quick``, ResNet-56, batch 64, bf16, augmentation and noise included): a teacher trains
at 13,390 images/s replayed (5.8x the ``DataLoader`` loop's 2,310; eager 1,349-2,362), and
lockstep students at 41,085 student-images/s for K = 7 and 48,554 for K = 11 (eager 7,887
and 11,434). Capture and set-up took about 3 s per run then, when every run captured its own
graphs; a run now replays the graphs of the run of its shape before it
(:mod:`dsmlib.models.engine`; ``bench_distill.py``'s ``gpu_run_setup_graph`` row times that,
not yet on a GPU). Raw figures: ``benchmarks/gpu_runs/2026-11-26_h100/``.

Why a capture of one step is enough: the step draws nothing (the epoch's randomness is planned
up front, :func:`dsmlib.models.pipeline.plan_epoch`) and reads every input from *static*
buffers -- the plan, copied in once per epoch, indexed at a step counter that lives on the
device and that the step itself advances. :meth:`StepLoop.one` is that step; the eager path
calls it, the graph path captures it and replays it (PyTorch's whole-network capture: warm-up
steps on a side stream first, so that cuDNN's autotuning, the gradients and SGD's momentum
buffers exist before capture). SGD's learning rate is a Python number baked into the captured
kernels, so each learning rate of the schedule gets its own graph (three at most), all sharing
one memory pool (they never run at once, and nothing a replay allocates outlives it).
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor, nn

from .pipeline import EpochPlan

__all__ = ["WARMUP_STEPS", "Capture", "cuda_capture", "GraphPool", "on_side_stream", "Replayed",
           "StepLoop"]

WARMUP_STEPS = 3   # eager steps before the first capture (PyTorch's whole-network recipe)

# run(X, y, idx, dy, dx, flips, z, u, r) -> the members' losses (K,)
StepFn = Callable[..., Tensor]
# capture(fn, pool) -> (replay, pool): records fn without running it; replay() runs it
Capture = Callable[[Callable[[], None], Any], tuple[Callable[[], None], Any]]


def cuda_capture(fn: Callable[[], None], pool: Any = None) -> tuple[Callable[[], None], Any]:
    """Capture ``fn`` as a CUDA graph (in memory pool ``pool``, new if None); returns the
    graph's ``replay`` and its pool."""
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.graph(graph, pool=pool):
        fn()
    return graph.replay, graph.pool()


class GraphPool:
    """One CUDA-graph memory pool for every capture of a run (the step at each learning rate,
    the G pass): none of them keeps memory alive outside its own replay, and they never run at
    once, so they can share it (PyTorch: "sharing memory across captures")."""

    def __init__(self) -> None:
        self.handle: Any = None


def on_side_stream(fn: Callable[[], None], device: torch.device) -> None:
    """Run ``fn`` on a side stream (CUDA; PyTorch's warm-up before a capture), else directly."""
    if device.type != "cuda":
        fn()
        return
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream(device).wait_stream(side)


class Replayed:
    """``fn`` (which reads and writes only static tensors) run eagerly without ``capture``;
    with it, eagerly on a side stream for its first ``warmup`` calls, then captured once per
    ``key`` (what the capture bakes in) in ``pool`` and replayed."""

    def __init__(self, fn: Callable[[], None], device: torch.device,
                 capture: Capture | None, pool: GraphPool, warmup: int) -> None:
        self.fn, self.device, self.capture = fn, device, capture
        self.pool, self.warmup = pool, warmup
        self.graphs: dict[Any, Callable[[], None]] = {}
        self.eager_calls = 0

    def __call__(self, key: Any = ()) -> None:
        if self.capture is None:
            self.fn()
        elif self.eager_calls < self.warmup:
            on_side_stream(self.fn, self.device)
            self.eager_calls += 1
        else:
            if key not in self.graphs:   # capturing records fn without running it
                self.graphs[key], self.pool.handle = self.capture(self.fn, self.pool.handle)
            self.graphs[key]()


class StepLoop:
    """The training steps of one call of :func:`dsmlib.models.training.train_group`: ``run``
    (a :class:`dsmlib.models.pipeline.Step`, or its compiled form) on the data ``X, y``, then
    the backward pass and ``opt``'s step. With ``capture`` (:func:`cuda_capture` on CUDA), the
    whole step is captured after :data:`WARMUP_STEPS` eager ones and replayed. The members'
    training losses are summed on the device (:attr:`total`), so an epoch needs no host
    synchronisation until its end. ``static_grads``: zero the gradients in place (what a
    captured step needs), or set them to None before each backward pass (a ``torch.compile``
    step: inductor's CUDA graphs reuse the memory of their outputs, the gradients among them,
    at the next replay, so the previous step's gradients must not be touched -- on an H100
    zeroing them in place failed with "accessing tensor output of CUDAGraphs that has been
    overwritten by a subsequent run")."""

    def __init__(self, run: StepFn, model: nn.Module, opt: torch.optim.Optimizer, X: Tensor,
                 y: Tensor, members: int, *, dtype: torch.dtype,
                 capture: Capture | None = None, pool: GraphPool | None = None,
                 static_grads: bool = True) -> None:
        self.run, self.model, self.opt, self.X, self.y = run, model, opt, X, y
        self.static_grads = static_grads
        self.pool = pool or GraphPool()
        self.counter = torch.zeros(1, dtype=torch.long, device=X.device)
        self.total = torch.zeros(members, dtype=dtype, device=X.device)
        self.plan: list[Tensor | None] | None = None
        self.step = Replayed(self.one, X.device, capture, self.pool, WARMUP_STEPS)

    @property
    def eager_steps(self) -> int:
        """Warm-up steps run so far (graph path)."""
        return self.step.eager_calls

    def load(self, plan: EpochPlan) -> None:
        """Copy an epoch's plan into the static buffers (allocated at the first epoch; every
        epoch of a run has the same shapes) and reset the counter and the loss sums."""
        fields = plan.step_fields()
        if self.plan is None:
            self.plan = [None if t is None else t.clone() for t in fields]
        else:
            for buf, t in zip(self.plan, fields):
                if (buf is None) != (t is None) or (t is not None and buf.shape != t.shape):
                    raise ValueError("every epoch of a run must have the same plan shapes")
                if t is not None:
                    buf.copy_(t)
        self.counter.zero_()
        self.total.zero_()

    def one(self) -> None:
        """One step at the counter: no random draw, no host synchronisation, every input read
        from a static buffer -- what the CUDA graph captures."""
        assert self.plan is not None, "load() an epoch plan first"
        inputs = [None if t is None else t.index_select(0, self.counter).squeeze(0)
                  for t in self.plan]
        losses = self.run(self.X, self.y, *inputs)
        self.opt.zero_grad(set_to_none=not self.static_grads)
        losses.sum().backward()
        self.opt.step()
        self.total += losses.detach()
        self.counter += 1

    def epoch(self, plan: EpochPlan) -> Tensor:
        """Every step of ``plan`` at the optimizer's current learning rate; the members'
        summed training losses (on the device)."""
        self.load(plan)
        for _ in range(plan.steps):
            self.step(self.baked())
        return self.total

    def baked(self) -> tuple:
        """What a capture of the step bakes in, so its key: the layers' train/eval mode and
        the optimizer's hyper-parameters (the learning rate: a graph per rate of the
        schedule). The optimizer's state must not be replaced after a capture (the graph
        keeps its tensors)."""
        hyper = ("lr", "momentum", "weight_decay", "dampening", "nesterov")
        return (self.model.training,) + tuple(tuple(g.get(h) for h in hyper)
                                              for g in self.opt.param_groups)
