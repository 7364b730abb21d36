"""The graph and compiled forms of Section 5's training step, and the trainers kept from run to
run (models layer). Both forms run the trainer of :mod:`dsmlib.models.sec5_distillation.trainer` as it is
-- its :meth:`~dsmlib.models.sec5_distillation.trainer.Trainer.step` and
:meth:`~dsmlib.models.sec5_distillation.trainer.Trainer.losses`, and the
:class:`~dsmlib.models.sec5_distillation.gradnorm.GradNormMeter` -- and never a copy of its
arithmetic.

1. **The graph step** (``step="graph"``, the default on CUDA). :class:`CapturedEpoch` runs the
   loop's step on batches read from *static* buffers -- the epoch plan, copied in once per
   epoch, indexed at a step counter that lives on the device and that the step itself
   advances. So the whole step can be captured once as a CUDA graph and replayed (PyTorch's
   whole-network capture: :data:`WARMUP_STEPS` steps on a side stream first, so that cuDNN's
   autotuning, the gradients and SGD's momentum buffers exist before capture). SGD's learning
   rate is a Python number baked into the captured kernels, so each learning rate of the
   schedule gets its own graph (three at most), all sharing one memory pool with ``G``'s
   captured pass (:class:`CapturedGradNorm`): they never run at once, and nothing a replay
   allocates outlives it.
2. **The compiled step** (``step="compiled"``). :class:`CompiledLosses`: the loop's forward
   pass and losses through ``torch.compile`` (on CUDA inductor's ``reduce-overhead`` mode, its
   fused kernels as CUDA graphs; a minute or more of compilation per shape); the backward pass
   and the update stay the loop's.
3. **Reuse.** A captured graph keeps the addresses of every tensor it touches -- the weights
   and their gradients, SGD's momentum buffers, the batch norms' statistics, the teacher's
   weights, the training images and labels, the plan's buffers, ``G``'s images and probes --
   and compiled code is built per shape. So on both forms a :class:`ReusableTrainer` owns all
   of them (the data and the teacher copied in) and :meth:`ReusableTrainer.reset` binds it to
   a later run of its :class:`Shape` by copying values only: the run's initial weights, SGD's
   momentum (zero, which makes the first step equal a fresh optimizer's, whose buffer starts as
   the first gradient: there is no dampening), the images of the run's split, and the seed of
   ``G``'s probes. SGD's settings are not set here: every epoch sets them from the run's recipe
   (:meth:`~dsmlib.models.sec5_distillation.trainer.Trainer.start_epoch`), on a fresh trainer
   as on a reset one. A run on a reset trainer gives the numbers of a run on a fresh one.
   :class:`Trainers` keeps one per role; it is what :func:`~dsmlib.models.sec5_distillation.loop.train_group`'s
   ``trainers`` takes.
"""
from __future__ import annotations

import gc
import types
import weakref
from dataclasses import dataclass, fields
from typing import Any, Callable, Sequence

import torch
from torch import Tensor, nn

from .dataset_specs import DatasetSpec
from .device import Capture, DevicePolicy
from .gradnorm import GradNormMeter
from .group import Group
from .nets import start_state, teacher_model, teachers_state
from .plan import Batch, EpochPlan
from .targets import Member
from .trainer import Trainer

__all__ = ["WARMUP_STEPS", "cuda_capture", "GraphPool", "on_side_stream", "Replayed",
           "CapturedEpoch", "CapturedGradNorm", "CompiledLosses", "Shape",
           "load_optimizer_in_place", "ReusableTrainer", "Trainers"]

WARMUP_STEPS = 3   # eager steps before the first capture (PyTorch's whole-network recipe)


# --- capturing and replaying --------------------------------------------------------------------

def cuda_capture(fn: Callable[[], None], pool: Any = None) -> tuple[Callable[[], None], Any]:
    """Capture ``fn`` as a CUDA graph (in memory pool ``pool``, new if None); returns the
    graph's ``replay`` and its pool."""
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.graph(graph, pool=pool):
        fn()
    return graph.replay, graph.pool()


class GraphPool:
    """One CUDA-graph memory pool for every capture of a trainer (the step at each learning
    rate, the G pass): none of them keeps memory alive outside its own replay, and they never
    run at once, so they can share it (PyTorch: "sharing memory across captures")."""

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


class CapturedEpoch:
    """``trainer``'s epoch with every step's batch read from static buffers at a step counter
    on the device, so that its :meth:`~dsmlib.models.sec5_distillation.trainer.Trainer.step` can be captured once
    and replayed: with ``capture`` (:func:`cuda_capture` on CUDA), after :data:`WARMUP_STEPS`
    eager steps, once per learning rate, in ``pool``. The members' training losses are summed
    on the device (:attr:`total`), so an epoch needs no host synchronisation until its end."""

    def __init__(self, trainer: Trainer, capture: Capture | None = None,
                 pool: GraphPool | None = None) -> None:
        dev = trainer.X.device
        self.trainer, self.pool = trainer, pool or GraphPool()
        self.counter = torch.zeros(1, dtype=torch.long, device=dev)
        self.total = torch.zeros(len(trainer.members), dtype=trainer.policy.dtype, device=dev)
        self.batches: Batch | None = None
        self.replayed = Replayed(self.one, dev, capture, self.pool, WARMUP_STEPS)

    @property
    def eager_steps(self) -> int:
        """Warm-up steps run so far (with a capture)."""
        return self.replayed.eager_calls

    def load(self, plan: EpochPlan) -> None:
        """Copy an epoch's plan into the static buffers (allocated at the first epoch; every
        epoch of a run has the same shapes) and reset the counter and the loss sums."""
        if self.batches is None:
            self.batches = plan.batches.map(torch.clone)
        else:
            for f in fields(Batch):
                buf, t = getattr(self.batches, f.name), getattr(plan.batches, f.name)
                if (buf is None) != (t is None) or (t is not None and buf.shape != t.shape):
                    raise ValueError("every epoch of a run must have the same plan shapes")
                if t is not None:
                    buf.copy_(t)
        self.counter.zero_()
        self.total.zero_()

    def one(self) -> None:
        """The trainer's step on the batch at the counter: no random draw, no host
        synchronisation, every input read from a static buffer -- what the CUDA graph
        captures."""
        assert self.batches is not None, "load() an epoch plan first"
        self.total += self.trainer.step(
            self.batches.map(lambda t: t.index_select(0, self.counter).squeeze(0)))
        self.counter += 1

    def baked(self) -> tuple:
        """What a capture of the step bakes in, so its key: the layers' train/eval mode and
        the optimizer's hyper-parameters (the learning rate: a graph per rate of the
        schedule). The optimizer's state must not be replaced after a capture (the graph
        keeps its tensors)."""
        hyper = ("lr", "momentum", "weight_decay", "dampening", "nesterov")
        return (self.trainer.model.training,) + tuple(tuple(g.get(h) for h in hyper)
                                                      for g in self.trainer.opt.param_groups)

    def __call__(self, plan: EpochPlan) -> Tensor:
        """Every step of ``plan``, as :meth:`~dsmlib.models.sec5_distillation.trainer.Trainer.epoch`."""
        self.load(plan)
        for _ in range(plan.steps):
            self.replayed(self.baked())
        return self.total


class CapturedGradNorm:
    """``meter``'s ``G`` with its probes' pass reading the probes from a static buffer and
    writing into another: with ``capture``, replayed from a CUDA graph after one eager warm-up,
    in ``pool`` (shared with the trainer's steps). The probes are drawn outside the graph, by
    the meter, so both forms give the same estimate (up to rounding)."""

    def __init__(self, meter: GradNormMeter, capture: Capture | None = None,
                 pool: GraphPool | None = None) -> None:
        self.meter = meter
        self.U: Tensor | None = None
        self.q: Tensor | None = None
        self.pass_ = Replayed(self._pass, meter.X.device, capture, pool or GraphPool(), warmup=1)

    def rebind(self, X: Tensor, seed: int | Sequence[int]) -> None:
        """Measure another run of the same shape: its images ``X`` (copied into the meter's
        own) and its seed (each lane's, for several); a captured pass stays valid."""
        if X.shape != self.meter.X.shape:
            raise ValueError(f"X must have the shape {tuple(self.meter.X.shape)} of the images "
                             f"this meter was built for, got {tuple(X.shape)}")
        self.meter.X.copy_(X)
        self.meter.seed = seed

    def _pass(self) -> None:
        assert self.U is not None and self.q is not None
        self.q.copy_(self.meter.sq_norms(self.U))

    def __call__(self, epoch: int) -> list:
        U = self.meter.probes(epoch)
        if self.U is None or self.q is None:   # the static buffers, at the first call
            self.U = U.clone()
            self.q = torch.empty(U.shape[0], self.meter.n_probes, self.meter.members,
                                 dtype=U.dtype, device=U.device)
        else:
            self.U.copy_(U)
        self.pass_()
        return self.meter.estimates(U, self.q.clone())


# --- compiling ----------------------------------------------------------------------------------

class CompiledLosses:
    """``trainer``'s :meth:`~dsmlib.models.sec5_distillation.trainer.Trainer.losses` through ``torch.compile`` as
    one graph, with ``backend`` and ``mode`` (:class:`~dsmlib.models.sec5_distillation.device.DevicePolicy`'s
    ``compile_backend`` and ``compile_mode``; the backend ``"eager"`` traces without
    compiling). Called as the losses are.

    It compiles a code object of its own: dynamo keeps compiled code per code object, so a
    shared one would count every trainer of a process (one per shape) against one recompile
    limit (8 by default; past it, under ``fullgraph``, every new one is an error), and would
    keep it for the life of the process. Its code is released when it is collected, through
    the private ``torch._dynamo.reset_code``: torch has no public API that drops one code
    object's compiled code (``torch.compiler.reset`` drops every trainer's, the live ones
    included). On CUDA the recorded graphs' memory pool is inductor's, shared by every compiled
    step on the device, and is freed only once none is left."""

    def __init__(self, trainer: Trainer, backend: str = "inductor",
                 mode: str | None = None) -> None:
        losses = Trainer.losses
        own = types.FunctionType(losses.__code__.replace(), losses.__globals__, losses.__name__,
                                 losses.__defaults__, losses.__closure__)
        self.code = own.__code__
        options: dict[str, Any] = {"backend": backend}
        if mode is not None:
            options["mode"] = mode
        self.fn = torch.compile(types.MethodType(own, trainer), fullgraph=True, dynamic=False,
                                **options)
        weakref.finalize(self, torch._dynamo.reset_code, self.code)

    def __call__(self, batch: Batch) -> Tensor:
        return self.fn(batch)


# --- reuse: what a run trains with, reset for the next run of its shape -------------------------

def _kernel_settings() -> tuple[bool, ...]:
    """Torch's switches that choose kernels (cuDNN autotuning and determinism, deterministic
    algorithms, TF32), as they are now (:func:`dsmlib.models.sec5_distillation.device.execution` sets some)."""
    return (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic,
            torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.allow_tf32,
            torch.backends.cuda.matmul.allow_tf32)


@dataclass(frozen=True)
class Shape:
    """Everything a capture or a compilation bakes in besides the optimizer's Python numbers
    (those key the graphs themselves, :meth:`CapturedEpoch.baked`): runs of equal shapes can
    share a :class:`ReusableTrainer`. ``kernels``: the kernel settings in force (a replay
    launches the kernels chosen at its capture); ``momentum``: whether SGD keeps momentum
    buffers (a graph captured without them would clone the gradient into a new buffer at every
    replay: no momentum)."""
    members: tuple[Member, ...]   # their kinds and levels
    lanes: tuple[int, ...]        # their lanes
    depth: int
    num_classes: int
    batch_size: int
    passes: int                   # with the batch: the plan's shape
    augment: bool
    spec: DatasetSpec             # its flips: a plan's flips exist or not
    images: tuple[int, ...]       # every lane's training images, (L, n, C, H, W)
    image_dtype: torch.dtype
    pad: int
    n_gradnorm: int
    gradnorm_probes: int
    students: bool
    policy: DevicePolicy
    momentum: bool
    kernels: tuple[bool, ...]

    @classmethod
    def of(cls, group: Group, students: bool) -> Shape:
        c, lanes = group.config, group.lanes
        X = lanes.first.X_train
        return cls(group.members, lanes.of, c.depth, c.num_classes, c.batch_size, c.passes,
                   c.augment, lanes.first.spec, (lanes.count, *X.shape), X.dtype,
                   lanes.first.pad, c.n_gradnorm, c.gradnorm_probes, students, group.policy,
                   c.momentum != 0, _kernel_settings())


def _zero_momentum(opt: torch.optim.Optimizer) -> None:
    """Zero SGD's momentum buffers in place (a fresh optimizer's state, as far as its next
    step is concerned: without dampening, ``0 * momentum + g`` is ``g``, a new buffer)."""
    for state in opt.state.values():
        buf = state.get("momentum_buffer")
        if buf is not None:
            buf.zero_()


def load_optimizer_in_place(opt: torch.optim.Optimizer, state_dict: dict[str, Any]) -> None:
    """``opt.load_state_dict(state_dict)``, keeping the tensors of ``opt``'s state where they
    are (values copied into them): a captured step holds their addresses. A buffer that
    ``state_dict`` lacks is zeroed (a fresh optimizer's, as far as its next step goes)."""
    old = {id(p): dict(opt.state[p]) for g in opt.param_groups for p in g["params"]
           if p in opt.state}
    opt.load_state_dict(state_dict)
    for group in opt.param_groups:
        for p in group["params"]:
            for name, mine in old.get(id(p), {}).items():
                if not torch.is_tensor(mine):
                    continue
                new = opt.state[p].get(name)
                if torch.is_tensor(new) and new.shape != mine.shape:
                    raise ValueError(f"optimizer state {name} has the shape {tuple(new.shape)}, "
                                     f"not the {tuple(mine.shape)} of its parameter's buffer")
                mine.copy_(new) if torch.is_tensor(new) else mine.zero_()
                opt.state[p][name] = mine


class ReusableTrainer(Trainer):
    """A :class:`~dsmlib.models.sec5_distillation.trainer.Trainer` on the ``graph`` or ``compiled`` step, kept for
    later runs of its :class:`Shape`: it owns copies of the training images and of the teacher,
    its epochs are :class:`CapturedEpoch`'s, its ``G`` pass :class:`CapturedGradNorm`'s, and
    (compiled) its losses :class:`CompiledLosses`'. On the compiled step each step sets the
    gradients to None before its backward pass: inductor's CUDA graphs reuse the memory of
    their outputs, the gradients among them, at the next replay, so the previous step's
    gradients must not be touched; a captured step zeroes them in place instead (it keeps their
    addresses)."""

    def __init__(self, group: Group, teachers: Sequence[nn.Module] = ()) -> None:
        policy = group.policy
        self.shape = Shape.of(group, bool(teachers))
        super().__init__(group, teachers)
        self.X, self.y = self.X.clone(), self.y.clone()   # its own: a capture keeps addresses
        self.drop_grads = policy.compiled
        self.compiled: CompiledLosses | None = None
        if policy.compiled:
            self.compiled = CompiledLosses(
                self, policy.compile_backend,
                policy.compile_mode if policy.compile_backend == "inductor" else None)
            # private, with no torch.compiler equivalent: without it inductor's CUDA graphs
            # copy a non-static input into their own buffer at every replay -- here the whole
            # training set per step
            torch._dynamo.mark_static_address(self.X)
            torch._dynamo.mark_static_address(self.y)
        capture = (policy.capture or cuda_capture) if policy.graphed else None
        pool = GraphPool()
        self.gradnorm = CapturedGradNorm(self.gradnorm, capture, pool)
        self.captured = CapturedEpoch(self, capture, pool)

    def losses(self, batch: Batch) -> Tensor:
        return super().losses(batch) if self.compiled is None else self.compiled(batch)

    def epoch(self, plan: EpochPlan) -> Tensor:
        return self.captured(plan)

    def load_optimizer(self, state_dict: dict[str, Any]) -> None:
        load_optimizer_in_place(self.opt, state_dict)

    def teacher_of(self, group: Group, teachers: Sequence[nn.Module]) -> nn.Module | None:
        """A network of its own with the lanes' ``teachers``' weights (a capture keeps its
        tensors' addresses; :meth:`reset` copies another group's teachers into it)."""
        if not teachers:
            return None
        own = teacher_model(group.config.teacher, group.lanes.count, group.policy,
                            group.lanes.first)
        own.load_state_dict(teachers_state(teachers))
        return own

    def fits(self, group: Group, teachers: Sequence[nn.Module]) -> bool:
        """Whether ``group`` can be trained by this trainer after :meth:`reset`."""
        return self.shape == Shape.of(group, bool(teachers))

    def reset(self, group: Group, teachers: Sequence[nn.Module]) -> None:
        """Bind this trainer to another group of its shape, in place (every tensor a capture
        read stays where it is): the runs' training images, ``G``'s images and seeds, zero
        momentum, the group's starting point
        (:func:`~dsmlib.models.sec5_distillation.nets.start_state`) and its teachers' weights.
        SGD's settings are the epochs' to set, from the runs' recipe
        (:meth:`~dsmlib.models.sec5_distillation.trainer.Trainer.start_epoch`)."""
        self.lanes = lanes = group.lanes
        X, y = lanes.training_images()
        self.X.copy_(X)
        self.y.copy_(y)
        self.gradnorm.rebind(lanes.subsample(group.config.n_gradnorm), group.probe_seeds)
        _zero_momentum(self.opt)
        self.model.load_state_dict(start_state(group.configs, lanes, self.policy, teachers))
        if teachers:
            self.teacher.load_state_dict(teachers_state(teachers))


class Trainers:
    """The trainers kept for later runs: at most one per role (teacher or students) -- a grid's
    runs come data set by data set, and a trainer's graphs and data copies hold device memory.
    A run of the kept trainer's shape resets it; a run of another shape on a reusable step
    replaces it; an eager run gets a fresh :class:`~dsmlib.models.sec5_distillation.trainer.Trainer`, and neither
    uses nor drops the kept one."""

    def __init__(self) -> None:
        self.kept: dict[str, ReusableTrainer] = {}

    def get(self, group: Group, teachers: Sequence[nn.Module]) -> Trainer:
        role = "students" if teachers else "teacher"
        kept = self.kept.get(role)
        if kept is not None and kept.fits(group, teachers):
            kept.reset(group, teachers)
            return kept
        del kept
        if not group.policy.reusable:
            return Trainer(group, teachers)
        if self.kept.pop(role, None) is not None:
            gc.collect()   # a trainer's parts refer to each other: free its memory (and its
                           # compiled code) now
        self.kept[role] = trainer = ReusableTrainer(group, teachers)
        return trainer
