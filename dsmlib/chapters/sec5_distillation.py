"""Chapter ``sec5_distillation``: noisy self-distillation (Section 5, Figures 1 and 2), its
parameters, the results of its grid (:mod:`dsmlib.chapters.sec5_grid`) arranged by cell and
seed for the figures; the claims are in :mod:`dsmlib.chapters.sec5_claims`, the page's other
read-outs in :mod:`dsmlib.chapters.sec5_readouts`.

A noisy student is judged against the student trained noiselessly on its noise's mean target:
the control for the swap (``E[y~] = M_p y``, Eq. 24, every logit vector shrunk towards its mean
by ``kappa = 1 - pL/(L-1)``, :func:`shrinkage`), the noiseless student for Gaussian noise
(``E[y~] = y``), so no extra run is needed there (:meth:`DistillResults.control`).

Runs are executed and collected elsewhere (:mod:`dsmlib.models.runs`, :mod:`dsmlib.book.grid`);
this module turns collected records into per-cell arrays over seeds (**seeds are the unit**: a
teacher, its students and its validation-based selection belong to one seed). The test set is
fixed, so intervals over seeds describe training randomness on it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..foundation.checks import check_choice, check_int, check_positive, check_probability
from ..foundation.parameters import ChapterParameters, param
from ..models.datasets import DATASETS, SPECS
from ..models.run_config import RunConfig
from ..models.runs import CLUSTERS, RunRecord
from ..models.run_config import Noise
from .sec5_grid import (CONTROL, HINTON, KINDS, Setting, curve_runs, grid_levels, grid_runs,
                        students_of, teacher_config)

__all__ = ["Parameters", "Cell", "DistillResults", "METRICS", "ACCURACIES", "correct_flags",
           "diverged", "divergence_rows", "summarise", "selected_levels", "selected_test_acc",
           "selected_correct", "selection", "shrinkage", "shrinkage_rows", "setting_of"]


# The parameters that say where runs live and how unfinished ones are trained: no number depends
# on them.
EXECUTION = ("runs_dir", "data_dir", "download", "train_missing", "cluster", "workers")


@dataclass(frozen=True)
class Parameters(ChapterParameters):
    """The chapter's parameters (defaults: the ``quick`` profile), and so the grid of its runs:
    per setting and seed one teacher and its students (:func:`grid_runs`). Students train
    ``student_epochs`` (None: as long as their teacher, the paper's "same setting") with the
    teacher's other settings. The headroom setting (``headroom_size`` training images; 0 or
    None: the full data only) has its own passes, Gaussian levels and seeds (None: the full
    setting's). The last six say where runs live and how unfinished ones are trained; they
    change no number."""
    notebook = "sec5_distillation"

    datasets: tuple[str, ...] = param(["digits"], "digits | cifar10 | cifar100 | svhn")
    depth: int = param(8, "ResNet depth 6n + 2 (the paper: 56)")
    image_size: int | None = param(None, "None: the data set's own size (digits 8x8)")
    teacher_epochs: int = param(12, "the paper: 200 (here each epoch is `passes` passes)")
    student_epochs: int | None = param(None, "None: as long as the teacher (the paper's "
                                             "\"same setting\")")
    sigma2s: tuple[float, ...] = param([1.0, 4.0, 16.0], "Gaussian noise levels (variance per "
                                                         "logit), full data")
    ps: tuple[float, ...] = param([0.1, 0.3, 0.5], "symmetric-swap probabilities")
    seeds: tuple[int, ...] = param([0, 1, 2, 3], "one teacher and its students per seed; "
                                                 "seeds are the unit")
    passes: int = param(1, "passes over the training images per epoch (full setting)")
    headroom_size: int | None = param(50, "training images of the headroom setting (0: full "
                                          "data only)")
    headroom_passes: int = param(43, "its passes over those images per epoch")
    headroom_batch_size: int | None = param(32, "its minibatch size (None: batch_size)")
    headroom_val: int | None = param(None, "its validation images (None: the data set's fixed "
                                           "20 %; a number: a class-balanced split beside its "
                                           "training images)")
    full_data: bool = param(True, "each data set's full training set as a setting too (False: "
                                  "the headroom setting alone)")
    headroom_sigma2s: tuple[float, ...] | None = param([0.25, 1.0, 4.0], "its Gaussian levels "
                                                                         "(None: sigma2s)")
    headroom_seeds: tuple[int, ...] | None = param(list(range(6)), "its seeds (None: seeds)")
    temperature: float = param(4.0, "the Hinton student's (the paper's noiseless baseline)")
    curve_sizes: tuple[int, ...] = param([40, 100], "extra teacher sizes for the "
                                                        "accuracy-vs-size curve (trained as many "
                                                        "steps as the headroom setting's)")
    curve_seeds: tuple[int, ...] = param([0, 1], "and their seeds")
    batch_size: int = param(64, "minibatch size")
    lr: float = param(0.1, "SGD's learning rate at the start")
    lr_drops: tuple[float, ...] = param([0.5, 0.75], "fractions of the epochs at which the "
                                                     "learning rate drops (the paper: epochs "
                                                     "100 and 150 of 200)")
    lr_drop_factor: float = param(0.1, "the learning rate's factor at each drop")
    momentum: float = param(0.9, "SGD's momentum")
    weight_decay: float = param(1e-4, "SGD's weight decay")
    augment: bool = param(True, "random crops (and flips where the data set allows them)")
    train_limit: int | None = param(None, "the full setting's training images (None: all; "
                                          "tiny runs)")
    precision: str = param("auto", "bf16 autocast on CUDA, float32 on the CPU")
    n_gradnorm: int = param(16, "training images of the fixed subsample G is measured on")
    gradnorm_probes: int = param(2, "random probes per image for G and its standard error")
    n_train_eval: int | None = param(256, "training images evaluated after each epoch but the "
                                          "last (None: all)")
    own_streams: bool = param(False, "every student its own batch stream (no lockstep; a "
                                     "check)")
    runs_dir: str = param("results/runs", "one directory per run (checkpoints, metrics)")
    data_dir: str = param("data", "where torchvision finds CIFAR / SVHN")
    download: bool = param(False, "let torchvision download them (needs network access)")
    train_missing: bool = param(True, "train unfinished runs here; False: only read launched "
                                      "ones")
    cluster: str = param("local", "how to train them: local (worker processes) | debug (this "
                                  "process) | slurm")
    workers: int = param(2, "local worker processes (one thread each on 2 cores)")

    def check(self) -> None:
        """Types, then ranges; every run's configuration is built, so a value no run accepts
        fails here, before training (and before any kernel starts)."""
        super().check()
        if len(set(self.seeds)) < 2:
            raise ValueError(f"seeds must hold at least 2 distinct seeds (seeds are the unit of "
                             f"every interval), got {list(self.seeds)}")
        for s in self.seeds:
            check_int("seeds", s, minimum=0)
        if self.headroom_seeds is not None:
            if len(set(self.headroom_seeds)) < 2:
                raise ValueError(f"headroom_seeds must hold at least 2 distinct seeds (seeds are "
                                 f"the unit of every interval), got {list(self.headroom_seeds)}")
            for s in self.headroom_seeds:
                check_int("headroom_seeds", s, minimum=0)
        if not self.datasets:
            raise ValueError("datasets must not be empty")
        for d in self.datasets:
            check_choice("datasets", d, DATASETS)
        for name in ("sigma2s", "headroom_sigma2s"):
            for v in getattr(self, name) or ():
                check_positive(f"{name} (Gaussian noise variances)", v)
        for q in self.ps:
            check_probability("ps (swap probabilities)", q)
        if 0.0 in self.ps:
            raise ValueError("ps (swap probabilities) must be > 0: the noiseless student is "
                             "always in the grid")
        for s in self.curve_seeds:
            check_int("curve_seeds", s, minimum=0)
        if self.curve_sizes and not self.curve_seeds:
            raise ValueError("curve_seeds must not be empty when curve_sizes is not")
        if self.student_epochs is not None:
            check_int("student_epochs", self.student_epochs, minimum=1)
        check_positive("temperature (of the Hinton student)", self.temperature)
        check_int("passes", self.passes, minimum=1)
        check_int("headroom_passes", self.headroom_passes, minimum=1)
        if self.headroom_batch_size is not None:
            check_int("headroom_batch_size", self.headroom_batch_size, minimum=1)
        smallest = max(self.headroom_batch, self.n_gradnorm)   # a batch, and G's subsample
        for n in self.curve_sizes:
            check_int("curve_sizes (training images)", n, minimum=smallest)
        if self.headroom_size:
            n = check_int("headroom_size (training images; 0: none)", self.headroom_size,
                          minimum=smallest)
            if self.train_limit is not None and n >= self.train_limit:
                raise ValueError(f"headroom_size (training images) must be below train_limit "
                                 f"({self.train_limit}), got {n}")
        self._check_headroom_split()
        check_int("workers", self.workers, minimum=1)
        check_choice("cluster", self.cluster, CLUSTERS)
        grid_runs(self)   # builds every configuration, so bad values fail here

    def _check_headroom_split(self) -> None:
        """``full_data`` false needs a headroom setting; ``headroom_val`` is a class-balanced
        split, so it and every size it splits beside are whole numbers of images per class,
        and it validates on at most a fifth as many images as train (a paper-like split)."""
        if not self.full_data and not self.headroom_size:
            raise ValueError("full_data false needs a headroom setting (headroom_size > 0): "
                             "otherwise the grid has no setting")
        if self.headroom_val is None:
            return
        v = check_int("headroom_val (validation images of the headroom setting)",
                      self.headroom_val, minimum=1)
        if not self.headroom_size:
            raise ValueError("headroom_val needs a headroom setting (headroom_size > 0)")
        classes = max(SPECS[d].num_classes for d in self.datasets)
        for name, n in [("headroom_val", v), ("headroom_size", self.headroom_size),
                        *(("curve_sizes", c) for c in self.curve_sizes)]:
            if n % classes:
                raise ValueError(f"{name} must be a multiple of {classes} (a class-balanced "
                                 f"split: as many images of each class), got {n}")
        if 5 * v > self.headroom_size:
            raise ValueError(f"headroom_val (validation images) must be at most a fifth of "
                             f"headroom_size ({self.headroom_size // 5}), got {v}")

    def grid_values(self) -> dict[str, Any]:
        """The values that decide the runs (all but where they live and how they are trained),
        as the results file's ``extra`` records them."""
        return {k: v for k, v in self.as_dict().items() if k not in EXECUTION}

    def runs(self) -> list[RunConfig]:
        """Every run of the grid (:func:`grid_runs`): what ``python -m dsmlib grid`` launches."""
        return grid_runs(self)

    @property
    def settings(self) -> list[Setting]:
        """Per data set, the full setting, then the headroom one (if any)."""
        out = []
        for d in self.datasets:
            if self.full_data:
                out.append(Setting(d, self.train_limit, self.sigma2s, self.seeds, False,
                                   self.passes, self.batch_size))
            if self.headroom_size:
                out.append(Setting(d, self.headroom_size, self.headroom_sigma2s or self.sigma2s,
                                   self.headroom_seeds or self.seeds, True,
                                   self.headroom_passes, self.headroom_batch,
                                   self.headroom_val))
        return out

    @property
    def headroom_batch(self) -> int:
        """The headroom setting's (and the curve's) minibatch size."""
        return self.batch_size if self.headroom_batch_size is None else self.headroom_batch_size

    def curve_passes(self, n: int) -> int:
        """Passes per epoch of a curve teacher on ``n`` images: as many SGD steps as a teacher
        of the headroom setting takes, so that every point of the curve is trained as long."""
        per_pass = max(1, (self.headroom_size or n) // self.headroom_batch)
        return max(1, round(self.headroom_passes * per_pass / max(1, n // self.headroom_batch)))

    @property
    def epochs_of_students(self) -> int:
        return self.teacher_epochs if self.student_epochs is None else self.student_epochs


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
        if self.kind == CONTROL:
            return f"control of p = {self.level:g}"
        if self.kind == HINTON:
            return f"Hinton student (T = {self.level:g})"
        return "noiseless student" if self.kind == Noise.NONE else f"{KINDS[self.kind]} = {self.level:g}"


@dataclass
class DistillResults:
    grid: Parameters
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
        return next(c for c in self.cells if c.setting == setting and c.kind == HINTON)

    def noisy(self, setting: str, kind: str) -> list[Cell]:
        """The students of one noise kind (or of the swap's controls, ``kind=CONTROL``), by level."""
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
        return next(c for c in self.cells if c.setting == cell.setting and c.kind == CONTROL
                    and c.level == cell.level)


METRICS = ("train_loss", "val_loss", "val_acc", "test_acc", "train_acc", "gradnorm",
           "gradnorm_se", "train_objective", "loss_scale", "logit_var", "noise_var", "train_s",
           "eval_s", "gradnorm_s")


ACCURACIES = ("test_acc", "val_acc")   # what a diverged run is counted at in all_seeds


def correct_flags(row: dict[str, Any]) -> np.ndarray | None:
    """The per-image correctness a run recorded on the test set (``test_correct``, a string of
    0s and 1s), as floats; None if it recorded none."""
    text = row.get("test_correct")
    return None if not text else np.frombuffer(text.encode(), dtype=np.uint8) - ord("0")


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


def divergence_rows(grid: Parameters, by_key: dict[str, RunRecord]) -> list[dict[str, Any]]:
    """Per setting and arm (the teacher, each student kind and level): its runs, one per seed,
    and how many of them diverged (:func:`diverged`), with the seeds that did. A diverged run
    is a result: these are the arms' divergence rates."""
    rows = []
    for s in grid.settings:
        arms: dict[str, list[tuple[int, bool]]] = {}
        for seed in s.seeds:
            t = teacher_config(grid, s, seed)
            for c in [t, *students_of(grid, s, t)]:
                arms.setdefault(_arm(c), []).append((seed, diverged(by_key[c.key()].history)))
        rows += [dict(setting=s.name, arm=arm, runs=len(v), diverged=sum(b for _, b in v),
                      seeds=[seed for seed, b in v if b]) for arm, v in arms.items()]
    return rows


def _setting_cells(grid: Parameters, s: Setting, seeds: Sequence[int],
                   by_key: dict[str, RunRecord], *, counted: bool = False) -> list[Cell]:
    """The cells of setting ``s`` over ``seeds``: its teachers, then each student kind and
    level. ``counted``: diverged runs count at their measured accuracy, or at chance."""
    teachers = [teacher_config(grid, s, seed) for seed in seeds]
    chance = 1.0 / teachers[0].num_classes if counted else None
    groups = [("teacher", Noise.NONE, 0.0, teachers)] + [
        ("student", kind, level, [c for t in teachers for c in students_of(grid, s, t)
                                  if (c.noise, c.level) == (kind, level)])
        for kind, level in grid_levels(grid, s)]
    cells = []
    for role, kind, level, configs in groups:
        hist = [by_key[c.key()].history for c in configs]
        cells.append(_cell(s.name, role, kind, level, seeds, hist, chance,
                           [diverged(h) for h in hist]))
    return cells


def summarise(grid: Parameters, records: Sequence[RunRecord]) -> DistillResults:
    """Arrange finished records by cell and seed (every run of the grid must be finished), and
    the teachers' test accuracy by training-set size
    (:func:`dsmlib.chapters.sec5_readouts.teacher_curve`).

    A seed with a diverged run (:func:`diverged`) is left out of its setting's cells, all of
    them, since its teacher and students are compared with each other; the seeds left out and
    their diverged runs are in ``DistillResults.diverged``, each arm's divergence rate in
    ``divergence``, and the reading that keeps every seed in ``all_seeds``. Fewer than two
    seeds left in a setting is an error: no interval over seeds exists."""
    by_key = {r.config.key(): r for r in records}
    missing = [c.label() for c in grid_runs(grid) if c.key() not in by_key or not by_key[c.key()].done]
    if missing:
        raise ValueError(f"{len(missing)} run(s) of the grid are not finished, e.g. {missing[:3]}")
    cells, every, dropped = [], [], {}
    for s in grid.settings:
        bad: dict[int, list[str]] = {}
        for seed in s.seeds:
            t = teacher_config(grid, s, seed)
            for c in [t, *students_of(grid, s, t)]:
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


def _curve(grid: Parameters, by_key: dict[str, RunRecord],
           dropped: dict[str, dict[int, list[str]]]) -> list[dict[str, Any]]:
    """Per data set and training-set size, the teachers' final test accuracy over their seeds
    (the settings' teachers over the seeds judged, ``dropped`` left out; the curve's teachers
    over the curve's seeds)."""
    rows = []
    for d in grid.datasets:
        configs: dict[int | None, list[RunConfig]] = {}
        for c in [t for s in grid.settings if s.dataset == d
                  for t in (teacher_config(grid, s, seed) for seed in s.seeds
                            if seed not in dropped.get(s.name, {}))] + \
                [c for c in curve_runs(grid) if c.dataset == d]:
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
        n_classes = teacher_config(res.grid, s, s.seeds[0]).num_classes
        log_ref = np.log(res.noiseless(s.name).final["gradnorm"])
        for cell in res.noisy(s.name, Noise.SYMMETRIC):
            ratio = {k: float(np.exp((np.log(c.final["gradnorm"]) - log_ref).mean()))
                     for k, c in (("swap", cell), ("control", res.control(cell)))}
            rows.append(dict(setting=s.name, p=cell.level,
                             kappa2=shrinkage(cell.level, n_classes) ** 2,
                             swap=ratio["swap"], control=ratio["control"]))
    return rows
