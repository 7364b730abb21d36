"""Chapter ``sec5_distillation``: noisy self-distillation (Section 5, Figures 1 and 2), the
results of its grid (:mod:`dsmlib.chapters.sec5_distillation.grid`, built from the chapter's
parameters, a :class:`~dsmlib.chapters.sec5_distillation.grid.GridParameters`) arranged by
cell and seed for the figures; the claims are in :mod:`dsmlib.chapters.sec5_distillation.claims`,
the page's other read-outs in :mod:`dsmlib.chapters.sec5_distillation.readouts`.

A noisy student is judged against the student trained noiselessly on its noise's mean target:
the control for the swap (``E[y~] = M_p y``, Eq. 24, every logit vector shrunk towards its mean
by ``kappa = 1 - pL/(L-1)``, :func:`shrinkage`), the noiseless student for Gaussian noise
(``E[y~] = y``), so no extra run is needed there (:meth:`DistillResults.control`).

Runs are executed and collected elsewhere (:mod:`dsmlib.models.sec5_distillation.runs`, :mod:`dsmlib.chapters.sec5_distillation.launch`);
this module turns collected records into per-cell arrays over seeds (**seeds are the unit**: a
teacher, its students and its validation-based selection belong to one seed). The test set is
fixed, so intervals over seeds describe training randomness on it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...foundation.checks import check_int, check_probability
from ...models.sec5_distillation.correctness import unpack_flags
from ...models.sec5_distillation.run_config import Noise, RunConfig
from .grid import KINDS, GridParameters, Setting, grid_levels

if TYPE_CHECKING:    # the runs' module imports torch (this one reads their records alone)
    from ...models.sec5_distillation.runs import RunRecord

__all__ = ["Cell", "DistillResults", "METRICS", "ACCURACIES", "correct_flags",
           "diverged", "divergence_rows", "summarise", "selected_levels", "selected_test_acc",
           "selected_correct", "selection", "shrinkage", "shrinkage_rows", "setting_of"]


@dataclass
class Cell:
    """One (setting, role, noise kind, level) over the grid's seeds: the final metrics
    ``final[name]`` (one per seed) and the per-epoch curves ``curves[name]`` (seeds x epochs)."""
    setting: str
    role: str
    kind: str
    level: float
    seeds: np.ndarray
    final: dict[str, np.ndarray] = field(default_factory=dict)
    curves: dict[str, np.ndarray] = field(default_factory=dict)
    test_correct: np.ndarray | None = None
    """Per seed and test image, 1 where the final model classified it right (seeds x images;
    fractional for a diverged run counted at chance); None where the runs did not record it."""

    @property
    def name(self) -> str:
        if self.role == "teacher":
            return "teacher"
        if self.kind == Noise.CONTROL:
            return f"control of p = {self.level:g}"
        if self.kind == Noise.HINTON:
            return f"Hinton student (T = {self.level:g})"
        if self.kind == Noise.CONTINUED:
            return "continued teacher"
        return "noiseless student" if self.kind == Noise.NONE else f"{KINDS[self.kind]} = {self.level:g}"


@dataclass
class DistillResults:
    grid: GridParameters
    cells: list[Cell]
    curve: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    diverged: dict[str, dict[int, list[str]]] = field(default_factory=dict)
    """Per setting, the seeds left out of every cell because a run of theirs diverged, with the
    labels of the runs that did (:func:`diverged`)."""
    divergence: list[dict[str, Any]] = field(default_factory=list)
    """Per setting and arm (teacher, or student kind and level): its runs and how many
    diverged (:func:`divergence_rows`)."""
    all_seeds: DistillResults | None = None
    """Where runs diverged: the same grid over *every* seed, a diverged run counted at its
    measured test and validation accuracy, or at chance where that is not finite (its G and
    losses stay non-finite: only the accuracy claims read it). None when no run diverged."""

    @property
    def settings(self) -> list[str]:
        """The settings' names, in the grid's order."""
        return [s.name for s in self.grid.settings]

    def setting(self, name: str) -> Setting:
        return next(s for s in self.grid.settings if s.name == name)

    def n_seeds(self, setting: str) -> int:
        """The seeds the setting's cells hold (its grid's, less those left out, ``diverged``)."""
        return len(self.teacher(setting).seeds)

    def teacher(self, setting: str) -> Cell:
        return next(c for c in self.cells if c.setting == setting and c.role == "teacher")

    def noiseless(self, setting: str) -> Cell:
        return next(c for c in self.cells if c.setting == setting and c.role == "student"
                    and c.kind == Noise.NONE)

    def hinton(self, setting: str) -> Cell:
        """The paper's noiseless student (Hinton et al.'s softened cross-entropy)."""
        return next(c for c in self.cells if c.setting == setting and c.kind == Noise.HINTON)

    def continued(self, setting: str) -> Cell | None:
        """The continued teacher (trained on its labels as long as a student), None where the
        grid has none."""
        return next((c for c in self.cells
                     if c.setting == setting and c.kind == Noise.CONTINUED), None)

    def noisy(self, setting: str, kind: str) -> list[Cell]:
        """The students of one noise kind (or of the swap's controls, ``Noise.CONTROL``), by
        level."""
        return sorted((c for c in self.cells if c.setting == setting and c.kind == kind),
                      key=lambda c: c.level)

    def control(self, cell: Cell) -> Cell:
        """The student trained without noise on ``cell``'s mean target ``E[y~]``: for the swap at
        ``p``, the control at the same ``p`` (target ``M_p y``); for Gaussian noise, the noiseless
        student (``E[y~] = y``)."""
        if cell.role != "student" or cell.kind not in KINDS:
            raise ValueError(f"cell must be a noisy student (kind in {[str(k) for k in KINDS]}), "
                             f"got {cell.name!r}")
        if cell.kind == Noise.GAUSSIAN:
            return self.noiseless(cell.setting)
        return next(c for c in self.cells if c.setting == cell.setting
                    and c.kind == Noise.CONTROL and c.level == cell.level)


METRICS = ("train_loss", "val_loss", "val_acc", "test_acc", "train_acc", "gradnorm",
           "gradnorm_se", "train_objective", "loss_scale", "logit_var", "noise_var", "train_s",
           "eval_s", "gradnorm_s")


ACCURACIES = ("test_acc", "val_acc")   # what a diverged run is counted at in all_seeds


def correct_flags(row: dict[str, Any]) -> np.ndarray | None:
    """The per-image correctness a run recorded on the test set (``test_correct``, packed or
    a string of 0s and 1s: :func:`dsmlib.models.sec5_distillation.correctness.unpack_flags`); None if it
    recorded none."""
    text = row.get("test_correct")
    return None if not text else unpack_flags(text)


def _cell(setting: str, role: str, kind: str, level: float, seeds: Sequence[int],
          hist: list[list[dict[str, Any]]], chance: float | None = None,
          bad: Sequence[bool] = ()) -> Cell:
    """A cell over ``seeds`` from their runs' histories; with ``chance``, the runs flagged in
    ``bad`` (diverged) count at their measured accuracies, or at ``chance`` where those are not
    finite."""
    cell = Cell(setting, role, kind, level, np.array(seeds))
    for m in METRICS:
        curves = np.array([[np.nan if row.get(m) is None else row[m] for row in h] for h in hist],
                          dtype=float)
        cell.curves[m], cell.final[m] = curves, curves[:, -1]
    flags = [correct_flags(h[-1]) for h in hist]
    for j in (j for j, b in enumerate(bad) if b and chance is not None):
        if flags[j] is not None and not np.isfinite(cell.final["test_acc"][j]):
            flags[j] = np.full(flags[j].shape, chance)
        for m in ACCURACIES:
            if not np.isfinite(cell.final[m][j]):
                cell.final[m][j] = chance
    if flags and all(f is not None for f in flags) and len({f.size for f in flags}) == 1:
        cell.test_correct = np.stack(flags).astype(float)
    return cell


def diverged(history: Sequence[dict[str, Any]]) -> bool:
    """Whether a run diverged: its final training loss or ``G`` is not finite (``None``, not
    measured, is not divergence)."""
    last = history[-1]
    return any(last.get(m) is not None and not np.isfinite(last[m])
               for m in ("train_loss", "gradnorm", "test_acc"))


def _arm(config: RunConfig) -> str:
    """How the divergence table names a run's arm: ``teacher``, or the student's cell name."""
    if config.role == "teacher":
        return "teacher"
    return Cell("", "student", config.noise, config.level, np.array([])).name


def divergence_rows(grid: GridParameters,
                    by_key: dict[str, RunRecord]) -> list[dict[str, Any]]:
    """Per setting and arm (the teacher, each student kind and level): its runs, one per seed,
    and how many of them diverged (:func:`diverged`), with the seeds that did. A diverged run
    is a result: these are the arms' divergence rates."""
    rows = []
    for s in grid.settings:
        arms: dict[str, list[tuple[int, bool]]] = {}
        for seed in s.seeds:
            for c in [grid.grid.teacher(s.name, seed), *grid.grid.students(s.name, seed)]:
                arms.setdefault(_arm(c), []).append((seed, diverged(by_key[c.key()].history)))
        rows += [dict(setting=s.name, arm=arm, runs=len(v), diverged=sum(b for _, b in v),
                      seeds=[seed for seed, b in v if b]) for arm, v in arms.items()]
    return rows


def _setting_cells(grid: GridParameters, s: Setting, seeds: Sequence[int],
                   by_key: dict[str, RunRecord], *, counted: bool = False) -> list[Cell]:
    """The cells of setting ``s`` over ``seeds``: its teachers, then each student kind and
    level. ``counted``: diverged runs count at their measured accuracy, or at chance."""
    teachers = [grid.grid.teacher(s.name, seed) for seed in seeds]
    chance = 1.0 / teachers[0].num_classes if counted else None
    groups = [("teacher", Noise.NONE, 0.0, teachers)] + [
        ("student", kind, level, [c for seed in seeds for c in grid.grid.students(s.name, seed)
                                  if (c.noise, c.level) == (kind, level)])
        for kind, level in grid_levels(grid, s)]
    cells = []
    for role, kind, level, configs in groups:
        hist = [by_key[c.key()].history for c in configs]
        cells.append(_cell(s.name, role, kind, level, seeds, hist, chance,
                           [diverged(h) for h in hist]))
    return cells


def summarise(grid: GridParameters, records: Sequence[RunRecord]) -> DistillResults:
    """Arrange finished records by cell and seed (every run of the grid must be finished), and
    the teachers' test accuracy by training-set size
    (:func:`dsmlib.chapters.sec5_distillation.readouts.teacher_curve`).

    A seed with a diverged run (:func:`diverged`) is left out of its setting's cells, all of
    them, since its teacher and students are compared with each other; the seeds left out and
    their diverged runs are in ``DistillResults.diverged``, each arm's divergence rate in
    ``divergence``, and the reading that keeps every seed in ``all_seeds``. Fewer than two
    seeds left in a setting is an error: no interval over seeds exists."""
    by_key = {r.config.key(): r for r in records}
    missing = [c.label() for c in grid.grid.runs
               if c.key() not in by_key or not by_key[c.key()].done]
    if missing:
        raise ValueError(f"{len(missing)} run(s) of the grid are not finished, e.g. {missing[:3]}")
    cells, every, dropped = [], [], {}
    for s in grid.settings:
        bad: dict[int, list[str]] = {}
        for seed in s.seeds:
            for c in [grid.grid.teacher(s.name, seed), *grid.grid.students(s.name, seed)]:
                if diverged(by_key[c.key()].history):
                    bad.setdefault(seed, []).append(c.label())
        seeds = [seed for seed in s.seeds if seed not in bad]
        if bad:
            dropped[s.name] = bad
        if len(seeds) < 2:
            raise ValueError(f"setting {s.name!r}: runs of {len(bad)} of its {len(s.seeds)} seeds "
                             f"diverged ({sorted(bad)}), fewer than 2 seeds are left")
        cells += _setting_cells(grid, s, seeds, by_key)
        every += _setting_cells(grid, s, list(s.seeds), by_key, counted=True)
    curve = _curve(grid, by_key, dropped)
    all_seeds = DistillResults(grid, every, curve=curve) if dropped else None
    return DistillResults(grid, cells, curve=curve, diverged=dropped,
                          divergence=divergence_rows(grid, by_key), all_seeds=all_seeds)


def _curve(grid: GridParameters, by_key: dict[str, RunRecord],
           dropped: dict[str, dict[int, list[str]]]) -> list[dict[str, Any]]:
    """Per data set and training-set size, the teachers' final test accuracy over their seeds
    (the settings' teachers over the seeds judged, ``dropped`` left out; the curve's teachers
    over the curve's seeds)."""
    rows = []
    for d in grid.datasets:
        configs: dict[int | None, list[RunConfig]] = {}
        for c in [t for s in grid.settings if s.dataset == d
                  for t in (grid.grid.teacher(s.name, seed) for seed in s.seeds
                            if seed not in dropped.get(s.name, {}))] + \
                [c for c in grid.grid.curve if c.dataset == d]:
            configs.setdefault(c.train_limit, []).append(c)
        for limit, cs in configs.items():
            last = [by_key[c.key()].history[-1] for c in cs]
            acc = np.array([r["test_acc"] for r in last])
            rows.append(dict(dataset=d, train_limit=limit, n_train=int(last[0]["n_train"]),
                             seeds=len(cs), test_acc=acc,
                             train_acc=np.array([r["train_acc"] for r in last]),
                             setting=next((s.role for s in grid.settings
                                           if s.dataset == d and s.train_limit == limit), None)))
    return sorted(rows, key=lambda r: (r["dataset"], r["n_train"]))


def setting_of(case: str, settings: Sequence[str]) -> str:
    """The setting a case belongs to: cases are named ``<setting>`` or ``<setting>: ...``."""
    for s in sorted(settings, key=len, reverse=True):
        if case == s or case.startswith(f"{s}:"):
            return s
    raise ValueError(f"case {case!r} names none of the settings {list(settings)}")


def selected_levels(res: DistillResults, setting: str) -> dict[str, Cell]:
    """Figure 2's cells: per noise kind, the level with the best mean validation accuracy
    (ties: the lower mean validation loss)."""
    out = {Noise.NONE: res.noiseless(setting)}
    for kind in KINDS:
        cells = res.noisy(setting, kind)
        if cells:
            out[kind] = max(cells, key=lambda c: (c.final["val_acc"].mean(), -c.final["val_loss"].mean()))
    return out


def selection(res: DistillResults, setting: str) -> tuple[list[Cell], np.ndarray]:
    """The noisy students (any kind, any level) and, per seed, the weight validation gives each:
    1 for the best validation accuracy of that seed, ties sharing it equally (random
    tie-breaking, in expectation); seeds x cells."""
    cells = [c for k in KINDS for c in res.noisy(setting, k)]
    val = np.stack([c.final["val_acc"] for c in cells], axis=1)        # (S, cells)
    best = (val == val.max(axis=1, keepdims=True)).astype(float)
    return cells, best / best.sum(axis=1, keepdims=True)


def selected_test_acc(res: DistillResults, setting: str) -> np.ndarray:
    """Per seed, the test accuracy of the validation-selected noisy student (:func:`selection`)."""
    cells, w = selection(res, setting)
    return (np.stack([c.final["test_acc"] for c in cells], axis=1) * w).sum(axis=1)


def selected_correct(res: DistillResults, setting: str) -> np.ndarray | None:
    """Per seed and test image, the validation-selected noisy student's correctness
    (:func:`selection`; seeds x images), None where the runs recorded none."""
    cells, w = selection(res, setting)
    if any(c.test_correct is None for c in cells):
        return None
    return np.einsum("sc,csi->si", w, np.stack([c.test_correct for c in cells]))


def shrinkage(p: float, n_classes: int) -> float:
    """``kappa = 1 - pL/(L-1)``: the swap's mean target (Eq. 24) is
    ``E[y~] = kappa y + (1 - kappa) mean(y) 1``, every logit vector shrunk towards its mean."""
    p = check_probability("p", p)
    n = check_int("n_classes", n_classes, minimum=2)
    return 1.0 - p * n / (n - 1)


def shrinkage_rows(res: DistillResults) -> list[dict[str, Any]]:
    """Per setting and p: ``kappa^2`` beside the measured G of the swap student and of its
    control, each relative to the noiseless student (geometric means over seeds)."""
    rows = []
    for s in res.grid.settings:
        n_classes = res.grid.grid.teacher(s.name, s.seeds[0]).num_classes
        log_ref = np.log(res.noiseless(s.name).final["gradnorm"])
        for cell in res.noisy(s.name, Noise.SYMMETRIC):
            ratio = {k: float(np.exp((np.log(c.final["gradnorm"]) - log_ref).mean()))
                     for k, c in (("swap", cell), ("control", res.control(cell)))}
            rows.append(dict(setting=s.name, p=cell.level,
                             kappa2=shrinkage(cell.level, n_classes) ** 2,
                             swap=ratio["swap"], control=ratio["control"]))
    return rows
