"""Section 5's training step (models layer): what one step computes, what it is given, and
how the device runs it.

1. **The epoch plan.** Every random number an epoch needs -- the batch order, the crops and
   flips, and the label noise -- is drawn before the epoch's first step (:func:`plan_epoch`)
   from the epoch's generators, ``child_seed(seed, DATA, epoch)`` and ``child_seed(seed, NOISE,
   epoch)``, in exactly the order a per-step loop would draw them.
2. **The step.** :class:`Step` then draws nothing: it is a pure function of tensors, the same
   on the CPU and on CUDA. The students of one teacher share their stream (a seed of their own,
   not their teacher's), hence their batches, crops and standard-normal draws (common random
   numbers across noise levels), and are trained together: ``K`` members of one grouped network,
   one forward and backward pass per batch, the teacher's forward pass computed once for all of
   them. Each member keeps its own target (the teacher's logits plus its own noise, a kind of
   :class:`Noise`) and its own loss; the step returns the ``K`` losses, and their sum is
   minimised (member ``k``'s parameters see only loss ``k``'s gradient).
3. **An epoch of steps.** :class:`StepLoop` runs the step, the one ``.backward()`` and SGD's
   step, reading every input from *static* buffers -- the plan, copied in once per epoch, indexed
   at a step counter that lives on the device and that the step itself advances. So the whole
   step can be captured once as a CUDA graph and replayed (PyTorch's whole-network capture:
   warm-up steps on a side stream first, so that cuDNN's autotuning, the gradients and SGD's
   momentum buffers exist before capture). SGD's learning rate is a Python number baked into the
   captured kernels, so each learning rate of the schedule gets its own graph (three at most),
   all sharing one memory pool (they never run at once, and nothing a replay allocates outlives
   it).
4. **The device policy.** :func:`device_policy` decides, once per run and nowhere else,
   precision, memory format, chunk sizes and how the step runs: ``eager``; ``graph``, the whole
   step captured as a CUDA graph (the default on CUDA: seconds to capture, no compiler); or
   ``compiled``, the forward and loss through ``torch.compile`` (:class:`CompiledStep`; on CUDA
   inductor's ``reduce-overhead`` mode, its fused kernels as CUDA graphs, a minute or more of
   compilation per shape). All three wrap the same :class:`Step` and the same
   :meth:`StepLoop.one`.

The loop around the step, its measurements and what it reuses from run to run are
:mod:`dsmlib.models.loop`.
"""
from __future__ import annotations

import contextlib
import os
import types
import weakref
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Callable, Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..foundation.checks import check_choice
from ..foundation.rng import as_torch_generator, child_seed
from ..theory.label_noise import GaussianNoise, SymmetricSwapNoise

__all__ = ["STREAM_DATA", "STREAM_NOISE", "Noise", "NOISE_KINDS", "STEP_MODES", "WARMUP_STEPS",
           "augment_draws", "apply_augment", "augment", "EpochPlan", "plan_epoch", "Member",
           "member_noise", "member_targets", "hinton_loss", "member_losses", "Step",
           "CompiledStep", "Capture", "cuda_capture", "GraphPool", "on_side_stream", "Replayed",
           "StepLoop", "DevicePolicy", "device_policy", "execution"]

STREAM_DATA, STREAM_NOISE = 2, 3
STEP_MODES = ("auto", "eager", "graph", "compiled")
WARMUP_STEPS = 3   # eager steps before the first capture (PyTorch's whole-network recipe)


class Noise(StrEnum):
    """What a student regresses on (Sec. 5.2), with its ``level``: the one registry of the noise
    kinds' names (members are the strings, so configurations and results keep plain names)."""
    NONE = "none"                # the teacher's logits: the noiseless student (level 0)
    GAUSSIAN = "gaussian"        # plus N(0, sigma^2 I_L) per logit (level sigma^2)
    SYMMETRIC = "symmetric"      # copy-swapped with probability p (level p)
    CONTROL = "symmetric_mean"   # the swap's mean M_p t (Eq. 24), drawn from nothing (level p)
    HINTON = "hinton"            # the logits, softened cross-entropy at temperature level T


NOISE_KINDS = tuple(k.value for k in Noise)
# the noise model of each kind that has one (the control uses only its mean)
NOISE_MODELS = {Noise.GAUSSIAN: GaussianNoise, Noise.SYMMETRIC: SymmetricSwapNoise,
                Noise.CONTROL: SymmetricSwapNoise}


# --- 1. the epoch plan --------------------------------------------------------------------------

def augment_draws(n: int, generator: torch.Generator, *, pad: int, flip: bool
                  ) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """The random numbers of :func:`augment` for ``n`` images: crop offsets ``dy, dx`` in
    ``[0, 2 pad]`` (None without padding) and flip flags (None without flips)."""
    dev = generator.device
    dy = dx = flips = None
    if pad:
        dy = torch.randint(0, 2 * pad + 1, (n,), generator=generator, device=dev)
        dx = torch.randint(0, 2 * pad + 1, (n,), generator=generator, device=dev)
    if flip:
        flips = torch.rand(n, generator=generator, device=dev) < 0.5
    return dy, dx, flips


def apply_augment(x: Tensor, dy: Tensor | None, dx: Tensor | None, flips: Tensor | None, *,
                  pad: int) -> Tensor:
    """Crop the zero-padded batch ``x`` (n, C, H, W) at ``(dy, dx)`` and flip where
    ``flips``; draws no random numbers."""
    n, c, h, w = x.shape
    dev = x.device
    if dy is not None:
        xp = F.pad(x, (pad, pad, pad, pad))
        rows = (dy[:, None] + torch.arange(h, device=dev))[:, None, :, None]
        cols = (dx[:, None] + torch.arange(w, device=dev))[:, None, None, :]
        x = xp[torch.arange(n, device=dev)[:, None, None, None],
               torch.arange(c, device=dev)[None, :, None, None], rows, cols]
    if flips is not None:
        x = torch.where(flips[:, None, None, None], x.flip(3), x)
    return x


def augment(x: Tensor, generator: torch.Generator, *, pad: int, flip: bool) -> Tensor:
    """Random ``pad``-pixel crops (zero padding) and, if ``flip``, random horizontal flips of
    the batch ``x``, drawn from ``generator`` on ``x``'s device."""
    return apply_augment(x, *augment_draws(x.shape[0], generator, pad=pad, flip=flip), pad=pad)


@dataclass
class EpochPlan:
    """An epoch's random numbers, one row per step: batch indices ``(S, b)``, crops and flips
    ``(S, b)``, and the label-noise draws ``(S, b, L)`` shared by every member of a kind."""
    batches: Tensor
    dy: Tensor | None = None
    dx: Tensor | None = None
    flips: Tensor | None = None
    gauss: Tensor | None = None
    swap_u: Tensor | None = None
    swap_r: Tensor | None = None

    @property
    def steps(self) -> int:
        return self.batches.shape[0]

    def step_fields(self) -> tuple[Tensor | None, ...]:
        """The per-step tensors, in the order of :class:`Step`'s inputs after ``X, y``."""
        return (self.batches, self.dy, self.dx, self.flips, self.gauss, self.swap_u, self.swap_r)

    def step(self, s: int) -> tuple[Tensor | None, ...]:
        """The inputs of :class:`Step` for step ``s`` (after ``X, y``)."""
        return tuple(None if t is None else t[s] for t in self.step_fields())


def _stack(rows: list) -> Tensor | None:
    return None if rows[0] is None else torch.stack(rows)


def plan_epoch(seed: int, epoch: int, *, n: int, batch_size: int, device: torch.device,
               pad: int, flip: bool, augment: bool, num_classes: int,
               kinds: Sequence[str] = (), dtype: torch.dtype = torch.float32,
               passes: int = 1) -> EpochPlan:
    """Draw epoch ``epoch``'s randomness for a run (or a lockstep group) seeded ``seed``:
    ``passes`` shuffled passes over the ``n`` images, each of ``n - n mod b`` images, in ``S``
    batches, their augmentation, and the draws of each noise kind in ``kinds`` (each kind from
    its own copy of the noise stream, as a run of that kind alone would draw it)."""
    g = as_torch_generator(child_seed(seed, STREAM_DATA, epoch), device)
    b = batch_size
    batches = torch.cat([torch.randperm(n, generator=g, device=device)[: n - n % b]
                         for _ in range(passes)]).view(-1, b)
    plan = EpochPlan(batches)
    if augment:
        draws = [augment_draws(b, g, pad=pad, flip=flip) for _ in range(plan.steps)]
        plan.dy, plan.dx, plan.flips = (_stack([d[i] for d in draws]) for i in range(3))
    shape = (b, num_classes)

    def noise_stream() -> torch.Generator:
        return as_torch_generator(child_seed(seed, STREAM_NOISE, epoch), device)
    if Noise.GAUSSIAN in kinds:
        gen = noise_stream()
        plan.gauss = torch.stack([GaussianNoise(1.0).draws(shape, gen, dtype, device)
                                  for _ in range(plan.steps)])
    if Noise.SYMMETRIC in kinds:
        gen, swap = noise_stream(), SymmetricSwapNoise(0.5)
        u, r = zip(*(swap.draws(shape, gen) for _ in range(plan.steps)))
        plan.swap_u, plan.swap_r = torch.stack(u), torch.stack(r)
    return plan


# --- 2. the step --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Member:
    """One member of a lockstep group: its :class:`Noise` kind and level (a teacher:
    ``"teacher"``)."""
    kind: str
    level: float = 0.0


def member_noise(m: Member) -> GaussianNoise | SymmetricSwapNoise | None:
    """The noise model of a member's targets (None: it draws nothing), the swap in its
    ``"copy"`` variant (the one with the paper's ``E[y~]``)."""
    model = NOISE_MODELS.get(m.kind)
    return None if model is None else model(m.level)


def member_targets(t: Tensor, members: Sequence[Member], z: Tensor | None,
                   u: Tensor | None, r: Tensor | None,
                   noises: Sequence[GaussianNoise | SymmetricSwapNoise | None] | None = None
                   ) -> Tensor:
    """``(b, K, L)`` regression targets from the teacher's logits ``t`` (b, L): the logits
    (noiseless, and a Hinton student's), plus ``sigma z`` (Gaussian, Sec. 5.2), copy-swapped
    where ``u < p`` (symmetric), or the swap's mean ``M_p t`` (Eq. 24; the swap's noiseless
    control).
    ``noises``: the members' :func:`member_noise`, built once outside a captured step."""
    out = []
    for m, noise in zip(members, noises or [member_noise(m) for m in members]):
        if m.kind == Noise.GAUSSIAN:
            out.append(noise.apply(t, z))
        elif m.kind == Noise.SYMMETRIC:
            out.append(noise.apply(t, (u, r)))
        elif m.kind == Noise.CONTROL:
            out.append(noise.apply_mean(t))
        else:
            out.append(t)
    return torch.stack(out, dim=1)


def hinton_loss(out: Tensor, t: Tensor, temperature: float) -> Tensor:
    """Hinton et al. (2015)'s soft-target loss of logits ``out`` (b, L) against the teacher's
    ``t``: ``T^2 KL(softmax(t/T) || softmax(out/T))``, the cross-entropy between the softened
    softmaxes less the teacher's entropy (which has no gradient), averaged over the batch; the
    factor ``T^2`` keeps its gradients' size as ``T`` changes (their Sec. 2)."""
    log_q = F.log_softmax(out / temperature, dim=-1)
    log_p = F.log_softmax(t / temperature, dim=-1)
    return temperature ** 2 * (log_p.exp() * (log_p - log_q)).sum(-1).mean()


def member_losses(out: Tensor, t: Tensor, target: Tensor, members: Sequence[Member]) -> Tensor:
    """The ``K`` members' losses from their logits ``out`` (b, K, L), the teacher's ``t``
    (b, L) and the regression targets ``target`` (b, K, L): the quadratic loss per logit,
    ``mean_l (f_l - y~_l)^2`` (PyTorch's ``MSELoss``: ``2/L`` times the gradient of Eq. 13's
    ``1/2 ||f - y~||^2``), or :func:`hinton_loss` for a Hinton student."""
    mse = (out - target).pow(2).mean(dim=(0, 2))
    if not any(m.kind == Noise.HINTON for m in members):
        return mse
    return torch.stack([hinton_loss(out[:, k], t, m.level) if m.kind == Noise.HINTON else mse[k]
                        for k, m in enumerate(members)])


class Step:
    """The training step's losses, one per member: index the batch, augment it, run the
    teacher once (students) and the grouped network once, and compare. The backward pass and
    the optimizer step follow in :meth:`StepLoop.one`."""

    def __init__(self, net: nn.Module, teacher: nn.Module | None, members: Sequence[Member],
                 *, pad: int, augment: bool, amp: bool, channels_last: bool,
                 dtype: torch.dtype) -> None:
        self.net, self.teacher, self.members = net, teacher, tuple(members)
        self.noises = tuple(member_noise(m) for m in self.members)
        self.pad, self.augment, self.amp = pad, augment, amp
        self.channels_last, self.dtype = channels_last, dtype

    def __call__(self, X: Tensor, y: Tensor, idx: Tensor, dy: Tensor | None,
                 dx: Tensor | None, flips: Tensor | None, z: Tensor | None,
                 u: Tensor | None, r: Tensor | None) -> Tensor:
        x = X[idx].to(self.dtype)
        if self.augment:
            x = apply_augment(x, dy, dx, flips, pad=self.pad)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        k = len(self.members)
        # no autocast weight cache: a captured step must not keep casts from its capture
        with torch.autocast(x.device.type, torch.bfloat16, enabled=self.amp, cache_enabled=False):
            out = self.net(x).to(self.dtype)
            if self.teacher is None:
                return F.cross_entropy(out.view(x.shape[0], -1), y[idx]).reshape(1)
            with torch.no_grad():
                t = self.teacher(x).to(self.dtype)
        target = member_targets(t, self.members, z, u, r, self.noises)
        return member_losses(out.view(x.shape[0], k, -1), t, target, self.members)


class CompiledStep:
    """``step``'s forward and loss through ``torch.compile`` as one graph, with ``backend`` and
    ``mode`` (:class:`DevicePolicy`'s ``compile_backend`` and ``compile_mode``; the backend
    ``"eager"`` traces without compiling). Called as the step is.

    It compiles a code object of its own: dynamo keeps compiled code per code object, so a
    shared one would count every step of a process (one per shape) against one recompile limit
    (8 by default; past it, under ``fullgraph``, every new step is an error:
    ``tests/models/test_lockstep.py`` compiles 10), and would keep it for the life of the
    process. Its code is released when the step is collected, through the private
    ``torch._dynamo.reset_code``: torch 2.14 has no public API that drops one code object's
    compiled code (``torch.compiler.reset`` drops every step's, the live ones included), and
    without it the code of every replaced step stayed (measured on the CPU, torch 2.14.1: with
    the finalizer removed, ``tests/models/test_engine.py``'s compiled test kept both replaced
    steps' code, ``[True, True, True]`` against ``[False, False, True]``). On CUDA the recorded graphs' memory pool is inductor's, shared by every compiled step
    on the device, and is freed only once none is left."""

    def __init__(self, step: Step, backend: str = "inductor", mode: str | None = None) -> None:
        call = Step.__call__
        own = types.FunctionType(call.__code__.replace(), call.__globals__, call.__name__,
                                 call.__defaults__, call.__closure__)
        self.code = own.__code__
        options: dict[str, Any] = {"backend": backend}
        if mode is not None:
            options["mode"] = mode
        self.fn = torch.compile(types.MethodType(own, step), fullgraph=True, dynamic=False,
                                **options)
        weakref.finalize(self, torch._dynamo.reset_code, self.code)

    def __call__(self, *args: Any) -> Tensor:
        return self.fn(*args)


# --- 3. an epoch of steps, eager or replayed ----------------------------------------------------

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
    """The training steps of a run: ``run`` (a :class:`Step`, or its :class:`CompiledStep`) on
    the data ``X, y``, then the backward pass and ``opt``'s step. With ``capture``
    (:func:`cuda_capture` on CUDA), the whole step is captured after :data:`WARMUP_STEPS` eager
    ones and replayed. The members' training losses are summed on the device (:attr:`total`),
    so an epoch needs no host synchronisation until its end. ``static_grads``: zero the
    gradients in place (what a captured step needs), or set them to None before each backward
    pass (a compiled step: inductor's CUDA graphs reuse the memory of their outputs, the
    gradients among them, at the next replay, so the previous step's gradients must not be
    touched)."""

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
        from a static buffer -- what the CUDA graph captures. The loop's one backward pass."""
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


# --- 4. the device policy -----------------------------------------------------------------------

@dataclass(frozen=True)
class DevicePolicy:
    """How a run executes on its device (never what it computes, up to rounding).

    ``dtype``: parameters, targets and losses (float64 only when asked for, e.g. by tests);
    ``amp``: bf16 autocast of the forward passes; ``channels_last``: the memory format of
    images and weights; ``eval_batch`` and ``gradnorm_chunk``: images per evaluation batch and
    per chunk of the per-sample probes of ``G``; ``step``: ``eager``, ``graph`` (the whole step
    replayed from a CUDA graph) or ``compiled`` (the forward and loss through
    ``torch.compile``); ``capture``: how the ``graph`` step captures (:func:`cuda_capture`; a
    test may put a recording one in its place, which is how the CPU checks the graph path),
    None on the other steps; ``compile_backend`` and ``compile_mode``: ``torch.compile``'s
    backend and mode on the ``compiled`` step (``inductor``, ``reduce-overhead`` on CUDA and
    inductor's default elsewhere; a test may trace with the backend ``eager`` instead, in
    seconds)."""
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
        is built once per shape and reused (:class:`dsmlib.models.loop.Trainer`)."""
        return self.graphed or self.compiled

    def compile(self, step: Step) -> Step | CompiledStep:
        """``step`` as this policy runs it: itself, or compiled (the ``compiled`` step; the
        mode applies to inductor alone)."""
        if not self.compiled:
            return step
        return CompiledStep(step, self.compile_backend,
                            self.compile_mode if self.compile_backend == "inductor" else None)


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
        capture=cuda_capture if step == "graph" else None,
        # reduce-overhead: inductor's kernels replayed as CUDA graphs, no per-kernel launches
        compile_mode="reduce-overhead" if cuda else "default")


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
