"""Chapter ``sec5_distillation``: noisy self-distillation (Section 5, Figures 1 and 2), its grid
of runs and the summaries the figures plot; the claims are in :mod:`dsmlib.chapters.sec5_claims`.

A grid is, per data set and seed, one teacher (ResNet, cross-entropy) and its students: the
noiseless one, one per noise kind and level, and per swap probability ``p`` a **control**: a
student trained without noise on the swap's mean target ``E[y~] = M_p y`` (Eq. 24), which shrinks
every logit vector towards its mean by ``kappa = 1 - pL/(L-1)`` (:func:`shrinkage`). A noisy
student is judged against the student trained noiselessly on its noise's mean target: the control
for the swap, the noiseless student for Gaussian noise (``E[y~] = y``), so no extra run is needed
there (:meth:`DistillResults.control`).

Runs are executed and collected elsewhere (:mod:`dsmlib.models.runs`, :mod:`dsmlib.book.grid`);
this module turns collected records into per-cell arrays over seeds (**seeds are the unit**: a
teacher, its students and its validation-based selection belong to one seed). The test set is
fixed, so intervals over seeds describe training randomness on it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Sequence

import numpy as np

from ..foundation.checks import check_choice, check_int, check_positive, check_probability
from ..foundation.claims import CONFIDENCE, verdict
from ..foundation.power import MAX_UNITS, POWER, units_to_decide
from ..models.datasets import DATASETS
from ..models.run_config import RunConfig, student_of
from ..models.runs import RunRecord

__all__ = ["KINDS", "CONTROL", "DistillGrid", "grid_from_parameters", "scope_note", "grid_runs",
           "Cell", "DistillResults", "METRICS", "summarise", "selected_levels",
           "selected_test_acc", "shrinkage", "shrinkage_rows", "accuracy_headroom",
           "seeds_to_decide"]

KINDS = {"gaussian": "σ²", "symmetric": "p"}   # the noise kinds of the paper, and their level
CONTROL = "symmetric_mean"   # the swap's control: no noise, target E[y~] = M_p y (Eq. 24)


@dataclass(frozen=True)
class DistillGrid:
    """The runs of one profile. Students train ``student_epochs`` with the teacher's settings."""
    datasets: tuple[str, ...]
    depth: int
    teacher_epochs: int
    student_epochs: int
    sigma2s: tuple[float, ...]
    ps: tuple[float, ...]
    seeds: tuple[int, ...]
    batch_size: int = 64
    lr: float = 0.1
    augment: bool = True
    image_size: int | None = None
    train_limit: int | None = None
    precision: str = "auto"
    n_gradnorm: int = 256
    gradnorm_probes: int = 2


# The grid's single-valued settings (taken from the parameters by name), and those of them
# that every run of the grid shares with its RunConfig.
_SCALARS = tuple(f.name for f in fields(DistillGrid)
                 if f.name not in ("datasets", "sigma2s", "ps", "seeds"))
_SHARED = tuple(k for k in _SCALARS if k in {f.name for f in fields(RunConfig)})


def _values(name: str, value: Any) -> tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list, got {value!r}")
    return tuple(value)


def grid_from_parameters(p: dict[str, Any]) -> DistillGrid:
    """The grid from the notebook's parameters (the same names), checked: every message
    names the notebook's parameter."""
    seeds = tuple(check_int("seeds", s, minimum=0) for s in _values("seeds", p["seeds"]))
    if len(set(seeds)) < 2:
        raise ValueError(f"seeds must hold at least 2 distinct seeds (seeds are the unit of "
                         f"every interval), got {list(p['seeds'])}")
    datasets = tuple(check_choice("datasets", d, DATASETS)
                     for d in _values("datasets", p["datasets"]))
    if not datasets:
        raise ValueError("datasets must not be empty")
    sigma2s = tuple(check_positive("sigma2s (Gaussian noise variances)", s)
                    for s in _values("sigma2s", p["sigma2s"]))
    ps = tuple(check_probability("ps (swap probabilities)", q) for q in _values("ps", p["ps"]))
    if 0.0 in ps:
        raise ValueError("ps (swap probabilities) must be > 0: the noiseless student is always "
                         "in the grid")
    grid = DistillGrid(datasets=datasets, sigma2s=sigma2s, ps=ps, seeds=seeds,
                       **{k: p[k] for k in _SCALARS if k in p})
    grid_runs(grid)   # builds every configuration, so bad values fail here, before training
    return grid


def scope_note(grid: DistillGrid) -> str:
    """What the verdicts describe: the data sets, model and budget actually measured."""
    sizes = f"{grid.image_size}x{grid.image_size} pixels" if grid.image_size else "native size"
    text = (f"Measured on {', '.join(grid.datasets)} ({sizes}) with ResNet-{grid.depth}, "
            f"{len(grid.seeds)} seeds, teachers {grid.teacher_epochs} and students "
            f"{grid.student_epochs} epochs.")
    if "digits" in grid.datasets:
        text += " The digits verdicts describe digits, not CIFAR or SVHN."
    return text


def _teacher(grid: DistillGrid, dataset: str, seed: int) -> RunConfig:
    return RunConfig(dataset=dataset, seed=seed, epochs=grid.teacher_epochs,
                     **{k: getattr(grid, k) for k in _SHARED})


def _levels(grid: DistillGrid) -> list[tuple[str, float]]:
    return ([("none", 0.0)] + [("gaussian", s) for s in grid.sigma2s]
            + [("symmetric", p) for p in grid.ps] + [(CONTROL, p) for p in grid.ps])


def grid_runs(grid: DistillGrid) -> list[RunConfig]:
    """Every run of the grid, teachers first (students need their teacher's final weights): per
    teacher the noiseless student, one per σ² and one per p, then one control per p."""
    teachers = [_teacher(grid, d, s) for d in grid.datasets for s in grid.seeds]
    students = [student_of(t, kind, level, epochs=grid.student_epochs)
                for t in teachers for kind, level in _levels(grid)]
    return teachers + students


@dataclass
class Cell:
    """One (data set, role, noise kind, level) over the grid's seeds: the final metrics
    ``final[name]`` (one per seed) and the per-epoch curves ``curves[name]`` (seeds x epochs)."""
    dataset: str
    role: str
    kind: str
    level: float
    seeds: np.ndarray
    final: dict[str, np.ndarray] = field(default_factory=dict)
    curves: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def name(self) -> str:
        if self.role == "teacher":
            return "teacher"
        if self.kind == CONTROL:
            return f"control of p = {self.level:g}"
        return "noiseless student" if self.kind == "none" else f"{KINDS[self.kind]} = {self.level:g}"


@dataclass
class DistillResults:
    grid: DistillGrid
    cells: list[Cell]
    notes: dict[str, str] = field(default_factory=dict)

    def teacher(self, dataset: str) -> Cell:
        return next(c for c in self.cells if c.dataset == dataset and c.role == "teacher")

    def noiseless(self, dataset: str) -> Cell:
        return next(c for c in self.cells if c.dataset == dataset and c.role == "student"
                    and c.kind == "none")

    def noisy(self, dataset: str, kind: str) -> list[Cell]:
        """The students of one noise kind (or of the swap's controls, ``kind=CONTROL``), by level."""
        return sorted((c for c in self.cells if c.dataset == dataset and c.kind == kind),
                      key=lambda c: c.level)

    def control(self, cell: Cell) -> Cell:
        """The student trained without noise on ``cell``'s mean target ``E[y~]``: for the swap at
        ``p``, the control at the same ``p`` (target ``M_p y``); for Gaussian noise, the noiseless
        student (``E[y~] = y``)."""
        if cell.role != "student" or cell.kind not in KINDS:
            raise ValueError(f"cell must be a noisy student (kind in {list(KINDS)}), got {cell.name!r}")
        if cell.kind == "gaussian":
            return self.noiseless(cell.dataset)
        return next(c for c in self.cells if c.dataset == cell.dataset and c.kind == CONTROL
                    and c.level == cell.level)


METRICS = ("train_loss", "val_loss", "val_acc", "test_acc", "gradnorm", "gradnorm_se",
           "train_objective", "loss_scale", "train_s", "eval_s", "gradnorm_s")


def summarise(grid: DistillGrid, records: Sequence[RunRecord]) -> DistillResults:
    """Arrange finished records by cell and seed (every run of the grid must be finished)."""
    by_key = {r.config.key(): r for r in records}
    missing = [c.label() for c in grid_runs(grid) if c.key() not in by_key or not by_key[c.key()].done]
    if missing:
        raise ValueError(f"{len(missing)} run(s) of the grid are not finished, e.g. {missing[:3]}")
    cells = []
    for d in grid.datasets:
        teachers = [_teacher(grid, d, s) for s in grid.seeds]
        groups = [("teacher", "none", 0.0, teachers)] + [
            ("student", kind, level, [student_of(t, kind, level, epochs=grid.student_epochs)
                                      for t in teachers]) for kind, level in _levels(grid)]
        for role, kind, level, configs in groups:
            hist = [by_key[c.key()].history for c in configs]
            cell = Cell(d, role, kind, level, np.array(grid.seeds))
            for m in METRICS:
                curves = np.array([[row[m] for row in h] for h in hist], dtype=float)
                cell.curves[m], cell.final[m] = curves, curves[:, -1]
            cells.append(cell)
    return DistillResults(grid, cells)


def selected_levels(res: DistillResults, dataset: str) -> dict[str, Cell]:
    """Figure 2's cells: per noise kind, the level with the best mean validation accuracy
    (ties: the lower mean validation loss)."""
    out = {"none": res.noiseless(dataset)}
    for kind in KINDS:
        cells = res.noisy(dataset, kind)
        if cells:
            out[kind] = max(cells, key=lambda c: (c.final["val_acc"].mean(), -c.final["val_loss"].mean()))
    return out


def selected_test_acc(res: DistillResults, dataset: str) -> np.ndarray:
    """Per seed, the test accuracy of the noisy student (any kind, any level) with the best
    validation accuracy of that seed; ties are averaged (random tie-breaking, in expectation)."""
    cells = [c for k in KINDS for c in res.noisy(dataset, k)]
    val = np.stack([c.final["val_acc"] for c in cells], axis=1)        # (S, cells)
    test = np.stack([c.final["test_acc"] for c in cells], axis=1)
    best = val == val.max(axis=1, keepdims=True)
    return (test * best).sum(axis=1) / best.sum(axis=1)


def shrinkage(p: float, n_classes: int) -> float:
    """``kappa = 1 - pL/(L-1)``: the swap's mean target (Eq. 24) is
    ``E[y~] = kappa y + (1 - kappa) mean(y) 1``, every logit vector shrunk towards its mean."""
    p = check_probability("p", p)
    n = check_int("n_classes", n_classes, minimum=2)
    return 1.0 - p * n / (n - 1)


def shrinkage_rows(res: DistillResults) -> list[dict[str, Any]]:
    """Per data set and p: ``kappa^2`` beside the measured G of the swap student and of its
    control, each relative to the noiseless student (geometric means over seeds)."""
    rows = []
    for d in res.grid.datasets:
        n_classes = _teacher(res.grid, d, res.grid.seeds[0]).num_classes
        log_ref = np.log(res.noiseless(d).final["gradnorm"])
        for cell in res.noisy(d, "symmetric"):
            ratio = {k: float(np.exp((np.log(c.final["gradnorm"]) - log_ref).mean()))
                     for k, c in (("swap", cell), ("control", res.control(cell)))}
            rows.append(dict(dataset=d, p=cell.level, kappa2=shrinkage(cell.level, n_classes) ** 2,
                             swap=ratio["swap"], control=ratio["control"]))
    return rows


def accuracy_headroom(res: DistillResults, claims: Sequence[Any]) -> list[str]:
    """Why the accuracy claims can stay undecided, per data set: the teachers' mean test
    accuracy, the headroom it leaves a student, and the half-width of the ledger's interval of
    the gain of the validation-selected noisy student over its teacher (the case of
    ``fig1.noisy_beats_teacher`` among ``claims``). A gain no larger than the headroom that the
    interval cannot separate from zero cannot be confirmed with these seeds."""
    claim = next(c for c in claims if c.id == "fig1.noisy_beats_teacher")
    lines = []
    for d in res.grid.datasets:
        acc = float(res.teacher(d).final["test_acc"].mean())
        lo, hi = next(x["interval"] for x in claim.details if x["case"] == d)
        half, room = (hi - lo) / 2, 1.0 - acc
        verdict = ("so even a student that closed the whole gap would stay unconfirmed at "
                   f"this spread with {len(res.grid.seeds)} seeds" if half >= room else
                   "so a gain as large as the headroom could be resolved")
        lines.append(f"{d}: the teachers reach {100 * acc:.2f} % test accuracy on average, "
                     f"leaving {100 * room:.2f} points to gain; the {100 * CONFIDENCE:g} % "
                     f"interval of the selected student's gain is ±{100 * half:.2f} points "
                     f"wide, {verdict}.")
    return lines


def seeds_to_decide(res: DistillResults, claims: Sequence[Any], *,
                    power: float = POWER) -> list[dict[str, Any]]:
    """Every undecided case of ``claims``: its measured value, the half-width of its interval and
    the seeds that would decide it with probability ``power``, were the measured value and the
    seeds' spread the truth (:func:`dsmlib.foundation.power.units_to_decide`; None: more than
    ``MAX_UNITS``, or a value on the band's edge), and the verdict they would reach (``towards``:
    confirmed if the value lies in the band, else refuted). A planning figure, not evidence."""
    n = len(res.grid.seeds)
    rows = []
    for c in claims:
        if c.verdict != "inconclusive":
            continue
        for d in c.details:
            if d.get("verdict") != "inconclusive" or d.get("se") is None:
                continue
            lo, hi = d["interval"]
            rows.append(dict(claim=c.id, case=d["case"], measured=d["measured"],
                             half_width=(hi - lo) / 2,
                             towards=verdict([d["measured"]] * 2, d["band"]),
                             seeds=units_to_decide(
                                 d["measured"], d["se"], d["interval"], d["band"], n,
                                 power=power)))
    return rows
