"""Section 5's training loop (models layer): a teacher trained with cross-entropy, or the
students of one teacher, in lockstep, each regressing on the teacher's logits plus its own
noise redrawn at every step -- or several of either, of several seeds, as one group; and what
it measures after every epoch. It reads top to bottom:

1. **The epoch's draws** (:func:`plan_epoch`, per lane; :func:`plan_lanes`): every random
   number of an epoch, drawn before its first step -- one :class:`Batch` per step: which
   images, their crops and flips, and the label noise of their targets.
2. **The step** (:meth:`Trainer.step`): one step of SGD on one batch -- the batch's images,
   cropped and flipped; the teacher's logits and each member's noisy target; each member's
   loss (:meth:`Trainer.losses`); one ``.backward()`` for all; SGD's update.
3. **The epoch** (:meth:`Trainer.epoch`): every step of the plan, summing the members' losses.
4. **The measurements** (:func:`measure`): after every epoch, per member.
5. **The run** (:func:`train_group`): the epochs, the learning rate's schedule, resuming, and
   each run's rows of metrics.

Words. A *step* is one SGD update on one batch, and nothing else: an epoch has
:attr:`EpochPlan.steps` of them. A *member* is one run of a group. A *lane* is the members that
read the same batches (:mod:`dsmlib.models.sec5_distillation.lockstep`): one teacher, or the students of one
teacher in lockstep; a group of several lanes trains runs of several seeds at once, each lane
on its own data split, batches, crops, noise and teacher (:class:`~dsmlib.models.sec5_distillation.lanes.Lanes`),
so each run's numbers are still those of its separate run, up to rounding. The *form* of the
step (``step="eager" | "graph" | "compiled"``, :mod:`dsmlib.models.sec5_distillation.device`) is how it executes:
eagerly here, or replayed from a CUDA graph or compiled by :mod:`dsmlib.models.sec5_distillation.graph`, whose
trainers run this module's :meth:`Trainer.step` and :meth:`Trainer.losses` as they are.

Randomness: each epoch draws its order and augmentation from ``child_seed(s, DATA, epoch)``
and its label noise from ``child_seed(s, NOISE, epoch)``, with ``s`` the run's stream
(:func:`stream_seed`: a teacher's seed; for students ``child_seed(seed, STUDENTS, stream)``, so
a student never replays its teacher's batches and crops). So an epoch is reproducible from the
model and optimizer state alone (a resumed run continues exactly), the step draws nothing (it
can be captured), and the students of one seed and stream see the same batches and the same
standard-normal draws at every level (common random numbers). That is what lets them train in
lockstep: ``K`` students are the members of one grouped network
(:class:`dsmlib.models.networks.CifarResNet` with ``members=K``), one forward and backward pass
per batch, the teacher's forward pass computed once for all of them; member ``k`` keeps its own
target and loss, the sum of the ``K`` losses is minimised (member ``k``'s parameters see only
loss ``k``'s gradient), and its state is a slice of the group's (:mod:`dsmlib.models.sec5_distillation.lockstep`),
so each member's numbers equal those of its separate run up to rounding. Runs of other seeds
(other lanes) join the group the same way: each lane's batches come from its own stream, its
images from its own split, its targets from its own teacher, its ``G`` probes from its own
seed, and a teacher's initialisation from its own seed (:func:`initial_state`).

Measured before training (epoch 0) and after every epoch, per member: accuracy and loss on the
training (un-augmented; between the first and the last epoch on ``n_train_eval`` of its images)
and validation sets, and on the test set before training and after the last epoch only; the
gradient norm ``G(theta)`` of Eq. (22) on a fixed subsample of the training set with its
standard error (all members in one pass of per-sample probes, :class:`GradNormMeter`); the mean
training objective SGD saw, the learning rate, and wall times (of the whole group); for students
also the teacher's logit scale on the training images and the variance per logit of the
member's noise (:func:`logit_variance`, :func:`noise_variance`). A student's losses compare its
logits with the noise's mean ``E[y~]`` (``y`` for Gaussian noise, ``M y`` for the swap and its
control); a teacher's are cross-entropies.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...foundation.rng import as_torch_generator, child_seed
from ...theory.gradient_norm import (ProbeEstimate, member_probe_estimates, member_probe_sq_norms,
                                    member_probes)
from ...theory.label_noise import GaussianNoise, SymmetricSwapNoise
from .correctness import pack_flags
from .datasets import DataSplit, apply_augment, augment_draws
from .device import DevicePolicy, device_policy
from .lanes import SPLITS, Lanes
from .lockstep import across_seeds_key, lanes_of, stack_optimizer_states, stack_states
from ..networks import cifar_resnet
from .run_config import Noise, RunConfig

__all__ = ["STREAM_INIT", "STREAM_DATA", "STREAM_NOISE", "STREAM_GRADNORM", "STREAM_STUDENTS",
           "stream_seed", "lr_at", "build_model", "initial_state", "teacher_model",
           "group_teacher", "Batch", "EpochPlan", "plan_epoch", "plan_lanes", "Member",
           "members_of", "member_noise", "member_targets", "hinton_loss", "member_losses",
           "Trainer", "clock", "predict", "noiseless_targets", "logit_variance",
           "noise_variance", "GradNormMeter", "measure", "Baseline", "TrainerSource",
           "lane_configs", "lane_seeds", "train_group", "train"]

STREAM_INIT, STREAM_DATA, STREAM_NOISE, STREAM_GRADNORM, STREAM_STUDENTS = 1, 2, 3, 4, 5
# the noise model of each kind that has one (the control uses only its mean)
NOISE_MODELS = {Noise.GAUSSIAN: GaussianNoise, Noise.SYMMETRIC: SymmetricSwapNoise,
                Noise.CONTROL: SymmetricSwapNoise}

# on_epoch(epoch, histories, model, optimizer): the grouped model and its optimizer
EpochHook = Callable[[int, list, nn.Module, torch.optim.Optimizer], None]


# --- a run's seeds, schedule and network --------------------------------------------------------

def stream_seed(config: RunConfig) -> int:
    """The seed of a run's epoch plans (batches, crops, noise): a teacher's ``seed``; a
    student's drawn from ``child_seed(seed, STUDENTS, stream)``, shared by the students of one
    teacher and stream (they train in lockstep), never its teacher's."""
    if config.role == "teacher":
        return config.seed
    node = child_seed(config.seed, STREAM_STUDENTS, config.stream)
    return int(node.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))   # an int root


def lr_at(config: RunConfig, epoch: int) -> float:
    """The learning rate of epoch ``epoch`` (from 0): the run's recipe's
    (:meth:`dsmlib.models.sec5_distillation.recipe.Recipe.lr_at`)."""
    return config.lr_at(epoch)


def build_model(config: RunConfig, data: DataSplit, members: int = 1,
                policy: DevicePolicy | None = None,
                lanes: Sequence[int] | None = None) -> nn.Module:
    """The CIFAR ResNet of ``config.depth`` for the data's channels and classes, initialised from
    ``child_seed(seed, INIT)`` (a student's weights are then replaced by its teacher's);
    ``members`` networks in one grouped module, reading per-lane images where ``lanes`` gives
    each member's lane."""
    policy = policy or device_policy(config.precision, data.device)
    model = cifar_resnet(config.depth, data.spec.num_classes, in_channels=data.spec.in_channels,
                         seed=child_seed(config.seed, STREAM_INIT), device=data.device,
                         members=members, dtype=policy.dtype, lanes=lanes)
    return model.to(memory_format=torch.channels_last) if policy.channels_last else model


def initial_state(configs: Sequence[RunConfig], lanes: Lanes,
                  policy: DevicePolicy) -> dict[str, Tensor]:
    """The state a group of teachers starts from: each member's own initialisation, as its
    separate run builds it (:func:`build_model` from its seed), stacked."""
    return stack_states([build_model(c, lanes.splits[lane], 1, policy).state_dict()
                         for c, lane in zip(configs, lanes.of)])


def teacher_model(config: RunConfig, lanes: int, policy: DevicePolicy,
                  data: DataSplit) -> nn.Module:
    """A network of the shape of the teacher of a group of ``lanes`` lanes (of configuration
    ``config``), frozen in eval mode: one lane's plain; several lanes' one grouped network of
    ``lanes`` members, member ``l`` reading lane ``l``'s images."""
    model = build_model(config, data, lanes, policy,
                        lanes=None if lanes == 1 else range(lanes))
    return model.eval().requires_grad_(False)


def group_teacher(config: RunConfig, teachers: Sequence[nn.Module], policy: DevicePolicy,
                  data: DataSplit) -> nn.Module:
    """The teacher of a group's lanes (``teachers[l]``, of configuration ``config``), in eval
    mode: one lane's as it is; several lanes' in one :func:`teacher_model`."""
    if len(teachers) == 1:
        return teachers[0].eval()
    model = teacher_model(config, len(teachers), policy, data)
    model.load_state_dict(stack_states([t.state_dict() for t in teachers]))
    return model


# --- 1. the epoch's draws -----------------------------------------------------------------------

@dataclass(frozen=True)
class Batch:
    """One step's batch, as drawn before its epoch: the indices ``idx`` of its ``b`` images,
    their crop offsets ``dy, dx`` and flips (``(b,)``; None without augmentation, or without
    flips), and the label noise's draws ``(b, L)``, shared by every member of a kind: the
    standard normals of Gaussian noise (``gauss``), the swap's uniforms and partners
    (``swap_u``, ``swap_r``; None where no member draws that kind). In an :class:`EpochPlan`
    every field has a first axis of steps."""
    idx: Tensor
    dy: Tensor | None = None
    dx: Tensor | None = None
    flips: Tensor | None = None
    gauss: Tensor | None = None
    swap_u: Tensor | None = None
    swap_r: Tensor | None = None

    def map(self, fn: Callable[[Tensor], Tensor]) -> Batch:
        """The batch with ``fn`` applied to each of its tensors (None stays None)."""
        return Batch(**{f.name: None if getattr(self, f.name) is None else fn(getattr(self, f.name))
                        for f in fields(self)})


@dataclass(frozen=True)
class EpochPlan:
    """An epoch's draws: its steps' batches stacked (each field of ``batches`` is ``(S, ...)``)."""
    batches: Batch

    @property
    def steps(self) -> int:
        return self.batches.idx.shape[0]

    def batch(self, s: int) -> Batch:
        """The batch of step ``s``."""
        return self.batches.map(lambda t: t[s])


def _stack(rows: list) -> Tensor | None:
    return None if rows[0] is None else torch.stack(rows)


def plan_epoch(seed: int, epoch: int, *, n: int, batch_size: int, device: torch.device,
               pad: int, flip: bool, augment: bool, num_classes: int,
               kinds: Sequence[str] = (), dtype: torch.dtype = torch.float32,
               passes: int = 1) -> EpochPlan:
    """Draw epoch ``epoch``'s randomness for a run (or a lockstep group) seeded ``seed``, in
    exactly the order a per-step loop would draw it: ``passes`` shuffled passes over the ``n``
    images, each of ``n - n mod b`` images, in ``S`` batches, their augmentation, and the draws
    of each noise kind in ``kinds`` (each kind from its own copy of the noise stream, as a run
    of that kind alone would draw it)."""
    g = as_torch_generator(child_seed(seed, STREAM_DATA, epoch), device)
    b = batch_size
    idx = torch.cat([torch.randperm(n, generator=g, device=device)[: n - n % b]
                     for _ in range(passes)]).view(-1, b)
    steps = idx.shape[0]
    dy = dx = flips = gauss = swap_u = swap_r = None
    if augment:
        draws = [augment_draws(b, g, pad=pad, flip=flip) for _ in range(steps)]
        dy, dx, flips = (_stack([d[i] for d in draws]) for i in range(3))
    shape = (b, num_classes)

    def noise_stream() -> torch.Generator:
        return as_torch_generator(child_seed(seed, STREAM_NOISE, epoch), device)
    if Noise.GAUSSIAN in kinds:
        gen = noise_stream()
        gauss = torch.stack([GaussianNoise(1.0).draws(shape, gen, dtype, device)
                             for _ in range(steps)])
    if Noise.SYMMETRIC in kinds:
        gen, swap = noise_stream(), SymmetricSwapNoise(0.5)
        u, r = zip(*(swap.draws(shape, gen) for _ in range(steps)))
        swap_u, swap_r = torch.stack(u), torch.stack(r)
    return EpochPlan(Batch(idx=idx, dy=dy, dx=dx, flips=flips, gauss=gauss, swap_u=swap_u,
                           swap_r=swap_r))


def plan_lanes(plans: Sequence[EpochPlan]) -> EpochPlan:
    """The epoch plan of a group from each lane's (:func:`plan_epoch`, same shapes): every
    field ``(S, L, ...)``, step by step, lane by lane (one lane's: its plan with a lane axis
    of one)."""
    if len(plans) == 1:
        return EpochPlan(plans[0].batches.map(lambda t: t.unsqueeze(1)))
    first = plans[0].batches
    return EpochPlan(Batch(**{f.name: None if getattr(first, f.name) is None else
                              torch.stack([getattr(p.batches, f.name) for p in plans], dim=1)
                              for f in fields(Batch)}))


# --- 2. the targets and the losses --------------------------------------------------------------

@dataclass(frozen=True)
class Member:
    """One member of a lockstep group: its :class:`~dsmlib.models.sec5_distillation.run_config.Noise` kind and
    level (a teacher: ``"teacher"``)."""
    kind: str
    level: float = 0.0


def members_of(configs: Sequence[RunConfig]) -> tuple[Member, ...]:
    """The members of a group of runs, in order."""
    return tuple(Member("teacher") if c.role == "teacher" else Member(c.noise, c.level)
                 for c in configs)


def member_noise(m: Member) -> GaussianNoise | SymmetricSwapNoise | None:
    """The noise model of a member's targets (None: it draws nothing), the swap in its
    ``"copy"`` variant (the one with the paper's ``E[y~]``)."""
    model = NOISE_MODELS.get(m.kind)
    return None if model is None else model(m.level)


def _target(m: Member, noise: GaussianNoise | SymmetricSwapNoise | None, t: Tensor,
            batch: Batch | None) -> Tensor:
    if m.kind == Noise.GAUSSIAN:
        return noise.apply(t, batch.gauss)
    if m.kind == Noise.SYMMETRIC:
        return noise.apply(t, (batch.swap_u, batch.swap_r))
    if m.kind == Noise.CONTROL:
        return noise.apply_mean(t)
    return t


def member_targets(t: Tensor, members: Sequence[Member], batch: Batch | None = None,
                   noises: Sequence[GaussianNoise | SymmetricSwapNoise | None] | None = None,
                   lanes: Sequence[int] | None = None) -> Tensor:
    """``(b, K, L)`` regression targets from the teacher's logits ``t`` (b, L) and the
    ``batch``'s noise draws: the logits (noiseless, and a Hinton student's), plus ``sigma z``
    (Gaussian, Sec. 5.2), copy-swapped where ``u < p`` (symmetric), or the swap's mean
    ``M_p t`` (Eq. 24; the swap's noiseless control). Without a batch, only members that draw
    nothing. ``noises``: the members' :func:`member_noise`, if built already. ``lanes`` (a
    group of several lanes): member ``k``'s lane; ``t`` is then ``(b, lanes, L)`` and the
    batch's draws have a lane axis first, and member ``k`` reads lane ``lanes[k]``'s."""
    out = []
    for k, (m, noise) in enumerate(zip(members, noises or [member_noise(m) for m in members])):
        if lanes is None:
            out.append(_target(m, noise, t, batch))
            continue
        lane = lanes[k]
        mine = None if batch is None else batch.map(lambda v: v[lane])
        out.append(_target(m, noise, t[:, lane], mine))
    return torch.stack(out, dim=1)


def hinton_loss(out: Tensor, t: Tensor, temperature: float) -> Tensor:
    """Hinton et al. (2015)'s soft-target loss of logits ``out`` (b, L) against the teacher's
    ``t``: ``T^2 KL(softmax(t/T) || softmax(out/T))``, the cross-entropy between the softened
    softmaxes less the teacher's entropy (which has no gradient), averaged over the batch; the
    factor ``T^2`` keeps its gradients' size as ``T`` changes (their Sec. 2)."""
    log_q = F.log_softmax(out / temperature, dim=-1)
    log_p = F.log_softmax(t / temperature, dim=-1)
    return temperature ** 2 * (log_p.exp() * (log_p - log_q)).sum(-1).mean()


def member_losses(out: Tensor, t: Tensor, target: Tensor, members: Sequence[Member],
                  lanes: Sequence[int] | None = None, labels: Tensor | None = None) -> Tensor:
    """The ``K`` members' losses from their logits ``out`` (b, K, L), the teacher's ``t``
    (b, L; with ``lanes``, each member's lane, ``(b, lanes, L)``) and the regression targets
    ``target`` (b, K, L): the quadratic loss per logit, ``mean_l (f_l - y~_l)^2`` (PyTorch's
    ``MSELoss``: ``2/L`` times the gradient of Eq. 13's ``1/2 ||f - y~||^2``),
    :func:`hinton_loss` for a Hinton student, or the cross-entropy on the batch's ``labels``
    ((b,); with ``lanes``, ``(b, lanes)``) for the continued teacher."""
    mse = (out - target).pow(2).mean(dim=(0, 2))
    if not any(m.kind in (Noise.HINTON, Noise.CONTINUED) for m in members):
        return mse

    def own(k: int, m: Member) -> Tensor:
        if m.kind == Noise.HINTON:
            return hinton_loss(out[:, k], t if lanes is None else t[:, lanes[k]], m.level)
        if m.kind == Noise.CONTINUED:
            if labels is None:
                raise ValueError("the continued teacher's loss needs the batch's labels")
            return F.cross_entropy(out[:, k], labels if lanes is None else labels[:, lanes[k]])
        return mse[k]
    return torch.stack([own(k, m) for k, m in enumerate(members)])


# --- 3. the step and the epoch ------------------------------------------------------------------

class Trainer:
    """What a group -- one teacher, the students of one teacher in lockstep, or several lanes
    of them across seeds -- trains with: the grouped network of its ``K`` members, the teacher
    its targets come from (in eval mode; for several lanes, one grouped network of their
    teachers, :func:`group_teacher`), SGD, every lane's training images and the ``G`` meter;
    and its step and its epoch. ``data``: one split (one lane), one per lane, or
    :class:`~dsmlib.models.sec5_distillation.lanes.Lanes`. A group of teachers starts from each member's own
    initialisation (:func:`initial_state`).

    ``drop_grads``: each step sets the gradients to None before its backward pass instead of
    zeroing them in place (a form of the step may need either:
    :class:`dsmlib.models.sec5_distillation.graph.ReusableTrainer`)."""

    drop_grads = False

    def __init__(self, configs: Sequence[RunConfig], data: DataSplit | Sequence[DataSplit] | Lanes,
                 teacher: nn.Module | None, policy: DevicePolicy) -> None:
        c, k_all = configs[0], len(configs)
        self.policy, self.teacher = policy, teacher
        self.members = members_of(configs)
        self.noises = tuple(member_noise(m) for m in self.members)
        self.lanes = Lanes.of_group(lanes_of(configs), data)
        self.X, self.y = self.lanes.training_images()
        self.rows = torch.arange(self.lanes.count, device=self.X.device)[:, None]
        self.pad, self.augment = self.lanes.first.pad, c.augment
        self.model = build_model(c, self.lanes.first, k_all, policy, self.lanes.member_lanes)
        if teacher is None and k_all > 1:
            self.model.load_state_dict(initial_state(configs, self.lanes, policy))
        self.opt = c.optimizer(self.model.parameters())
        self.gradnorm = GradNormMeter(self.model, self.lanes.subsample(c.n_gradnorm), k_all,
                                      seed=lane_seeds(configs, self.lanes),
                                      n_probes=c.gradnorm_probes,
                                      chunk_size=policy.gradnorm_chunk,
                                      lanes=self.lanes.member_lanes)

    def inputs(self, batch: Batch) -> Tensor:
        """The batch's images (every field of ``batch`` with a lane axis first), cropped and
        flipped: one lane's ``(b, C, H, W)``, several lanes' ``(b, L, C, H, W)``."""
        n_lanes, b = batch.idx.shape
        x = self.X[self.rows, batch.idx].to(self.policy.dtype).flatten(0, 1)
        if self.augment:
            x = apply_augment(x, *(None if v is None else v.flatten()
                                   for v in (batch.dy, batch.dx, batch.flips)), pad=self.pad)
        if n_lanes > 1:
            return x.view(n_lanes, b, *x.shape[1:]).transpose(0, 1)
        return x.contiguous(memory_format=torch.channels_last) if self.policy.channels_last else x

    def losses(self, batch: Batch) -> Tensor:
        """The members' losses on ``batch`` (every field with a lane axis first), ``(K,)``: its
        images, cropped and flipped; the teacher's logits and each member's noisy target; each
        member's loss (a teacher's: cross-entropy on the labels). Draws nothing and reads
        nothing back to the host."""
        dtype, lanes = self.policy.dtype, self.lanes.member_lanes
        x = self.inputs(batch)
        b, k_all = x.shape[0], len(self.members)
        # no autocast weight cache: a captured step must not keep casts from its capture
        with torch.autocast(x.device.type, torch.bfloat16, enabled=self.policy.amp,
                            cache_enabled=False):
            out = self.model(x).to(dtype)
            if self.teacher is None:
                y = self.y[self.rows, batch.idx]
                if lanes is None:
                    return F.cross_entropy(out.view(b, -1), y[0]).reshape(1)
                return F.cross_entropy(out.permute(0, 2, 1), y.t(), reduction="none").mean(0)
            with torch.no_grad():
                t = self.teacher(x).to(dtype)
        draws = batch if lanes is not None else batch.map(lambda v: v[0])
        target = member_targets(t, self.members, draws, self.noises, lanes)
        labels = self.y[self.rows, batch.idx]
        return member_losses(out.view(b, k_all, -1), t, target, self.members, lanes,
                             labels[0] if lanes is None else labels.t())

    def step(self, batch: Batch) -> Tensor:
        """One step of SGD on ``batch``: the losses, one backward pass for all members, the
        update. Returns the members' losses (detached)."""
        losses = self.losses(batch)
        self.opt.zero_grad(set_to_none=self.drop_grads)
        losses.sum().backward()
        self.opt.step()
        return losses.detach()

    def epoch(self, plan: EpochPlan) -> Tensor:
        """Every step of ``plan`` at the optimizer's current learning rate; the members' summed
        training losses (on the device: no host synchronisation until the epoch's end)."""
        total = torch.zeros(len(self.members), dtype=self.policy.dtype, device=self.X.device)
        for s in range(plan.steps):
            total += self.step(plan.batch(s))
        return total

    def load_optimizer(self, state_dict: dict[str, Any]) -> None:
        """Continue from a saved SGD state (a resumed run)."""
        self.opt.load_state_dict(state_dict)


# --- 4. the measurements ------------------------------------------------------------------------

def clock(device: torch.device) -> float:
    """Wall time in seconds, after the device's queued work (CUDA) has finished."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


@torch.no_grad()
def predict(model: nn.Module, X: Tensor, *, amp: bool, batch: int = 1024,
            dtype: torch.dtype = torch.float32, channels_last: bool = False) -> Tensor:
    """Logits (in ``dtype``) of ``model`` (as it is: call ``eval()`` first) on ``X``, in
    batches (channels-last where the run's policy says so); ``(N, L)``, or ``(N, K, L)`` for
    a ``K``-member module."""
    wdtype = next(model.parameters()).dtype
    out = []
    for s in range(0, X.shape[0], batch):
        x = X[s:s + batch].to(wdtype)
        x = x.contiguous(memory_format=torch.channels_last) if channels_last and x.ndim == 4 else x
        with torch.autocast(X.device.type, torch.bfloat16, enabled=amp):
            out.append(model(x).to(dtype))
    return torch.cat(out)


def _mean_members(members: Sequence[Member]) -> list[Member]:
    """The noiseless target ``E[y~]`` of each member, as a member drawing nothing."""
    return [Member(Noise.CONTROL, m.level) if m.kind in (Noise.SYMMETRIC, Noise.CONTROL) else
            Member(Noise.NONE) for m in members]


def _predict(model: nn.Module, X: Tensor, policy: DevicePolicy, batch: int = 1024) -> Tensor:
    return predict(model, X, amp=policy.amp, batch=batch, dtype=policy.dtype,
                   channels_last=policy.channels_last)


def noiseless_targets(teacher: nn.Module | None, members: Sequence[Member],
                      data: DataSplit | Lanes, policy: DevicePolicy) -> dict[str, Tensor | None]:
    """Per split, the members' noiseless targets ``(N, K, L)`` (None for a teacher run), each
    from its own lane's teacher on its lane's images (``data``: one split, or the lanes)."""
    lanes = data if isinstance(data, Lanes) else Lanes.of_group([0] * len(members), data)
    if teacher is None:
        return {k: None for k in SPLITS}
    return {name: member_targets(_predict(teacher, lanes.split(name)[0], policy),
                                 _mean_members(members), lanes=lanes.member_lanes)
            for name in SPLITS}


def logit_variance(t: Tensor) -> float:
    """The teacher's logit scale: the variance of each logit vector ``t_i`` (N, L) about its own
    mean, ``(1/L) sum_l (t_il - mean_l t_il)^2``, averaged over the images. Label noise is
    stated in these units beside ``sigma^2`` and ``p`` (:func:`noise_variance`)."""
    return float(t.double().var(dim=-1, unbiased=False).mean())


def noise_variance(member: Member, t: Tensor) -> float:
    """The variance per logit of a member's label noise around its mean target, averaged over
    the teacher's logits ``t`` (N, L): ``sigma^2`` for Gaussian noise, the swap's
    ``(1/L) tr Cov(y~_i)`` (its closed form, which depends on the logits) for the symmetric
    swap, 0 for a member that draws no noise."""
    if member.kind == Noise.GAUSSIAN:
        return float(member.level)
    if member.kind == Noise.SYMMETRIC:
        cov = member_noise(member).covariance(t.double())
        return float(cov.diagonal(dim1=-2, dim2=-1).mean())
    return 0.0


class GradNormMeter:
    """``G`` of every member of ``model`` on (its own copy of) ``X`` by ``n_probes`` Rademacher
    probes per image, in one pass of per-sample probes; the probes of epoch ``e`` drawn from
    ``child_seed(seed, GRADNORM, e)``. Several lanes (``lanes``: each member's lane): ``X`` is
    ``(N, L, C, H, W)`` and ``seed`` holds each lane's seed; a member gets its lane's probes."""

    def __init__(self, model: nn.Module, X: Tensor, members: int, *, seed: int | Sequence[int],
                 n_probes: int, chunk_size: int, lanes: Sequence[int] | None = None) -> None:
        self.model, self.members, self.seed, self.lanes = model, members, seed, lanes
        self.X = X.to(next(model.parameters()).dtype, copy=True)
        self.n_probes, self.chunk_size = n_probes, chunk_size

    def probes(self, epoch: int) -> Tensor:
        """Epoch ``epoch``'s probes, ``(N, n_probes, K * L)``."""
        def gen(seed: int) -> torch.Generator:
            return as_torch_generator(child_seed(seed, STREAM_GRADNORM, epoch), self.X.device)
        if self.lanes is None:
            return member_probes(self.model, self.X, self.members, self.n_probes, "rademacher",
                                 gen(self.seed))
        return member_probes(self.model, self.X, self.members, self.n_probes, "rademacher",
                             [gen(s) for s in self.seed], self.lanes)

    def sq_norms(self, U: Tensor) -> Tensor:
        """The probes ``U`` pulled back through each member's parameters, squared norms
        ``(N, n_probes, K)``."""
        return member_probe_sq_norms(self.model, self.X, U, self.members, self.chunk_size)

    def estimates(self, U: Tensor, q: Tensor) -> list[ProbeEstimate]:
        """Each member's estimate of ``G`` from its probes ``U`` and squared norms ``q``."""
        return member_probe_estimates(q, "rademacher", U.shape[-1] // self.members)

    def __call__(self, epoch: int) -> list[ProbeEstimate]:
        U = self.probes(epoch)
        return self.estimates(U, self.sq_norms(U))


def _split_rows(model: nn.Module, lanes: Lanes, name: str, target: Tensor | None,
                policy: DevicePolicy, part: int | None,
                members: Sequence[Member] = ()) -> list[dict[str, Any]]:
    """Each member's accuracy and loss on split ``name`` (its first ``part`` images if not
    None), on its lane's images and labels: a student's squared error against its noiseless
    target, a teacher's (and the continued teacher's) cross-entropy."""
    X, y = lanes.split(name)
    if part is not None and part < X.shape[0]:
        X, y = X[:part], y[..., :part]
        target = None if target is None else target[:part]
    k_all = len(lanes.of)
    logits = _predict(model, X, policy, policy.eval_batch).view(X.shape[0], k_all, -1)
    rows = []
    for k in range(k_all):
        yk = lanes.labels_of(y, k)
        right = logits[:, k].argmax(dim=1) == yk
        row = {f"{name}_acc": float(right.float().mean())}
        if name == "test":    # which test images: the test set's own error (Section 5)
            row["test_correct"] = pack_flags(right.cpu().numpy())
        labelled = target is None or (members and members[k].kind == Noise.CONTINUED)
        row[f"{name}_loss"] = float(F.cross_entropy(logits[:, k], yk) if labelled
                                    else F.mse_loss(logits[:, k], target[:, k]))
        rows.append(row)
    return rows


def measure(model: nn.Module, data: DataSplit | Lanes, targets: dict[str, Tensor | None],
            configs: Sequence[RunConfig], policy: DevicePolicy, epoch: int,
            gradnorm: Callable[[int], list[ProbeEstimate]], *, whole: bool = True
            ) -> list[dict[str, Any]]:
    """Per member: accuracies and losses on every split (its lane's: ``data`` is one split, or
    the group's lanes), then ``G(theta)`` on the fixed subsample, every member in one pass.
    ``whole=False`` (the epochs between the first and the last): the training loss and
    accuracy on the first ``n_train_eval`` training images only (a fixed random subsample: the
    split is a seeded permutation), and nothing on the test set (None), which is read before
    training and after the last epoch alone."""
    lanes = data if isinstance(data, Lanes) else Lanes.of_group(lanes_of(configs), data)
    model.eval()
    t0 = clock(lanes.device)
    rows: list[dict[str, Any]] = [{} for _ in configs]
    for name in SPLITS:
        if not whole and name == "test":
            for row in rows:
                row.update(test_acc=None, test_loss=None)
            continue
        part = configs[0].n_train_eval if not whole and name == "train" else None
        for row, got in zip(rows, _split_rows(model, lanes, name, targets[name], policy, part,
                                              members_of(configs))):
            row.update(got)
    t1 = clock(lanes.device)
    ests = gradnorm(epoch)
    t2 = clock(lanes.device)
    for row, est in zip(rows, ests):
        row.update(gradnorm=est.estimate, gradnorm_se=est.standard_error, eval_s=t1 - t0,
                   gradnorm_s=t2 - t1)
    return rows


# --- 5. the run ---------------------------------------------------------------------------------

class TrainerSource(Protocol):
    """Where :func:`train_group` gets its :class:`Trainer` for a step form other than eager
    (:class:`dsmlib.models.sec5_distillation.graph.Trainers`)."""

    def get(self, configs: Sequence[RunConfig], data: Lanes, teacher: nn.Module | None,
            policy: DevicePolicy) -> Trainer: ...


def lane_configs(configs: Sequence[RunConfig], lanes: Lanes) -> list[RunConfig]:
    """The first run of each lane, in lane order: what the lane's batches (its stream) and
    ``G``'s probes (its seed) are drawn from."""
    return [configs[lanes.of.index(lane)] for lane in range(lanes.count)]


def lane_seeds(configs: Sequence[RunConfig], lanes: Lanes) -> int | list[int]:
    """The seed of each lane's ``G`` probes (its runs' seed): one lane's as an int."""
    seeds = [c.seed for c in lane_configs(configs, lanes)]
    return seeds[0] if lanes.count == 1 else seeds


def _check_group(configs: Sequence[RunConfig], lanes: Lanes, teachers: Sequence[nn.Module]
                 ) -> None:
    if not configs:
        raise ValueError("configs must hold at least one run configuration")
    if len({across_seeds_key(c) for c in configs}) > 1:
        raise ValueError("runs of one group must differ only in their seed, student stream, "
                         "noise and level (students in lockstep: of one teacher): "
                         + ", ".join(c.label() for c in configs))
    if (not teachers) != (configs[0].role == "teacher"):
        raise ValueError("a student run needs its trained teacher, and a teacher run none")
    if teachers and len(teachers) != lanes.count:
        raise ValueError(f"the group's {lanes.count} lanes need one teacher each, got "
                         f"{len(teachers)}")
    n, c = lanes.first.X_train.shape[0], configs[0]
    if c.batch_size > n:
        raise ValueError(f"batch_size must be <= the {n} training images, got {c.batch_size}")
    if c.n_gradnorm > n:   # G is measured on the first n_gradnorm training images
        raise ValueError(f"n_gradnorm must be <= the {n} training images, got {c.n_gradnorm}")


def _policy(step: str | DevicePolicy, config: RunConfig, device: torch.device,
            trainers: TrainerSource | None) -> DevicePolicy:
    policy = step if isinstance(step, DevicePolicy) else device_policy(config.precision, device,
                                                                       step)
    if trainers is None and policy.reusable:
        raise ValueError(f"step={policy.step!r} runs on a trainer kept for reuse: pass "
                         "trainers=dsmlib.models.sec5_distillation.graph.Trainers()")
    return policy


@dataclass(frozen=True)
class Baseline:
    """What a group's rows report besides its measurements, fixed before training: per split
    the members' noiseless targets (:func:`noiseless_targets`), and per member the loss of
    predicting its mean target (the loss's scale; a teacher's: ``log L``), its teacher's
    logit scale (:func:`logit_variance`) and its noise's variance in those units
    (:func:`noise_variance`; None for teachers)."""
    targets: dict[str, Tensor | None]
    scales: list[float]
    logit_vars: list[float | None]
    noise_vars: list[float | None]

    @classmethod
    def of(cls, trainer: Trainer, configs: Sequence[RunConfig],
           teacher: nn.Module | None) -> Baseline:
        """The baseline of ``trainer``'s group with ``teacher`` (the lanes' teachers, as
        :func:`group_teacher` gives them; None for teachers)."""
        members, lanes, policy = trainer.members, trainer.lanes, trainer.policy
        targets = noiseless_targets(teacher, members, lanes, policy)
        t_train, k_all = targets["train"], len(members)
        if t_train is None:
            return cls(targets, [math.log(configs[0].num_classes)] * k_all, [None] * k_all,
                       [None] * k_all)
        scales = [math.log(configs[0].num_classes) if m.kind == Noise.CONTINUED else
                  float(F.mse_loss(t, t.mean(0).expand_as(t)))
                  for m, t in zip(members, t_train.unbind(1))]
        raw = _predict(teacher, lanes.split("train")[0], policy)   # the teachers' logits
        lane_raw = [lanes.logits_of(raw, lane) for lane in lanes.of]
        return cls(targets, scales, [logit_variance(t) for t in lane_raw],
                   [noise_variance(m, t) for m, t in zip(members, lane_raw)])

    def rows(self, epoch: int, lr: float, train_s: float, objectives: Sequence[float | None],
             n: int, measured: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each member's row of epoch ``epoch``: these values beside its measurements."""
        k_all = len(measured)
        return [dict(epoch=epoch, lr=lr, train_objective=obj, train_s=train_s, loss_scale=sc,
                     logit_var=lv, noise_var=nv, n_train=n, lockstep=k_all, **row)
                for obj, sc, lv, nv, row in zip(objectives, self.scales, self.logit_vars,
                                                self.noise_vars, measured)]


def _start(trainer: Trainer, teachers: Sequence[nn.Module], states: Sequence[dict] | None
           ) -> list[list[dict]] | None:
    """Set the group's starting point: each student its lane's teacher's weights, or each
    member its checkpoint (``states``; then their histories so far, else None)."""
    if teachers:
        lane_states = [t.state_dict() for t in teachers]
        trainer.model.load_state_dict(stack_states([lane_states[lane]
                                                    for lane in trainer.lanes.of]))
    if states is None:
        return None
    trainer.model.load_state_dict(stack_states([s["model"] for s in states]))
    trainer.load_optimizer(stack_optimizer_states([s["optimizer"] for s in states]))
    return [list(s["history"]) for s in states]


def _first_rows(trainer: Trainer, configs: Sequence[RunConfig], base: Baseline
                ) -> list[list[dict[str, Any]]]:
    """Each member's history so far: its row 0, measured before training."""
    measured = measure(trainer.model, trainer.lanes, base.targets, configs, trainer.policy, 0,
                       trainer.gradnorm)
    return [[row] for row in base.rows(0, 0.0, 0.0, [None] * len(configs), trainer.X.shape[1],
                                       measured)]


def _epochs(configs: Sequence[RunConfig], start: int, stop_after: int | None,
            progress: bool) -> Any:
    c, k_all = configs[0], len(configs)
    end = c.epochs if stop_after is None else min(c.epochs, start + stop_after)
    epochs: Any = range(start, end)
    if progress:
        from tqdm.auto import tqdm
        what = c.label() + (f" (+{k_all - 1} together)" if k_all > 1 else "")
        epochs = tqdm(epochs, desc=what, leave=False, initial=start, total=c.epochs)
    return epochs


def _plan(trainer: Trainer, configs: Sequence[RunConfig], epoch: int) -> EpochPlan:
    """Epoch ``epoch``'s plan of every lane, each from its own stream (:func:`stream_seed`)."""
    c, lanes, n = configs[0], trainer.lanes, trainer.X.shape[1]
    kinds = {m.kind for m in trainer.members}
    return plan_lanes([plan_epoch(stream_seed(lc), epoch, n=n, batch_size=c.batch_size,
                                  device=lanes.device, pad=lanes.first.pad,
                                  flip=lanes.first.spec.flip, augment=c.augment,
                                  num_classes=c.num_classes, kinds=kinds,
                                  dtype=trainer.policy.dtype, passes=c.passes)
                       for lc in lane_configs(configs, lanes)])


def _train_epoch(trainer: Trainer, configs: Sequence[RunConfig], base: Baseline,
                 epoch: int) -> list[dict[str, Any]]:
    """Train epoch ``epoch`` (from 0) at its learning rate, then measure: each member's row."""
    c, lanes = configs[0], trainer.lanes
    plan, lr = _plan(trainer, configs, epoch), lr_at(c, epoch)
    for group in trainer.opt.param_groups:
        group["lr"] = lr
    trainer.model.train()
    t0 = clock(lanes.device)
    total = trainer.epoch(plan)
    train_s = clock(lanes.device) - t0
    measured = measure(trainer.model, lanes, base.targets, configs, trainer.policy, epoch + 1,
                       trainer.gradnorm, whole=epoch + 1 == c.epochs)
    return base.rows(epoch + 1, lr, train_s, [t / plan.steps for t in total.tolist()],
                     trainer.X.shape[1], measured)


def train_group(configs: Sequence[RunConfig], data: DataSplit | Sequence[DataSplit], *,
                teacher: nn.Module | Sequence[nn.Module] | None = None,
                states: Sequence[dict] | None = None, on_epoch: EpochHook | None = None,
                stop_after: int | None = None, progress: bool = False,
                step: str | DevicePolicy = "eager", trainers: TrainerSource | None = None
                ) -> list[list[dict[str, float]]]:
    """Train ``configs`` -- one teacher, students of one teacher, or several lanes of either
    across seeds (:func:`~dsmlib.models.sec5_distillation.lockstep.across_seeds_key`) -- together; return each
    run's metrics rows (row 0: before training). ``data``: the split of the group's one lane,
    or each lane's (:func:`~dsmlib.models.sec5_distillation.lockstep.lanes_of`).

    ``teacher``: the trained teacher of each lane (students only; used in eval mode for the
    targets). ``states``: one checkpoint per run (``model``, ``optimizer``, ``history``; all at
    the same epoch) to continue from. ``on_epoch(epoch, histories, model, optimizer)`` runs
    after every epoch (checkpoints: :func:`~dsmlib.models.sec5_distillation.lockstep.member_state` splits the
    grouped state). ``stop_after``: at most that many epochs in this call. ``step``: the step's
    form, ``eager`` | ``auto`` | ``graph`` | ``compiled``
    (:func:`dsmlib.models.sec5_distillation.device.device_policy`), or a whole policy. ``trainers``: where the
    trainer comes from (a fresh :class:`Trainer` if None); the ``graph`` and ``compiled``
    steps need :class:`dsmlib.models.sec5_distillation.graph.Trainers`, which keeps a trainer, captured or
    compiled once, for the next run of its shape.
    """
    teachers = [] if teacher is None else [teacher] if isinstance(teacher, nn.Module) else teacher
    lanes = Lanes.of_group(lanes_of(configs), data) if configs else None
    _check_group(configs, lanes, teachers)
    policy = _policy(step, configs[0], lanes.device, trainers)
    grouped = None if not teachers else group_teacher(configs[0].teacher, teachers, policy,
                                                      lanes.first)
    trainer = (Trainer(configs, lanes, grouped, policy) if trainers is None
               else trainers.get(configs, lanes, grouped, policy))
    resumed = _start(trainer, teachers, states)
    base = Baseline.of(trainer, configs, grouped)
    histories = resumed or _first_rows(trainer, configs, base)
    for epoch in _epochs(configs, len(histories[0]) - 1, stop_after, progress):
        for hist, row in zip(histories, _train_epoch(trainer, configs, base, epoch)):
            hist.append(row)
        if on_epoch is not None:
            on_epoch(epoch + 1, histories, trainer.model, trainer.opt)
    return histories


def train(config: RunConfig, data: DataSplit, *, teacher: nn.Module | None = None,
          state: dict[str, Any] | None = None, on_epoch: EpochHook | None = None,
          stop_after: int | None = None, progress: bool = False,
          step: str | DevicePolicy = "eager", trainers: TrainerSource | None = None
          ) -> list[dict[str, float]]:
    """One run: :func:`train_group` with a single member (``on_epoch(epoch, history, model,
    optimizer)`` gets that run's history and its own network)."""
    hook = None if on_epoch is None else (lambda e, hs, m, o: on_epoch(e, hs[0], m, o))
    return train_group([config], data, teacher=teacher,
                       states=None if state is None else [state], on_epoch=hook,
                       stop_after=stop_after, progress=progress, step=step,
                       trainers=trainers)[0]
