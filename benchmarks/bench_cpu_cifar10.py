"""Benchmark: the ``cpu-cifar10`` profile's two roles on this CPU (issue 61), through the library's
own training step (:class:`dsmlib.models.sec5_distillation.trainer.Trainer`), each against the same
work done one run at a time in eager PyTorch, timed in the same run.

Rows (one JSON line each, ``{"name", "ours_s", "baseline_s", "ratio", ...}``, ``ratio =
baseline_s / ours_s``):

- ``cpu_cifar10_teachers``: a ResNet-8 teacher's SGD steps on random CIFAR-shaped batches (64
  images of 3x32x32, crops and flips), the way the grid trains them here (one at a time,
  channels-last, all cores), against a plain eager loop over the same batches (the network in
  its default memory format, ``torch.optim.SGD``, the same crops);
- ``cpu_cifar10_students``: a teacher's 12 students in lockstep (one teacher forward a batch,
  each member's loss, one backward; on the CPU the members run apart, channels-last), against
  the 12 students one after another, each its own eager loop with its own teacher forward.

Each row gives ``images_per_s`` (student-images for the students), the achieved ``gflops``
(multiply-adds counted on the network's convolutions and linear layer, times 2, times 3 for a
training step; the students' teacher forward counted once a batch), the machine's ``sgemm_gflops``
(a 2048x2048 float32 matrix product, measured in the same run) and ``of_sgemm``, their ratio:
how much of the machine's dense-matrix speed the step reaches.

Usage: ``python benchmarks/bench_cpu_cifar10.py [--steps N] [--quick]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dsmlib.models.networks import cifar_resnet  # noqa: E402
from dsmlib.models.sec5_distillation.datasets import DataSplit, apply_augment, augment_draws  # noqa: E402
from dsmlib.models.sec5_distillation.dataset_specs import SPECS  # noqa: E402
from dsmlib.models.sec5_distillation.device import device_policy  # noqa: E402
from dsmlib.models.sec5_distillation.group import Group  # noqa: E402
from dsmlib.models.sec5_distillation.plan import plan_epoch  # noqa: E402
from dsmlib.models.sec5_distillation.recipe import PAPER, paper_values  # noqa: E402
from dsmlib.models.sec5_distillation.run_config import RunConfig, student_of  # noqa: E402
from dsmlib.models.sec5_distillation.trainer import Trainer  # noqa: E402

STUDENTS = (("none", 0.0), ("gaussian", 0.5), ("gaussian", 2.0), ("gaussian", 8.0),
            ("symmetric", 0.1), ("symmetric", 0.3), ("symmetric", 0.5),
            ("symmetric_mean", 0.1), ("symmetric_mean", 0.3), ("symmetric_mean", 0.5),
            ("hinton", 4.0), ("continued", 0.0))


def split(n: int, seed: int = 0) -> DataSplit:
    g = torch.Generator().manual_seed(seed)
    x = lambda m: torch.randn(m, 3, 32, 32, generator=g)  # noqa: E731
    y = lambda m: torch.randint(0, 10, (m,), generator=g)  # noqa: E731
    return DataSplit(SPECS["cifar10"], 32, 4, x(n), y(n), x(64), y(64), x(64), y(64),
                     "random CIFAR-shaped tensors")


def macs_per_image(model: torch.nn.Module) -> float:
    """Multiply-adds of one forward pass of one 3x32x32 image, from its convolutions and
    linear layers (hooks on their outputs)."""
    total = [0.0]

    def hook(mod, inp, out):
        if isinstance(mod, torch.nn.Conv2d):
            k = mod.weight.shape[1] * mod.weight.shape[2] * mod.weight.shape[3]
            total[0] += out.numel() * k
        elif isinstance(mod, torch.nn.Linear):
            total[0] += out.numel() * mod.in_features
    hs = [m.register_forward_hook(hook) for m in model.modules()
          if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        model(torch.zeros(1, 3, 32, 32))
    for h in hs:
        h.remove()
    return total[0]


def sgemm_gflops(n: int = 2048, repeats: int = 5) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = min(_time(lambda: a @ b) for _ in range(repeats))
    return 2 * n ** 3 / best / 1e9


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def teacher_config() -> RunConfig:
    return RunConfig(**{**paper_values(), "epochs": 30, "precision": "fp32"}, dataset="cifar10",
                     depth=8, train_limit=1200, n_gradnorm=8)


def ours(configs, data, teacher, steps: int) -> float:
    """``steps`` SGD steps of the library's trainer (after two of warm-up)."""
    policy = device_policy("fp32", torch.device("cpu"))
    tr = Trainer(Group.of(configs, data, policy), [] if teacher is None else [teacher])
    kinds = {c.noise for c in configs}
    plan = plan_epoch(7, 0, n=data.X_train.shape[0], batch_size=64, device=torch.device("cpu"),
                      pad=4, flip=True, augment=True, num_classes=10, kinds=kinds)
    batches = [plan.batch(s).map(lambda t: t.unsqueeze(0)) for s in range(plan.steps)]
    tr.model.train()
    for b in batches[:2]:
        tr.step(b)
    return min(_time(lambda: [tr.step(b) for b in batches[2:2 + steps]]) for _ in range(2))


def eager_one(data, teacher, steps: int, target: str | None = None) -> float:
    """One run's ``steps`` plain eager SGD steps (default memory format): a teacher's
    cross-entropy, or a student's squared error on its teacher's logits."""
    g = torch.Generator().manual_seed(1)
    model = cifar_resnet(8, 10, seed=0).train()
    opt = PAPER.optimizer(model.parameters())
    X, y = data.X_train, data.y_train
    idx = [torch.randperm(X.shape[0], generator=g)[:64] for _ in range(steps + 2)]
    draws = [augment_draws(64, g, pad=4, flip=True) for _ in idx]

    def step(i):
        x = apply_augment(X[idx[i]], *draws[i], pad=4)
        out = model(x)
        if teacher is None:
            loss = F.cross_entropy(out, y[idx[i]])
        else:
            with torch.no_grad():
                t = teacher(x)
            loss = F.mse_loss(out, t)
        opt.zero_grad()
        loss.backward()
        opt.step()
    step(0), step(1)
    return min(_time(lambda: [step(i) for i in range(2, 2 + steps)]) for _ in range(2))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=12, help="timed SGD steps per arm")
    p.add_argument("--quick", action="store_true", help="4 steps (a smoke test)")
    args = p.parse_args(argv)
    steps = 4 if args.quick else args.steps
    torch.manual_seed(0)
    data = split(64 * (steps + 2))
    sgemm = sgemm_gflops()
    macs = macs_per_image(cifar_resnet(8, 10, seed=0).eval())
    step_flops = 3 * 2 * macs                 # forward and backward of one training image
    teacher_cfg = teacher_config()
    images = steps * 64
    ours_t = ours([teacher_cfg], data, None, steps)
    base_t = eager_one(data, None, steps)
    row = {"name": "cpu_cifar10_teachers", "ours_s": ours_t, "baseline_s": base_t,
           "ratio": base_t / ours_t, "images_per_s": images / ours_t,
           "gflops": images * step_flops / ours_t / 1e9, "sgemm_gflops": sgemm,
           "threads": torch.get_num_threads()}
    row["of_sgemm"] = row["gflops"] / sgemm
    print(json.dumps(row), flush=True)
    teacher = cifar_resnet(8, 10, seed=0).eval().requires_grad_(False)
    students = [student_of(teacher_cfg, kind, level) for kind, level in STUDENTS]
    ours_s = ours(students, data, teacher, steps)
    base_s = sum(eager_one(data, teacher, steps, kind) for kind, _ in STUDENTS)
    flops = images * (len(STUDENTS) * step_flops + 2 * macs)      # + one teacher forward
    row = {"name": "cpu_cifar10_students", "ours_s": ours_s, "baseline_s": base_s,
           "ratio": base_s / ours_s, "students": len(STUDENTS),
           "images_per_s": images * len(STUDENTS) / ours_s, "gflops": flops / ours_s / 1e9,
           "sgemm_gflops": sgemm, "threads": torch.get_num_threads()}
    row["of_sgemm"] = row["gflops"] / sgemm
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
