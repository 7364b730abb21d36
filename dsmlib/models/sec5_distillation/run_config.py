"""The configuration of one training run of Section 5 (models layer): a teacher, or a student
distilled from a teacher with a noise kind (:class:`Noise`) and level. A configuration is the
run's identity: :meth:`RunConfig.key` hashes every field (a student's includes its teacher's),
so a run directory, a checkpoint and a result always belong to exactly one configuration.

How a run trains is its recipe (:class:`dsmlib.models.sec5_distillation.recipe.Recipe`, whose fields a
configuration inherits: declared once there, with the paper's values). Execution options that
do not change what is computed (device, progress bars, threads, determinism, how many runs
train together) are deliberately not fields. A configuration's other defaults are Section 5's
chapter's, but for ``n_train_eval``, whose None (every training image) the chapter narrows.

Fields that came after the runs of recipe 2 were keyed (:data:`LEFT_OUT_OF_KEY`: the
schedule's, and the class-balanced pool's) are left out of the key at the values those runs
trained with, so that the runs trained before keep their keys; a run's ``config.json`` records
every field (:meth:`RunConfig.to_dict`), and :meth:`RunConfig.from_dict` reads the older records
that left them out. The recipe's version, :attr:`RunConfig.recipe_version`, is ``"recipe"`` in
both, as it has been since the first run was keyed.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields, replace
from enum import StrEnum
from typing import Any

from ...foundation.checks import check_choice, check_int, check_positive, check_probability
from .dataset_specs import DATASETS, SPECS
from .recipe import FIXED_IN_CODE, Recipe

__all__ = ["Noise", "NOISE_KINDS", "ROLES", "MAX_SIGMA2", "MAX_TEMPERATURE", "RECIPE",
           "LEFT_OUT_OF_KEY", "RECORDED_AS", "CLUSTERS", "RunConfig", "student_of"]


class Noise(StrEnum):
    """What a student regresses on (Sec. 5.2), with its ``level``: the one registry of the noise
    kinds' names (members are the strings, so configurations and results keep plain names)."""
    NONE = "none"                # the teacher's logits: the noiseless student (level 0)
    GAUSSIAN = "gaussian"        # plus N(0, sigma^2 I_L) per logit (level sigma^2)
    SYMMETRIC = "symmetric"      # copy-swapped with probability p (level p)
    CONTROL = "symmetric_mean"   # the swap's mean M_p t (Eq. 24), drawn from nothing (level p)
    HINTON = "hinton"            # the logits, softened cross-entropy at temperature level T
    CONTINUED = "continued"      # the labels: the teacher trained on, as long as a student (level 0)


NOISE_KINDS = tuple(k.value for k in Noise)

ROLES = ("teacher", "student")
MAX_SIGMA2 = 1e4   # beyond this the logits drown; a larger value is a typo
MAX_TEMPERATURE = 1e3   # Hinton et al. use 1-20; beyond this the softmax is flat
#: Where a grid's runs can train (:func:`dsmlib.chapters.sec5_distillation.launch.launch`): worker processes on this
#: machine, this process, or SLURM jobs. Not a field: it changes no number.
CLUSTERS = ("local", "debug", "slurm")
# The version of the recipe this code trains with. 2: input statistics from the training images
# alone, and students draw a batch stream of their own instead of replaying their teacher's. A
# run of another version cannot be reproduced here, and its key differs (the field is hashed).
RECIPE = 2
#: Every field a run's key leaves out at the value given: those that recipe 2 fixed in code
#: before they were fields, at the values it fixed -- the learning rate divided by 10 at 50 %
#: and 75 % of the epochs (:data:`dsmlib.models.sec5_distillation.recipe.FIXED_IN_CODE`), and the
#: split of the official training set into 80 % training and 20 % validation (no class-balanced
#: pool).
LEFT_OUT_OF_KEY: dict[str, Any] = {**FIXED_IN_CODE, "pool": None, "val_fraction": 0.2}
#: The name a field has in ``config.json`` and in the key where it is not the attribute's.
RECORDED_AS = {"recipe_version": "recipe"}


@dataclass(frozen=True, kw_only=True)
class RunConfig(Recipe):
    """Everything that determines a run's numbers: its recipe (:class:`Recipe`'s fields: epochs,
    passes, batch, SGD's learning rate and schedule, momentum, weight decay, augmentation,
    precision) and what follows.

    ``role="teacher"``: cross-entropy on the labels. ``role="student"``: initialised from
    ``teacher`` (its final weights) and regressing, with the quadratic loss, on the teacher's
    logits plus noise redrawn at every iteration: ``noise="gaussian"`` with variance
    ``level = sigma^2`` per logit, ``"symmetric"`` with swap probability ``level = p``
    (Sec. 5.2), ``"none"`` (the noiseless student, ``level = 0``), or ``"symmetric_mean"``: the
    control of the swap, trained without noise on the swap's mean target ``E[y~] = M_p y``
    (Eq. 24) at ``level = p`` -- it lowers ``G`` by shrinking the target alone, with no implicit
    regulariser, so a swap student is judged against it -- or ``"hinton"``: the noiseless student
    of Hinton et al. (2015), cross-entropy between the teacher's and its own softmax, both
    softened by the temperature ``level = T`` (times ``T^2``) -- or ``"continued"``: the
    *continued teacher*, cross-entropy on the hard labels from the teacher's final weights, with
    a student's schedule, epochs and batches (``level = 0``): what training as long again alone
    gives, the baseline of "beats the teacher" where a teacher does not fit its training
    images. A student's data split is its teacher's (the split is seeded by the teacher's
    ``seed``). Students draw their batches, crops and noise from a stream of their own,
    ``stream`` (the students of one teacher with equal ``stream`` share it: common random
    numbers, and what lets them train in lockstep). ``passes``: shuffled passes over the
    training images per epoch (the learning rate's schedule counts epochs), so that a run on
    fewer images can take as many steps as one on more. ``n_train_eval``: the training images
    whose loss and accuracy are measured after each epoch but the last (None: all; the last
    epoch measures all of them). The split: ``val_fraction`` of the official training set
    validates and the rest trains (cut to ``train_limit``), or with ``pool`` a class-balanced
    split of the first ``pool`` images of the training set's class-balanced order
    (:func:`dsmlib.models.sec5_distillation.datasets.load_dataset`), so that a data-limited setting keeps a
    validation set in proportion to its training images. ``recipe_version``: :data:`RECIPE`,
    the only version of the recipe this code runs (``"recipe"`` in ``config.json`` and in the
    key).
    """
    dataset: str = "digits"
    depth: int = 8
    role: str = "teacher"
    noise: str = Noise.NONE.value
    level: float = 0.0
    seed: int = 0
    image_size: int | None = None
    train_limit: int | None = None
    pool: int | None = None
    val_fraction: float = 0.2
    n_gradnorm: int
    gradnorm_probes: int = 2
    n_train_eval: int | None = None
    stream: int = 0
    recipe_version: int = RECIPE
    teacher: RunConfig | None = None

    def __post_init__(self) -> None:
        super().__post_init__()                                  # the recipe's fields
        object.__setattr__(self, "level", float(self.level))    # 0 and 0.0 hash alike
        check_choice("dataset", self.dataset, DATASETS)
        depth = check_int("depth", self.depth)
        if depth < 8 or (depth - 2) % 6:
            raise ValueError(f"depth must be of the form 6n + 2 (8, 14, 20, 56, ...), got {depth}")
        object.__setattr__(self, "depth", depth)
        check_choice("role", self.role, ROLES)
        check_choice("noise", self.noise, NOISE_KINDS)
        object.__setattr__(self, "noise", str(self.noise))   # a Noise member as its plain name
        bounds = dict(seed=(0, None), image_size=(4, 512), pool=(4, None),
                      train_limit=(2, None), n_gradnorm=(1, None), gradnorm_probes=(2, None),
                      n_train_eval=(1, None), stream=(0, None),
                      recipe_version=(RECIPE, RECIPE))
        for name, (lo, hi) in bounds.items():   # stored as int: 2.0 epochs would break range()
            v = getattr(self, name)
            if v is None and name in ("image_size", "train_limit", "n_train_eval", "pool"):
                continue
            object.__setattr__(self, name, check_int(name, v, minimum=lo, maximum=hi))
        object.__setattr__(self, "val_fraction", float(check_probability(
            "val_fraction (of the training images that validate)", self.val_fraction)))
        if not 0 < self.val_fraction < 1:
            raise ValueError(f"val_fraction (of the training images that validate) must lie "
                             f"strictly between 0 and 1, got {self.val_fraction}")
        self._check_noise()
        self._check_teacher()

    def _check_noise(self) -> None:
        if self.noise in (Noise.NONE, Noise.CONTINUED):
            if self.level != 0:
                raise ValueError(f"level must be 0 for noise={self.noise!r}, got {self.level!r}")
        elif self.noise == Noise.GAUSSIAN:
            s2 = check_positive("level (sigma^2 of the Gaussian noise)", self.level)
            if s2 > MAX_SIGMA2:
                raise ValueError(f"level (sigma^2 of the Gaussian noise) must be <= {MAX_SIGMA2:g}, "
                                 f"got {s2:g}")
        elif self.noise == Noise.HINTON:
            t = check_positive("level (temperature of the Hinton student)", self.level)
            if t > MAX_TEMPERATURE:
                raise ValueError(f"level (temperature of the Hinton student) must be <= "
                                 f"{MAX_TEMPERATURE:g}, got {t:g}")
        else:   # the swap, or its noiseless control on the swap's mean target
            p = check_probability("level (swap probability p of the symmetric noise)", self.level)
            if p == 0:
                raise ValueError("level (swap probability p of the symmetric noise) must be > 0; "
                                 "use noise='none' for the noiseless student")

    def _check_teacher(self) -> None:
        if self.role == "teacher":
            if self.teacher is not None or self.noise != Noise.NONE or self.stream != 0:
                raise ValueError("a teacher has no teacher, no noise and no student stream "
                                 "(role='teacher' needs teacher=None, noise='none', stream=0)")
            return
        t = self.teacher
        if not isinstance(t, RunConfig) or t.role != "teacher":
            raise ValueError("a student needs teacher=RunConfig(role='teacher', ...)")
        for name in ("dataset", "depth", "image_size", "train_limit", "pool", "val_fraction"):
            if getattr(t, name) != getattr(self, name):
                raise ValueError(f"a student must match its teacher's {name}: "
                                 f"{getattr(self, name)!r} != {getattr(t, name)!r}")

    # ------------------------------------------------------------------ identity

    @property
    def num_classes(self) -> int:
        return SPECS[self.dataset].num_classes

    @property
    def split_seed(self) -> int:
        """The seed of the train / validation split (a student uses its teacher's)."""
        return self.seed if self.teacher is None else self.teacher.seed

    def data_options(self) -> dict[str, Any]:
        """What :func:`dsmlib.models.sec5_distillation.datasets.load_dataset` takes to build this run's split
        (a student's is its teacher's)."""
        return dict(split_seed=self.split_seed, image_size=self.image_size,
                    train_limit=self.train_limit, pool=self.pool, val_fraction=self.val_fraction)

    def to_dict(self) -> dict[str, Any]:
        """Every field, by its recorded name (:data:`RECORDED_AS`), in the fields' order (a
        teacher's likewise): what ``config.json`` holds."""
        d = {RECORDED_AS.get(k, k): v for k, v in asdict(self).items()}
        if self.teacher is not None:
            d["teacher"] = self.teacher.to_dict()
        return d

    def key_dict(self) -> dict[str, Any]:
        """Every field by its recorded name but those at the value the key leaves them out at
        (:data:`LEFT_OUT_OF_KEY`; a teacher's likewise): what the key hashes."""
        d = {RECORDED_AS.get(k, k): v for k, v in asdict(self).items()
             if k not in LEFT_OUT_OF_KEY or getattr(self, k) != LEFT_OUT_OF_KEY[k]}
        if self.teacher is not None:
            d["teacher"] = self.teacher.key_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunConfig:
        """The configuration :meth:`to_dict` gave, or an older record's, which left a field of
        :data:`LEFT_OUT_OF_KEY` out at its value there."""
        attribute = {v: k for k, v in RECORDED_AS.items()}
        d = {attribute.get(k, k): v for k, v in d.items()}
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown run configuration field(s) {sorted(unknown)}")
        d = {**LEFT_OUT_OF_KEY, **d}
        if d.get("teacher") is not None:
            d["teacher"] = cls.from_dict(d["teacher"])
        return cls(**d)

    def key(self) -> str:
        """A short stable hash of every field (the run directory's name), those at their
        implied value aside (:meth:`key_dict`)."""
        text = json.dumps(self.key_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def label(self) -> str:
        """A human-readable name, e.g. ``digits/resnet8/student-gaussian-0.5/seed0``."""
        what = "teacher" if self.role == "teacher" else (
            "student-noiseless" if self.noise == Noise.NONE else
            f"student-control-symmetric-{self.level:g}" if self.noise == Noise.CONTROL else
            f"student-hinton-T{self.level:g}" if self.noise == Noise.HINTON else
            "continued-teacher" if self.noise == Noise.CONTINUED else
            f"student-{self.noise}-{self.level:g}")
        what += f"-stream{self.stream}" if self.stream else ""
        data = self.dataset + ("" if self.train_limit is None else f"-{self.train_limit}images")
        return f"{data}/resnet{self.depth}/{what}/seed{self.seed}"

    def differences(self, other: RunConfig) -> list[str]:
        """``field: mine != other's`` for each field that differs (nested for the teacher)."""
        out = []
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if f.name == "teacher" and isinstance(a, RunConfig) and isinstance(b, RunConfig):
                out += [f"teacher.{d}" for d in a.differences(b)]
            elif a != b:
                out.append(f"{f.name}: {a!r} != {b!r}")
        return out


def student_of(teacher: RunConfig, noise: str, level: float, *, epochs: int | None = None,
               seed: int | None = None, stream: int = 0) -> RunConfig:
    """The student of ``teacher`` with ``noise`` at ``level``; other settings as the teacher's
    (the paper: "the basic training setting is the same as training the teacher model"), its
    epochs too unless ``epochs`` says otherwise."""
    return replace(teacher, role="student", noise=noise, level=float(level), teacher=teacher,
                   epochs=teacher.epochs if epochs is None else epochs,
                   seed=teacher.seed if seed is None else seed, stream=stream)
