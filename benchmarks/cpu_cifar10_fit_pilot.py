"""The pilot that fixes the ``cpu-cifar10-fit`` profile's epochs (issue 67), on the machine that
trains it: first the rates of one seed of its grid (a teacher and its students in lockstep, two
epochs at its 1,200 training images, as ``benchmarks/cpu_cifar10_pilot.py`` measures them), then
the fit rule (:func:`dsmlib.chapters.sec5_distillation.cpu_budget.fit_epochs`): from the largest
of {200, 100, 60, 40} down, an epoch count whose 10-seed grid trains in 4 hours at those rates
gets a pilot teacher (seed 0) trained that long through the library's ``execute_run``; the first
that fits at least 99 % of its training images is the profile's. One JSON line per rates, per
pilot teacher and for the rule, appended to ``--out``.

    .venv/bin/python benchmarks/cpu_cifar10_fit_pilot.py --out benchmarks/cpu_runs/2026-12-07_cpu_cifar10_fit_pilot.jsonl
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu_cifar10_pilot import cpu_name, measure_rates  # noqa: E402
from rows import write_rows  # noqa: E402

from dsmlib.book.profiles import CPU_CIFAR10_FIT, load_specs, resolve  # noqa: E402
from dsmlib.chapters.sec5_distillation.cpu_budget import (FIT_BUDGET_S, FIT_EPOCHS,  # noqa: E402
                                                          FIT_IMAGES, SEEDS, as_row, fit_epochs,
                                                          grid_seconds)
from dsmlib.chapters.sec5_distillation.gains import FIT_ACCURACY  # noqa: E402
from dsmlib.models.sec5_distillation.runs import execute_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KEEP = ("epoch", "lr", "train_objective", "train_acc", "val_acc", "test_acc")


def pilot_teacher(epochs: int, runs_dir: Path, rows: list[dict], out: str | None) -> bool:
    """Train seed 0's teacher of ``cpu-cifar10-fit`` for ``epochs`` epochs; record its row."""
    spec = load_specs(ROOT / "notebooks")["sec5_distillation"]
    grid = resolve(spec, CPU_CIFAR10_FIT, {"teacher_epochs": epochs,
                                           "runs_dir": str(runs_dir)})
    teacher = next(c for c in grid.runs() if c.role == "teacher" and c.seed == 0)
    t0 = time.perf_counter()
    record = execute_run(teacher, runs_dir, data_dir=ROOT / grid.data_dir, device="cpu",
                         progress=True)
    last = record.history[-1]
    at_fit = next((r["epoch"] for r in record.history[1:]
                   if (r.get("train_acc") or 0) >= FIT_ACCURACY), None)
    row = {"name": "fit", "profile": CPU_CIFAR10_FIT, "epochs": epochs, "seed": 0,
           "train_acc": last["train_acc"], "val_acc": last["val_acc"],
           "test_acc": last["test_acc"], "fits": last["train_acc"] >= FIT_ACCURACY,
           "fit_accuracy": FIT_ACCURACY, "first_epoch_at_fit_on_subset": at_fit,
           "wall_s": round(time.perf_counter() - t0, 1),
           "machine": f"{cpu_name()}, {torch.get_num_threads()} torch threads",
           "date": time.strftime("%Y-%m-%d"),
           "history": [{k: r.get(k) for k in KEEP} for r in record.history]}
    rows.append(row)
    write_rows([row], out)
    return bool(row["fits"])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="append the JSON lines to this file")
    ap.add_argument("--runs-dir", default="results/pilot_runs/cpu-cifar10-fit")
    args = ap.parse_args(argv)
    rates, extra = measure_rates(CPU_CIFAR10_FIT, FIT_IMAGES)
    rows: list[dict] = [{**as_row(rates), **extra}]
    write_rows(rows, args.out)
    epochs = fit_epochs(rates, lambda e: pilot_teacher(e, ROOT / args.runs_dir, rows, args.out))
    rule = {"name": "fit_rule", "profile": CPU_CIFAR10_FIT, "epochs": epochs,
            "images": FIT_IMAGES, "seeds": SEEDS, "budget_s": FIT_BUDGET_S,
            "grid_s": {str(e): grid_seconds(rates, FIT_IMAGES, epochs=e) for e in FIT_EPOCHS},
            "piloted": [r["epochs"] for r in rows if r["name"] == "fit"]}
    write_rows([rule], args.out)
    return rule


if __name__ == "__main__":
    main()
