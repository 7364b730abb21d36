"""Chapter ``sec5_distillation``: noisy self-distillation (Section 5, Figures 1 and 2), its grid
of runs and the summaries the figures plot; the claims are in :mod:`dsmlib.chapters.sec5_claims`.

A grid is, per **setting** and seed, one teacher (ResNet, cross-entropy) and its students: the
noiseless one, one per noise kind and level, per swap probability ``p`` a **control** (a student
trained without noise on the swap's mean target ``E[y~] = M_p y``, Eq. 24, which shrinks every
logit vector towards its mean by ``kappa = 1 - pL/(L-1)``, :func:`shrinkage`), and the noiseless
student of Hinton et al. (temperature-softened cross-entropy, the paper's baseline). A noisy
student is judged against the student trained noiselessly on its noise's mean target: the control
for the swap, the noiseless student for Gaussian noise (``E[y~] = y``), so no extra run is needed
there (:meth:`DistillResults.control`).

A setting is a data set with a training-set size (:class:`Setting`): the **full** data, and,
where the grid asks for it, a **headroom** setting that trains teachers and students on a subset
of the training images (validation and test sets unchanged), so that a teacher below its ceiling
leaves its students something to gain. Its size is chosen from the teachers' test accuracy
against the training-set size (:func:`teacher_curve`), which the grid also measures.

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

from ..foundation.checks import (check_choice, check_int, check_positive, check_probability)
from ..foundation.claims import CONFIDENCE, interval, verdict
from ..foundation.power import POWER, units_to_decide
from ..models.datasets import DATASETS
from ..models.run_config import RunConfig, student_of
from ..models.runs import RunRecord

__all__ = ["KINDS", "CONTROL", "HINTON", "TARGET_ACCURACY", "DistillGrid", "Setting",
           "grid_from_parameters", "scope_note", "grid_runs", "curve_runs", "Cell",
           "DistillResults", "METRICS", "summarise", "selected_levels", "selected_test_acc",
           "shrinkage", "shrinkage_rows", "noise_rows", "noise_lines", "teacher_curve", "curve_lines",
           "accuracy_headroom", "setting_of", "seeds_to_decide"]

KINDS = {"gaussian": "σ²", "symmetric": "p"}   # the noise kinds of the paper, and their level
CONTROL = "symmetric_mean"   # the swap's control: no noise, target E[y~] = M_p y (Eq. 24)
HINTON = "hinton"            # the paper's noiseless student: softened cross-entropy, level = T
# The headroom setting's target: a teacher test accuracy in this range (issue 30), read off the
# curve of teacher accuracy against training-set size (:func:`teacher_curve`).
TARGET_ACCURACY = (0.85, 0.93)


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
    return text


def _teacher(grid: DistillGrid, setting: Setting, seed: int) -> RunConfig:
    return RunConfig(dataset=setting.dataset, seed=seed, epochs=grid.teacher_epochs,
                     train_limit=setting.train_limit, passes=setting.passes,
                     **{k: getattr(grid, k) for k in _SHARED})


def _levels(grid: DistillGrid, setting: Setting) -> list[tuple[str, float]]:
    return ([("none", 0.0)] + [("gaussian", s) for s in setting.sigma2s]
            + [("symmetric", p) for p in grid.ps] + [(CONTROL, p) for p in grid.ps]
            + [(HINTON, grid.temperature)])


def _students(grid: DistillGrid, setting: Setting, teacher: RunConfig) -> list[RunConfig]:
    """The students of one teacher; with ``own_streams`` each draws a stream of its own."""
    return [student_of(teacher, kind, level, epochs=grid.epochs_of_students,
                       stream=k if grid.own_streams else 0)
            for k, (kind, level) in enumerate(_levels(grid, setting))]


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
    teachers = [(s, _teacher(grid, s, seed)) for s in grid.settings for seed in s.seeds]
    students = [c for s, t in teachers for c in _students(grid, s, t)]
    return [t for _, t in teachers] + curve_runs(grid) + students


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

    @property
    def name(self) -> str:
        if self.role == "teacher":
            return "teacher"
        if self.kind == CONTROL:
            return f"control of p = {self.level:g}"
        if self.kind == HINTON:
            return f"Hinton student (T = {self.level:g})"
        return "noiseless student" if self.kind == "none" else f"{KINDS[self.kind]} = {self.level:g}"


@dataclass
class DistillResults:
    grid: DistillGrid
    cells: list[Cell]
    curve: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def settings(self) -> list[str]:
        """The settings' names, in the grid's order."""
        return [s.name for s in self.grid.settings]

    def setting(self, name: str) -> Setting:
        return next(s for s in self.grid.settings if s.name == name)

    def teacher(self, setting: str) -> Cell:
        return next(c for c in self.cells if c.setting == setting and c.role == "teacher")

    def noiseless(self, setting: str) -> Cell:
        return next(c for c in self.cells if c.setting == setting and c.role == "student"
                    and c.kind == "none")

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
            raise ValueError(f"cell must be a noisy student (kind in {list(KINDS)}), got {cell.name!r}")
        if cell.kind == "gaussian":
            return self.noiseless(cell.setting)
        return next(c for c in self.cells if c.setting == cell.setting and c.kind == CONTROL
                    and c.level == cell.level)


METRICS = ("train_loss", "val_loss", "val_acc", "test_acc", "train_acc", "gradnorm",
           "gradnorm_se", "train_objective", "loss_scale", "logit_var", "noise_var", "train_s",
           "eval_s", "gradnorm_s")


def _cell(setting: str, role: str, kind: str, level: float, seeds: Sequence[int],
          hist: list[list[dict[str, Any]]]) -> Cell:
    cell = Cell(setting, role, kind, level, np.array(seeds))
    for m in METRICS:
        curves = np.array([[np.nan if row.get(m) is None else row[m] for row in h] for h in hist],
                          dtype=float)
        cell.curves[m], cell.final[m] = curves, curves[:, -1]
    return cell


def summarise(grid: DistillGrid, records: Sequence[RunRecord]) -> DistillResults:
    """Arrange finished records by cell and seed (every run of the grid must be finished), and
    the teachers' test accuracy by training-set size (:func:`teacher_curve`)."""
    by_key = {r.config.key(): r for r in records}
    missing = [c.label() for c in grid_runs(grid) if c.key() not in by_key or not by_key[c.key()].done]
    if missing:
        raise ValueError(f"{len(missing)} run(s) of the grid are not finished, e.g. {missing[:3]}")
    cells = []
    for s in grid.settings:
        teachers = [_teacher(grid, s, seed) for seed in s.seeds]
        groups = [("teacher", "none", 0.0, teachers)] + [
            ("student", kind, level, [c for t in teachers for c in _students(grid, s, t)
                                      if (c.noise, c.level) == (kind, level)])
            for kind, level in _levels(grid, s)]
        for role, kind, level, configs in groups:
            cells.append(_cell(s.name, role, kind, level, s.seeds,
                               [by_key[c.key()].history for c in configs]))
    return DistillResults(grid, cells, curve=_curve(grid, by_key))


def _curve(grid: DistillGrid, by_key: dict[str, RunRecord]) -> list[dict[str, Any]]:
    """Per data set and training-set size, the teachers' final test accuracy over their seeds
    (the settings' teachers over the grid's seeds, the curve's over the curve's seeds)."""
    rows = []
    for d in grid.datasets:
        configs: dict[int | None, list[RunConfig]] = {}
        for c in [t for s in grid.settings if s.dataset == d
                  for t in (_teacher(grid, s, seed) for seed in s.seeds)] + \
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


def teacher_curve(res: DistillResults) -> list[dict[str, Any]]:
    """The teachers' test accuracy against the training-set size, per data set: the mean over
    seeds with its Student-t interval at the ledger's level (one seed: no interval), the mean
    training accuracy (a teacher that fits its images is data-limited, not step-limited), and
    whether the mean lies in :data:`TARGET_ACCURACY`."""
    out = []
    for r in res.curve:
        acc = r["test_acc"]
        mean = float(acc.mean())
        iv = (interval(mean, float(acc.std(ddof=1) / math.sqrt(acc.size)), dof=acc.size - 1)
              if acc.size > 1 else [math.nan, math.nan])
        out.append(dict(dataset=r["dataset"], n_train=r["n_train"], train_limit=r["train_limit"],
                        seeds=r["seeds"], mean=mean, interval=iv, setting=r["setting"],
                        train_acc=float(r["train_acc"].mean()),
                        in_target=TARGET_ACCURACY[0] <= mean <= TARGET_ACCURACY[1]))
    return out


def curve_lines(res: DistillResults) -> list[str]:
    """What the curve says about the grid's settings, per data set: each setting's teachers
    (mean test accuracy, interval, training accuracy) and whether the headroom setting's lie in
    :data:`TARGET_ACCURACY` -- said plainly when they do not."""
    lo, hi = (100 * a for a in TARGET_ACCURACY)
    lines = []
    for r in teacher_curve(res):
        if r["setting"] is None:
            continue
        a, b = (100 * v for v in r["interval"])
        text = (f"{r['dataset']}, {r['setting']} setting ({r['n_train']:,} training images, "
                f"{r['seeds']} seeds): the teachers reach {100 * r['mean']:.2f} % test accuracy "
                f"[{a:.2f}, {b:.2f}] and {100 * r['train_acc']:.1f} % on their training images")
        if r["setting"] == "headroom":
            text += (f"; inside the target of {lo:g}–{hi:g} %." if r["in_target"] else
                     f"; OUTSIDE the target of {lo:g}–{hi:g} %: choose another headroom_size "
                     "from the curve.")
        else:
            text += f", {100 * (1 - r['mean']):.2f} points from a perfect score."
        lines.append(text)
    return lines


def selected_levels(res: DistillResults, setting: str) -> dict[str, Cell]:
    """Figure 2's cells: per noise kind, the level with the best mean validation accuracy
    (ties: the lower mean validation loss)."""
    out = {"none": res.noiseless(setting)}
    for kind in KINDS:
        cells = res.noisy(setting, kind)
        if cells:
            out[kind] = max(cells, key=lambda c: (c.final["val_acc"].mean(), -c.final["val_loss"].mean()))
    return out


def selected_test_acc(res: DistillResults, setting: str) -> np.ndarray:
    """Per seed, the test accuracy of the noisy student (any kind, any level) with the best
    validation accuracy of that seed; ties are averaged (random tie-breaking, in expectation)."""
    cells = [c for k in KINDS for c in res.noisy(setting, k)]
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
    """Per setting and p: ``kappa^2`` beside the measured G of the swap student and of its
    control, each relative to the noiseless student (geometric means over seeds)."""
    rows = []
    for s in res.grid.settings:
        n_classes = _teacher(res.grid, s, s.seeds[0]).num_classes
        log_ref = np.log(res.noiseless(s.name).final["gradnorm"])
        for cell in res.noisy(s.name, "symmetric"):
            ratio = {k: float(np.exp((np.log(c.final["gradnorm"]) - log_ref).mean()))
                     for k, c in (("swap", cell), ("control", res.control(cell)))}
            rows.append(dict(setting=s.name, p=cell.level,
                             kappa2=shrinkage(cell.level, n_classes) ** 2,
                             swap=ratio["swap"], control=ratio["control"]))
    return rows


def noise_rows(res: DistillResults) -> list[dict[str, Any]]:
    """The noise in the teacher's logit units, per setting and noisy level: the teachers' logit
    scale ``s^2`` (the variance of a logit vector about its own mean, on the training images;
    mean over seeds), the noise's variance per logit around its mean target (``sigma^2``, or
    the swap's, which depends on the logits) and their ratio (mean over seeds of the per-seed
    ratio), with the student's mean test accuracy beside its teacher's."""
    rows = []
    for s in res.settings:
        teacher_acc = float(res.teacher(s).final["test_acc"].mean())
        for kind in KINDS:
            for c in res.noisy(s, kind):
                lv, nv = c.final["logit_var"], c.final["noise_var"]
                rows.append(dict(setting=s, kind=kind, level=c.level, name=c.name,
                                 logit_var=float(lv.mean()), noise_var=float(nv.mean()),
                                 ratio=float((nv / lv).mean()),
                                 test_acc=float(c.final["test_acc"].mean()),
                                 teacher_acc=teacher_acc))
    return rows


def noise_lines(res: DistillResults) -> list[str]:
    """Per setting, the teachers' logit scale and the range its Gaussian levels span in those
    units (:func:`noise_rows`), and, per data set with a headroom setting, the ratio of the two
    settings' scales: the factor by which the headroom grid's σ² should differ from the full
    one's for the same noise in the teacher's units."""
    rows = noise_rows(res)
    lines, scale = [], {}
    for s in res.grid.settings:
        g = [r for r in rows if r["setting"] == s.name and r["kind"] == "gaussian"]
        if not g:
            continue
        scale[s.name] = g[0]["logit_var"]
        levels = ", ".join(f"{r['level']:g}" for r in g)
        lines.append(f"{s.name}: the teachers' logit scale is s² = {g[0]['logit_var']:.3g}; its "
                     f"σ² grid ({levels}) spans {g[0]['ratio']:.3g} to {g[-1]['ratio']:.3g} in "
                     "those units.")
    for d in res.grid.datasets:
        full = next((s for s in res.grid.settings if s.dataset == d and not s.headroom), None)
        head = next((s for s in res.grid.settings if s.dataset == d and s.headroom), None)
        if full and head and full.name in scale and head.name in scale:
            lines.append(f"{d}: the headroom teachers' logit scale is "
                         f"{scale[head.name] / scale[full.name]:.2f} times the full data's, so "
                         "the same noise in the teachers' units takes σ² that much smaller.")
    return lines


def accuracy_headroom(res: DistillResults, claims: Sequence[Any]) -> list[str]:
    """Why the accuracy claims can stay undecided, per setting: the teachers' mean test
    accuracy, the headroom it leaves a student, the smallest useful gain the verdicts use, and
    the half-width of the ledger's interval of the gain of the validation-selected noisy student
    over its teacher (the case of ``fig1.noisy_beats_teacher`` among ``claims``)."""
    claim = next(c for c in claims if c.id == "fig1.noisy_beats_teacher")
    lines = []
    for s in res.settings:
        acc = float(res.teacher(s).final["test_acc"].mean())
        row = next(x for x in claim.details if x["case"] == s)
        lo, hi = row["interval"]
        half, room = (hi - lo) / 2, 1.0 - acc
        verdict_text = ("so even a student that closed the whole gap would stay unconfirmed at "
                        f"this spread with {len(res.setting(s).seeds)} seeds" if half >= room else
                        "so a gain as large as the headroom could be resolved")
        delta = row.get("delta")
        smallest = ("" if delta is None else
                    f"; the smallest useful gain is δ = {100 * delta:.2f} points")
        lines.append(f"{s}: the teachers reach {100 * acc:.2f} % test accuracy on average, "
                     f"leaving {100 * room:.2f} points to gain{smallest}; the "
                     f"{100 * CONFIDENCE:g} % interval of the selected student's gain is "
                     f"±{100 * half:.2f} points wide, {verdict_text}.")
    return lines


def setting_of(case: str, settings: Sequence[str]) -> str:
    """The setting a case belongs to: cases are named ``<setting>`` or ``<setting>: ...``."""
    for s in sorted(settings, key=len, reverse=True):
        if case == s or case.startswith(f"{s}:"):
            return s
    raise ValueError(f"case {case!r} names none of the settings {list(settings)}")


def _planning_band(d: dict[str, Any]) -> Any:
    """The band edge a case's verdict would be reached at with many seeds: for a gain judged
    against its smallest useful size ``delta`` (:func:`dsmlib.foundation.claims.gain_verdict`),
    0 (confirmation) when the measured gain reaches ``delta``, else ``delta`` (refutation)."""
    if d.get("delta") is None:
        return d["band"]
    return (0.0, None) if d["measured"] >= d["delta"] else (d["delta"], None)


def seeds_to_decide(res: DistillResults, claims: Sequence[Any], *, power: float = POWER,
                    every: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every undecided case of ``claims``, and every case of the claims in ``every`` (decided or
    not): its measured value, the half-width of its interval and the seeds that would decide it
    with probability ``power``, were the measured value and the seeds' spread the truth
    (:func:`dsmlib.foundation.power.units_to_decide`; None: more than ``MAX_UNITS``, or a value
    on the band's edge), and the verdict they would reach (``towards``: for a gain with a
    smallest useful size ``delta``, confirmed if the value reaches ``delta``, else refuted;
    otherwise confirmed if the value lies in the band, else refuted). A planning figure, not
    evidence."""
    rows = []
    for c in claims:
        if c.verdict != "inconclusive" and c.id not in every:
            continue
        for d in c.details:
            if d.get("se") is None or (d.get("verdict") != "inconclusive" and c.id not in every):
                continue
            n = len(res.setting(setting_of(d["case"], res.settings)).seeds)
            lo, hi = d["interval"]
            band = _planning_band(d)
            rows.append(dict(claim=c.id, case=d["case"], measured=d["measured"],
                             half_width=(hi - lo) / 2, verdict=d["verdict"],
                             delta=d.get("delta"),
                             towards=verdict([d["measured"]] * 2,
                                             d["band"] if d.get("delta") is None
                                             else (d["delta"], None)),
                             seeds=units_to_decide(d["measured"], d["se"], d["interval"], band,
                                                   n, power=power)))
    return rows
