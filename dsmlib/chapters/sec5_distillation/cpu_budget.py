"""What Section 5 on CIFAR-10 can afford on two CPU cores (book layer): the rule that fixed the
``cpu-cifar10`` profile's training size before any of its runs (issue 61), at the rates a pilot
measured on the machine that trains it (``benchmarks/cpu_runs/<date>_cpu_cifar10_pilot.jsonl``,
written by ``benchmarks/cpu_cifar10_pilot.py``).

**The rule**, stated before any run: the grid -- :data:`SEEDS` seeds, each a ResNet-8 teacher
and its students (three σ², three p, three controls, the noiseless and Hinton students and the
continued teacher) for :data:`EPOCHS` epochs of one pass -- must train in :data:`BUDGET_S` on
one 2-core machine; the training size is the largest multiple of :data:`SIZE_STEP` in
:data:`SIZE_RANGE` that fits (:func:`largest_size`), and validation the paper's fifth of the
pool (:func:`validation_images`). A seed's time (:func:`seed_seconds`) is what the pilot
measured per part: each role's SGD steps per training image, its measurement after an epoch
(validation images, a training subsample, G) and its whole measurement before training and
after the last epoch (every split, the 10,000 test images), plus set-up.

**What the CPU can reach** (issue 69): the same rule asked of deeper networks. For ResNet-20
and ResNet-56 (:data:`REACH_DEPTHS`), with crops and flips, the largest CIFAR-10 subset whose
10-seed grid of the fit regime -- a teacher and its 12 students in lockstep, the continued
teacher among them, for the fit rule's epochs (:func:`fit_rule_epochs`) -- trains in
:data:`REACH_BUDGET_S` (:func:`reach_size`, :func:`reach_table`), at the images per second that
``benchmarks/cpu_precision.py`` measured per depth and precision (:class:`DepthRates`,
:func:`bench_rates`), the pilot's measurement costs moved to that depth
(:func:`depth_pilot_rates`). No training beyond the pilots.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

__all__ = ["BUDGET_S", "SEEDS", "EPOCHS", "SIZE_STEP", "SIZE_RANGE", "PILOT", "PilotRates",
           "pilot_rates", "seed_seconds", "grid_seconds", "largest_size", "validation_images",
           "as_row", "FIT_EPOCHS", "FIT_BUDGET_S", "FIT_IMAGES", "FIT_PILOT", "fit_epochs",
           "PILOT_DEPTH", "REACH_BUDGET_S", "REACH_DEPTHS", "REACH_SIZES", "DepthRates",
           "bench_rates", "depth_pilot_rates", "fit_rule_epochs", "reach_size", "reach_row",
           "reach_table"]

#: One 2-core machine for three hours: the whole grid, teachers and students.
BUDGET_S = 3 * 3600.0
#: Seeds are the unit of every interval; ten resolve a point of accuracy at 10,000 test images.
SEEDS = 10
#: Epochs of a teacher (and of each of its students: the paper's "same setting"), fixed in
#: code before the pilot: the paper's schedule (÷10 at half and three quarters) in 30 epochs.
EPOCHS = 30
#: The sizes the rule chooses among: multiples of 100 images, a thousand to five thousand.
SIZE_STEP = 100
SIZE_RANGE = (1000, 5000)
#: The pilot's records, committed: what the profile's size was read from.
PILOT = Path("benchmarks") / "cpu_runs" / "2026-12-02_cpu_cifar10_pilot.jsonl"

#: The fit regime's epochs (``cpu-cifar10-fit``, issue 67) are chosen among these, the paper's
#: 200 first, by :func:`fit_epochs`, fixed in code before any of its runs.
FIT_EPOCHS = (200, 100, 60, 40)
#: One 2-core machine for four hours: the fit regime's whole grid, teachers and students.
FIT_BUDGET_S = 4 * 3600.0
#: The fit regime's training images: ``cpu-cifar10``'s (the two references differ only in the
#: regime).
FIT_IMAGES = 1200
#: The fit regime's pilot records: its rates and each pilot teacher's fit.
FIT_PILOT = Path("benchmarks") / "cpu_runs" / "2026-12-07_cpu_cifar10_fit_pilot.jsonl"


@dataclass(frozen=True)
class PilotRates:
    """What the pilot measured of one seed, per role (``teacher``; ``students``: the lockstep
    group of a teacher's students): seconds of SGD steps per training image, of the
    measurement after an epoch between the first and the last, and of a whole measurement
    (before training, after the last epoch); and the set-up of a seed (loading, building)."""
    teacher_step_s: float
    students_step_s: float
    teacher_measure_s: float
    students_measure_s: float
    teacher_whole_s: float
    students_whole_s: float
    setup_s: float
    images: int
    students: int
    machine: str


def pilot_rates(root: Path, path: Path = PILOT) -> PilotRates:
    """The rates of the pilot's ``rates`` row (the last one in the file)."""
    rows = [json.loads(line) for line in (root / path).read_text().splitlines() if line.strip()]
    rates = [r for r in rows if r.get("name") == "rates"]
    if not rates:
        raise ValueError(f"{path} holds no 'rates' row: run benchmarks/cpu_cifar10_pilot.py")
    r = rates[-1]
    return PilotRates(**{k: r[k] for k in PilotRates.__dataclass_fields__})


def seed_seconds(rates: PilotRates, images: int, epochs: int = EPOCHS) -> float:
    """One seed at ``images`` training images for ``epochs`` epochs: SGD steps (per image, as
    measured), measurements after the epochs between the first and the last, two whole
    measurements per role, and set-up. Measurement costs are the pilot's at its size (the
    validation images, a fifth of the pool, grow with the size; the rest does not)."""
    steps = epochs * images * (rates.teacher_step_s + rates.students_step_s)
    grow = max(1.0, images / rates.images)
    measure = (epochs - 1) * (rates.teacher_measure_s + rates.students_measure_s) * grow
    whole = 2 * (rates.teacher_whole_s + rates.students_whole_s)
    return steps + measure + whole + rates.setup_s


def grid_seconds(rates: PilotRates, images: int, *, seeds: int = SEEDS,
                 epochs: int = EPOCHS) -> float:
    return seeds * seed_seconds(rates, images, epochs)


def largest_size(rates: PilotRates, *, seeds: int = SEEDS, epochs: int = EPOCHS,
                 budget_s: float = BUDGET_S, step: int = SIZE_STEP,
                 sizes: tuple[int, int] = SIZE_RANGE) -> int:
    """The rule: the largest multiple of ``step`` in ``sizes`` whose grid
    (:func:`grid_seconds`) fits ``budget_s``; ``sizes[0]`` if none does (the budget then
    says so)."""
    fits = [n for n in range(sizes[0], sizes[1] + 1, step)
            if grid_seconds(rates, n, seeds=seeds, epochs=epochs) <= budget_s]
    return max(fits) if fits else sizes[0]


def validation_images(images: int, classes: int = 10) -> int:
    """The validation images beside ``images`` training ones: the paper's 80/20 split of a
    class-balanced pool, rounded down to whole images per class (at most a fifth of the
    pool)."""
    return classes * (images // (4 * classes))


def as_row(rates: PilotRates) -> dict[str, Any]:
    return {"name": "rates", **asdict(rates)}


def fit_epochs(rates: PilotRates, fits: Callable[[int], bool], *, images: int = FIT_IMAGES,
               seeds: int = SEEDS, budget_s: float = FIT_BUDGET_S,
               choices: tuple[int, ...] = FIT_EPOCHS) -> int | None:
    """The fit rule (issue 67): the largest ``E`` of ``choices`` whose grid of ``seeds`` seeds
    at ``images`` training images trains in ``budget_s`` at ``rates`` (:func:`grid_seconds`)
    *and* at which a pilot teacher trained ``E`` epochs fits its training images
    (``fits(E)``: at least :data:`~dsmlib.chapters.sec5_distillation.gains.FIT_ACCURACY`).
    ``fits`` is asked only of the epochs within the budget, largest first, so that a pilot
    trains no teacher the grid could not afford. None where no ``E`` qualifies."""
    for epochs in sorted(choices, reverse=True):
        if grid_seconds(rates, images, seeds=seeds, epochs=epochs) <= budget_s and fits(epochs):
            return epochs
    return None


#: The network of both pilots (``cpu-cifar10`` and ``cpu-cifar10-fit``): ResNet-8.
PILOT_DEPTH = 8
#: What the CPU can reach (issue 69): one 2-core machine for eight hours.
REACH_BUDGET_S = 8 * 3600.0
#: The depths the reach table asks about.
REACH_DEPTHS = (20, 56)
#: The sizes it chooses among: multiples of :data:`SIZE_STEP` up to CIFAR-10's 50,000 training
#: images less the paper's fifth for validation.
REACH_SIZES = (SIZE_STEP, 40_000)


@dataclass(frozen=True)
class DepthRates:
    """Images per second of SGD steps at one ``depth`` and ``precision``, with crops and flips
    (``benchmarks/cpu_precision.py``, eager steps): a teacher's, and a lockstep group's of the
    pilot's students (student-images, ``students`` per batch image)."""
    depth: int
    precision: str
    teacher_images_per_s: float
    students_images_per_s: float


def bench_rates(rows: Iterable[dict[str, Any]], step: str = "eager") -> list[DepthRates]:
    """The :class:`DepthRates` in a precision bench's rows (the last row of each depth, role and
    precision at ``step``; a depth and precision needs both roles)."""
    got: dict[tuple[int, str], dict[str, float]] = {}
    for r in rows:
        if r.get("step") == step and r.get("images_per_s") is not None and "role" in r:
            got.setdefault((int(r["depth"]), r["precision"]), {})[r["role"]] = r["images_per_s"]
    return [DepthRates(d, p, v["teacher"], v["students"]) for (d, p), v in sorted(got.items())
            if {"teacher", "students"} <= set(v)]


def depth_pilot_rates(pilot: PilotRates, rates: DepthRates, fp32: DepthRates,
                      fp32_pilot: DepthRates) -> PilotRates:
    """The pilot's rates (ResNet-8, :data:`PILOT_DEPTH`) moved to ``rates``' depth and
    precision: SGD steps at its images per second; each role's measurements (after an epoch,
    and whole) the pilot's times the cost of that role's float32 step at this depth against
    the pilot's depth (``fp32`` and ``fp32_pilot``, measured in one run): evaluation is a
    forward pass and ``G`` per-sample backward passes of the same network, so they grow as its
    steps do, and ``G`` stays float32 under bf16, so a bf16 seed measures at the float32 cost
    (an upper bound); set-up as the pilot's."""
    teacher = fp32_pilot.teacher_images_per_s / fp32.teacher_images_per_s
    students = fp32_pilot.students_images_per_s / fp32.students_images_per_s
    return replace(pilot, teacher_step_s=1.0 / rates.teacher_images_per_s,
                   students_step_s=pilot.students / rates.students_images_per_s,
                   teacher_measure_s=pilot.teacher_measure_s * teacher,
                   students_measure_s=pilot.students_measure_s * students,
                   teacher_whole_s=pilot.teacher_whole_s * teacher,
                   students_whole_s=pilot.students_whole_s * students,
                   machine=f"{pilot.machine}; ResNet-{rates.depth} {rates.precision}")


def fit_rule_epochs(root: Path, path: Path = FIT_PILOT) -> int:
    """The fit rule's epochs, as its pilot recorded them (the last ``fit_rule`` row)."""
    rows = [json.loads(line) for line in (root / path).read_text().splitlines() if line.strip()]
    rules = [r for r in rows if r.get("name") == "fit_rule" and r.get("epochs")]
    if not rules:
        raise ValueError(f"{path} holds no 'fit_rule' row: run benchmarks/cpu_cifar10_fit_pilot.py")
    return int(rules[-1]["epochs"])


def reach_size(rates: PilotRates, *, epochs: int, seeds: int = SEEDS,
               budget_s: float = REACH_BUDGET_S, step: int = SIZE_STEP,
               sizes: tuple[int, int] = REACH_SIZES) -> int | None:
    """The size rule (:func:`largest_size`) at ``rates``: the largest multiple of ``step`` in
    ``sizes`` whose grid trains in ``budget_s``; None where not even the smallest does."""
    n = largest_size(rates, seeds=seeds, epochs=epochs, budget_s=budget_s, step=step,
                     sizes=sizes)
    return n if grid_seconds(rates, n, seeds=seeds, epochs=epochs) <= budget_s else None


def reach_row(rates: PilotRates, measured: DepthRates, *, epochs: int, seeds: int = SEEDS,
              budget_s: float = REACH_BUDGET_S, step: int = SIZE_STEP,
              sizes: tuple[int, int] = REACH_SIZES) -> dict[str, Any]:
    """One row of the reach table: the size (:func:`reach_size`), its validation images, the
    grid's predicted seconds there and at the next size, and the rates it was read at."""
    n = reach_size(rates, epochs=epochs, seeds=seeds, budget_s=budget_s, step=step, sizes=sizes)
    grid = (lambda m: grid_seconds(rates, m, seeds=seeds, epochs=epochs))  # noqa: E731
    return {"name": f"reach_resnet{measured.depth}_{measured.precision}",
            "depth": measured.depth, "precision": measured.precision, "images": n,
            "validation": None if n is None else validation_images(n), "epochs": epochs,
            "seeds": seeds, "budget_s": budget_s,
            "grid_s": None if n is None else grid(n), "next_size_grid_s": grid((n or 0) + step),
            "teacher_images_per_s": measured.teacher_images_per_s,
            "students_images_per_s": measured.students_images_per_s}


def reach_table(pilot: PilotRates, measured: Sequence[DepthRates], *, epochs: int,
                depths: Sequence[int] = REACH_DEPTHS, seeds: int = SEEDS,
                budget_s: float = REACH_BUDGET_S) -> list[dict[str, Any]]:
    """For each of ``depths`` and each precision measured there, its :func:`reach_row` at the
    pilot's rates moved to it (:func:`depth_pilot_rates`); the measurements need float32 at
    every depth asked and at :data:`PILOT_DEPTH`."""
    fp32 = {r.depth: r for r in measured if r.precision == "fp32"}
    missing = sorted({PILOT_DEPTH, *depths} - set(fp32))
    if missing:
        raise ValueError(f"the reach table needs float32 rates at depths {missing}")
    return [reach_row(depth_pilot_rates(pilot, r, fp32[r.depth], fp32[PILOT_DEPTH]), r,
                      epochs=epochs, seeds=seeds, budget_s=budget_s)
            for d in depths for r in measured if r.depth == d]
