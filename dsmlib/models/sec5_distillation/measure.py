"""What a group's training measures (models layer), per member, before training (epoch 0) and
after every epoch: accuracy and loss on the training (un-augmented; between the first and the
last epoch on ``n_train_eval`` of its images) and validation sets, and on the test set before
training and after the last epoch only; the gradient norm ``G(theta)`` of Eq. (22) with its
standard error (:mod:`dsmlib.models.sec5_distillation.gradnorm`); and wall times. A student's
losses compare its logits with its noise's mean ``E[y~]`` (``y`` for Gaussian noise, ``M y`` for
the swap and its control: :func:`noiseless_targets`); a teacher's, and the continued teacher's,
are cross-entropies.

Beside them each row reports what is fixed before training (:class:`Baseline`): the loss of
predicting the mean target (the loss's scale), the teacher's logit scale, and the variance of
the member's noise in those units.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .correctness import pack_flags
from .device import DevicePolicy
from .lanes import SPLITS, Lanes
from .run_config import Noise
from .targets import Member, logit_variance, mean_members, member_targets, noise_variance
from .trainer import Trainer

__all__ = ["clock", "predict", "noiseless_targets", "measure", "Baseline"]


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


def _predict(model: nn.Module, X: Tensor, policy: DevicePolicy, batch: int = 1024) -> Tensor:
    return predict(model, X, amp=policy.amp, batch=batch, dtype=policy.dtype,
                   channels_last=policy.channels_last)


def noiseless_targets(teacher: nn.Module | None, members: Sequence[Member], lanes: Lanes,
                      policy: DevicePolicy) -> dict[str, Tensor | None]:
    """Per split, the members' noiseless targets ``(N, K, L)`` (None for a teacher run), each
    from its own lane's teacher on its lane's images."""
    if teacher is None:
        return {k: None for k in SPLITS}
    return {name: member_targets(_predict(teacher, lanes.split(name)[0], policy),
                                 mean_members(members), lanes=lanes.member_lanes)
            for name in SPLITS}


def _split_rows(model: nn.Module, lanes: Lanes, name: str, target: Tensor | None,
                policy: DevicePolicy, part: int | None,
                members: Sequence[Member]) -> list[dict[str, Any]]:
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
        labelled = target is None or members[k].kind == Noise.CONTINUED
        row[f"{name}_loss"] = float(F.cross_entropy(logits[:, k], yk) if labelled
                                    else F.mse_loss(logits[:, k], target[:, k]))
        rows.append(row)
    return rows


def measure(trainer: Trainer, targets: dict[str, Tensor | None], epoch: int,
            train_part: int | None = None, *, whole: bool = True) -> list[dict[str, Any]]:
    """Per member of ``trainer``'s group: accuracies and losses on every split (its lane's),
    then ``G`` on the fixed subsample, every member in one pass (its probes those of epoch
    ``epoch``). ``whole=False`` (the epochs between the first and the last): the training loss
    and accuracy on the first ``train_part`` training images only (a fixed random subsample:
    the split is a seeded permutation), and nothing on the test set (None), which is read
    before training and after the last epoch alone."""
    lanes, policy = trainer.lanes, trainer.policy
    trainer.model.eval()
    t0 = clock(lanes.device)
    rows: list[dict[str, Any]] = [{} for _ in trainer.members]
    for name in SPLITS:
        if not whole and name == "test":
            for row in rows:
                row.update(test_acc=None, test_loss=None)
            continue
        part = train_part if not whole and name == "train" else None
        for row, got in zip(rows, _split_rows(trainer.model, lanes, name, targets[name], policy,
                                              part, trainer.members)):
            row.update(got)
    t1 = clock(lanes.device)
    ests = trainer.gradnorm(epoch)
    t2 = clock(lanes.device)
    for row, est in zip(rows, ests):
        row.update(gradnorm=est.estimate, gradnorm_se=est.standard_error, eval_s=t1 - t0,
                   gradnorm_s=t2 - t1)
    return rows


@dataclass(frozen=True)
class Baseline:
    """What a group's rows report besides its measurements, fixed before training: per split
    the members' noiseless targets (:func:`noiseless_targets`), and per member the loss of
    predicting its mean target (the loss's scale; a teacher's: ``log L``), its teacher's
    logit scale (:func:`~dsmlib.models.sec5_distillation.targets.logit_variance`) and its
    noise's variance in those units
    (:func:`~dsmlib.models.sec5_distillation.targets.noise_variance`; None for teachers); and
    each lane's training images (``n_train``)."""
    targets: dict[str, Tensor | None]
    scales: list[float]
    logit_vars: list[float | None]
    noise_vars: list[float | None]
    n_train: int   # each lane's training images

    @classmethod
    def of(cls, trainer: Trainer) -> Baseline:
        """The baseline of ``trainer``'s group, from its teacher (none for teachers)."""
        members, lanes, policy, teacher = (trainer.members, trainer.lanes, trainer.policy,
                                           trainer.teacher)
        targets = noiseless_targets(teacher, members, lanes, policy)
        t_train, k_all = targets["train"], len(members)
        labelled, n = math.log(lanes.first.spec.num_classes), trainer.X.shape[1]
        if t_train is None:
            return cls(targets, [labelled] * k_all, [None] * k_all, [None] * k_all, n)
        scales = [labelled if m.kind == Noise.CONTINUED else
                  float(F.mse_loss(t, t.mean(0).expand_as(t)))
                  for m, t in zip(members, t_train.unbind(1))]
        raw = _predict(teacher, lanes.split("train")[0], policy)   # the teachers' logits
        lane_raw = [lanes.logits_of(raw, lane) for lane in lanes.of]
        return cls(targets, scales, [logit_variance(t) for t in lane_raw],
                   [noise_variance(m, t) for m, t in zip(members, lane_raw)], n)

    def rows(self, epoch: int, lr: float, train_s: float, objectives: Sequence[float | None],
             measured: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each member's row of epoch ``epoch`` (trained at ``lr`` in ``train_s`` seconds, the
        mean training objective SGD saw ``objectives``): these values beside its
        measurements."""
        k_all = len(measured)
        return [dict(epoch=epoch, lr=lr, train_objective=obj, train_s=train_s, loss_scale=sc,
                     logit_var=lv, noise_var=nv, n_train=self.n_train, lockstep=k_all, **row)
                for obj, sc, lv, nv, row in zip(objectives, self.scales, self.logit_vars,
                                                self.noise_vars, measured)]

    def before_training(self, measured: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each member's row 0: its measurements before training (no rate, time or objective
        yet)."""
        return self.rows(0, 0.0, 0.0, [None] * len(measured), measured)
