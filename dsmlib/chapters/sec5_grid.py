"""The grid of Section 5's runs (chapter ``sec5_distillation``): its parameters, checked, and
every run's configuration. Per **setting** (a data set with a training-set size: the full data
and, where asked for, a data-limited **headroom** setting) and seed, one teacher and its
students: the noiseless one, one per noise kind and level, a control per swap probability (no
noise, target ``E[y~] = M_p y``, Eq. 24), and the Hinton student; and the extra teachers of the
curve of teacher accuracy against training-set size. Students train as long as their teacher
unless the parameters say otherwise (the paper's "same setting").
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..foundation.checks import check_choice, check_int, check_positive, check_probability
from ..foundation.parameters import ChapterParameters, param
from ..models.datasets import DATASETS
from ..models.run_config import RunConfig, student_of as _student_of_config
from ..models.run_config import Noise

__all__ = ["KINDS", "CONTROL", "HINTON", "Parameters", "Setting", "teacher_config", "grid_levels", "students_of", "curve_runs",
           "grid_runs"]

KINDS = {Noise.GAUSSIAN: "σ²", Noise.SYMMETRIC: "p"}   # the paper's noise kinds, and their level
CONTROL = Noise.CONTROL   # the swap's control: no noise, target E[y~] = M_p y (Eq. 24)
HINTON = Noise.HINTON     # the paper's noiseless student: softened cross-entropy, level = T


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
    headroom_sigma2s: tuple[float, ...] | None = param([0.25, 1.0, 4.0], "its Gaussian levels "
                                                                         "(None: sigma2s)")
    headroom_seeds: tuple[int, ...] | None = param(list(range(10)), "its seeds (None: seeds)")
    temperature: float = param(4.0, "the Hinton student's (the paper's noiseless baseline)")
    curve_sizes: tuple[int, ...] = param([40, 64, 100], "extra teacher sizes for the "
                                                        "accuracy-vs-size curve (trained as many "
                                                        "steps as the headroom setting's)")
    curve_seeds: tuple[int, ...] = param([0, 1], "and their seeds")
    batch_size: int = param(64, "minibatch size")
    lr: float = param(0.1, "learning rate")
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
        check_int("workers", self.workers, minimum=1)
        grid_runs(self)   # builds every configuration, so bad values fail here

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
            out.append(Setting(d, self.train_limit, self.sigma2s, self.seeds, False,
                               self.passes, self.batch_size))
            if self.headroom_size:
                out.append(Setting(d, self.headroom_size, self.headroom_sigma2s or self.sigma2s,
                                   self.headroom_seeds or self.seeds, True,
                                   self.headroom_passes, self.headroom_batch))
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


@dataclass(frozen=True)
class Setting:
    """A data set and the training images its runs use (``train_limit``; None: all of them),
    with its Gaussian noise levels, its seeds and its passes over the images per epoch.
    ``headroom``: the data-limited setting, else the full one."""
    dataset: str
    train_limit: int | None
    sigma2s: tuple[float, ...]
    seeds: tuple[int, ...]
    headroom: bool
    passes: int = 1
    batch_size: int = 64

    @property
    def name(self) -> str:
        """How cases and figures name the setting, e.g. ``digits, 150 images``."""
        size = "full data" if self.train_limit is None else f"{self.train_limit} images"
        return f"{self.dataset}, {size}"

    @property
    def role(self) -> str:
        return "headroom" if self.headroom else "full"


# The parameters every run of the grid takes from the chapter's as they are (train_limit and
# passes are the setting's).
_SHARED = tuple(f.name for f in fields(RunConfig)
                if f.name in Parameters.names()
                and f.name not in ("train_limit", "passes", "batch_size"))


def teacher_config(grid: Parameters, setting: Setting, seed: int) -> RunConfig:
    return RunConfig(dataset=setting.dataset, seed=seed, epochs=grid.teacher_epochs,
                     train_limit=setting.train_limit, passes=setting.passes,
                     batch_size=setting.batch_size, **{k: getattr(grid, k) for k in _SHARED})


def grid_levels(grid: Parameters, setting: Setting) -> list[tuple[str, float]]:
    return ([(Noise.NONE, 0.0)] + [(Noise.GAUSSIAN, s) for s in setting.sigma2s]
            + [(Noise.SYMMETRIC, p) for p in grid.ps] + [(CONTROL, p) for p in grid.ps]
            + [(HINTON, grid.temperature)])


def students_of(grid: Parameters, setting: Setting, teacher: RunConfig) -> list[RunConfig]:
    """The students of one teacher; with ``own_streams`` each draws a stream of its own."""
    return [_student_of_config(teacher, kind, level, epochs=grid.epochs_of_students,
                       stream=k if grid.own_streams else 0)
            for k, (kind, level) in enumerate(grid_levels(grid, setting))]


def curve_runs(grid: Parameters) -> list[RunConfig]:
    """The extra teachers of the accuracy-against-size curve (:func:`teacher_curve`): per data
    set, one per curve size and curve seed (with the headroom setting's passes), except those
    the grid trains anyway."""
    have = {(s.dataset, s.train_limit) for s in grid.settings}
    return [RunConfig(dataset=d, seed=s, epochs=grid.teacher_epochs, train_limit=n,
                      passes=grid.curve_passes(n), batch_size=grid.headroom_batch,
                      **{k: getattr(grid, k) for k in _SHARED})
            for d in grid.datasets for n in grid.curve_sizes if (d, n) not in have
            for s in grid.curve_seeds]


def grid_runs(grid: Parameters) -> list[RunConfig]:
    """Every run of the grid, teachers first (students need their teacher's final weights): the
    settings' teachers and the curve's, then per setting's teacher the noiseless student, one
    per σ² and one per p, one control per p, and the Hinton student."""
    teachers = [(s, teacher_config(grid, s, seed)) for s in grid.settings for seed in s.seeds]
    students = [c for s, t in teachers for c in students_of(grid, s, t)]
    return [t for _, t in teachers] + curve_runs(grid) + students
