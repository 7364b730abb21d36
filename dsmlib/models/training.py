"""One readable training loop for Section 5 (models layer): a teacher trained with cross-entropy,
or a student regressing on its teacher's logits plus noise redrawn at every iteration.

The data live on the device (:class:`dsmlib.models.datasets.DataSplit`); batches are indexed and
augmented there. On CUDA the forward passes run under bf16 autocast with channels-last tensors
(``precision="auto"``); losses, targets, noise and every measurement are float32.

Randomness: each epoch draws its order and augmentation from ``child_seed(seed, DATA, epoch)``
and its label noise from ``child_seed(seed, NOISE, epoch)``, so an epoch is reproducible from the
model and optimizer state alone (a resumed run continues exactly) and the students of one seed see
the same batches and the same standard-normal draws at every level (common random numbers).

Measured before training (epoch 0) and after every epoch: accuracy and loss on the training
(un-augmented), validation and test sets, the gradient norm ``G(theta)`` of Eq. (22) on a fixed
subsample of the training set with its standard error
(:func:`dsmlib.theory.gradient_norm.gradient_norm_probe`), the mean training objective SGD saw,
and wall times. A student's losses compare its logits with the noise's mean ``E[y~]`` of the
teacher's logits (the noiseless target: ``y`` for Gaussian noise, ``M y`` for the swap); the
teacher's are cross-entropies.
"""
from __future__ import annotations

import contextlib
import math
import os
import time
from typing import Any, Callable, Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..foundation.rng import as_torch_generator, child_seed
from ..theory.gradient_norm import gradient_norm_probe
from ..theory.label_noise import GaussianNoise, SymmetricSwapNoise
from .datasets import DataSplit, augment
from .networks import cifar_resnet
from .run_config import RunConfig

__all__ = ["STREAM_INIT", "STREAM_DATA", "STREAM_NOISE", "STREAM_GRADNORM", "noise_model",
           "lr_at", "resolved_precision", "build_model", "execution", "predict", "train"]

STREAM_INIT, STREAM_DATA, STREAM_NOISE, STREAM_GRADNORM = 1, 2, 3, 4

EpochHook = Callable[[int, list, nn.Module, torch.optim.Optimizer], None]


def noise_model(config: RunConfig) -> GaussianNoise | SymmetricSwapNoise | None:
    """The label noise a student sees (Sec. 5.2): ``N(0, sigma^2 I_L)`` added to the logits, or
    the symmetric swap in its ``"copy"`` variant (the one with the paper's ``E[y~]``)."""
    if config.noise == "gaussian":
        return GaussianNoise(config.level)
    if config.noise in ("symmetric", "symmetric_mean"):   # the control uses only its mean
        return SymmetricSwapNoise(config.level, variant="copy")
    return None


def lr_at(config: RunConfig, epoch: int) -> float:
    """The paper's schedule: ``lr`` divided by 10 at 50 % and again at 75 % of the epochs
    (epochs 100 and 150 of 200); ``epoch`` counts from 0."""
    drops = (epoch >= config.epochs // 2) + (epoch >= (3 * config.epochs) // 4)
    return config.lr * 0.1 ** drops


def resolved_precision(config: RunConfig, device: torch.device) -> str:
    """``"auto"`` -> bf16 autocast on CUDA, float32 on the CPU."""
    if config.precision == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    return config.precision


def build_model(config: RunConfig, data: DataSplit) -> nn.Module:
    """The CIFAR ResNet of ``config.depth`` for the data's channels and classes, initialised from
    ``child_seed(seed, INIT)`` (a student's weights are then replaced by its teacher's)."""
    model = cifar_resnet(config.depth, data.spec.num_classes, in_channels=data.spec.in_channels,
                         seed=child_seed(config.seed, STREAM_INIT), device=data.device)
    if data.device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    return model


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


def _clock(device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def _channels(x: Tensor) -> Tensor:
    return x.contiguous(memory_format=torch.channels_last) if x.is_cuda else x


@torch.no_grad()
def predict(model: nn.Module, X: Tensor, *, amp: bool, batch: int = 1024) -> Tensor:
    """float32 logits of ``model`` (as it is: call ``eval()`` first) on ``X``, in batches."""
    with torch.autocast(X.device.type, torch.bfloat16, enabled=amp):
        return torch.cat([model(_channels(X[s:s + batch])).float()
                          for s in range(0, X.shape[0], batch)])


def _objective(logits: Tensor, y: Tensor, target: Tensor | None) -> Tensor:
    """Cross-entropy on labels (teacher), or the squared error per logit (student)."""
    if target is None:
        return F.cross_entropy(logits, y)
    return F.mse_loss(logits, target)


def _splits(data: DataSplit) -> dict[str, tuple[Tensor, Tensor]]:
    return {"train": (data.X_train, data.y_train), "val": (data.X_val, data.y_val),
            "test": (data.X_test, data.y_test)}


def _measure(model: nn.Module, data: DataSplit, targets: dict[str, Tensor | None],
             config: RunConfig, amp: bool, epoch: int) -> dict[str, float]:
    """Accuracies and losses on every split, then ``G(theta)`` on the fixed subsample."""
    model.eval()
    t0 = _clock(data.device)
    row: dict[str, float] = {}
    for name, (X, y) in _splits(data).items():
        logits = predict(model, X, amp=amp)
        row[f"{name}_acc"] = float((logits.argmax(dim=1) == y).float().mean())
        row[f"{name}_loss"] = float(_objective(logits, y, targets[name]))
    t1 = _clock(data.device)
    X_g = data.X_train[:config.n_gradnorm]
    est = gradient_norm_probe(
        model, X_g, n_probes=config.gradnorm_probes, method="vjp",
        seed=as_torch_generator(child_seed(config.seed, STREAM_GRADNORM, epoch), data.device),
        chunk_size=256 if data.device.type == "cuda" else 64)
    t2 = _clock(data.device)
    row.update(gradnorm=est.estimate, gradnorm_se=est.standard_error, eval_s=t1 - t0,
               gradnorm_s=t2 - t1)
    return row


def _targets(teacher: nn.Module | None, noise, data: DataSplit, amp: bool
             ) -> dict[str, Tensor | None]:
    """The noiseless targets ``E[y~]`` of every split (None for a teacher run)."""
    if teacher is None:
        return {k: None for k in ("train", "val", "test")}
    out = {}
    for name, (X, _) in _splits(data).items():
        logits = predict(teacher, X, amp=amp)
        out[name] = logits if noise is None else noise.mean(logits)
    return out


def train(config: RunConfig, data: DataSplit, *, teacher: nn.Module | None = None,
          state: dict[str, Any] | None = None, on_epoch: EpochHook | None = None,
          stop_after: int | None = None, progress: bool = False,
          compile_model: bool = False) -> list[dict[str, float]]:
    """Train ``config`` on ``data``; return one metrics row per epoch (row 0: before training).

    ``teacher``: the trained teacher (students only; in eval mode, used for the targets).
    ``state``: a checkpoint (``model``, ``optimizer``, ``epoch``, ``history``) to continue
    from. ``on_epoch(epoch, history, model, optimizer)`` runs after every epoch (checkpoints).
    ``stop_after``: train at most that many epochs in this call (an interruption, on purpose).
    ``compile_model``: run the training forward pass through ``torch.compile`` (CUDA graphs
    and fused kernels on GPUs; the numbers change at rounding level only).
    """
    if (teacher is None) != (config.role == "teacher"):
        raise ValueError("a student run needs its trained teacher, and a teacher run none")
    device = data.device
    amp = resolved_precision(config, device) == "bf16"
    n, b = data.X_train.shape[0], config.batch_size
    if b > n:
        raise ValueError(f"batch_size must be <= the {n} training images, got {b}")
    model = build_model(config, data)
    noise = noise_model(config)
    if teacher is not None:
        teacher.eval()
        model.load_state_dict(teacher.state_dict())
    opt = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum,
                          weight_decay=config.weight_decay)
    targets = _targets(teacher, noise, data, amp)
    t_train = targets["train"]   # the loss of predicting the mean target: the loss's scale
    scale = (math.log(config.num_classes) if t_train is None else
             float(F.mse_loss(t_train, t_train.mean(0).expand_as(t_train))))
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        history = list(state["history"])
    else:
        history = [dict(epoch=0, lr=0.0, train_objective=None, train_s=0.0, loss_scale=scale,
                        **_measure(model, data, targets, config, amp, 0))]
    start = len(history) - 1
    epochs = range(start, config.epochs if stop_after is None
                   else min(config.epochs, start + stop_after))
    if progress:
        from tqdm.auto import tqdm
        epochs = tqdm(epochs, desc=config.label(), leave=False, initial=start,
                      total=config.epochs)
    X, y = data.X_train, data.y_train
    net = torch.compile(model) if compile_model else model
    for epoch in epochs:
        g_data = as_torch_generator(child_seed(config.seed, STREAM_DATA, epoch), device)
        g_noise = as_torch_generator(child_seed(config.seed, STREAM_NOISE, epoch), device)
        lr = lr_at(config, epoch)
        for group in opt.param_groups:
            group["lr"] = lr
        model.train()
        t0, total = _clock(device), torch.zeros((), device=device)
        batches = torch.randperm(n, generator=g_data, device=device)[: n - n % b].view(-1, b)
        for idx in batches:
            x = X[idx]
            if config.augment:
                x = augment(x, g_data, pad=data.pad, flip=data.spec.flip)
            x = _channels(x)
            with torch.autocast(device.type, torch.bfloat16, enabled=amp):
                out = net(x).float()
                if teacher is None:
                    target = None
                else:
                    with torch.no_grad():
                        target = teacher(x).float()
                    target = (target if noise is None else noise.mean(target)
                              if config.noise == "symmetric_mean" else noise.draw(target, g_noise))
            loss = _objective(out, y[idx], target)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        train_s = _clock(device) - t0
        history.append(dict(epoch=epoch + 1, lr=lr, train_objective=float(total) / len(batches),
                            train_s=train_s, loss_scale=scale,
                            **_measure(model, data, targets, config, amp, epoch + 1)))
        if on_epoch is not None:
            on_epoch(epoch + 1, history, model, opt)
    return history
