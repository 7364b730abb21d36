"""The pilot that sizes the ``cpu-cifar10`` profile (issue 61): one seed of its grid, a teacher
and its students in lockstep, trained for two epochs at the smallest size the rule allows, on
this machine, through the library's own ``execute_run`` and ``execute_group`` (the way the grid
trains: one process, all cores, one role at a time). The runs' rows record the seconds of each
epoch's SGD steps and of each measurement, from which it writes the rates
(:class:`dsmlib.chapters.sec5_distillation.cpu_budget.PilotRates`) and the size the rule picks at them, one JSON line
each, appended to ``--out``.

    .venv/bin/python benchmarks/cpu_cifar10_pilot.py --out benchmarks/cpu_runs/2026-12-02_cpu_cifar10_pilot.jsonl
"""
from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rows import write_rows  # noqa: E402

from dsmlib.chapters.sec5_distillation.cpu_budget import (BUDGET_S, EPOCHS, SEEDS, SIZE_RANGE, PilotRates,  # noqa: E402
                                    as_row, grid_seconds, largest_size, validation_images)
from dsmlib.book.profiles import CPU_CIFAR10, load_specs, resolve  # noqa: E402
from dsmlib.models.sec5_distillation.runs import execute_group, execute_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measure_rates(profile: str = CPU_CIFAR10, images: int = SIZE_RANGE[0]
                  ) -> tuple[PilotRates, dict]:
    """One seed of ``profile``'s grid at ``images`` training images, two epochs, trained here:
    the rates, and what else the row records (images/s, wall time, date, torch)."""
    spec = load_specs(ROOT / "notebooks")["sec5_distillation"]
    n = images
    with tempfile.TemporaryDirectory() as runs_dir:
        grid = resolve(spec, profile, {"teacher_epochs": 2, "headroom_size": n,
                                       "headroom_val": validation_images(n),
                                       "headroom_seeds": [0, 1], "runs_dir": runs_dir})
        runs = [c for c in grid.runs() if c.seed == 0]
        teacher, students = runs[0], runs[1:]
        data = dict(data_dir=ROOT / grid.data_dir, device="cpu")
        t0 = time.perf_counter()
        t_hist = execute_run(teacher, runs_dir, **data).history
        t1 = time.perf_counter()
        s_hist = execute_group(students, runs_dir, **data)[0].history
        t2 = time.perf_counter()

    def parts(h: list[dict]) -> tuple[float, float, float]:
        step = sum(r["train_s"] for r in h[1:]) / (len(h) - 1) / h[0]["n_train"]
        measure = h[1]["eval_s"] + h[1]["gradnorm_s"]          # after an epoch, not the last
        whole = (h[0]["eval_s"] + h[0]["gradnorm_s"] + h[2]["eval_s"] + h[2]["gradnorm_s"]) / 2
        return step, measure, whole

    (ts, tm, tw), (ss, sm, sw) = parts(t_hist), parts(s_hist)
    measured = (t1 - t0) + (t2 - t1)
    accounted = 2 * n * (ts + ss) + tm + sm + 2 * (tw + sw)
    rates = PilotRates(teacher_step_s=ts, students_step_s=ss, teacher_measure_s=tm,
                       students_measure_s=sm, teacher_whole_s=tw, students_whole_s=sw,
                       setup_s=max(0.0, measured - accounted), images=n,
                       students=len(students), machine=f"{cpu_name()}, {torch.get_num_threads()} "
                                                       "torch threads")
    extra = {"profile": profile, "teacher_images_per_s": 1 / ts,
             "students_images_per_s": len(students) / ss, "wall_s": measured,
             "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__}
    return rates, extra


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="append the JSON lines to this file")
    ap.add_argument("--images", type=int, default=SIZE_RANGE[0])
    args = ap.parse_args(argv)
    rates, extra = measure_rates(CPU_CIFAR10, args.images)
    size = largest_size(rates)
    rows = [{**as_row(rates), **{k: v for k, v in extra.items() if k != "profile"}},
            {"name": "rule", "images": size, "validation": validation_images(size),
             "epochs": EPOCHS, "seeds": SEEDS, "budget_s": BUDGET_S,
             "grid_s": grid_seconds(rates, size),
             "next_size_grid_s": grid_seconds(rates, size + 100)}]
    write_rows(rows, args.out)
    return rows[1]


if __name__ == "__main__":
    main()
