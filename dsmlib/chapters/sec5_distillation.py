"""Chapter ``sec5_distillation``: noisy self-distillation (Section 5, Figures 1 and 2), its grid
of runs, the summaries the figures plot, and the claims.

A grid is, per data set and seed, one teacher (ResNet, cross-entropy) and its students: the
noiseless one and one per noise kind and level (:class:`dsmlib.models.run_config.RunConfig`).
Runs are executed and collected elsewhere (:mod:`dsmlib.models.runs`, :mod:`dsmlib.book.grid`);
this module turns collected records into per-cell arrays over seeds, and judges the claims with
**seeds as the unit**: every statistic is computed within a seed (a teacher, its students, its
validation-based selection), and the interval is a Student-t interval over seeds (``S - 1``
degrees of freedom). The test set is fixed, so intervals describe training randomness on it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Sequence

import numpy as np

from ..foundation.checks import check_int
from ..foundation.claims import Case, Claim, case, every_case
from ..models.run_config import RunConfig, student_of
from ..models.runs import RunRecord

__all__ = ["GRADNORM_TREND_BAND", "BELOW_TEACHER_BAND", "ACCURACY_GAIN_BAND", "TRAIN_LOSS_BAND",
           "KINDS", "DistillGrid", "grid_from_parameters", "scope_note", "grid_runs", "Cell",
           "DistillResults", "METRICS", "summarise", "selected_levels", "distill_claims"]

# Bands, fixed before measuring. Sign claims (the paper states directions, not sizes) are strict:
# accuracies are discrete, and seeds that all tie at a difference of exactly 0 confirm nothing.
_STRICT = 1e-12
GRADNORM_TREND_BAND = (None, -_STRICT)  # slope of log G along the noise grid: negative
BELOW_TEACHER_BAND = (None, -_STRICT)   # log(G_student / G_teacher): negative
ACCURACY_GAIN_BAND = (_STRICT, None)    # test-accuracy gain of the selected noisy student
TRAIN_LOSS_BAND = (None, 0.05)          # final train loss / variance of the targets: "near zero"

KINDS = {"gaussian": "σ²", "symmetric": "p"}


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


def grid_from_parameters(p: dict[str, Any]) -> DistillGrid:
    """The grid from the notebook's parameters (the same names), checked."""
    seeds = tuple(check_int("seeds", s, minimum=0) for s in p["seeds"])
    if len(set(seeds)) < 2:
        raise ValueError(f"seeds must hold at least 2 distinct seeds (seeds are the unit of "
                         f"every interval), got {list(p['seeds'])}")
    if not p["datasets"]:
        raise ValueError("datasets must not be empty")
    grid = DistillGrid(datasets=tuple(p["datasets"]), sigma2s=tuple(map(float, p["sigma2s"])),
                       ps=tuple(map(float, p["ps"])), seeds=seeds,
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
            + [("symmetric", p) for p in grid.ps])


def grid_runs(grid: DistillGrid) -> list[RunConfig]:
    """Every run of the grid, teachers first (students need their teacher's final weights)."""
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
        return sorted((c for c in self.cells if c.dataset == dataset and c.kind == kind),
                      key=lambda c: c.level)


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


def _seed_case(values: np.ndarray, band, quantity: str, paper: float = 0.0) -> Case:
    """Mean over seeds with its Student-t interval (seeds are independent replicates)."""
    v = np.asarray(values, dtype=float)
    return case(paper=paper, measured=float(v.mean()), se=float(v.std(ddof=1) / math.sqrt(v.size)),
                band=band, quantity=quantity, dof=v.size - 1)


def _trend(cells: list[Cell]) -> np.ndarray:
    """Per seed, the least-squares slope of log G on the grid position (0 = noiseless)."""
    logg = np.log(np.stack([c.final["gradnorm"] for c in cells], axis=1))   # (S, K + 1)
    x = np.arange(logg.shape[1], dtype=float)
    x -= x.mean()
    return (logg * x).sum(axis=1) / (x ** 2).sum()


def selected_levels(res: DistillResults, dataset: str) -> dict[str, Cell]:
    """Figure 2's cells: per noise kind, the level with the best mean validation accuracy
    (ties: the lower mean validation loss)."""
    out = {"none": res.noiseless(dataset)}
    for kind in KINDS:
        cells = res.noisy(dataset, kind)
        if cells:
            out[kind] = max(cells, key=lambda c: (c.final["val_acc"].mean(), -c.final["val_loss"].mean()))
    return out


def _selected_test_acc(res: DistillResults, dataset: str) -> np.ndarray:
    """Per seed, the test accuracy of the noisy student (any kind, any level) with the best
    validation accuracy of that seed; ties are averaged (random tie-breaking, in expectation)."""
    cells = [c for k in KINDS for c in res.noisy(dataset, k)]
    val = np.stack([c.final["val_acc"] for c in cells], axis=1)        # (S, cells)
    test = np.stack([c.final["test_acc"] for c in cells], axis=1)
    best = val == val.max(axis=1, keepdims=True)
    return (test * best).sum(axis=1) / best.sum(axis=1)


def _gradnorm_claims(res: DistillResults, note: str) -> list[Claim]:
    claims = []
    for kind, cid in (("gaussian", "fig1.gradnorm_vs_sigma2"), ("symmetric", "fig1.gradnorm_vs_p")):
        sym, cases = KINDS[kind], {}
        for d in res.grid.datasets:
            cells = res.noisy(d, kind)
            if cells:
                levels = ", ".join(f"{c.level:g}" for c in cells)
                cases[d] = _seed_case(_trend([res.noiseless(d)] + cells), GRADNORM_TREND_BAND,
                                      f"slope of log G(θ) along the {sym} grid (0, {levels}) per "
                                      "grid step; paper: < 0")
        if cases:
            claims.append(every_case(
                cid, f"The gradient norm G(θ) of the students falls as {sym} grows (Figure 1, "
                "top row; Prop. 3).", cases, scope="setting", note=note,
                condition="needs students trained long enough at the noisy learning rates for "
                          "the implicit regularizer to act"))
    return claims


def _below_teacher_claim(res: DistillResults, note: str) -> Claim:
    cases = {}
    for d in res.grid.datasets:
        log_teacher = np.log(res.teacher(d).final["gradnorm"])
        for c in [res.noiseless(d)] + [c for k in KINDS for c in res.noisy(d, k)]:
            cases[f"{d}: {c.name}"] = _seed_case(np.log(c.final["gradnorm"]) - log_teacher,
                                                 BELOW_TEACHER_BAND,
                                                 "$\\log(G_{\\mathrm{student}} / G_{\\mathrm{teacher}})$; paper: < 0")
    return every_case("fig1.student_below_teacher", "Students have a lower gradient norm G(θ) "
                      "than their teacher (Figure 1).", cases, scope="setting", note=note,
                      condition="holds only for the students whose interval lies below 0 (see "
                                "the per-student cases)")


def _accuracy_claims(res: DistillResults, note: str) -> list[Claim]:
    claims = []
    for cid, ref, what in (("fig1.noisy_beats_teacher", "teacher", "the teacher"),
                           ("fig1.noisy_beats_noiseless", "noiseless", "the noiseless student")):
        cases = {}
        for d in res.grid.datasets:
            base = res.teacher(d) if ref == "teacher" else res.noiseless(d)
            cases[d] = _seed_case(_selected_test_acc(res, d) - base.final["test_acc"],
                                  ACCURACY_GAIN_BAND, "test accuracy of the validation-selected "
                                  f"noisy student − that of {what}; paper: > 0")
        claims.append(every_case(
            cid, f"The noisy student selected by validation accuracy has a higher test accuracy "
            f"than {what} (Figure 1).", cases, scope="setting",
            note=(note + " Selection within each seed over both noise kinds and every level; "
                  "seeds are the unit.").strip(),
            condition="needs a teacher below its accuracy ceiling and a validation set large "
                      "enough to pick the level"))
    return claims


def _train_loss_claim(res: DistillResults, note: str) -> Claim:
    cases = {}
    for d in res.grid.datasets:
        for c in selected_levels(res, d).values():
            cases[f"{d}: {c.name}"] = _seed_case(
                c.final["train_loss"] / c.final["loss_scale"], TRAIN_LOSS_BAND,
                "final training loss against E[ỹ] / variance of E[ỹ]; paper: ≈ 0")
    return every_case(
        "fig2.train_loss_to_zero", "The training loss of the noiseless, symmetric-noise and "
        "Gaussian-noise students (each at its validation-optimal level) goes to nearly zero "
        "(Figure 2).", cases, scope="reading",
        note=(note + " Read as the loss against the noiseless target E[ỹ]: the loss SGD sees, "
              "against the noisy ỹ, cannot fall below the noise's variance per logit.").strip(),
        condition="needs more epochs at the small learning rates (see the per-kind cases)")


def distill_claims(res: DistillResults, *, scope_note: str = "") -> list[Claim]:
    """The six claims of Figures 1 and 2, one case per data set (and per student or kind).
    ``scope_note`` (see :func:`scope_note`) goes into every claim's note."""
    claims = (_gradnorm_claims(res, scope_note) + [_below_teacher_claim(res, scope_note)]
              + _accuracy_claims(res, scope_note) + [_train_loss_claim(res, scope_note)])
    for c in claims:
        if c.verdict != "refuted":
            c.condition = ""
    return claims
