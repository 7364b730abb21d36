"""Section 5's training loop (models layer): a teacher trained with cross-entropy, or the
students of one teacher, in lockstep, each regressing on the teacher's logits plus its own
noise redrawn at every iteration; what it measures after every epoch; and the
:class:`Trainer` that keeps what a run trains with for the next run of its shape.

Measured on one NVIDIA H100 (80 GB HBM3, torch 2.11, 2026-11-26; ``benchmarks/bench_distill.py
--gpu --quick``: ResNet-56, batch 64, bf16, augmentation and noise included): a teacher trains
at 13,390 images/s with the step replayed from a CUDA graph (5.8x a ``DataLoader`` loop's 2,310;
eager 1,349-2,362), and lockstep students at 41,085 student-images/s for K = 7 and 48,554 for
K = 11 (eager 7,887 and 11,434). Raw figures: ``benchmarks/gpu_runs/2026-11-26_h100/``.

The step itself -- the epoch plan, :class:`~dsmlib.models.step.Step`, the one ``.backward()``
(:meth:`~dsmlib.models.step.StepLoop.one`), its CUDA-graph and compiled forms and the device
policy -- is :mod:`dsmlib.models.step`.

Randomness: each epoch draws its order and augmentation from ``child_seed(s, DATA, epoch)``
and its label noise from ``child_seed(s, NOISE, epoch)``, all before its first step
(:func:`~dsmlib.models.step.plan_epoch`), with ``s`` the run's stream (:func:`stream_seed`: a
teacher's seed; for students ``child_seed(seed, STUDENTS, stream)``, so a student never replays
its teacher's batches and crops). So an epoch is reproducible from the model and optimizer state
alone (a resumed run continues exactly), the step draws nothing (it can be captured), and the
students of one seed and stream see the same batches and the same standard-normal draws at every
level (common random numbers). That is what lets them train in lockstep: ``K`` students are the
members of one grouped network (:class:`dsmlib.models.networks.CifarResNet` with
``members=K``), whose every parameter and buffer is its members' tensors concatenated along the
first axis, so a member's state -- and its SGD state -- is a slice (:func:`member_state`), in
exactly the layout of a separately trained network; each member's numbers equal those of its
separate run up to rounding.

Measured before training (epoch 0) and after every epoch, per member (:func:`measure`): accuracy
and loss on the training (un-augmented; between the first and the last epoch on ``n_train_eval``
of its images) and validation sets, and on the test set before training and after the last epoch
only; the gradient norm ``G(theta)`` of Eq. (22) on a fixed subsample of the training set with
its standard error (all members in one pass of per-sample probes, :class:`GradNormMeter`; on the
``graph`` step that pass is captured too); the mean training objective SGD saw, the learning
rate, and wall times (of the whole group); for students also the teacher's logit scale on the
training images and the variance per logit of the member's noise (:func:`logit_variance`,
:func:`noise_variance`). A student's losses compare its logits with the noise's mean ``E[y~]``
(``y`` for Gaussian noise, ``M y`` for the swap and its control); a teacher's are
cross-entropies.

Reuse: a captured graph keeps the addresses of every tensor it touches -- the weights and their
gradients, SGD's momentum buffers, the batch norms' statistics, the teacher's weights, the
training images and labels, the plan's buffers, ``G``'s images and probes. So on the ``graph``
and ``compiled`` steps a :class:`Trainer` owns all of them (the data and the teacher copied in)
and :meth:`Trainer.reset` binds it to a later run of its :class:`Shape` by copying values only:
the run's initial weights, SGD's momentum (zero, which makes the first step equal a fresh
optimizer's, whose buffer starts as the first gradient: there is no dampening), the images of the
run's split, and the seed of ``G``'s probes. A run on a reset trainer gives the numbers of a run
on a fresh one (``tests/models/test_engine.py``). :class:`Trainers` keeps one per role.
"""
from __future__ import annotations

import copy
import gc
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..foundation.checks import check_int
from ..foundation.rng import as_torch_generator, child_seed
from ..theory.gradient_norm import (ProbeEstimate, member_probe_estimates, member_probe_sq_norms,
                                    member_probes)
from .datasets import DataSplit, DatasetSpec
from .networks import cifar_resnet
from .run_config import RunConfig
from .step import (Capture, DevicePolicy, GraphPool, Member, Noise, Replayed, Step, StepLoop,
                   device_policy, member_noise, member_targets, plan_epoch)

__all__ = ["STREAM_INIT", "STREAM_GRADNORM", "STREAM_STUDENTS", "stream_seed", "lr_at",
           "resolved_precision", "lockstep_key", "build_model", "stack_states", "member_state",
           "stack_optimizer_states", "member_optimizer_state", "clock", "predict",
           "noiseless_targets", "logit_variance", "noise_variance", "GradNormMeter", "measure",
           "Shape", "Trainer", "Trainers", "load_optimizer_in_place", "train_group", "train"]

STREAM_INIT, STREAM_GRADNORM, STREAM_STUDENTS = 1, 4, 5

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


def resolved_precision(config: RunConfig, device: torch.device) -> str:
    """``"auto"`` -> bf16 autocast on CUDA, float32 on the CPU."""
    return device_policy(config.precision, device).precision


def lockstep_key(config: RunConfig) -> str:
    """Runs with equal keys can train in lockstep: students of one teacher that differ only in
    their noise kind and level (a teacher's key is its own)."""
    if config.role == "teacher":
        return config.key()
    return replace(config, noise=Noise.NONE.value, level=0.0).key()


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


# --- lockstep: K members' states as one grouped module's, and back ------------------------------

def _cat(name: str, tensors: Sequence[Any]) -> Any:
    first = tensors[0]
    if not torch.is_tensor(first):
        if any(t != first for t in tensors):
            raise ValueError(f"members disagree on {name}: {list(tensors)}")
        return copy.deepcopy(first)
    if first.ndim == 0:   # e.g. batch norm's num_batches_tracked: one count for all
        if any(not torch.equal(t, first) for t in tensors):
            raise ValueError(f"members disagree on the scalar {name}: they are not in lockstep")
        return first.clone()
    return torch.cat(list(tensors), dim=0)


def _slice(value: Any, k: int, members: int) -> Any:
    if not torch.is_tensor(value):
        return copy.deepcopy(value)
    if value.ndim == 0:
        return value.clone()
    return value.chunk(members, dim=0)[k].clone()


def stack_states(states: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
    """The state dict of a ``K``-member module from its members' state dicts (same keys)."""
    if not states:
        raise ValueError("states must hold at least one member's state dict")
    return {name: _cat(name, [s[name] for s in states]) for name in states[0]}


def member_state(state: dict[str, Tensor], k: int, members: int) -> dict[str, Tensor]:
    """Member ``k``'s state dict (a plain network's layout) from a ``members``-member one."""
    members = check_int("members", members, minimum=1)
    check_int("k", k, minimum=0, maximum=members - 1)
    return {name: _slice(t, k, members) for name, t in state.items()}


def stack_optimizer_states(states: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One SGD state dict for the grouped module from the members' (momentum buffers
    stacked; hyper-parameters, which lockstep members share, checked equal)."""
    first = states[0]
    for s in states[1:]:
        if s["param_groups"] != first["param_groups"] or set(s["state"]) != set(first["state"]):
            raise ValueError("members' optimizer states differ in settings or progress: they "
                             "cannot train in lockstep")
    return {"state": {i: {key: _cat(f"state[{i}].{key}", [s["state"][i][key] for s in states])
                          for key in st} for i, st in first["state"].items()},
            "param_groups": copy.deepcopy(first["param_groups"])}


def member_optimizer_state(state: dict[str, Any], k: int, members: int) -> dict[str, Any]:
    """Member ``k``'s SGD state dict from the grouped module's."""
    return {"state": {i: {key: _slice(v, k, members) for key, v in st.items()}
                      for i, st in state["state"].items()},
            "param_groups": copy.deepcopy(state["param_groups"])}


# --- measurement --------------------------------------------------------------------------------

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
                                 _mean_members(members), None, None, None)
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
    """``G`` of every member of ``model`` on ``X`` by ``n_probes`` Rademacher probes per image,
    the probes of epoch ``e`` drawn from ``child_seed(seed, GRADNORM, e)``; with ``capture``
    (:func:`dsmlib.models.step.cuda_capture`), the probes' pass is replayed from a CUDA graph
    after one eager warm-up, in the memory pool ``pool`` (shared with the run's step). The probes
    are drawn outside the graph, from the same generator as the eager path, and copied into a
    static buffer, so both paths give the same estimate (up to rounding)."""

    def __init__(self, model: nn.Module, X: Tensor, members: int, *, seed: int, n_probes: int,
                 chunk_size: int, capture: Capture | None = None,
                 pool: GraphPool | None = None) -> None:
        self.model, self.members, self.seed = model, members, seed
        self.X = X.to(next(model.parameters()).dtype, copy=True)   # its own: a graph reads it
        self.n_probes, self.chunk_size = n_probes, chunk_size
        self.pool = pool or GraphPool()
        self.U: Tensor | None = None
        self.q: Tensor | None = None
        self.pass_ = Replayed(self._pass, self.X.device, capture, self.pool, warmup=1)

    def rebind(self, X: Tensor, seed: int) -> None:
        """Measure another run of the same shape: its images ``X`` (copied into this meter's
        own) and its seed; a captured pass stays valid."""
        if X.shape != self.X.shape:
            raise ValueError(f"X must have the shape {tuple(self.X.shape)} of the images this "
                             f"meter was built for, got {tuple(X.shape)}")
        self.X.copy_(X)
        self.seed = seed

    def _pass(self) -> None:
        assert self.U is not None and self.q is not None
        self.q.copy_(member_probe_sq_norms(self.model, self.X, self.U, self.members,
                                           self.chunk_size))

    def __call__(self, epoch: int) -> list[ProbeEstimate]:
        gen = as_torch_generator(child_seed(self.seed, STREAM_GRADNORM, epoch), self.X.device)
        U = member_probes(self.model, self.X, self.members, self.n_probes, "rademacher", gen)
        if self.U is None or self.q is None:   # the static buffers, at the first call
            self.U = U.clone()
            self.q = torch.empty(U.shape[0], self.n_probes, self.members, dtype=U.dtype,
                                 device=U.device)
        else:
            self.U.copy_(U)
        self.pass_()
        return member_probe_estimates(self.q.clone(), "rademacher", U.shape[-1] // self.members)


def measure(model: nn.Module, data: DataSplit, targets: dict[str, Tensor | None],
            configs: Sequence[RunConfig], policy: DevicePolicy, epoch: int,
            gradnorm: GradNormMeter, *, whole: bool = True) -> list[dict[str, Any]]:
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


# --- the trainer: what a run trains with, reset for the next run of its shape -------------------

def _kernel_settings() -> tuple[bool, ...]:
    """Torch's switches that choose kernels (cuDNN autotuning and determinism, deterministic
    algorithms, TF32), as they are now (:func:`dsmlib.models.step.execution` sets some)."""
    return (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic,
            torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.allow_tf32,
            torch.backends.cuda.matmul.allow_tf32)


@dataclass(frozen=True)
class Shape:
    """Everything a capture or a compilation bakes in besides the optimizer's Python numbers
    (those key the graphs themselves, :meth:`dsmlib.models.step.StepLoop.baked`): runs of
    equal shapes can share a :class:`Trainer`. ``kernels``: the kernel settings in force (a
    replay launches the kernels chosen at its capture); ``momentum``: whether SGD keeps momentum
    buffers (a graph captured without them would clone the gradient into a new buffer at every
    replay: no momentum)."""
    members: tuple[Member, ...]   # their kinds and levels
    depth: int
    num_classes: int
    batch_size: int
    passes: int                   # with the batch: the plan's shape
    augment: bool
    spec: DatasetSpec             # its flips: a plan's flips exist or not
    images: tuple[int, ...]
    image_dtype: torch.dtype
    pad: int
    n_gradnorm: int
    gradnorm_probes: int
    students: bool
    policy: DevicePolicy
    momentum: bool
    kernels: tuple[bool, ...]

    @classmethod
    def of(cls, configs: Sequence[RunConfig], data: DataSplit, students: bool,
           policy: DevicePolicy) -> Shape:
        c = configs[0]
        return cls(_members(configs), c.depth, c.num_classes, c.batch_size, c.passes, c.augment,
                   data.spec, tuple(data.X_train.shape), data.X_train.dtype, data.pad,
                   c.n_gradnorm, c.gradnorm_probes, students, policy, c.momentum != 0,
                   _kernel_settings())


def _members(configs: Sequence[RunConfig]) -> tuple[Member, ...]:
    return tuple(Member("teacher") if c.role == "teacher" else Member(c.noise, c.level)
                 for c in configs)


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


class Trainer:
    """What a run of one :class:`Shape` trains with: the grouped network, the teacher it reads
    its targets from, SGD, the training images, the :class:`~dsmlib.models.step.StepLoop` and
    the ``G`` meter (see the module's docstring). On the ``graph`` and ``compiled`` steps it
    owns copies of the data and of the teacher (``owned``), so that :meth:`reset` can bind it
    to a later run of its shape; on the ``eager`` step it reads the data set's own tensors and
    the teacher itself, and serves one run."""

    def __init__(self, configs: Sequence[RunConfig], data: DataSplit,
                 teacher: nn.Module | None, policy: DevicePolicy) -> None:
        c, k_all = configs[0], len(configs)
        self.shape = Shape.of(configs, data, teacher is not None, policy)
        self.policy, self.owned = policy, policy.reusable
        self.X, self.y = ((data.X_train.clone(), data.y_train.clone()) if self.owned
                          else (data.X_train, data.y_train))
        own_teacher = (teacher if teacher is None or not self.owned else
                       build_model(c.teacher, data, 1, policy).eval().requires_grad_(False))
        self.model = build_model(c, data, k_all, policy)
        self.step = Step(self.model, own_teacher, self.shape.members, pad=data.pad,
                         augment=c.augment, amp=policy.amp, channels_last=policy.channels_last,
                         dtype=policy.dtype)
        run = policy.compile(self.step)
        if policy.compiled:
            # private, with no torch.compiler equivalent in torch 2.14: without it inductor's CUDA
            # graphs copy a non-static input into their own buffer at every replay -- here the
            # whole training set per step (not timed in this project: no GPU in this session)
            torch._dynamo.mark_static_address(self.X)
            torch._dynamo.mark_static_address(self.y)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=c.lr, momentum=c.momentum,
                                   weight_decay=c.weight_decay)
        pool = GraphPool()
        self.gradnorm = GradNormMeter(self.model, self.X[:c.n_gradnorm], k_all, seed=c.seed,
                                      n_probes=c.gradnorm_probes,
                                      chunk_size=policy.gradnorm_chunk, capture=policy.capture,
                                      pool=pool)
        self.loop = StepLoop(run, self.model, self.opt, self.X, self.y, k_all,
                             dtype=policy.dtype, capture=policy.capture, pool=pool,
                             static_grads=not policy.compiled)
        self._bind(configs, teacher)

    def fits(self, configs: Sequence[RunConfig], data: DataSplit, teacher: nn.Module | None,
             policy: DevicePolicy) -> bool:
        """Whether a run of ``configs`` can be trained by this trainer after :meth:`reset`."""
        return self.owned and self.shape == Shape.of(configs, data, teacher is not None, policy)

    def reset(self, configs: Sequence[RunConfig], data: DataSplit,
              teacher: nn.Module | None) -> None:
        """Bind this trainer to another run of its shape, in place (every tensor a capture
        read stays where it is): the run's training images, ``G``'s images and seed, zero
        momentum, a teacher run's initialisation (a student starts from its teacher, set by
        :func:`train_group`), the teacher's weights and the optimizer's hyper-parameters."""
        c = configs[0]
        self.X.copy_(data.X_train)
        self.y.copy_(data.y_train)
        self.gradnorm.rebind(data.X_train[:c.n_gradnorm], c.seed)
        _zero_momentum(self.opt)
        if teacher is None:
            self.model.load_state_dict(build_model(c, data, len(configs),
                                                   self.policy).state_dict())
        self._bind(configs, teacher)

    def _bind(self, configs: Sequence[RunConfig], teacher: nn.Module | None) -> None:
        c = configs[0]
        if self.owned and teacher is not None:
            self.step.teacher.load_state_dict(teacher.state_dict())
        for group in self.opt.param_groups:
            group.update(lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay)


class Trainers:
    """The trainers kept for later runs: at most one per role (teacher or students) -- a grid's
    runs come data set by data set, and a trainer's graphs and data copies hold device memory.
    A run of the kept trainer's shape resets it; a run of another shape on a reusable step
    replaces it; an eager run neither uses nor drops it."""

    def __init__(self) -> None:
        self.kept: dict[str, Trainer] = {}

    def get(self, configs: Sequence[RunConfig], data: DataSplit, teacher: nn.Module | None,
            policy: DevicePolicy) -> Trainer:
        role = "students" if teacher is not None else "teacher"
        kept = self.kept.get(role)
        if kept is not None and kept.fits(configs, data, teacher, policy):
            kept.reset(configs, data, teacher)
            return kept
        del kept
        if not policy.reusable:
            return Trainer(configs, data, teacher, policy)
        if self.kept.pop(role, None) is not None:
            gc.collect()   # a trainer's parts refer to each other: free its memory (and a
                           # compiled step's code) now
        self.kept[role] = trainer = Trainer(configs, data, teacher, policy)
        return trainer


# --- the loop -----------------------------------------------------------------------------------

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
                progress: bool = False, step: str | DevicePolicy = "auto",
                trainers: Trainers | None = None) -> list[list[dict[str, float]]]:
    """Train ``configs`` -- one teacher, or students of one teacher (:func:`lockstep_key`) --
    together on ``data``; return each run's metrics rows (row 0: before training).

    ``teacher``: the trained teacher (students only; used in eval mode for the targets).
    ``states``: one checkpoint per run (``model``, ``optimizer``, ``history``; all at the same
    epoch) to continue from. ``on_epoch(epoch, histories, model, optimizer)`` runs after every
    epoch (checkpoints: :func:`member_state` splits the grouped state). ``stop_after``: at most
    that many epochs in this call. ``step``: ``auto`` | ``eager`` | ``graph`` | ``compiled``
    (see :func:`dsmlib.models.step.device_policy`), or a whole policy. ``trainers``: where the
    ``graph`` and ``compiled`` steps keep their :class:`Trainer` for the next run of the same
    shape: captured and compiled once, then replayed run after run.
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
    trainer = (Trainers() if trainers is None else trainers).get(configs, data, teacher, policy)
    model, opt, gradnorm, members = trainer.model, trainer.opt, trainer.gradnorm, trainer.shape.members
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
        load_optimizer_in_place(opt, stack_optimizer_states([s["optimizer"] for s in states]))
        histories = [list(s["history"]) for s in states]
    else:
        histories = [[dict(epoch=0, lr=0.0, train_objective=None, train_s=0.0, loss_scale=sc,
                           logit_var=logit_var, noise_var=nv, n_train=n, lockstep=k_all, **row)]
                     for sc, nv, row in zip(scales, noise_vars,
                                            measure(model, data, targets, configs, policy, 0,
                                                    gradnorm))]
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
        total = trainer.loop.epoch(plan)
        train_s = clock(data.device) - t0
        rows = measure(model, data, targets, configs, policy, epoch + 1, gradnorm,
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
          step: str | DevicePolicy = "auto", trainers: Trainers | None = None
          ) -> list[dict[str, float]]:
    """One run: :func:`train_group` with a single member (``on_epoch(epoch, history, model,
    optimizer)`` gets that run's history and its own network)."""
    hook = None if on_epoch is None else (lambda e, hs, m, o: on_epoch(e, hs[0], m, o))
    return train_group([config], data, teacher=teacher,
                       states=None if state is None else [state], on_epoch=hook,
                       stop_after=stop_after, progress=progress, step=step,
                       trainers=trainers)[0]
