"""Benchmark: the self-distillation training loop of Section 5 (``dsmlib.models.training``).

Prints one JSON object per line, ``{"name", "ours_s", "baseline_s", "ratio", ...}``, ours and
baseline timed in the same run:

- ``distill_cpu_throughput``: the ``quick`` profile's model (ResNet-8 on the 8x8 digits,
  batch 64, random crops) on the CPU: one epoch of :func:`dsmlib.models.training.train`
  (data held as tensors, batches indexed and augmented in place) against a plain
  ``DataLoader`` loop over the same tensors with a per-sample crop transform. ``ratio`` =
  baseline / ours; ``images_per_s`` is ours.
- ``distill_gradnorm_cost``: the per-epoch measurement of ``G(theta)`` (``n_gradnorm`` = 16
  images, 2 probes, as in ``quick``) against one epoch of training, both from the same
  ``train`` call (medians over epochs). ``fraction`` = G time / epoch time (goal <= 0.25);
  ``ratio`` = epoch / G time.
- ``--gpu`` (needs CUDA): ``resnet56_throughput_b<B>[_compiled]``: ResNet-56 on random
  CIFAR-shaped tensors (3x32x32, 10 classes): the GPU-resident pipeline (data on the GPU,
  crops and flips there, bf16 autocast, channels-last) against a plain ``DataLoader`` loop
  (CPU tensors, per-sample crop and flip in 4 worker processes, pinned memory, float32);
  batch 64 (the paper's; also through ``torch.compile``) and 512. ``ours_s`` and
  ``baseline_s`` are seconds per image. Goal: >= 15,000 images/s on an H100.

The CPU benchmarks use one thread by default (as each of the quick notebook's two worker
processes does); ``--threads 0`` keeps torch's default.

Usage: ``python benchmarks/bench_distill.py [--quick] [--gpu] [--epochs E] [--threads T]``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dsmlib.models.datasets import augment, load_dataset  # noqa: E402
from dsmlib.models.networks import cifar_resnet  # noqa: E402
from dsmlib.models.run_config import RunConfig  # noqa: E402
from dsmlib.models.training import train  # noqa: E402


class _Crop:
    """Per-sample random crop (and flip) of a CHW tensor: the usual torchvision-style transform."""

    def __init__(self, pad: int, flip: bool, seed: int = 0) -> None:
        self.pad, self.flip = pad, flip
        self.g = torch.Generator().manual_seed(seed)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        c, h, w = x.shape
        xp = F.pad(x, (self.pad,) * 4)
        i, j = torch.randint(0, 2 * self.pad + 1, (2,), generator=self.g).tolist()
        x = xp[:, i:i + h, j:j + w]
        if self.flip and torch.rand((), generator=self.g) < 0.5:
            x = x.flip(2)
        return x


class _Set(torch.utils.data.Dataset):
    def __init__(self, X: torch.Tensor, y: torch.Tensor, transform) -> None:
        self.X, self.y, self.t = X, y, transform

    def __len__(self) -> int:
        return self.X.shape[0]

    def __getitem__(self, i: int):
        return self.t(self.X[i]), self.y[i]


def dataloader_epoch(model, opt, X, y, *, batch: int, pad: int, flip: bool, device,
                     workers: int = 0, max_steps: int | None = None) -> tuple[float, int]:
    """Baseline: one epoch of the textbook loop; returns (seconds, images)."""
    loader = torch.utils.data.DataLoader(
        _Set(X, y, _Crop(pad, flip)), batch_size=batch, shuffle=True, drop_last=True,
        num_workers=workers, pin_memory=device.type == "cuda",
        generator=torch.Generator().manual_seed(0), persistent_workers=False)
    model.train()
    seen = 0
    t0 = time.perf_counter()
    for step, (xb, yb) in enumerate(loader):
        if max_steps is not None and step >= max_steps:
            break
        xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        seen += xb.shape[0]
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0, seen


def resident_epoch(model, opt, X, y, *, batch: int, pad: int, flip: bool, amp: bool,
                   max_steps: int | None = None, net=None) -> tuple[float, int]:
    """Ours, stripped to the training step: data on the device, augmentation there, bf16."""
    net = net or model
    g = torch.Generator(device=X.device).manual_seed(0)
    n = X.shape[0]
    model.train()
    idx_all = torch.randperm(n, generator=g, device=X.device)[: n - n % batch].view(-1, batch)
    if max_steps is not None:
        idx_all = idx_all[:max_steps]
    if X.is_cuda:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for idx in idx_all:
        xb = augment(X[idx], g, pad=pad, flip=flip)
        if xb.is_cuda:
            xb = xb.contiguous(memory_format=torch.channels_last)
        with torch.autocast(X.device.type, torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(net(xb).float(), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if X.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - t0, idx_all.numel()


def emit(**row) -> None:
    print(json.dumps(row), flush=True)


def bench_cpu(args) -> None:
    data = load_dataset("digits", split_seed=0, device="cpu")
    epochs = args.epochs or (3 if args.quick else 6)
    cfg = RunConfig(dataset="digits", depth=8, epochs=epochs, n_gradnorm=16, gradnorm_probes=2)
    hist = train(cfg, data)[1:]
    train_s = statistics.median(r["train_s"] for r in hist)
    g_s = statistics.median(r["gradnorm_s"] for r in hist)
    n_img = (data.X_train.shape[0] // 64) * 64
    model = cifar_resnet(8, 10, in_channels=1, seed=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    base = [dataloader_epoch(model, opt, data.X_train, data.y_train, batch=64, pad=1, flip=False,
                             device=torch.device("cpu"))[0] for _ in range(epochs)]
    base_s = statistics.median(base)
    common = dict(model="resnet8", dataset="digits 8x8", batch=64, epochs=epochs,
                  threads=torch.get_num_threads())
    emit(name="distill_cpu_throughput", ours_s=round(train_s, 4), baseline_s=round(base_s, 4),
         ratio=round(base_s / train_s, 3), images_per_s=round(n_img / train_s, 1),
         baseline_images_per_s=round(n_img / base_s, 1), **common)
    emit(name="distill_gradnorm_cost", ours_s=round(g_s, 4), baseline_s=round(train_s, 4),
         ratio=round(train_s / g_s, 3), fraction=round(g_s / train_s, 4), goal_fraction=0.25,
         n_gradnorm=16, gradnorm_probes=2, **common)


def bench_gpu(args) -> None:
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--gpu needs a CUDA device (or --device cpu for a dry run)")
    n = args.images or (2048 if args.quick else 8192)
    g = torch.Generator().manual_seed(0)
    X_cpu = torch.randn(n, 3, 32, 32, generator=g)
    y_cpu = torch.randint(0, 10, (n,), generator=g)
    X, y = X_cpu.to(dev), y_cpu.to(dev)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu (dry run)"
    torch.backends.cudnn.benchmark = True   # a benchmark process of its own
    for batch in (64, 512):
        base_model = cifar_resnet(56, 10, seed=0, device=dev)
        base_opt = torch.optim.SGD(base_model.parameters(), lr=0.1, momentum=0.9)
        dataloader_epoch(base_model, base_opt, X_cpu, y_cpu, batch=batch, pad=4, flip=True,
                         device=dev, workers=4, max_steps=10)          # warm-up
        tb, seen_b = dataloader_epoch(base_model, base_opt, X_cpu, y_cpu, batch=batch, pad=4,
                                      flip=True, device=dev, workers=4)
        for compiled in ((False, True) if batch == 64 and not args.no_compile else (False,)):
            model = cifar_resnet(56, 10, seed=0, device=dev).to(memory_format=torch.channels_last)
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
            net = torch.compile(model) if compiled else model
            resident_epoch(model, opt, X, y, batch=batch, pad=4, flip=True, amp=True,
                           max_steps=20, net=net)          # warm-up (and compilation)
            t, seen = resident_epoch(model, opt, X, y, batch=batch, pad=4, flip=True, amp=True,
                                     net=net)
            emit(name=f"resnet56_throughput_b{batch}{'_compiled' if compiled else ''}",
                 ours_s=round(t / seen, 8), baseline_s=round(tb / seen_b, 8),
                 ratio=round((tb / seen_b) / (t / seen), 3), images_per_s=round(seen / t, 1),
                 baseline_images_per_s=round(seen_b / tb, 1), goal_images_per_s=15000,
                 device=name, batch=batch, images=n, unit="seconds per image")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer epochs / images")
    ap.add_argument("--gpu", action="store_true", help="also the ResNet-56 GPU throughput")
    ap.add_argument("--no-cpu", action="store_true", help="skip the CPU benchmarks")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile variant")
    ap.add_argument("--device", default="cuda", help="for --gpu: cuda, or cpu for a dry run")
    ap.add_argument("--images", type=int, default=None, help="for --gpu: random images")
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1, as each worker of the quick notebook; 0: as set)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)   # a benchmark process of its own: fine here
    if not args.no_cpu:
        bench_cpu(args)
    if args.gpu:
        bench_gpu(args)


if __name__ == "__main__":
    main()
