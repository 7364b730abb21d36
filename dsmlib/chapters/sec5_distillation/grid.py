"""The grid of Section 5's runs (chapter ``sec5_distillation``): every run's configuration,
built from the chapter's parameters, which the wing reads as :class:`GridParameters` (the
chapter declares them above the wing, in :mod:`dsmlib.chapters.parameters.sec5_distillation`,
and builds their grid here, once). Per **setting** (a data set with a training-set size: the
full data and, where asked for, a data-limited **headroom** setting) and seed, one teacher and
its students: the noiseless one, one per noise kind and level, a control per swap probability
(no noise, target ``E[y~] = M_p y``, Eq. 24), the Hinton student and, where asked for, the
continued teacher (its own labels, from its final weights, as long as a student); and the
extra teachers of the curve of teacher accuracy against training-set size. Students train as
long as their teacher unless the parameters say otherwise (the paper's "same setting").
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Protocol, runtime_checkable

from ...models.sec5_distillation.recipe import PAPER
from ...models.sec5_distillation.run_config import Noise, RunConfig
from ...models.sec5_distillation.run_config import student_of as _student_of_config

__all__ = ["KINDS", "Setting", "GridParameters", "teacher_config", "grid_levels",
           "students_of", "curve_runs", "Grid", "build_grid", "grid_runs"]

KINDS = {Noise.GAUSSIAN: "σ²", Noise.SYMMETRIC: "p"}   # the paper's noise kinds, and their level


@dataclass(frozen=True)
class Setting:
    """A data set and the training images its runs use (``train_limit``; None: all of them),
    with its Gaussian noise levels, its seeds, its passes over the images per epoch and its
    minibatch size. ``headroom``: the data-limited setting, else the full one. ``val_images``:
    None, the data set's fixed 20 % validates; a number, a class-balanced pool of
    ``train_limit + val_images`` images is split into the two (a paper-like proportion)."""
    dataset: str
    train_limit: int | None
    sigma2s: tuple[float, ...]
    seeds: tuple[int, ...]
    headroom: bool
    passes: int = PAPER.passes
    batch_size: int = PAPER.batch_size
    val_images: int | None = None

    @property
    def split(self) -> dict[str, Any]:
        """The split's fields of its runs' configurations (none at recipe 2's 80/20)."""
        if self.val_images is None:
            return {}
        pool = self.train_limit + self.val_images
        return {"pool": pool, "val_fraction": self.val_images / pool}

    @property
    def name(self) -> str:
        """How cases and figures name the setting, e.g. ``digits, 150 images``."""
        size = "full data" if self.train_limit is None else f"{self.train_limit} images"
        return f"{self.dataset}, {size}"

    @property
    def role(self) -> str:
        return "headroom" if self.headroom else "full"


@runtime_checkable
class GridParameters(Protocol):
    """What the wing reads from its chapter's parameters, and nothing more: the values that
    decide the grid's runs, the run fields the page states (network, measurement, recipe,
    where the runs live), and the grid built from them once (:attr:`grid`, by
    :func:`build_grid`, which reads all but it). Every function of the wing that takes the
    chapter's parameters takes one of these; the chapter's ``Parameters`` are one, declared
    above the wing, and the page hands them down (``summarise(P, records)``)."""
    # the settings, their students and the curve's teachers
    datasets: tuple[str, ...]
    seeds: tuple[int, ...]
    ps: tuple[float, ...]
    temperature: float
    continued_teacher: bool
    own_streams: bool
    teacher_epochs: int
    passes: int
    headroom_size: int | None
    headroom_val: int | None
    curve_sizes: tuple[int, ...]
    curve_seeds: tuple[int, ...]
    # what every run shares, as the page states it
    depth: int
    image_size: int | None
    n_gradnorm: int
    gradnorm_probes: int
    n_train_eval: int | None
    lr: float
    lr_drops: tuple[float, ...]
    lr_drop_factor: float
    momentum: float
    weight_decay: float
    augment: bool
    runs_dir: str

    @property
    def settings(self) -> list[Setting]:
        """Per data set, the full setting, then the headroom one (if any)."""

    @property
    def headroom_batch(self) -> int:
        """The headroom setting's (and the curve's) minibatch size."""

    @property
    def epochs_of_students(self) -> int:
        """The epochs of every student: its teacher's, unless the parameters say otherwise."""

    @property
    def grid(self) -> Grid:
        """The grid of runs, built once (:func:`build_grid`)."""

    def curve_passes(self, n: int) -> int:
        """Passes per epoch of a curve teacher on ``n`` images."""

    def names(self) -> tuple[str, ...]:
        """The names of the parameters: a :class:`RunConfig` field among them is every run's
        value of it (:func:`teacher_config`)."""


def _shared(grid: GridParameters) -> dict[str, Any]:
    """The values every run of the grid takes from the chapter's parameters as they are
    (train_limit, passes and batch_size are the setting's)."""
    return {f.name: getattr(grid, f.name) for f in fields(RunConfig)
            if f.name in grid.names() and f.name not in ("train_limit", "passes", "batch_size",
                                                         "pool", "val_fraction")}


def teacher_config(grid: GridParameters, setting: Setting, seed: int) -> RunConfig:
    return RunConfig(dataset=setting.dataset, seed=seed, epochs=grid.teacher_epochs,
                     train_limit=setting.train_limit, passes=setting.passes,
                     batch_size=setting.batch_size, **setting.split, **_shared(grid))


def grid_levels(grid: GridParameters, setting: Setting) -> list[tuple[str, float]]:
    """The students of a teacher, as (kind, level): the noiseless one, each σ² and p, each
    p's control, the Hinton student and, where the grid asks for it, the continued teacher."""
    return ([(Noise.NONE, 0.0)] + [(Noise.GAUSSIAN, s) for s in setting.sigma2s]
            + [(Noise.SYMMETRIC, p) for p in grid.ps] + [(Noise.CONTROL, p) for p in grid.ps]
            + [(Noise.HINTON, grid.temperature)]
            + ([(Noise.CONTINUED, 0.0)] if grid.continued_teacher else []))


def students_of(grid: GridParameters, setting: Setting, teacher: RunConfig) -> list[RunConfig]:
    """The students of one teacher; with ``own_streams`` each draws a stream of its own."""
    return [_student_of_config(teacher, kind, level, epochs=grid.epochs_of_students,
                       stream=k if grid.own_streams else 0)
            for k, (kind, level) in enumerate(grid_levels(grid, setting))]


def curve_runs(grid: GridParameters) -> list[RunConfig]:
    """The extra teachers of the accuracy-against-size curve (:func:`teacher_curve`): per data
    set, one per curve size and curve seed (with the headroom setting's batch size, and passes
    that make as many SGD steps as a headroom teacher takes), except those the grid trains
    anyway."""
    have = {(s.dataset, s.train_limit) for s in grid.settings}
    split = (lambda n: {} if grid.headroom_val is None else     # noqa: E731
             {"pool": n + grid.headroom_val, "val_fraction": grid.headroom_val / (n + grid.headroom_val)})
    return [RunConfig(dataset=d, seed=s, epochs=grid.teacher_epochs, train_limit=n,
                      passes=grid.curve_passes(n), batch_size=grid.headroom_batch,
                      **split(n), **_shared(grid))
            for d in grid.datasets for n in grid.curve_sizes if (d, n) not in have
            for s in grid.curve_seeds]


@dataclass(frozen=True)
class Grid:
    """Every run of the grid, built once (:func:`build_grid`): per setting and seed its
    teacher and that teacher's students, and the curve's extra teachers."""
    seeds: dict[tuple[str, int], tuple[RunConfig, tuple[RunConfig, ...]]]
    curve: tuple[RunConfig, ...]

    @property
    def runs(self) -> list[RunConfig]:
        """Teachers first (students need their teacher's final weights): the settings'
        teachers and the curve's, then every teacher's students."""
        teachers = [t for t, _ in self.seeds.values()]
        return teachers + list(self.curve) + [c for _, st in self.seeds.values() for c in st]

    def teacher(self, setting: str, seed: int) -> RunConfig:
        return self.seeds[setting, seed][0]

    def students(self, setting: str, seed: int) -> tuple[RunConfig, ...]:
        return self.seeds[setting, seed][1]


def build_grid(grid: GridParameters) -> Grid:
    """The grid of runs of the chapter's parameters ``grid`` (all of them but their own
    :attr:`~GridParameters.grid`): per setting's teacher the noiseless student, one per σ² and
    one per p, one control per p, the Hinton student (and the continued teacher where asked
    for), and the curve's teachers."""
    seeds = {}
    for s in grid.settings:
        for seed in s.seeds:
            t = teacher_config(grid, s, seed)
            seeds[s.name, seed] = (t, tuple(students_of(grid, s, t)))
    return Grid(seeds, tuple(curve_runs(grid)))


def grid_runs(grid: GridParameters) -> list[RunConfig]:
    """Every run of the grid, teachers first (:attr:`Grid.runs` of :func:`build_grid`)."""
    return build_grid(grid).runs
