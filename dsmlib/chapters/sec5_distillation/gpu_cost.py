"""What Section 5 costs at the paper's scale (book layer), on the site: the GPU-hours per seed
of the paper's Figure 1 grid that ``benchmarks/bench_distill.py --gpu`` measured, read from the
committed raw outputs of GPU sessions (``benchmarks/gpu_runs/<date>_<card>/<call>/bench.jsonl``)."""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Sequence

from .grid import GridParameters, grid_levels

__all__ = ["GPU_RUNS", "cost_rows", "PROFILE_BUDGET_S", "SETUP_S",
           "SIZE_STEP", "SIZE_RANGE", "measured_rates", "largest_size", "hours_per_seed",
           "paper_cifar10_cost"]

GPU_RUNS = Path("benchmarks") / "gpu_runs"
ROW = "paper_grid_gpu_hours_"
#: A profile of Section 5 on one GPU: its budget (issue 51: at most 420 s on the card), and
#: what the rule below keeps of it for everything but the SGD steps (loading the data,
#: capturing the steps, the evaluations after each epoch and of all 10,000 test images at the
#: end, G): a budget fixed before any CIFAR-10 run, not a measurement.
PROFILE_BUDGET_S = 420.0
SETUP_S = 60.0
#: The training sizes the rule chooses among: multiples of 100 (whole images per class, and a
#: validation fifth that is too), between about a thousand and five thousand images.
SIZE_STEP = 100
SIZE_RANGE = (1000, 5000)


def measured_rates(root: Path, card: str = "2026-11-28_h200") -> dict[str, Any]:
    """The throughputs a GPU session measured (``benchmarks/gpu_runs/<card>/bench.jsonl``): a
    ResNet-56 teacher's images/s and 11 lockstep students' student-images/s, both on the graph
    step, and the card."""
    rows = {}
    for line in (root / GPU_RUNS / card / "bench.jsonl").read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        rows[r.get("name")] = r
    teacher, students = rows["gpu_teacher_graph"], rows["gpu_lockstep_k11_graph"]
    return {"teacher_images_per_s": float(teacher["images_per_s"]),
            "student_images_per_s": float(students["student_images_per_s"]),
            "students": int(students["students"]), "device": str(teacher["device"]),
            "source": f"{GPU_RUNS.as_posix()}/{card}/bench.jsonl"}


def largest_size(teacher_images_per_s: float, student_images_per_s: float, *, seeds: int,
                 epochs: int, students: int, budget_s: float = PROFILE_BUDGET_S,
                 setup_s: float = SETUP_S, step: int = SIZE_STEP,
                 sizes: tuple[int, int] = SIZE_RANGE) -> int:
    """The rule that fixes a data-limited setting's training size before its runs (issue 51):
    the largest multiple of ``step`` in ``sizes`` at which ``seeds`` seeds -- each a teacher
    and its ``students`` for ``epochs`` epochs of one pass -- train in ``budget_s - setup_s``
    seconds at the measured rates; ``sizes[0]`` if none fits (the budget then says so)."""
    per_image = epochs * (1.0 / teacher_images_per_s + students / student_images_per_s)
    n = (budget_s - setup_s) / (seeds * per_image)
    return int(min(max(sizes[0], step * (n // step)), sizes[1]))


def cost_rows(root: Path) -> list[dict[str, Any]]:
    """Every ``paper_grid_gpu_hours_<step>`` row committed under :data:`GPU_RUNS`, with the
    call it came from (oldest first); a line that is not JSON is skipped."""
    rows = []
    for path in sorted((root / GPU_RUNS).glob("*/*/bench.jsonl")):
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if str(r.get("name", "")).startswith(ROW) and "gpu_hours_per_seed" in r:
                rows.append({**r, "call": path.parent.relative_to(root).as_posix(),
                             "date": path.parent.parent.name.split("_")[0]})
    return rows


def hours_per_seed(rates: dict[str, Any], *, images: int, epochs: int, students: int) -> float:
    """GPU-hours of one seed's SGD steps -- a teacher and ``students`` students for ``epochs``
    epochs of ``images`` images -- at ``rates`` (:func:`measured_rates`; the students at the
    rate measured for 11 in lockstep). Evaluation and G are not counted."""
    per_image = 1.0 / rates["teacher_images_per_s"] + students / rates["student_images_per_s"]
    return epochs * images * per_image / 3600.0


def paper_cifar10_cost(root: Path, paper: GridParameters) -> str:
    """One sentence: what the ``paper`` profile's CIFAR-10 grid costs per seed at the H200's
    measured rates (``paper``: the chapter's parameters under that profile)."""
    from ...models.sec5_distillation.datasets import train_images   # torch, on first use
    full = next(s for s in paper.settings if s.dataset == "cifar10")
    rates = measured_rates(root)
    k, n = len(grid_levels(paper, full)), train_images("cifar10")
    h = hours_per_seed(rates, images=n, epochs=paper.teacher_epochs, students=k)
    return (f"At the rates measured on one {rates['device']} ({rates['source']}: a ResNet-56 "
            f"teacher {rates['teacher_images_per_s']:,.0f} images/s, {rates['students']} "
            f"students in lockstep {rates['student_images_per_s']:,.0f} student-images/s), the "
            f"`paper` profile's CIFAR-10 part costs about {h:.2f} GPU-hours per seed of SGD "
            f"steps: a teacher and its {k} students for {paper.teacher_epochs} epochs of {n:,} "
            f"images, the students at the rate of {rates['students']} (evaluation and G not "
            f"counted).")
