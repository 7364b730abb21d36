"""The epoch-level batch pipeline and the one training step of Section 5 (models layer).

Every random number an epoch needs -- the batch order, the crops and flips, and the label noise
-- is drawn before the epoch's first step (:func:`plan_epoch`) from the epoch's generators,
``child_seed(seed, DATA, epoch)`` and ``child_seed(seed, NOISE, epoch)``, in exactly the order
a per-step loop would draw them. The step (:class:`Step`) then draws nothing: it is a pure
function of tensors, the same on the CPU and on CUDA, which is what makes it safe to capture
as a CUDA graph (:mod:`dsmlib.models.replay`) or to compile (:class:`CompiledStep`).

The students of one teacher share their stream (a seed of their own, not their teacher's),
hence their batches, crops and standard-normal draws (common random numbers across noise
levels), and are trained together: ``K`` members of one grouped network
(:mod:`dsmlib.models.lockstep`), one forward and backward pass per batch, the teacher's forward
pass computed once for all of them. Each member keeps its own targets (the teacher's logits
plus its own noise) and its own loss -- the quadratic loss per logit, or for a Hinton student
the temperature-softened cross-entropy (:func:`hinton_loss`); the step returns the ``K`` losses,
and their sum is minimised (member ``k``'s parameters see only loss ``k``'s gradient).
"""
from __future__ import annotations

import types
import weakref
from dataclasses import dataclass
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..foundation.rng import as_torch_generator, child_seed
from ..theory.label_noise import GaussianNoise, SymmetricSwapNoise

__all__ = ["STREAM_DATA", "STREAM_NOISE", "augment_draws", "apply_augment", "augment",
           "EpochPlan", "plan_epoch", "Member", "member_noise", "member_targets", "hinton_loss",
           "member_losses", "Step", "CompiledStep"]

STREAM_DATA, STREAM_NOISE = 2, 3


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
    if "gaussian" in kinds:
        gen = noise_stream()
        plan.gauss = torch.stack([GaussianNoise(1.0).draws(shape, gen, dtype, device)
                                  for _ in range(plan.steps)])
    if "symmetric" in kinds:
        gen, swap = noise_stream(), SymmetricSwapNoise(0.5)
        u, r = zip(*(swap.draws(shape, gen) for _ in range(plan.steps)))
        plan.swap_u, plan.swap_r = torch.stack(u), torch.stack(r)
    return plan


@dataclass(frozen=True)
class Member:
    """One member of a lockstep group: its noise kind and level (a teacher: ``"teacher"``)."""
    kind: str
    level: float = 0.0


def member_noise(m: Member) -> GaussianNoise | SymmetricSwapNoise | None:
    """The noise a member's targets carry (None: it draws nothing)."""
    kinds = {"gaussian": GaussianNoise, "symmetric": SymmetricSwapNoise,
             "symmetric_mean": SymmetricSwapNoise}
    return kinds[m.kind](m.level) if m.kind in kinds else None


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
        if m.kind == "gaussian":
            out.append(noise.apply(t, z))
        elif m.kind == "symmetric":
            out.append(noise.apply(t, (u, r)))
        elif m.kind == "symmetric_mean":
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
    if not any(m.kind == "hinton" for m in members):
        return mse
    return torch.stack([hinton_loss(out[:, k], t, m.level) if m.kind == "hinton" else mse[k]
                        for k, m in enumerate(members)])


class Step:
    """The training step's losses, one per member: index the batch, augment it, run the
    teacher once (students) and the grouped network once, and compare. The backward pass and
    the optimizer step follow in the loop (:func:`dsmlib.models.training.train_group`)."""

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
    """``step``'s forward and loss through ``torch.compile`` as one graph: on CUDA with
    ``mode="reduce-overhead"`` (CUDA graphs: the forward and its backward replay without
    per-kernel launches), elsewhere inductor's default mode (``backend``: another of
    ``torch.compile``'s, e.g. ``"eager"`` to trace without compiling). Called as the step is.

    It compiles a code object of its own. dynamo keeps compiled code per code object, so a
    shared one would count every engine of a process (one per shape) against one recompile
    limit (8 by default; past it, under ``fullgraph``, every new engine is an error), and
    keeps it for the life of the process: this step's is dropped when the step is collected
    (an engine that is replaced collects at once). On CUDA the recorded graphs' memory pool
    is inductor's, shared by every compiled step on the device, and is freed only once none
    is left."""

    def __init__(self, step: Step, device: torch.device, backend: str = "inductor") -> None:
        call = Step.__call__
        own = types.FunctionType(call.__code__.replace(), call.__globals__, call.__name__,
                                 call.__defaults__, call.__closure__)
        self.code = own.__code__
        options: dict[str, Any] = {"backend": backend}
        if backend == "inductor":
            options["mode"] = "reduce-overhead" if device.type == "cuda" else "default"
        self.fn = torch.compile(types.MethodType(own, step), fullgraph=True, dynamic=False,
                                **options)
        weakref.finalize(self, torch._dynamo.reset_code, self.code)

    def __call__(self, *args: Any) -> Tensor:
        return self.fn(*args)
