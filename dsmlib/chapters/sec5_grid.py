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
from ..models.datasets import DATASETS
from ..models.run_config import RunConfig, student_of as _student_of_config
from ..models.step import Noise

__all__ = ["KINDS", "CONTROL", "HINTON", "DistillGrid", "Setting", "grid_from_parameters",
           "scope_note", "teacher_config", "grid_levels", "students_of", "curve_runs",
           "grid_runs"]

KINDS = {Noise.GAUSSIAN: "σ²", Noise.SYMMETRIC: "p"}   # the paper's noise kinds, and their level
CONTROL = Noise.CONTROL   # the swap's control: no noise, target E[y~] = M_p y (Eq. 24)
HINTON = Noise.HINTON     # the paper's noiseless student: softened cross-entropy, level = T


@dataclass(frozen=True)
class DistillGrid:
    """The runs of one profile. Students train ``student_epochs`` (None: as long as their
    teacher, the paper's "same setting") with the teacher's other settings. ``headroom_size``:
    the training images of the headroom setting (None or 0: the full data only), taken
    ``headroom_passes`` times per epoch, with the Gaussian
    levels ``headroom_sigma2s`` (None: ``sigma2s``) and the seeds ``headroom_seeds`` (None:
    ``seeds``); ``temperature``: the Hinton student's;
    ``passes``: the full setting's passes over its images per epoch;
    ``curve_sizes`` x ``curve_seeds``: extra teachers for the accuracy-against-size curve;
    ``own_streams``: every student its own batch stream (no lockstep, no common random
    numbers; a check of that choice)."""
    datasets: tuple[str, ...]
    depth: int
    teacher_epochs: int
    student_epochs: int | None
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
    n_train_eval: int | None = None
    passes: int = 1
    headroom_size: int | None = None
    headroom_passes: int = 1
    headroom_sigma2s: tuple[float, ...] | None = None
    headroom_seeds: tuple[int, ...] | None = None
    temperature: float = 4.0
    curve_sizes: tuple[int, ...] = ()
    curve_seeds: tuple[int, ...] = ()
    own_streams: bool = False

    @property
    def settings(self) -> list[Setting]:
        """Per data set, the full setting, then the headroom one (if any)."""
        out = []
        for d in self.datasets:
            out.append(Setting(d, self.train_limit, self.sigma2s, self.seeds, False,
                               self.passes))
            if self.headroom_size:
                out.append(Setting(d, self.headroom_size, self.headroom_sigma2s or self.sigma2s,
                                   self.headroom_seeds or self.seeds, True,
                                   self.headroom_passes))
        return out

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

    @property
    def name(self) -> str:
        """How cases and figures name the setting, e.g. ``digits, 150 images``."""
        size = "full data" if self.train_limit is None else f"{self.train_limit} images"
        return f"{self.dataset}, {size}"

    @property
    def role(self) -> str:
        return "headroom" if self.headroom else "full"


# The grid's single-valued settings (taken from the parameters by name), and those of them
# that every run of the grid shares with its RunConfig (train_limit is the setting's).
_LISTS = ("datasets", "sigma2s", "ps", "seeds", "headroom_sigma2s", "headroom_seeds",
          "curve_sizes", "curve_seeds")
_SCALARS = tuple(f.name for f in fields(DistillGrid) if f.name not in _LISTS)
_SHARED = tuple(k for k in _SCALARS if k in {f.name for f in fields(RunConfig)}
                and k not in ("train_limit", "passes"))


def _values(name: str, value: Any) -> tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list, got {value!r}")
    return tuple(value)


def _sigma2s(name: str, value: Any) -> tuple[float, ...]:
    return tuple(check_positive(f"{name} (Gaussian noise variances)", s)
                 for s in _values(name, value))


def _seeds(name: str, value: Any) -> tuple[int, ...]:
    seeds = tuple(check_int(name, s, minimum=0) for s in _values(name, value))
    if len(set(seeds)) < 2:
        raise ValueError(f"{name} must hold at least 2 distinct seeds (seeds are the unit of "
                         f"every interval), got {list(value)}")
    return seeds


def grid_from_parameters(p: dict[str, Any]) -> DistillGrid:
    """The grid from the notebook's parameters (the same names), checked: every message
    names the notebook's parameter."""
    seeds = _seeds("seeds", p["seeds"])
    datasets = tuple(check_choice("datasets", d, DATASETS)
                     for d in _values("datasets", p["datasets"]))
    if not datasets:
        raise ValueError("datasets must not be empty")
    sigma2s = _sigma2s("sigma2s", p["sigma2s"])
    ps = tuple(check_probability("ps (swap probabilities)", q) for q in _values("ps", p["ps"]))
    if 0.0 in ps:
        raise ValueError("ps (swap probabilities) must be > 0: the noiseless student is always "
                         "in the grid")
    lists: dict[str, Any] = {}
    if p.get("headroom_sigma2s") is not None:
        lists["headroom_sigma2s"] = _sigma2s("headroom_sigma2s", p["headroom_sigma2s"])
    if p.get("headroom_seeds") is not None:
        lists["headroom_seeds"] = _seeds("headroom_seeds", p["headroom_seeds"])
    if p.get("curve_sizes") is not None:
        lists["curve_sizes"] = tuple(check_int("curve_sizes (training images)", n)
                                     for n in _values("curve_sizes", p["curve_sizes"]))
    if p.get("curve_seeds") is not None:
        lists["curve_seeds"] = tuple(check_int("curve_seeds", s, minimum=0)
                                     for s in _values("curve_seeds", p["curve_seeds"]))
    if lists.get("curve_sizes") and not lists.get("curve_seeds"):
        raise ValueError("curve_seeds must not be empty when curve_sizes is not")
    grid = DistillGrid(datasets=datasets, sigma2s=sigma2s, ps=ps, seeds=seeds, **lists,
                       **{k: p[k] for k in _SCALARS if k in p})
    if grid.student_epochs is not None:
        check_int("student_epochs", grid.student_epochs, minimum=1)
    check_positive("temperature (of the Hinton student)", grid.temperature)
    check_int("passes", grid.passes, minimum=1)
    check_int("headroom_passes", grid.headroom_passes, minimum=1)
    smallest = max(grid.batch_size, grid.n_gradnorm)   # a batch, and G's subsample
    for n in grid.curve_sizes:
        check_int("curve_sizes (training images)", n, minimum=smallest)
    if grid.headroom_size is not None and grid.headroom_size != 0:
        n = check_int("headroom_size (training images; 0: none)", grid.headroom_size,
                      minimum=smallest)
        if grid.train_limit is not None and n >= grid.train_limit:
            raise ValueError(f"headroom_size (training images) must be below train_limit "
                             f"({grid.train_limit}), got {n}")
    grid_runs(grid)   # builds every configuration, so bad values fail here, before training
    return grid


def scope_note(grid: DistillGrid) -> str:
    """What the verdicts describe: the settings, model and budget actually measured."""
    sizes = f"{grid.image_size}x{grid.image_size} pixels" if grid.image_size else "native size"
    passes = {s.passes for s in grid.settings}
    each = "" if passes == {1} else " of " + "/".join(str(s.passes) for s in grid.settings) + \
        " passes"
    settings = "; ".join(f"{s.name} ({len(s.seeds)} seeds)" for s in grid.settings)
    text = (f"Measured on {settings} ({sizes}) with ResNet-{grid.depth}, teachers "
            f"{grid.teacher_epochs} and students {grid.epochs_of_students} epochs{each}; the "
            "students' quadratic loss is per logit (2/L times Eq. 13's gradient).")
    if "digits" in grid.datasets:
        text += " The digits verdicts describe digits, not CIFAR or SVHN."
    return text + (" Every departure from the paper's Section 5 is listed on the page, under "
                   "'What this chapter does not measure'.")


def teacher_config(grid: DistillGrid, setting: Setting, seed: int) -> RunConfig:
    return RunConfig(dataset=setting.dataset, seed=seed, epochs=grid.teacher_epochs,
                     train_limit=setting.train_limit, passes=setting.passes,
                     **{k: getattr(grid, k) for k in _SHARED})


def grid_levels(grid: DistillGrid, setting: Setting) -> list[tuple[str, float]]:
    return ([(Noise.NONE, 0.0)] + [(Noise.GAUSSIAN, s) for s in setting.sigma2s]
            + [(Noise.SYMMETRIC, p) for p in grid.ps] + [(CONTROL, p) for p in grid.ps]
            + [(HINTON, grid.temperature)])


def students_of(grid: DistillGrid, setting: Setting, teacher: RunConfig) -> list[RunConfig]:
    """The students of one teacher; with ``own_streams`` each draws a stream of its own."""
    return [_student_of_config(teacher, kind, level, epochs=grid.epochs_of_students,
                       stream=k if grid.own_streams else 0)
            for k, (kind, level) in enumerate(grid_levels(grid, setting))]


def curve_runs(grid: DistillGrid) -> list[RunConfig]:
    """The extra teachers of the accuracy-against-size curve (:func:`teacher_curve`): per data
    set, one per curve size and curve seed (with the headroom setting's passes), except those
    the grid trains anyway."""
    have = {(s.dataset, s.train_limit) for s in grid.settings}
    return [RunConfig(dataset=d, seed=s, epochs=grid.teacher_epochs, train_limit=n,
                      passes=grid.headroom_passes, **{k: getattr(grid, k) for k in _SHARED})
            for d in grid.datasets for n in grid.curve_sizes if (d, n) not in have
            for s in grid.curve_seeds]


def grid_runs(grid: DistillGrid) -> list[RunConfig]:
    """Every run of the grid, teachers first (students need their teacher's final weights): the
    settings' teachers and the curve's, then per setting's teacher the noiseless student, one
    per σ² and one per p, one control per p, and the Hinton student."""
    teachers = [(s, teacher_config(grid, s, seed)) for s in grid.settings for seed in s.seeds]
    students = [c for s, t in teachers for c in students_of(grid, s, t)]
    return [t for _, t in teachers] + curve_runs(grid) + students
