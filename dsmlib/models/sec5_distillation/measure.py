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

**What a measurement costs** (issue 69). A pass over a split is one forward pass of the grouped
network per batch, every member at once, in inference mode (:func:`predict`: no autograd
record, no version counters), at the training's precision (bf16 autocast where the run trains
in it) and at the device's evaluation batch (:attr:`DevicePolicy.eval_batch`). The teachers'
logits are computed once per split (:func:`teacher_logits`), for the students' noiseless targets,
the teachers' logit scale and the students' row 0: before training every student *is* its lane's
teacher (:func:`~dsmlib.models.sec5_distillation.nets.start_state`), so its logits are its
teacher's (:meth:`Baseline.start_logits`) and the group's row 0 runs no forward pass of its own.
``G`` needs gradients and keeps autograd (:mod:`dsmlib.models.sec5_distillation.gradnorm`).
None of it moves a training step or a random draw. Measured values stay those of a pass of the
members themselves: in exact arithmetic equal; in floating point they can differ only by the
order of a kernel's sums where another kernel or batch computes the same logits (a teacher's
plain convolutions against its students' grouped ones on CUDA), by a few units in the last place
of a logit: on this project's CPUs they are bit for bit the same
(``tests/models/test_measure.py``).
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

__all__ = ["clock", "predict", "teacher_logits", "noiseless_targets", "measure", "Baseline"]


def clock(device: torch.device) -> float:
    """Wall time in seconds, after the device's queued work (CUDA) has finished."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


@torch.inference_mode()
def predict(model: nn.Module, X: Tensor, *, amp: bool, batch: int = 1024,
            dtype: torch.dtype = torch.float32, channels_last: bool = False) -> Tensor:
    """Logits (in ``dtype``) of ``model`` (as it is: call ``eval()`` first) on ``X``, in
    batches (channels-last where the run's policy says so), in inference mode (the logits are
    inference tensors: read them, never train on them); ``(N, L)``, or ``(N, K, L)`` for a
    ``K``-member module."""
    wdtype = next(model.parameters()).dtype
    out = []
    for s in range(0, X.shape[0], batch):
        x = X[s:s + batch].to(wdtype)
        x = x.contiguous(memory_format=torch.channels_last) if channels_last and x.ndim == 4 else x
        with torch.autocast(X.device.type, torch.bfloat16, enabled=amp):
            out.append(model(x).to(dtype))
    return torch.cat(out)


def _predict(model: nn.Module, X: Tensor, policy: DevicePolicy) -> Tensor:
    return predict(model, X, amp=policy.amp, batch=policy.eval_batch, dtype=policy.dtype,
                   channels_last=policy.channels_last)


def teacher_logits(teacher: nn.Module | None, lanes: Lanes,
                   policy: DevicePolicy) -> dict[str, Tensor] | None:
    """Per split, the lanes' teachers' logits on their lanes' images, each computed once: one
    lane's ``(N, L)``, several lanes' ``(N, lanes, L)``; None for a teacher run."""
    if teacher is None:
        return None
    return {name: _predict(teacher, lanes.split(name)[0], policy) for name in SPLITS}


def noiseless_targets(logits: dict[str, Tensor] | None, members: Sequence[Member],
                      lanes: Lanes) -> dict[str, Tensor | None]:
    """Per split, the members' noiseless targets ``(N, K, L)`` (None for a teacher run), each
    from its own lane's teacher's ``logits`` (:func:`teacher_logits`)."""
    if logits is None:
        return {k: None for k in SPLITS}
    return {name: member_targets(logits[name], mean_members(members), lanes=lanes.member_lanes)
            for name in SPLITS}


def _split_rows(model: nn.Module, lanes: Lanes, name: str, target: Tensor | None,
                policy: DevicePolicy, part: int | None, members: Sequence[Member],
                known: Tensor | None = None) -> list[dict[str, Any]]:
    """Each member's accuracy and loss on split ``name`` (its first ``part`` images if not
    None), on its lane's images and labels: a student's squared error against its noiseless
    target, a teacher's (and the continued teacher's) cross-entropy. ``known``: the members'
    logits on the whole split ``(N, K, L)`` if known already (no forward pass then)."""
    X, y = lanes.split(name)
    if part is not None and part < X.shape[0]:
        X, y = X[:part], y[..., :part]
        target = None if target is None else target[:part]
        known = None if known is None else known[:part]
    k_all = len(lanes.of)
    logits = (_predict(model, X, policy) if known is None else known).view(X.shape[0], k_all, -1)
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
            train_part: int | None = None, *, whole: bool = True,
            logits: dict[str, Tensor] | None = None) -> list[dict[str, Any]]:
    """Per member of ``trainer``'s group: accuracies and losses on every split (its lane's),
    then ``G`` on the fixed subsample, every member in one pass (its probes those of epoch
    ``epoch``). ``whole=False`` (the epochs between the first and the last): the training loss
    and accuracy on the first ``train_part`` training images only (a fixed random subsample:
    the split is a seeded permutation), and nothing on the test set (None), which is read
    before training and after the last epoch alone. ``logits``: per split, the members' logits
    ``(N, K, L)`` where they are known without a pass of the network (a students group before
    training: :meth:`Baseline.start_logits`)."""
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
        known = None if logits is None else logits[name]
        for row, got in zip(rows, _split_rows(trainer.model, lanes, name, targets[name], policy,
                                              part, trainer.members, known)):
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
    (:func:`~dsmlib.models.sec5_distillation.targets.noise_variance`; None for teachers); each
    lane's training images (``n_train``); and per split the teachers' logits they come from
    (:func:`teacher_logits`; None for teachers)."""
    targets: dict[str, Tensor | None]
    scales: list[float]
    logit_vars: list[float | None]
    noise_vars: list[float | None]
    n_train: int   # each lane's training images
    teachers: dict[str, Tensor] | None = None

    @classmethod
    def of(cls, trainer: Trainer) -> Baseline:
        """The baseline of ``trainer``'s group, from its teacher (none for teachers)."""
        members, lanes = trainer.members, trainer.lanes
        raw = teacher_logits(trainer.teacher, lanes, trainer.policy)
        targets = noiseless_targets(raw, members, lanes)
        t_train, k_all = targets["train"], len(members)
        labelled, n = math.log(lanes.first.spec.num_classes), trainer.X.shape[1]
        if raw is None:
            return cls(targets, [labelled] * k_all, [None] * k_all, [None] * k_all, n)
        scales = [labelled if m.kind == Noise.CONTINUED else
                  float(F.mse_loss(t, t.mean(0).expand_as(t)))
                  for m, t in zip(members, t_train.unbind(1))]
        lane_raw = [lanes.logits_of(raw["train"], lane) for lane in lanes.of]
        return cls(targets, scales, [logit_variance(t) for t in lane_raw],
                   [noise_variance(m, t) for m, t in zip(members, lane_raw)], n, raw)

    def start_logits(self, lanes: Lanes) -> dict[str, Tensor] | None:
        """Per split, the members' logits before training ``(N, K, L)``: a student starts from
        its lane's teacher's weights, so its logits are its teacher's (None for teachers,
        which start from their own initialisations)."""
        if self.teachers is None:
            return None
        k_all = len(lanes.of)
        if lanes.count == 1:
            return {name: t.unsqueeze(1).expand(-1, k_all, -1)
                    for name, t in self.teachers.items()}
        index = torch.tensor(lanes.of, device=lanes.device)
        return {name: t.index_select(1, index) for name, t in self.teachers.items()}

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
