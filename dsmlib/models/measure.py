"""What Section 5 measures before training and after every epoch (models layer): per member of
a run (a teacher, or the students of one teacher in lockstep), accuracy and loss on every split,
and the gradient norm ``G(theta)`` of Eq. (22) on a fixed subsample of the training images with
its standard error -- every member in one pass of per-sample probes
(:func:`dsmlib.theory.gradient_norm.member_probe_sq_norms`).

On the ``graph`` step (:mod:`dsmlib.models.replay`) the probes' pass is captured as a CUDA graph
too, after one eager warm-up: the probes are drawn outside it, from the same generator as the
eager path, and copied into a static buffer, so both paths give the same estimate (up to
rounding). A student's losses compare its logits with the noise's mean ``E[y~]`` of the
teacher's logits (``y`` for Gaussian noise, ``M y`` for the swap and its control); a teacher's
are cross-entropies.
"""
from __future__ import annotations

import time
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..foundation.rng import as_torch_generator, child_seed
from ..theory.gradient_norm import (ProbeEstimate, member_probe_estimates, member_probe_sq_norms,
                                    member_probes)
from .datasets import DataSplit
from .pipeline import Member, member_noise, member_targets
from .policy import DevicePolicy
from .replay import Capture, GraphPool, Replayed
from .run_config import RunConfig

__all__ = ["STREAM_GRADNORM", "clock", "predict", "splits", "noiseless_targets", "logit_variance",
           "noise_variance", "GradNormMeter", "measure"]

STREAM_GRADNORM = 4


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


def splits(data: DataSplit) -> dict[str, tuple[Tensor, Tensor]]:
    """The training, validation and test images and labels, by name."""
    return {"train": (data.X_train, data.y_train), "val": (data.X_val, data.y_val),
            "test": (data.X_test, data.y_test)}


def _mean_members(members: Sequence[Member]) -> list[Member]:
    """The noiseless target ``E[y~]`` of each member, as a member drawing nothing."""
    return [Member("symmetric_mean", m.level) if m.kind.startswith("symmetric") else
            Member("none") for m in members]


def noiseless_targets(teacher: nn.Module | None, members: Sequence[Member], data: DataSplit,
                      policy: DevicePolicy) -> dict[str, Tensor | None]:
    """Per split, the members' noiseless targets ``(N, K, L)`` (None for a teacher run)."""
    if teacher is None:
        return {k: None for k in splits(data)}
    return {name: member_targets(predict(teacher, X, amp=policy.amp, dtype=policy.dtype,
                                         channels_last=policy.channels_last),
                                 _mean_members(members), None, None, None)
            for name, (X, _) in splits(data).items()}


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
    if member.kind == "gaussian":
        return float(member.level)
    if member.kind == "symmetric":
        cov = member_noise(member).covariance(t.double())
        return float(cov.diagonal(dim1=-2, dim2=-1).mean())
    return 0.0


class GradNormMeter:
    """``G`` of every member of ``model`` on ``X`` by ``n_probes`` Rademacher probes per image,
    the probes of epoch ``e`` drawn from ``child_seed(seed, GRADNORM, e)``; with ``capture``
    (:func:`dsmlib.models.replay.cuda_capture`), the probes' pass is replayed from a CUDA graph
    after one eager warm-up, in the memory pool ``pool`` (shared with the run's step)."""

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
    for name, (X, y) in splits(data).items():
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
            row[f"{name}_acc"] = float((logits[:, k].argmax(dim=1) == y).float().mean())
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
