"""What bounds Section 5's training step on a GPU, read on the CPU (issue 52): the operations
one SGD step dispatches -- on CUDA each is at least one kernel launch, so their count is the
launch overhead a step pays outside a captured graph -- for a teacher alone, the students of one
teacher in lockstep, and teachers (or several teachers' students) grouped across seeds, all
through the library's own ``train_group``.

The count does not depend on the batch or the image size, so tiny ones are used: the per-step
figure is the difference between runs of 1 and 3 passes, divided by the extra steps (evaluation
and set-up cancel). Prints one JSON line per group; run with ``--depth 56`` for ResNet-56.

    .venv/bin/python benchmarks/launches.py --depth 56
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_distill import synthetic_split  # noqa: E402
from dsmlib.models.sec5_distillation.loop import train_group  # noqa: E402
from dsmlib.models.sec5_distillation.nets import build_model  # noqa: E402
from dsmlib.models.sec5_distillation.recipe import paper_values  # noqa: E402
from dsmlib.models.sec5_distillation.run_config import RunConfig, student_of  # noqa: E402

STUDENTS = [("none", 0.0), ("gaussian", 1.0), ("gaussian", 4.0), ("gaussian", 16.0),
            ("symmetric", 0.1), ("symmetric", 0.3), ("symmetric", 0.5),
            ("symmetric_mean", 0.1), ("symmetric_mean", 0.3), ("symmetric_mean", 0.5),
            ("hinton", 4.0)]


def leaf_ops(fn) -> int:
    """The aten operations ``fn()`` dispatches that call no other aten operation (on CUDA, the
    ones that launch kernels)."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    events = prof.events()
    return sum(1 for e in events if e.name.startswith("aten::")
               and not any(c.name.startswith("aten::") for c in e.cpu_children))


def per_step(configs, data, teacher=None, *, steps_per_pass: int) -> float:
    """Leaf operations per SGD step of ``train_group(configs)``: (3 passes − 1 pass) / 2 passes."""
    counts = []
    for passes in (1, 3):
        group = [replace(c, passes=passes, teacher=None if c.teacher is None
                         else replace(c.teacher, passes=passes)) for c in configs]
        counts.append(leaf_ops(lambda: train_group(group, data, teacher=teacher)))
    return (counts[1] - counts[0]) / (2 * steps_per_pass)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--depth", type=int, default=56)
    p.add_argument("--lanes", type=int, default=4, help="seeds grouped in the across-seeds rows")
    args = p.parse_args(argv)
    torch.manual_seed(0)
    n, batch = 16, 8
    base = RunConfig(**{**paper_values(), "epochs": 1, "batch_size": batch, "precision": "fp32"},
                     dataset="cifar10", depth=args.depth, n_gradnorm=4, n_train_eval=4,
                     image_size=8)
    data = synthetic_split(n, torch.device("cpu"), size=8)
    steps = n // batch
    teachers = [replace(base, seed=s) for s in range(args.lanes)]
    model = build_model(base, data).eval()
    students = [student_of(base, k, lv) for k, lv in STUDENTS]
    second = [student_of(teachers[1], k, lv) for k, lv in STUDENTS]
    rows = [("teacher alone", 1, per_step([base], data, steps_per_pass=steps)),
            (f"{args.lanes} teachers across seeds", args.lanes,
             per_step(teachers, [data] * args.lanes, steps_per_pass=steps)),
            (f"{len(students)} students of one teacher (lockstep)", len(students),
             per_step(students, data, model, steps_per_pass=steps)),
            (f"{2 * len(students)} students of 2 teachers across seeds", 2 * len(students),
             per_step(students + second, [data, data], [model, build_model(teachers[1], data)
                                                       .eval()], steps_per_pass=steps))]
    for name, members, ops in rows:
        print(json.dumps({"name": name, "depth": args.depth, "members": members,
                          "ops_per_step": round(ops, 1),
                          "ops_per_member_step": round(ops / members, 1)}), flush=True)


if __name__ == "__main__":
    main()
