"""Section 5's training loop (models layer): a teacher trained with cross-entropy, or the
students of one teacher, in lockstep, each regressing on the teacher's logits plus its own
noise redrawn at every step; and what it measures after every epoch. It reads top to bottom:

1. **The epoch's draws** (:func:`plan_epoch`): every random number of an epoch, drawn before
   its first step -- one :class:`Batch` per step: which images, their crops and flips, and the
   label noise of their targets.
2. **The step** (:meth:`Trainer.step`): one step of SGD on one batch -- the batch's images,
   cropped and flipped; the teacher's logits and each member's noisy target; each member's
   loss (:meth:`Trainer.losses`); one ``.backward()`` for all; SGD's update.
3. **The epoch** (:meth:`Trainer.epoch`): every step of the plan, summing the members' losses.
4. **The measurements** (:func:`measure`): after every epoch, per member.
5. **The run** (:func:`train_group`): the epochs, the learning rate's schedule, resuming, and
   each run's rows of metrics.

Words. A *step* is one SGD update on one batch, and nothing else: an epoch has
:attr:`EpochPlan.steps` of them. A *member* is one run of a lockstep group. The *form* of the
step (``step="eager" | "graph" | "compiled"``, :mod:`dsmlib.models.device`) is how it executes:
eagerly here, or replayed from a CUDA graph or compiled by :mod:`dsmlib.models.graph`, whose
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
loss ``k``'s gradient), and its state is a slice of the group's (:mod:`dsmlib.models.lockstep`),
so each member's numbers equal those of its separate run up to rounding.

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

from ..foundation.rng import as_torch_generator, child_seed
from ..theory.gradient_norm import (ProbeEstimate, member_probe_estimates, member_probe_sq_norms,
                                    member_probes)
from ..theory.label_noise import GaussianNoise, SymmetricSwapNoise
from .datasets import DataSplit, apply_augment, augment_draws
from .device import DevicePolicy, device_policy
from .lockstep import lockstep_key, stack_optimizer_states, stack_states
from .networks import cifar_resnet
from .run_config import Noise, RunConfig

__all__ = ["STREAM_INIT", "STREAM_DATA", "STREAM_NOISE", "STREAM_GRADNORM", "STREAM_STUDENTS",
           "stream_seed", "lr_at", "build_model", "Batch", "EpochPlan", "plan_epoch", "Member",
           "members_of", "member_noise", "member_targets", "hinton_loss", "member_losses",
           "Trainer", "clock", "predict", "noiseless_targets", "logit_variance",
           "noise_variance", "GradNormMeter", "measure", "TrainerSource", "train_group", "train"]

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
    """The paper's schedule: ``lr`` divided by 10 at 50 % and again at 75 % of the epochs
    (epochs 100 and 150 of 200); ``epoch`` counts from 0."""
    drops = (epoch >= config.epochs // 2) + (epoch >= (3 * config.epochs) // 4)
    return config.lr * 0.1 ** drops


def build_model(config: RunConfig, data: DataSplit, members: int = 1,
                policy: DevicePolicy | None = None) -> nn.Module:
    """The CIFAR ResNet of ``config.depth`` for the data's channels and classes, initialised from
    ``child_seed(seed, INIT)`` (a student's weights are then replaced by its teacher's);
    ``members`` networks in one grouped module for lockstep students."""
    policy = policy or device_policy(config.precision, data.device)
    model = cifar_resnet(config.depth, data.spec.num_classes, in_channels=data.spec.in_channels,
                         seed=child_seed(config.seed, STREAM_INIT), device=data.device,
                         members=members, dtype=policy.dtype)
    return model.to(memory_format=torch.channels_last) if policy.channels_last else model


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


# --- 2. the targets and the losses --------------------------------------------------------------

@dataclass(frozen=True)
class Member:
    """One member of a lockstep group: its :class:`~dsmlib.models.run_config.Noise` kind and
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


def member_targets(t: Tensor, members: Sequence[Member], batch: Batch | None = None,
                   noises: Sequence[GaussianNoise | SymmetricSwapNoise | None] | None = None
                   ) -> Tensor:
    """``(b, K, L)`` regression targets from the teacher's logits ``t`` (b, L) and the
    ``batch``'s noise draws: the logits (noiseless, and a Hinton student's), plus ``sigma z``
    (Gaussian, Sec. 5.2), copy-swapped where ``u < p`` (symmetric), or the swap's mean
    ``M_p t`` (Eq. 24; the swap's noiseless control). Without a batch, only members that draw
    nothing. ``noises``: the members' :func:`member_noise`, if built already."""
    out = []
    for m, noise in zip(members, noises or [member_noise(m) for m in members]):
        if m.kind == Noise.GAUSSIAN:
            out.append(noise.apply(t, batch.gauss))
        elif m.kind == Noise.SYMMETRIC:
            out.append(noise.apply(t, (batch.swap_u, batch.swap_r)))
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


# --- 3. the step and the epoch ------------------------------------------------------------------

class Trainer:
    """What a group -- one teacher, or the students of one teacher in lockstep -- trains with:
    the grouped network of its ``K`` members, the teacher its targets come from (in eval mode),
    SGD, the training images and the ``G`` meter; and its step and its epoch.

    ``drop_grads``: each step sets the gradients to None before its backward pass instead of
    zeroing them in place (a form of the step may need either:
    :class:`dsmlib.models.graph.ReusableTrainer`)."""

    drop_grads = False

    def __init__(self, configs: Sequence[RunConfig], data: DataSplit,
                 teacher: nn.Module | None, policy: DevicePolicy) -> None:
        c, k_all = configs[0], len(configs)
        self.policy, self.teacher = policy, teacher
        self.members = members_of(configs)
        self.noises = tuple(member_noise(m) for m in self.members)
        self.X, self.y, self.pad, self.augment = data.X_train, data.y_train, data.pad, c.augment
        self.model = build_model(c, data, k_all, policy)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=c.lr, momentum=c.momentum,
                                   weight_decay=c.weight_decay)
        self.gradnorm = GradNormMeter(self.model, self.X[:c.n_gradnorm], k_all, seed=c.seed,
                                      n_probes=c.gradnorm_probes,
                                      chunk_size=policy.gradnorm_chunk)

    def losses(self, batch: Batch) -> Tensor:
        """The members' losses on ``batch``, ``(K,)``: its images, cropped and flipped; the
        teacher's logits and each member's noisy target; each member's loss (a teacher's:
        cross-entropy on the labels). Draws nothing and reads nothing back to the host."""
        dtype = self.policy.dtype
        x = self.X[batch.idx].to(dtype)
        if self.augment:
            x = apply_augment(x, batch.dy, batch.dx, batch.flips, pad=self.pad)
        if self.policy.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        # no autocast weight cache: a captured step must not keep casts from its capture
        with torch.autocast(x.device.type, torch.bfloat16, enabled=self.policy.amp,
                            cache_enabled=False):
            out = self.model(x).to(dtype)
            if self.teacher is None:
                return F.cross_entropy(out.view(x.shape[0], -1), self.y[batch.idx]).reshape(1)
            with torch.no_grad():
                t = self.teacher(x).to(dtype)
        target = member_targets(t, self.members, batch, self.noises)
        return member_losses(out.view(x.shape[0], len(self.members), -1), t, target,
                             self.members)

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
        x = x.contiguous(memory_format=torch.channels_last) if channels_last else x
        with torch.autocast(X.device.type, torch.bfloat16, enabled=amp):
            out.append(model(x).to(dtype))
    return torch.cat(out)


def _splits(data: DataSplit) -> dict[str, tuple[Tensor, Tensor]]:
    return {"train": (data.X_train, data.y_train), "val": (data.X_val, data.y_val),
            "test": (data.X_test, data.y_test)}


def _mean_members(members: Sequence[Member]) -> list[Member]:
    """The noiseless target ``E[y~]`` of each member, as a member drawing nothing."""
    return [Member(Noise.CONTROL, m.level) if m.kind in (Noise.SYMMETRIC, Noise.CONTROL) else
            Member(Noise.NONE) for m in members]


def noiseless_targets(teacher: nn.Module | None, members: Sequence[Member], data: DataSplit,
                      policy: DevicePolicy) -> dict[str, Tensor | None]:
    """Per split, the members' noiseless targets ``(N, K, L)`` (None for a teacher run)."""
    if teacher is None:
        return {k: None for k in _splits(data)}
    return {name: member_targets(predict(teacher, X, amp=policy.amp, dtype=policy.dtype,
                                         channels_last=policy.channels_last),
                                 _mean_members(members))
            for name, (X, _) in _splits(data).items()}


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
    ``child_seed(seed, GRADNORM, e)``."""

    def __init__(self, model: nn.Module, X: Tensor, members: int, *, seed: int, n_probes: int,
                 chunk_size: int) -> None:
        self.model, self.members, self.seed = model, members, seed
        self.X = X.to(next(model.parameters()).dtype, copy=True)
        self.n_probes, self.chunk_size = n_probes, chunk_size

    def probes(self, epoch: int) -> Tensor:
        """Epoch ``epoch``'s probes, ``(N, n_probes, K * L)``."""
        gen = as_torch_generator(child_seed(self.seed, STREAM_GRADNORM, epoch), self.X.device)
        return member_probes(self.model, self.X, self.members, self.n_probes, "rademacher", gen)

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


def measure(model: nn.Module, data: DataSplit, targets: dict[str, Tensor | None],
            configs: Sequence[RunConfig], policy: DevicePolicy, epoch: int,
            gradnorm: Callable[[int], list[ProbeEstimate]], *, whole: bool = True
            ) -> list[dict[str, Any]]:
    """Per member: accuracies and losses on every split, then ``G(theta)`` on the fixed
    subsample, every member in one pass. ``whole=False`` (the epochs between the first and the
    last): the training loss and accuracy on the first ``n_train_eval`` training images only
    (a fixed random subsample: the split is a seeded permutation), and nothing on the test set
    (None), which is read before training and after the last epoch alone."""
    model.eval()
    k_all = len(configs)
    t0 = clock(data.device)
    rows: list[dict[str, Any]] = [{} for _ in configs]
    part = configs[0].n_train_eval
    for name, (X, y) in _splits(data).items():
        target = targets[name]
        if not whole and name == "test":
            for row in rows:
                row.update(test_acc=None, test_loss=None)
            continue
        if not whole and name == "train" and part is not None and part < X.shape[0]:
            X, y = X[:part], y[:part]
            target = None if target is None else target[:part]
        logits = predict(model, X, amp=policy.amp, batch=policy.eval_batch, dtype=policy.dtype,
                         channels_last=policy.channels_last).view(X.shape[0], k_all, -1)
        for k, row in enumerate(rows):
            right = logits[:, k].argmax(dim=1) == y
            row[f"{name}_acc"] = float(right.float().mean())
            if name == "test":    # which test images: the test set's own error (Section 5)
                row["test_correct"] = "".join("01"[int(b)] for b in right.tolist())
            row[f"{name}_loss"] = float(
                F.cross_entropy(logits[:, k], y) if target is None
                else F.mse_loss(logits[:, k], target[:, k]))
    t1 = clock(data.device)
    ests = gradnorm(epoch)
    t2 = clock(data.device)
    for row, est in zip(rows, ests):
        row.update(gradnorm=est.estimate, gradnorm_se=est.standard_error, eval_s=t1 - t0,
                   gradnorm_s=t2 - t1)
    return rows


# --- 5. the run ---------------------------------------------------------------------------------

class TrainerSource(Protocol):
    """Where :func:`train_group` gets its :class:`Trainer` for a step form other than eager
    (:class:`dsmlib.models.graph.Trainers`)."""

    def get(self, configs: Sequence[RunConfig], data: DataSplit, teacher: nn.Module | None,
            policy: DevicePolicy) -> Trainer: ...


def _check_group(configs: Sequence[RunConfig], teacher: nn.Module | None) -> None:
    if not configs:
        raise ValueError("configs must hold at least one run configuration")
    if len({lockstep_key(c) for c in configs}) > 1:
        raise ValueError("runs in lockstep must be students of one teacher that differ only in "
                         "noise and level: " + ", ".join(c.label() for c in configs))
    if (teacher is None) != (configs[0].role == "teacher"):
        raise ValueError("a student run needs its trained teacher, and a teacher run none")


def train_group(configs: Sequence[RunConfig], data: DataSplit, *,
                teacher: nn.Module | None = None, states: Sequence[dict] | None = None,
                on_epoch: EpochHook | None = None, stop_after: int | None = None,
                progress: bool = False, step: str | DevicePolicy = "eager",
                trainers: TrainerSource | None = None) -> list[list[dict[str, float]]]:
    """Train ``configs`` -- one teacher, or students of one teacher (:func:`lockstep_key`) --
    together on ``data``; return each run's metrics rows (row 0: before training).

    ``teacher``: the trained teacher (students only; used in eval mode for the targets).
    ``states``: one checkpoint per run (``model``, ``optimizer``, ``history``; all at the same
    epoch) to continue from. ``on_epoch(epoch, histories, model, optimizer)`` runs after every
    epoch (checkpoints: :func:`~dsmlib.models.lockstep.member_state` splits the grouped state).
    ``stop_after``: at most that many epochs in this call. ``step``: the step's form, ``eager``
    | ``auto`` | ``graph`` | ``compiled`` (:func:`dsmlib.models.device.device_policy`), or a
    whole policy. ``trainers``: where the trainer comes from (a fresh :class:`Trainer` if
    None); the ``graph`` and ``compiled`` steps need :class:`dsmlib.models.graph.Trainers`,
    which keeps a trainer, captured or compiled once, for the next run of its shape.
    """
    _check_group(configs, teacher)
    c, k_all = configs[0], len(configs)
    policy = step if isinstance(step, DevicePolicy) else device_policy(c.precision, data.device,
                                                                       step)
    n, b = data.X_train.shape[0], c.batch_size
    if b > n:
        raise ValueError(f"batch_size must be <= the {n} training images, got {b}")
    if c.n_gradnorm > n:   # G is measured on the first n_gradnorm training images
        raise ValueError(f"n_gradnorm must be <= the {n} training images, got {c.n_gradnorm}")
    if trainers is None and policy.reusable:
        raise ValueError(f"step={policy.step!r} runs on a trainer kept for reuse: pass "
                         "trainers=dsmlib.models.graph.Trainers()")
    trainer = (Trainer(configs, data, teacher, policy) if trainers is None
               else trainers.get(configs, data, teacher, policy))
    model, opt, members = trainer.model, trainer.opt, trainer.members
    if teacher is not None:
        teacher.eval()
        model.load_state_dict(stack_states([teacher.state_dict()] * k_all))
    targets = noiseless_targets(teacher, members, data, policy)
    t_train = targets["train"]   # the loss of predicting the mean target: the loss's scale
    scales = ([math.log(c.num_classes)] if t_train is None else
              [float(F.mse_loss(t, t.mean(0).expand_as(t))) for t in t_train.unbind(1)])
    if teacher is None:
        logit_var, noise_vars = None, [None] * k_all
    else:   # the noise in the teacher's logit units
        raw = predict(teacher, data.X_train, amp=policy.amp, dtype=policy.dtype,
                      channels_last=policy.channels_last)
        logit_var, noise_vars = logit_variance(raw), [noise_variance(m, raw) for m in members]
    if states is not None:
        model.load_state_dict(stack_states([s["model"] for s in states]))
        trainer.load_optimizer(stack_optimizer_states([s["optimizer"] for s in states]))
        histories = [list(s["history"]) for s in states]
    else:
        histories = [[dict(epoch=0, lr=0.0, train_objective=None, train_s=0.0, loss_scale=sc,
                           logit_var=logit_var, noise_var=nv, n_train=n, lockstep=k_all, **row)]
                     for sc, nv, row in zip(scales, noise_vars,
                                            measure(model, data, targets, configs, policy, 0,
                                                    trainer.gradnorm))]
    start = len(histories[0]) - 1
    epochs: Any = range(start, c.epochs if stop_after is None else min(c.epochs, start + stop_after))
    if progress:
        from tqdm.auto import tqdm
        what = c.label() + (f" (+{k_all - 1} in lockstep)" if k_all > 1 else "")
        epochs = tqdm(epochs, desc=what, leave=False, initial=start, total=c.epochs)
    kinds = {m.kind for m in members}
    for epoch in epochs:
        plan = plan_epoch(stream_seed(c), epoch, n=n, batch_size=b, device=data.device, pad=data.pad,
                          flip=data.spec.flip, augment=c.augment, num_classes=c.num_classes,
                          kinds=kinds, dtype=policy.dtype, passes=c.passes)
        lr = lr_at(c, epoch)
        for group in opt.param_groups:
            group["lr"] = lr
        model.train()
        t0 = clock(data.device)
        total = trainer.epoch(plan)
        train_s = clock(data.device) - t0
        rows = measure(model, data, targets, configs, policy, epoch + 1, trainer.gradnorm,
                       whole=epoch + 1 == c.epochs)
        for hist, sc, nv, tot, row in zip(histories, scales, noise_vars, total.tolist(), rows):
            hist.append(dict(epoch=epoch + 1, lr=lr, train_objective=tot / plan.steps,
                             train_s=train_s, loss_scale=sc, logit_var=logit_var, noise_var=nv,
                             n_train=n, lockstep=k_all, **row))
        if on_epoch is not None:
            on_epoch(epoch + 1, histories, model, opt)
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
