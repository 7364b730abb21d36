"""One readable training loop for Section 5 (models layer): a teacher trained with cross-entropy,
or the students of one teacher, in lockstep, each regressing on the teacher's logits plus its
own noise redrawn at every iteration.

The data live on the device (:class:`dsmlib.models.datasets.DataSplit`); batches are indexed and
augmented there. How a run executes -- bf16 autocast and channels-last on CUDA, the step eager,
replayed from a CUDA graph (:mod:`dsmlib.models.replay`) or compiled -- is decided once, by
:func:`dsmlib.models.policy.device_policy`; losses, targets, noise and every measurement are
float32 (float64 if asked for). What the step bakes in (network, optimizer, data, ``G``'s
meter) is an engine (:mod:`dsmlib.models.engine`), captured or compiled once per shape and
rebound to each later run in place.

Randomness: each epoch draws its order and augmentation from ``child_seed(s, DATA, epoch)``
and its label noise from ``child_seed(s, NOISE, epoch)``, all before its first step
(:func:`dsmlib.models.pipeline.plan_epoch`), with ``s`` the run's stream (:func:`stream_seed`: a
teacher's seed; for students ``child_seed(seed, STUDENTS, stream)``, so a student never replays
its teacher's batches and crops). So an epoch is reproducible from the model and optimizer state
alone (a resumed run continues exactly), the step draws nothing (it can be captured), and the
students of one seed and stream see the same batches and the same standard-normal draws at every
level (common random numbers). That is what lets them train in lockstep: ``K`` students are the
members of one grouped network (:mod:`dsmlib.models.lockstep`), and each member's numbers equal
those of its separate run up to rounding.

Measured before training (epoch 0) and after every epoch, per member: accuracy and loss on the
training (un-augmented; between the first and the last epoch on ``n_train_eval`` of its images)
and validation sets, and on the test set before training and after the last epoch only, the gradient norm ``G(theta)`` of Eq. (22) on
a fixed subsample of the training set with its standard error (all members in one pass,
:mod:`dsmlib.models.measure`), the mean training objective SGD saw, the learning rate, and wall
times (of the whole group); for students also the teacher's logit scale on the training images
and the variance per logit of the member's noise (:func:`dsmlib.models.measure.logit_variance`,
:func:`~dsmlib.models.measure.noise_variance`).
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..foundation.rng import child_seed
from ..theory.label_noise import GaussianNoise, SymmetricSwapNoise
from .datasets import DataSplit
from .lockstep import stack_optimizer_states, stack_states
from .engine import engine_for, load_optimizer_in_place
from .measure import (STREAM_GRADNORM, clock, logit_variance, measure, noise_variance,
                      noiseless_targets, predict)
from .networks import cifar_resnet
from .pipeline import STREAM_DATA, STREAM_NOISE, Member, plan_epoch
from .policy import DevicePolicy, device_policy, execution
from .run_config import RunConfig

__all__ = ["STREAM_INIT", "STREAM_DATA", "STREAM_NOISE", "STREAM_GRADNORM", "STREAM_STUDENTS",
           "noise_model", "stream_seed", "lr_at", "resolved_precision", "lockstep_key",
           "build_model", "execution", "predict", "train_group", "train"]

STREAM_INIT = 1
STREAM_STUDENTS = 5

# on_epoch(epoch, histories, model, optimizer): the grouped model and its optimizer
EpochHook = Callable[[int, list, nn.Module, torch.optim.Optimizer], None]


def noise_model(config: RunConfig) -> GaussianNoise | SymmetricSwapNoise | None:
    """The label noise a student sees (Sec. 5.2): ``N(0, sigma^2 I_L)`` added to the logits, or
    the symmetric swap in its ``"copy"`` variant (the one with the paper's ``E[y~]``)."""
    if config.noise == "gaussian":
        return GaussianNoise(config.level)
    if config.noise in ("symmetric", "symmetric_mean"):   # the control uses only its mean
        return SymmetricSwapNoise(config.level, variant="copy")
    return None


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
    return replace(config, noise="none", level=0.0).key()


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


def _members(configs: Sequence[RunConfig]) -> tuple[Member, ...]:
    return tuple(Member("teacher") if c.role == "teacher" else Member(c.noise, c.level)
                 for c in configs)


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
                cache: dict | None = None) -> list[list[dict[str, float]]]:
    """Train ``configs`` -- one teacher, or students of one teacher (:func:`lockstep_key`) --
    together on ``data``; return each run's metrics rows (row 0: before training).

    ``teacher``: the trained teacher (students only; used in eval mode for the targets).
    ``states``: one checkpoint per run (``model``, ``optimizer``, ``history``; all at the same
    epoch) to continue from. ``on_epoch(epoch, histories, model, optimizer)`` runs after every
    epoch (checkpoints: :mod:`dsmlib.models.lockstep` splits the grouped state). ``stop_after``:
    at most that many epochs in this call. ``step``: ``auto`` | ``eager`` | ``graph`` |
    ``compiled`` (see :func:`dsmlib.models.policy.device_policy`), or a whole policy.
    ``cache``: where the ``graph`` and ``compiled`` steps keep their engines
    (:mod:`dsmlib.models.engine`) for the next run of the same shape: captured and compiled
    once, then replayed run after run.
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
    members = _members(configs)

    def build(config: RunConfig, k: int) -> nn.Module:
        return build_model(config, data, k, policy)
    engine = engine_for(configs, data, teacher, policy, members, build, cache)
    model, opt, gradnorm = engine.model, engine.opt, engine.gradnorm
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
        total = engine.loop.epoch(plan)
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
          state: dict[str, Any] | None = None,
          on_epoch: Callable[[int, list, nn.Module, torch.optim.Optimizer], None] | None = None,
          stop_after: int | None = None, progress: bool = False,
          step: str | DevicePolicy = "auto", cache: dict | None = None
          ) -> list[dict[str, float]]:
    """One run: :func:`train_group` with a single member (``on_epoch(epoch, history, model,
    optimizer)`` gets that run's history and its own network)."""
    hook = None if on_epoch is None else (lambda e, hs, m, o: on_epoch(e, hs[0], m, o))
    return train_group([config], data, teacher=teacher,
                       states=None if state is None else [state], on_epoch=hook,
                       stop_after=stop_after, progress=progress, step=step, cache=cache)[0]
