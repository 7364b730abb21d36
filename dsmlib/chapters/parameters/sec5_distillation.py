"""Chapter ``sec5_distillation``'s parameters: noisy self-distillation (Section 5, Figures 1
and 2), and so the grid of its runs. They stand above the chapter's wing
(:mod:`dsmlib.chapters.sec5_distillation`), which reads them as its
:class:`~dsmlib.chapters.sec5_distillation.grid.GridParameters` and imports nothing of theirs."""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from ...foundation.checks import check_choice, check_int, check_positive, check_probability
from ...foundation.parameters import ChapterParameters, param
from ...models.sec5_distillation.dataset_specs import DATASETS, SPECS
from ...models.sec5_distillation.recipe import PAPER, chapter_fields
from ...models.sec5_distillation.run_config import CLUSTERS, RunConfig
from ..sec5_distillation.grid import Grid, Setting, build_grid

__all__ = ["RecipeParameters", "Parameters", "EXECUTION"]

# The parameters that say where runs live and how unfinished ones are trained: no number depends
# on them.
EXECUTION = ("runs_dir", "data_dir", "download", "train_missing", "cluster", "workers", "by_seed")


#: The recipe's parameters (SGD's learning rate and schedule, momentum, weight decay,
#: augmentation, precision), from its one declaration, with the paper's values
#: (:func:`dsmlib.models.sec5_distillation.recipe.chapter_fields`): a field added to the recipe is a parameter.
RecipeParameters = dataclasses.make_dataclass("RecipeParameters", chapter_fields(),
                                              bases=(ChapterParameters,), frozen=True)


@dataclass(frozen=True)
class Parameters(RecipeParameters):
    """The chapter's parameters (defaults: the ``quick`` profile), and so the grid of its runs:
    per setting and seed one teacher and its students (:attr:`grid`). Students train
    ``student_epochs`` (None: as long as their teacher, the paper's "same setting") with the
    teacher's other settings. The headroom setting (``headroom_size`` training images; 0 or
    None: the full data only) has its own passes, Gaussian levels and seeds (None: the full
    setting's). The last seven say where runs live and how unfinished ones are trained; they
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
    continued_teacher: bool = param(False, "each teacher also trained on as long as a student "
                                           "(hard labels, the students' schedule): the "
                                           "baseline of \"beats the teacher\" where teachers "
                                           "do not fit their training images")
    curve_sizes: tuple[int, ...] = param([40, 100], "extra teacher sizes for the "
                                                        "accuracy-vs-size curve (trained as many "
                                                        "steps as the headroom setting's)")
    curve_seeds: tuple[int, ...] = param([0, 1], "and their seeds")
    batch_size: int = param(PAPER.batch_size, "minibatch size")
    train_limit: int | None = param(None, "the full setting's training images (None: all; "
                                          "tiny runs)")
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
    by_seed: bool = param(False, "a reference trains its missing runs before its page, seed by "
                                 "seed, committing each seed's records (hours on a CPU: "
                                 "python -m dsmlib grid launch --by-seed --commit)")

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
        self.grid   # builds every configuration (once), so bad values fail here

    def _check_headroom_split(self) -> None:
        """``full_data`` false needs a headroom setting; ``headroom_val`` is a class-balanced
        split, so it and every size it splits beside are whole numbers of images per class,
        and it validates on at most a quarter as many images as train (the paper's 80/20 split)."""
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
        if 4 * v > self.headroom_size:
            raise ValueError(f"headroom_val (validation images) must be at most a quarter of "
                             f"headroom_size ({self.headroom_size // 4}: the paper's 80/20 "
                             f"split), got {v}")

    def grid_values(self) -> dict[str, Any]:
        """The values that decide the runs (all but where they live and how they are trained),
        as the results file's ``extra`` records them."""
        return {k: v for k, v in self.as_dict().items() if k not in EXECUTION}

    @functools.cached_property
    def grid(self) -> Grid:
        """The grid of runs, built once (:func:`~dsmlib.chapters.sec5_distillation.grid.build_grid`):
        its construction checks every run's configuration."""
        return build_grid(self)

    @staticmethod
    def machinery() -> Any:
        """The chapter's machinery for its runs, for the book's commands (which name no
        chapter): its wing's modules ``launch`` (check the data, launch, watch, collect),
        ``seed_runs`` (train seed by seed, committing each seed's records) and ``gpu_cost``
        (what the paper's grid costs), imported on first use (they import torch)."""
        from ..sec5_distillation import gpu_cost, launch, seed_runs
        return SimpleNamespace(launch=launch, seed_runs=seed_runs, gpu_cost=gpu_cost)

    def runs(self) -> list[RunConfig]:
        """Every run of the grid (:attr:`grid`): what ``python -m dsmlib grid`` launches."""
        return self.grid.runs

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
