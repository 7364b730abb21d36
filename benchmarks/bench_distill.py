"""Benchmark: Section 5's training, through the library's own ``train`` / ``train_group``.

What it measured on CPU and GPU is recorded beside the raw rows, in
``benchmarks/gpu_runs/2026-11-26_h100/README.md``.

Rows:

- ``distill_cpu_throughput``: ResNet-8 on the 8x8 digits, batch 64, random crops: one epoch of
  :func:`dsmlib.models.sec5_distillation.loop.train` against a plain ``DataLoader`` loop with a per-sample
  crop transform over the same tensors.
- ``distill_gradnorm_cost``: the per-epoch measurement of ``G(theta)`` against one epoch of
  training, from the same ``train`` call (medians over epochs); ``fraction`` = G / epoch.
- ``distill_lockstep_cpu_k<K>``: the ``K`` students of a teacher (noiseless, Gaussian, swap,
  swap control) trained together (:func:`dsmlib.models.sec5_distillation.loop.train_group`) against the
  same students trained one after another; per epoch of training.
- ``teachers_across_seeds`` and ``students_across_seeds`` (issue 52), at the quick profile's
  headroom setting (digits, 50 images, batch 32, 43 passes, ResNet-8): its 6 teachers, each on
  its own seed's split, in one group against the same teachers one at a time (images/s), and
  the students of 2 of them (22) in one group against one group per teacher
  (student-images/s); eager steps, medians over the epochs. What they measured, and why the
  CPU groups nothing across seeds: :func:`dsmlib.models.sec5_distillation.device.group_members`.
- ``distill_checkpoint_k10``: one epoch's checkpoints of a lockstep group of 10 ResNet-56
  students (every member's weights and momentum, each in its own run directory, atomically):
  :func:`dsmlib.models.sec5_distillation.runs.epoch_saver` (packed, :mod:`dsmlib.models.sec5_distillation.checkpoints`) against a
  plain state dict per member, one ``torch.save`` each (the library's format before), both
  with the members' metrics files; medians of 7, the arms alternated and each first in turn.
  CPU, one thread: 0.14-0.15 s against 0.33-0.35 s (x2.2-2.5 over three runs; most of what is
  left is file I/O).
- ``--gpu`` (CUDA; ``--device cpu`` is a dry run with tiny settings): ResNet-56 on random
  CIFAR-shaped tensors (3x32x32, 10 classes), batch 64:
  first, for the steps in ``--across-for`` (default graph), ``gpu_teachers_across_seeds_<step>``
  (10 teachers of 10 seeds, each on its own random split, in one group against the same
  teachers one at a time on a kept trainer; images/s; goal >= 3x and >= 40,000 images/s) and
  ``gpu_students_across_seeds_<step>`` (the 11 students of each of 4 teachers in one group of
  44 against one group per teacher; student-images/s; goal >= 2x and >= 100,000), each with
  ``gpu_busy_fraction``, kernel time / wall time of the grouped run (set-up, capture and its
  epochs; goal >= 0.7);
  ``gpu_checkpoint_k<K>``: the row above for the largest lockstep group, on the device;
  ``gpu_teacher_<step>``: a teacher's ``train`` epoch (images/s) against the ``DataLoader``
  loop (float32, 4 workers); ``gpu_busy_<step>`` (for the steps in ``--busy-for``): the
  GPU busy fraction, kernel time / wall time from the profiler, of a teacher's set-up and
  first two epochs; ``gpu_run_setup_<step>`` (not ``compiled``): a one-epoch teacher run on the
  trainer the runs before it kept (graph: nothing captured again) against the same run on a
  fresh trainer;
  ``gpu_lockstep_k<K>_<step>``: ``K`` students in lockstep (student-images/s) against ``K``
  sequential student runs; ``gpu_gradnorm_cost_<step>``: G and evaluation per epoch against
  training (``fraction``), and against an epoch of the paper's CIFAR-10 split at the measured
  rate (``fraction_of_paper_epoch``: G's cost is per epoch, an epoch's length is the data's);
  ``paper_grid_gpu_hours_<step>``: the GPU-hours per seed that the paper's Figure 1 grid
  (SVHN, CIFAR-10, CIFAR-100; a teacher and 11 students each; 200 epochs; 80 % of the official
  training sets) would take at the measured rates, against the same at the eager teacher rate.
  ``<step>`` is ``graph`` (the whole step replayed from a CUDA graph), ``eager`` and
  ``compiled`` (``torch.compile``, CUDA graphs through inductor), timed in that order, so a
  cut-off loses the slowest first (a step that fails prints ``gpu_<step>_error`` and the
  others go on; a step's GPU-hours row comes once the eager teacher has been timed). Every row
  gives ``first_epoch_s`` (set-up: capture or compilation) and, for ``compiled``,
  ``cudagraph_skips`` (how often inductor fell back from CUDA graphs).

Usage: ``python benchmarks/bench_distill.py [--quick] [--gpu] [--device cpu] [--no-cpu]
[--steps graph,eager,compiled] [--busy-for graph,eager,compiled] [--across-for graph]``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dsmlib.models.sec5_distillation.dataset_specs import SPECS  # noqa: E402
from dsmlib.models.sec5_distillation.datasets import DataSplit, load_dataset  # noqa: E402
from dsmlib.models.sec5_distillation.recipe import PAPER, paper_values  # noqa: E402
from dsmlib.models.networks import cifar_resnet  # noqa: E402
from dsmlib.models.sec5_distillation.run_config import Noise, RunConfig, student_of  # noqa: E402
from dsmlib.models.sec5_distillation.runs import epoch_saver, run_dir  # noqa: E402
from dsmlib.models.sec5_distillation.graph import Trainers  # noqa: E402
from dsmlib.models.sec5_distillation.lockstep import member_optimizer_state, member_state  # noqa: E402
from dsmlib.models.sec5_distillation.loop import train, train_group  # noqa: E402
from dsmlib.models.sec5_distillation.measure import clock  # noqa: E402
from dsmlib.models.sec5_distillation.nets import build_model  # noqa: E402

PAPER_TRAIN_IMAGES = {"svhn": 58_606, "cifar10": 40_000, "cifar100": 40_000}   # 80 % splits
PAPER_STUDENTS, PAPER_EPOCHS = 11, 200
#: The training hyperparameters of every run here: the paper's recipe (the chapter's quick values).
HYPER = paper_values("lr", "lr_drops", "lr_drop_factor", "momentum", "weight_decay", "precision",
                     "batch_size")


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
                     workers: int = 0) -> float:
    """Baseline: one epoch of the textbook loop (CPU tensors, a per-sample transform);
    returns seconds."""
    loader = torch.utils.data.DataLoader(
        _Set(X, y, _Crop(pad, flip)), batch_size=batch, shuffle=True, drop_last=True,
        num_workers=workers, pin_memory=device.type == "cuda",
        generator=torch.Generator().manual_seed(0), persistent_workers=False)
    model.train()
    t0 = time.perf_counter()
    for xb, yb in loader:
        xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def emit(**row) -> None:
    print(json.dumps(row), flush=True)


def epoch_times(history: list[dict], key: str = "train_s") -> float:
    """Median over epochs, leaving out the first (compilation, autotuning) when there are more."""
    rows = history[2:] if len(history) > 2 else history[1:]
    return statistics.median(r[key] for r in rows)


def students(teacher: RunConfig, k: int) -> list[RunConfig]:
    """``k`` students: the noiseless one, then Gaussian, swap and swap-control levels in turn."""
    kinds = [(Noise.GAUSSIAN, 4.0), (Noise.SYMMETRIC, 0.3), (Noise.CONTROL, 0.3)]
    out = [student_of(teacher, Noise.NONE, 0.0)]
    for i in range(k - 1):
        kind, level = kinds[i % 3]
        out.append(student_of(teacher, kind, level * (1 + i // 3)))
    return out


def bench_cpu(args) -> None:
    data = load_dataset("digits", split_seed=0, device="cpu")
    epochs = args.epochs or (3 if args.quick else 5)
    cfg = RunConfig(dataset="digits", depth=8, epochs=epochs, n_gradnorm=16, gradnorm_probes=2,
                    **HYPER)
    hist = train(cfg, data)
    train_s, g_s = epoch_times(hist), epoch_times(hist, "gradnorm_s")
    n_img = (data.X_train.shape[0] // 64) * 64
    model = cifar_resnet(8, 10, in_channels=1, seed=0)
    opt = PAPER.optimizer(model.parameters())
    base_s = statistics.median(dataloader_epoch(model, opt, data.X_train, data.y_train, batch=64,
                                                pad=1, flip=False, device=torch.device("cpu"))
                               for _ in range(epochs))
    common = dict(model="resnet8", dataset="digits 8x8", batch=64, epochs=epochs,
                  threads=torch.get_num_threads())
    emit(name="distill_cpu_throughput", ours_s=round(train_s, 4), baseline_s=round(base_s, 4),
         ratio=round(base_s / train_s, 3), images_per_s=round(n_img / train_s, 1),
         baseline_images_per_s=round(n_img / base_s, 1), **common)
    emit(name="distill_gradnorm_cost", ours_s=round(g_s, 4), baseline_s=round(train_s, 4),
         ratio=round(train_s / g_s, 3), fraction=round(g_s / train_s, 4), goal_fraction=0.25,
         n_gradnorm=16, gradnorm_probes=2, **common)
    teacher = build_model(cfg, data).eval()
    k = 4
    group = students(cfg, k)
    together = epoch_times(train_group(group, data, teacher=teacher)[0])
    alone = sum(epoch_times(train(c, data, teacher=teacher)) for c in group)
    emit(name=f"distill_lockstep_cpu_k{k}", ours_s=round(together, 4), baseline_s=round(alone, 4),
         ratio=round(alone / together, 3), students=k,
         student_images_per_s=round(k * n_img / together, 1),
         sequential_student_images_per_s=round(k * n_img / alone, 1), **common)
    emit_checkpoint("distill_checkpoint_k10", torch.device("cpu"), 56, 10,
                    dict(model="resnet56", threads=torch.get_num_threads()))
    bench_across_cpu(args)


def quick_setting(args):
    """The quick profile's headroom setting of Section 5 (digits, 50 images, batch 32, 43
    passes, ResNet-8) with ``--epochs`` epochs: the teachers and students the CPU trains most
    steps of, and the setting where grouping pays most on the CPU if anywhere."""
    from pathlib import Path
    from dsmlib.book.profiles import load_specs, resolve
    from dsmlib.chapters.sec5_distillation.grid import students_of, teacher_config
    root = Path(__file__).resolve().parents[1]
    grid = resolve(load_specs(root / "notebooks")["sec5_distillation"], "quick",
                   {"teacher_epochs": args.epochs or (2 if args.quick else 3)})
    setting = next(s for s in grid.settings if s.headroom)
    teachers = [teacher_config(grid, setting, seed) for seed in setting.seeds]
    return teachers, [students_of(grid, setting, t) for t in teachers]


def bench_across_cpu(args) -> None:
    """The across-seeds rows on the CPU, at the quick profile's headroom setting."""
    teachers, student_groups = quick_setting(args)
    splits = [load_dataset(t.dataset, split_seed=t.split_seed, train_limit=t.train_limit,
                           device="cpu") for t in teachers]
    common = dict(model=f"resnet{teachers[0].depth}", dataset="digits 8x8",
                  setting=f"{teachers[0].train_limit} images, batch {teachers[0].batch_size}, "
                          f"{teachers[0].passes} passes", epochs=teachers[0].epochs,
                  threads=torch.get_num_threads())
    emit_across(teachers, student_groups[:2], splits, "eager", None, common)


def emit_across(teachers, student_groups, splits, step, trainers_of, common, prefix="") -> None:
    """The ``teachers_across_seeds`` row (one group of ``teachers``, each on its own split,
    against the same teachers one at a time in the same step form) and the
    ``students_across_seeds`` row (one group of the students of several teachers,
    ``student_groups`` one list per teacher, against one group per teacher): rates from the median epoch, and on
    CUDA the GPU's busy share (kernel time / wall time) of the grouped run's set-up and
    epochs. ``trainers_of()``: a fresh :class:`~dsmlib.models.sec5_distillation.graph.Trainers` (graph and
    compiled steps), else None."""
    dev = splits[0].device
    fresh = trainers_of or (lambda: None)
    models = [build_model(t, d).eval() for t, d in zip(teachers, splits)]
    n = splits[0].X_train.shape[0]
    per_epoch = teachers[0].passes * (n - n % teachers[0].batch_size)
    extra = dict(step=step, **common)
    kept = fresh()
    alone = sum(epoch_times(train(t, d, step=step, trainers=kept)) for t, d in zip(teachers, splits))
    busy, hist = grouped_run(lambda kept: train_group(teachers, splits, step=step, trainers=kept),
                             fresh, dev)
    together = epoch_times(hist[0])
    k = len(teachers)
    emit(name=f"{prefix}teachers_across_seeds{'_' + step if prefix else ''}",
         ours_s=round(together, 4), baseline_s=round(alone, 4), ratio=round(alone / together, 3),
         teachers=k, images_per_s=round(k * per_epoch / together, 1),
         one_at_a_time_images_per_s=round(k * per_epoch / alone, 1), gpu_busy_fraction=busy,
         **extra)
    lanes = [c for group in student_groups for c in group]
    data = [splits[teachers.index(g[0].teacher)] for g in student_groups]
    tms = [models[teachers.index(g[0].teacher)] for g in student_groups]
    kept = fresh()
    alone = sum(epoch_times(train_group(g, d, teacher=m, step=step, trainers=kept)[0])
                for g, d, m in zip(student_groups, data, tms))
    busy, hist = grouped_run(lambda kept: train_group(lanes, data, teacher=tms, step=step,
                                                      trainers=kept), fresh, dev)
    together = epoch_times(hist[0])
    emit(name=f"{prefix}students_across_seeds{'_' + step if prefix else ''}",
         ours_s=round(together, 4), baseline_s=round(alone, 4), ratio=round(alone / together, 3),
         teachers=len(student_groups), students=len(lanes),
         student_images_per_s=round(len(lanes) * per_epoch / together, 1),
         per_teacher_student_images_per_s=round(len(lanes) * per_epoch / alone, 1),
         gpu_busy_fraction=busy, **extra)


def grouped_run(fn, fresh, dev):
    """``fn(trainers)``'s histories, with the GPU's busy share of the whole call (set-up,
    capture and every epoch) on CUDA (None elsewhere)."""
    if dev.type != "cuda":
        return None, fn(fresh())
    out = {}
    wall, kernel = busy_times(lambda: out.setdefault("h", fn(fresh())))
    return round(kernel / wall, 4), out["h"]


def statedict_checkpoints(configs, dirs, histories, model, opt) -> None:
    """The baseline: every member's metrics and checkpoint, the checkpoint as plain state dicts,
    one ``torch.save`` each (what :func:`dsmlib.models.sec5_distillation.runs.epoch_saver` did before it packed
    them)."""
    k_all, state, opt_state = len(configs), model.state_dict(), opt.state_dict()
    for k, (config, d, history) in enumerate(zip(configs, dirs, histories)):
        (d / "baseline.json.tmp").write_text(json.dumps({"config": config.to_dict(),
                                                         "history": history}, indent=1))
        os.replace(d / "baseline.json.tmp", d / "baseline.json")
        ck = dict(config=config.to_dict(), precision="fp32",
                  device_type=next(model.parameters()).device.type,
                  epoch=1, history=history, model=member_state(state, k, k_all),
                  optimizer=member_optimizer_state(opt_state, k, k_all))
        torch.save(ck, d / "baseline.pt.tmp")
        os.replace(d / "baseline.pt.tmp", d / "baseline.pt")


def emit_checkpoint(name: str, dev: torch.device, depth: int, k: int, common: dict,
                    repeats: int = 7) -> None:
    """The per-epoch checkpoints of a ``k``-student lockstep group (ResNet-``depth``, SGD with
    momentum): the library's ``epoch_saver`` (packed) against plain state dicts; medians."""
    import tempfile
    teacher = RunConfig(dataset="cifar10", depth=depth, epochs=3, n_gradnorm=256, **HYPER)
    configs = students(teacher, k)
    model = build_model(configs[0], synthetic_split(64, dev, size=8), k)
    opt = PAPER.optimizer(model.parameters())
    for p in model.parameters():
        p.grad = torch.randn_like(p)
    opt.step()
    with tempfile.TemporaryDirectory() as root:
        dirs = [run_dir(c, root) for c in configs]
        for d in dirs:
            d.mkdir(parents=True)
        save = epoch_saver(configs, dirs, "fp32", dev)
        hists = [[{"epoch": 0}] for _ in configs]

        def timed(fn) -> float:
            t0 = clock(dev)
            fn()
            return clock(dev) - t0
        ours_t, base_t = [], []
        for i in range(repeats):   # alternated, each arm first in turn: the same conditions
            arms = [(ours_t, lambda: save(1, hists, model, opt)),
                    (base_t, lambda: statedict_checkpoints(configs, dirs, hists, model, opt))]
            for times, fn in (arms if i % 2 == 0 else arms[::-1]):
                times.append(timed(fn))
        ours, base = statistics.median(ours_t), statistics.median(base_t)
    emit(name=name, ours_s=round(ours, 4), baseline_s=round(base, 4), ratio=round(base / ours, 3),
         students=k, note=f"one epoch's checkpoints of {k} lockstep ResNet-{depth} students "
         "(weights and momentum): packed against a state dict per member", **common)


def synthetic_split(n: int, device: torch.device, size: int = 32, seed: int = 0) -> DataSplit:
    """Random CIFAR-shaped data on ``device`` (throughput only: nothing is learnt)."""
    g = torch.Generator().manual_seed(seed)

    def images(m: int) -> torch.Tensor:
        return torch.randn(m, 3, size, size, generator=g).to(device)

    def labels(m: int) -> torch.Tensor:
        return torch.randint(0, 10, (m,), generator=g).to(device)
    return DataSplit(SPECS["cifar10"], size, 4, images(n), labels(n), images(n // 4),
                     labels(n // 4), images(n // 4), labels(n // 4), "random CIFAR-shaped tensors")


def busy_times(fn) -> tuple[float, float]:
    """Wall time and kernel time (s) of ``fn()`` on CUDA, from the profiler (kernels replayed
    from a CUDA graph may be invisible to the profiler on some drivers, which would read
    low)."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    kernel_us = sum(e.self_device_time_total for e in prof.key_averages()
                    if e.device_type.name == "CUDA")
    return wall, kernel_us / 1e6


def bench_gpu(args) -> None:
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--gpu needs a CUDA device (or --device cpu for a dry run)")
    dry = dev.type != "cuda"
    n = args.images or (256 if dry else (4096 if args.quick else 16384))
    depth = args.depth or (8 if dry else 56)
    epochs = args.epochs or (2 if dry else 3)
    data = synthetic_split(n, dev, size=8 if dry else 32)
    ks = (3,) if dry else (7, 11)
    name = torch.cuda.get_device_name(dev) if not dry else "cpu (dry run)"
    torch.backends.cudnn.benchmark = True   # a benchmark process of its own
    common = dict(device=name, depth=depth, batch=64, images=n, epochs=epochs)
    base_model = cifar_resnet(depth, 10, seed=0, device=dev)
    base_opt = PAPER.optimizer(base_model.parameters())
    X_cpu, y_cpu = data.X_train.cpu(), data.y_train.cpu()
    base_s = min(dataloader_epoch(base_model, base_opt, X_cpu, y_cpu, batch=64, pad=4, flip=True,
                                  device=dev, workers=0 if dry else 4) for _ in range(2))
    # 4x the epochs timed, so the timed ones share one learning rate (one graph, no re-capture)
    cfg = RunConfig(dataset="cifar10", depth=depth, epochs=4 * epochs,
                    n_gradnorm=256 if not dry else 8, **HYPER)
    teacher = build_model(cfg, data).eval()
    emit_checkpoint(f"gpu_checkpoint_k{ks[-1]}", dev, depth, ks[-1], common)
    for step in [s for s in args.across_for.split(",") if s]:
        if dry and step == "graph" or dry and step == "compiled" and not args.compile_on_cpu:
            step = "eager"
        try:
            bench_across_gpu(step, cfg, n, dev, dry, common, epochs)
        except Exception as exc:   # one broken path must not hide the others' figures
            emit(name=f"gpu_across_seeds_{step}_error", ours_s=None, baseline_s=None,
                 ratio=None, error=f"{type(exc).__name__}: {exc}"[:500], **common)
    rates: dict = {}
    hours_done: set = set()
    busy_for = set(args.busy_for.split(",")) if args.busy_for else set()
    for step in args.steps.split(","):
        if dry and step == "graph" or dry and step == "compiled" and not args.compile_on_cpu:
            continue
        try:
            bench_step(step, cfg, data, teacher, ks, base_s, rates, common, epochs)
        except Exception as exc:   # one broken path must not hide the others' figures
            emit(name=f"gpu_{step}_error", ours_s=None, baseline_s=None, ratio=None,
                 error=f"{type(exc).__name__}: {exc}"[:500], **common)
        if step in busy_for and ("teacher", step) in rates and not dry:
            emit_busy(step, cfg, data, common)
        if ("teacher", "eager") in rates:   # the GPU-hours' baseline, timed first or later
            for done in [s for (k, s) in rates if k == ks[-1] and s not in hours_done]:
                emit_hours(done, rates, ks[-1], common)
                hours_done.add(done)


def bench_across_gpu(step: str, cfg: RunConfig, n: int, dev: torch.device, dry: bool,
                     common: dict, epochs: int) -> None:
    """``gpu_teachers_across_seeds_<step>`` (a group of 10 teachers, 3 when dry, each on its
    own random split) and ``gpu_students_across_seeds_<step>`` (the 11 students of each of 4
    teachers, 2 x 3 when dry, in one group against one group per teacher), ``epochs`` epochs
    of ``n`` random CIFAR-shaped images each (the first epoch left out of the medians)."""
    seeds, n_teachers, k = (3, 2, 3) if dry else (10, 4, 11)
    base = replace(cfg, epochs=epochs)
    teachers = [replace(base, seed=s) for s in range(seeds)]
    splits = [synthetic_split(n, dev, size=8 if dry else 32, seed=s) for s in range(seeds)]
    students_of_each = [students(t, k) for t in teachers[:n_teachers]]
    emit_across(teachers, students_of_each, splits, step,
                None if step == "eager" else Trainers, common, prefix="gpu_")


def emit_busy(step: str, cfg: RunConfig, data: DataSplit, common: dict) -> None:
    """The ``gpu_busy_<step>`` row: kernel time / wall time of a teacher's set-up (capture
    or compilation included) and first two epochs, under the profiler."""
    try:
        wall, kernel = busy_times(lambda: train(cfg, data, step=step, trainers=Trainers(), stop_after=2))
        emit(name=f"gpu_busy_{step}", ours_s=round(wall, 4), baseline_s=round(kernel, 4),
             ratio=round(kernel / wall, 4), gpu_busy_fraction=round(kernel / wall, 4),
             step=step, note="kernel time / wall time of a teacher's set-up (capture or "
             "compilation included) and first two epochs", **common)
    except Exception as exc:   # the profiler must not hide the other figures
        emit(name=f"gpu_busy_{step}_error", ours_s=None, baseline_s=None, ratio=None,
             error=f"{type(exc).__name__}: {exc}"[:500], **common)


def bench_step(step: str, cfg: RunConfig, data: DataSplit, teacher, ks: tuple[int, ...],
               base_s: float, rates: dict, common: dict, epochs: int) -> None:
    """Every ``--gpu`` timing row of one step mode (``graph``, ``eager`` or ``compiled``), from
    ``epochs`` epochs of each run (the first left out of the medians)."""
    n, dry = data.X_train.shape[0], data.device.type != "cuda"
    trainers = Trainers()
    skips0 = cudagraph_skips()
    hist = train(cfg, data, step=step, trainers=trainers, stop_after=epochs)
    t_s = epoch_times(hist)
    rates[("teacher", step)] = n / t_s
    extra = dict(step=step, first_epoch_s=round(hist[1]["train_s"], 3),
                 cudagraph_skips=cudagraph_skips() - skips0)
    emit(name=f"gpu_teacher_{step}", ours_s=round(t_s, 4), baseline_s=round(base_s, 4),
         ratio=round(base_s / t_s, 3), images_per_s=round(n / t_s, 1),
         baseline_images_per_s=round(n / base_s, 1), goal_images_per_s=12_000, **extra,
         **common)
    if step != "compiled":   # a fresh compiled trainer would compile again (minutes)
        emit_setup(step, cfg, data, trainers, common)
    g_s, e_s = epoch_times(hist, "gradnorm_s"), epoch_times(hist, "eval_s")
    emit(name=f"gpu_gradnorm_cost_{step}", ours_s=round(g_s, 4), baseline_s=round(t_s, 4),
         ratio=round(t_s / g_s, 3), fraction=round(g_s / t_s, 4), goal_fraction=0.10,
         eval_fraction=round(e_s / t_s, 4), n_gradnorm=cfg.n_gradnorm,
         fraction_of_paper_epoch=round(g_s / (PAPER_TRAIN_IMAGES["cifar10"] / rates[("teacher", step)]), 4),
         **extra, **common)
    one = epoch_times(train(students(cfg, 1)[0], data, teacher=teacher, step=step,
                            trainers=trainers, stop_after=epochs))
    for k in ks:
        group = students(cfg, k)
        hist_k = train_group(group, data, teacher=teacher, step=step, trainers=trainers,
                             stop_after=epochs)[0]
        together = epoch_times(hist_k)
        rates[(k, step)] = k * n / together
        emit(name=f"gpu_lockstep_k{k}_{step}", ours_s=round(together, 4),
             baseline_s=round(k * one, 4), ratio=round(k * one / together, 3), students=k,
             student_images_per_s=round(k * n / together, 1),
             sequential_student_images_per_s=round(n / one, 1),
             goal_student_images_per_s=40_000,
             gradnorm_fraction=round(epoch_times(hist_k, "gradnorm_s") / together, 4),
             **extra, **common)


def emit_setup(step: str, cfg: RunConfig, data: DataSplit, trainers: Trainers,
               common: dict) -> None:
    """The ``gpu_run_setup_<step>`` row: a one-epoch teacher run on the trainer that the runs
    before it left in ``trainers`` (graph: its step and G pass already captured), reset,
    against the same run on a fresh trainer (captured anew), whole ``train`` calls."""
    def wall(kept: Trainers) -> float:
        t0 = clock(data.device)
        train(cfg, data, step=step, trainers=kept, stop_after=1)
        return clock(data.device) - t0
    fresh_s, reused_s = wall(Trainers()), wall(trainers)
    emit(name=f"gpu_run_setup_{step}", ours_s=round(reused_s, 4), baseline_s=round(fresh_s, 4),
         ratio=round(fresh_s / reused_s, 3), step=step,
         note="a one-epoch teacher run on the trainer kept by the runs before it against the "
              "same run on a fresh trainer", **common)


def emit_hours(step: str, rates: dict, k: int, common: dict) -> None:
    """The paper's Figure 1 grid, one seed, at ``step``'s measured rates."""
    def hours(teacher_rate: float, student_rate: float) -> float:
        images = sum(PAPER_TRAIN_IMAGES.values()) * PAPER_EPOCHS
        return (images / teacher_rate + PAPER_STUDENTS * images / student_rate) / 3600
    ours_h = hours(rates[("teacher", step)], rates[(k, step)])
    base_h = hours(rates[("teacher", "eager")], rates[("teacher", "eager")])
    emit(name=f"paper_grid_gpu_hours_{step}", ours_s=round(ours_h * 3600, 1),
         baseline_s=round(base_h * 3600, 1), ratio=round(base_h / ours_h, 3),
         gpu_hours_per_seed=round(ours_h, 2), baseline_gpu_hours_per_seed=round(base_h, 2),
         goal_gpu_hours_per_seed=3.0, step=step, students_per_group=k,
         note="training only, at the measured rates (evaluation and G add their fractions); "
              "baseline: every run alone at the eager teacher rate", **common)


def cudagraph_skips() -> int:
    """How often torch.compile gave up CUDA graphs so far in this process (compiled step)."""
    from torch._dynamo.utils import counters
    return int(counters["inductor"].get("cudagraph_skips", 0))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer epochs / images")
    ap.add_argument("--gpu", action="store_true", help="also the ResNet-56 GPU benchmarks")
    ap.add_argument("--no-cpu", action="store_true", help="skip the CPU benchmarks")
    ap.add_argument("--device", default="cuda", help="for --gpu: cuda, or cpu for a dry run")
    ap.add_argument("--images", type=int, default=None, help="for --gpu: random images")
    ap.add_argument("--depth", type=int, default=None, help="for --gpu: ResNet depth (56)")
    ap.add_argument("--busy-for", default="eager,graph,compiled",
                    help="for --gpu: the steps whose GPU busy fraction is measured (profiler)")
    ap.add_argument("--steps", default="graph,eager,compiled",
                    help="for --gpu: the step modes to time, in this order (graph needs CUDA)")
    ap.add_argument("--across-for", default="graph",
                    help="for --gpu: the steps whose across-seeds rows are timed, first "
                         "(eager on a dry run); empty: none")
    ap.add_argument("--compile-on-cpu", action="store_true",
                    help="dry run: also the compiled step on the CPU (minutes of compilation)")
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
