"""Section 5's training on this CPU at each precision (issue 69, item 1): SGD steps of a teacher
and of a lockstep group of its students (12: the ``cpu-cifar10`` grid's, the continued teacher
among them) at ResNet-8, -20 and -56, through the library's own trainer
(:class:`dsmlib.models.sec5_distillation.trainer.Trainer`, the compiled form
:class:`dsmlib.models.sec5_distillation.graph.ReusableTrainer`), on CIFAR-shaped batches of 64
with crops and flips: fp32 eager, bf16 autocast eager, and ``torch.compile`` (inductor) in both,
all in one run, interleaved round by round, with a 2048x2048 matrix product in fp32 and bf16
timed in the same rounds (each precision's peak).

One JSON line per cell, ``{"name", "depth", "role", "precision", "step", "images_per_s",
"ratio", "ours_s", "baseline_s", "cpu", "amx", ...}``: ``ours_s`` the cell's best seconds per
step over the rounds, ``baseline_s`` fp32 eager's at its depth and role, ``ratio`` their ratio
(the speed-up over fp32 eager); ``images_per_s`` (student-images for the students),
``gflops`` (multiply-adds of the convolutions and the linear layer, times 2, times 3 for a
training step; the students' teacher forward once a batch) and ``of_peak``, the fraction of
that precision's matmul GFLOP/s; ``cpu`` the CPU's name, ``amx`` whether it has AMX
(``amx_bf16`` and ``amx_tile`` among /proc/cpuinfo's flags), ``avx512_bf16``, and
``capability`` (``torch.backends.cpu.get_cpu_capability()``). A cell that fails (a compile
error, or a compile past ``--compile-timeout``) is a row with ``error`` and no times; one left
out by ``--compile-roles`` or ``--compile-depths`` a row with ``skipped``. Then one row
``cpu_precision_matmul`` and, where fp32 was measured at 8, 20 and 56 with 12 students, the
reach table's rows (:func:`dsmlib.chapters.sec5_distillation.cpu_budget.reach_table`, at the
fit regime's committed pilot's measurement costs, moved to each depth, and the fit rule's
epochs): ``reach_resnet<d>_<precision>``.

On quiet cores (nothing else running; all cores; ``make bench-cpu-precision`` runs it with the
parity and measurement-share scripts):

    .venv/bin/python benchmarks/cpu_precision.py --out benchmarks/cpu_runs/<date>_cpu_precision.jsonl

Expected time on the 2-core AMD EPYC (fp32 teacher steps at 449, 193 and 79 images/s, a
12-student step about 12 teachers'): one step of every eager cell of one precision about 17 s,
times 3 rounds of 2 steps and a warm-up step: about 2 minutes a precision; compiling the
teachers (fp32 and bf16 at each depth, in this process) about 1 to 2.5 minutes a cell, at most
``--compile-timeout`` (150 s): 10-15 minutes in all, 20 at the very most.
Smoke test: ``--depths 8 --students 2 --steps 1 --rounds 1 --compile-backend eager``.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

# inductor compiles in this process: a compile cut short by --compile-timeout leaves no worker
# compiling beside the timed steps
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_cpu_cifar10 import STUDENTS, macs_per_image, split  # noqa: E402
from cpu_cifar10_pilot import cpu_name  # noqa: E402
from rows import write_rows  # noqa: E402

from dsmlib.chapters.sec5_distillation.cpu_budget import (FIT_PILOT, PILOT_DEPTH,  # noqa: E402
                                                          REACH_DEPTHS, bench_rates,
                                                          fit_rule_epochs, pilot_rates,
                                                          reach_table)
from dsmlib.models.networks import cifar_resnet  # noqa: E402
from dsmlib.models.sec5_distillation.device import device_policy  # noqa: E402
from dsmlib.models.sec5_distillation.graph import ReusableTrainer  # noqa: E402
from dsmlib.models.sec5_distillation.group import Group  # noqa: E402
from dsmlib.models.sec5_distillation.nets import build_model  # noqa: E402
from dsmlib.models.sec5_distillation.plan import plan_group  # noqa: E402
from dsmlib.models.sec5_distillation.recipe import paper_values  # noqa: E402
from dsmlib.models.sec5_distillation.run_config import RunConfig, student_of  # noqa: E402
from dsmlib.models.sec5_distillation.trainer import Trainer  # noqa: E402

BATCH = 64
PRECISIONS = ("fp32", "bf16")
STEPS = ("eager", "compiled")
ROLES = ("teacher", "students")
MATMUL = 2048


def cpu_flags() -> set[str]:
    """The CPU's flags (/proc/cpuinfo; empty where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def machine() -> dict[str, Any]:
    """What every row says of the machine."""
    flags = cpu_flags()
    return {"cpu": cpu_name(), "amx": {"amx_bf16", "amx_tile"} <= flags,
            "avx512_bf16": "avx512_bf16" in flags,
            "capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(), "torch": torch.__version__,
            "date": time.strftime("%Y-%m-%d")}


def _dtype(precision: str) -> torch.dtype:
    return torch.bfloat16 if precision == "bf16" else torch.float32


def matmul_seconds(precision: str, n: int = MATMUL) -> Callable[[], float]:
    """A timer of one ``n x n`` matrix product in ``precision``'s dtype."""
    a = torch.randn(n, n).to(_dtype(precision))
    b = torch.randn(n, n).to(_dtype(precision))
    a @ b

    def once() -> float:
        t0 = time.perf_counter()
        a @ b
        return time.perf_counter() - t0
    return once


@dataclass
class Cell:
    """One depth, role, precision and step form: its trainer, batches and timings."""
    depth: int
    role: str
    precision: str
    step: str
    images: int = 0              # (student-)images per step
    flops: float = 0.0           # per step
    trainer: Trainer | None = None
    batches: list = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    compile_s: float | None = None
    error: str | None = None
    skipped: str | None = None

    @property
    def key(self) -> tuple[int, str]:
        return self.depth, self.role

    def name(self) -> str:
        return f"cpu_precision_resnet{self.depth}_{self.role}_{self.precision}_{self.step}"


def run_configs(depth: int, role: str, precision: str, students: int,
                images: int) -> list[RunConfig]:
    """A teacher of ``depth`` (the paper's recipe, CIFAR-10's shape), or its first ``students``
    students of the ``cpu-cifar10`` grid's kinds."""
    teacher = RunConfig(**{**paper_values(), "epochs": 30, "precision": precision},
                        dataset="cifar10", depth=depth, train_limit=images, n_gradnorm=8)
    if role == "teacher":
        return [teacher]
    return [student_of(teacher, kind, level) for kind, level in STUDENTS[:students]]


def build(cell: Cell, args: argparse.Namespace, data: Any) -> None:
    """The cell's trainer at its starting point, its batches, images and flops per step."""
    configs = run_configs(cell.depth, cell.role, cell.precision, args.students,
                          data.X_train.shape[0])
    policy = device_policy(cell.precision, torch.device("cpu"), cell.step)
    if cell.step == "compiled":
        policy = dataclasses.replace(policy, compile_backend=args.compile_backend)
    teachers = []
    if cell.role == "students":
        teachers = [build_model(configs[0].teacher, data, 1, policy).eval().requires_grad_(False)]
    group = Group.of(configs, data, policy, teachers)
    cell.trainer = (ReusableTrainer if policy.reusable else Trainer)(group, teachers)
    plan = plan_group(group.streams, 0, group.config, group.lanes.first, group.kinds,
                      policy.dtype)
    cell.batches = [plan.batch(s) for s in range(plan.steps)]
    cell.trainer.start_epoch(group.config, 0)
    macs = macs_per_image(cifar_resnet(cell.depth, 10, seed=0).eval())
    k = len(configs)
    cell.images = BATCH * k
    cell.flops = BATCH * (k * 3 * 2 * macs + (2 * macs if teachers else 0))


class CompileTimeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise CompileTimeout


def prepare(cell: Cell, args: argparse.Namespace, data: Any) -> None:
    """Build the cell and take one step (a compiled cell's first compiles, within
    ``--compile-timeout``); a compiled cell's failure, at building or compiling, is its
    ``error`` (an eager cell's is the bench's)."""
    if cell.step != "compiled":
        build(cell, args, data)
        cell.trainer.step(cell.batches[0])
        return
    t0 = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, args.compile_timeout)
        build(cell, args, data)
        cell.trainer.step(cell.batches[0])
    except CompileTimeout:
        cell.error = f"compile past {args.compile_timeout:g} s"
    except Exception as e:   # noqa: BLE001 -- a compile's failure is a result here
        cell.error = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:300]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    cell.compile_s = time.perf_counter() - t0
    if cell.error is not None:
        cell.trainer, cell.batches = None, []


def time_steps(cell: Cell, steps: int) -> None:
    """``steps`` SGD steps of the cell (its batches in turn): seconds per step."""
    t0 = time.perf_counter()
    for s in range(steps):
        cell.trainer.step(cell.batches[(1 + s) % len(cell.batches)])
    cell.times.append((time.perf_counter() - t0) / steps)


def cells_of(args: argparse.Namespace) -> list[Cell]:
    """Every cell, depth by depth, role by role (the order of every round)."""
    out = []
    for depth in args.depths:
        for role in ROLES:
            for step in STEPS:
                for precision in PRECISIONS:
                    cell = Cell(depth, role, precision, step)
                    if step == "compiled" and (role not in args.compile_roles
                                               or depth not in args.compile_depths):
                        cell.skipped = ("left out by --compile-roles / --compile-depths: a "
                                        "compile of a 12-member group unrolls 12 networks")
                    out.append(cell)
    return out


def cell_row(cell: Cell, base: Cell | None, peak: dict[str, float],
             info: dict[str, Any]) -> dict[str, Any]:
    """The cell's JSON row (see the module's docstring)."""
    row: dict[str, Any] = {"name": cell.name(), "depth": cell.depth, "role": cell.role,
                           "precision": cell.precision, "step": cell.step,
                           "members": cell.images // BATCH if cell.images else None,
                           "batch": BATCH, "compile_s": cell.compile_s}
    best = min(cell.times) if cell.times else None
    base_s = min(base.times) if base is not None and base.times else None
    row.update(ours_s=best, baseline_s=base_s,
               ratio=None if best is None or base_s is None else base_s / best,
               images_per_s=None if best is None else cell.images / best,
               gflops=None if best is None else cell.flops / best / 1e9,
               matmul_gflops=peak[cell.precision])
    row["of_peak"] = None if best is None else row["gflops"] / peak[cell.precision]
    row["seconds_per_step"] = cell.times
    if cell.error is not None:
        row["error"] = cell.error
    if cell.skipped is not None:
        row["skipped"] = cell.skipped
    return {**row, **info}


def reach_rows(rows: list[dict], students: int) -> list[dict]:
    """The reach table at this run's eager rates (12 students, fp32 at 8, 20 and 56), with the
    fit regime's pilot's measurement costs and set-up (its grid's, on this machine; crops
    change the steps alone, which are this run's), or nothing."""
    measured = bench_rates(rows)
    fp32 = {r.depth for r in measured if r.precision == "fp32"}
    pilot = pilot_rates(ROOT, FIT_PILOT)
    if students != pilot.students or not {PILOT_DEPTH, *REACH_DEPTHS} <= fp32:
        return []
    return reach_table(pilot, measured, epochs=fit_rule_epochs(ROOT))


def measure(args: argparse.Namespace) -> list[dict]:
    """Build every cell, warm it up, time the rounds; the rows."""
    torch.manual_seed(0)
    data = split(BATCH * (args.steps + 1))
    cells = cells_of(args)
    matmuls = {p: matmul_seconds(p) for p in PRECISIONS}
    best_mm = {p: float("inf") for p in PRECISIONS}
    for cell in cells:
        if cell.skipped is None:
            prepare(cell, args, data)
    for _ in range(args.rounds):
        for p in PRECISIONS:
            best_mm[p] = min(best_mm[p], matmuls[p]())
        for cell in cells:
            if cell.trainer is not None:
                time_steps(cell, args.steps)
    peak = {p: 2 * MATMUL ** 3 / best_mm[p] / 1e9 for p in PRECISIONS}
    info = machine()
    base = {c.key: c for c in cells if (c.precision, c.step) == ("fp32", "eager")}
    rows = [cell_row(c, base.get(c.key), peak, info) for c in cells]
    rows.append({"name": "cpu_precision_matmul", "n": MATMUL, "fp32_gflops": peak["fp32"],
                 "bf16_gflops": peak["bf16"], "ours_s": best_mm["bf16"],
                 "baseline_s": best_mm["fp32"], "ratio": best_mm["fp32"] / best_mm["bf16"],
                 **info})
    return rows + [{**r, **info} for r in reach_rows(rows, args.students)]


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v.strip())


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depths", type=_ints, default=(8, 20, 56))
    ap.add_argument("--students", type=int, default=12, help="members of the students' group")
    ap.add_argument("--steps", type=int, default=2, help="timed steps per cell and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compile-roles", type=lambda t: tuple(t.split(",")) if t else (),
                    default=("teacher",), help="roles compiled (comma-separated; '' for none)")
    ap.add_argument("--compile-depths", type=_ints, default=(8, 20, 56))
    ap.add_argument("--compile-backend", default="inductor",
                    help="torch.compile's backend ('eager' traces without compiling: tests)")
    ap.add_argument("--compile-timeout", type=float, default=150.0,
                    help="seconds a cell may take to compile")
    ap.add_argument("--out", default=None, help="append the JSON lines to this file "
                    "(benchmarks/cpu_runs/<date>_cpu_precision.jsonl)")
    args = ap.parse_args(argv)
    if not 1 <= args.students <= len(STUDENTS):
        ap.error(f"--students must be 1 to {len(STUDENTS)}")
    return args


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse(argv)
    rows = measure(args)
    write_rows(rows, args.out)
    return rows


if __name__ == "__main__":
    main()
