"""How a run of Section 5 trains (models layer): its training recipe, declared once, and the
paper's recipe, written once (:data:`PAPER`).

Section 5 follows "the standard training procedure [He et al. 2016]": SGD at learning rate 0.1
with momentum 0.9 and weight decay 1e-4, batches of 64, the rate divided by 10 at epochs 100 and
150 of 200, 4-pixel padded random crops and horizontal flips; the students "the same setting".
Every field of :class:`Recipe` is a field of every run's configuration
(:class:`dsmlib.models.sec5_distillation.run_config.RunConfig` inherits them) and a parameter of
the Section 5 chapter where it is not set per setting (:func:`chapter_fields`). The fields that
SGD reads reach it through one method, :meth:`Recipe.sgd` (the schedule, :meth:`Recipe.lr_at`,
among them): a fresh optimizer is built from it and every epoch sets it again, on a fresh
trainer as on one kept from another run. Adding an optimiser setting is one field below, with
its default and help, and its entry in :meth:`Recipe.sgd`.

A field added after the runs of recipe 2 were keyed declares the value that recipe fixed in
code (``fixed_in_code``, :data:`FIXED_IN_CODE`): at that value it is left out of a run's key, so
the runs trained before keep their keys, while a run's ``config.json`` records every field.

This module imports no torch: commands resolve a chapter's parameters from it in well under a
second.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

from ...foundation.checks import check_choice, check_int, check_nonnegative, check_positive, \
    check_probability

__all__ = ["PRECISIONS", "Recipe", "PAPER", "FIXED_IN_CODE", "PER_SETTING", "chapter_fields",
           "paper_values"]

PRECISIONS = ("auto", "fp32", "bf16", "fp64")   # fp64: CPU tests of exactness
#: The recipe's fields a chapter sets per setting and role, not as parameters of their own.
PER_SETTING = ("epochs", "passes", "batch_size")


def _f(help: str, default: Any = dataclasses.MISSING,
       fixed_in_code: Any = dataclasses.MISSING) -> Any:
    meta = {"help": help} | ({} if fixed_in_code is dataclasses.MISSING
                             else {"fixed_in_code": fixed_in_code})
    return field(default=default, metadata=meta)


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """A run's training recipe: SGD with ``momentum`` and ``weight_decay`` at a learning rate
    starting at ``lr`` and multiplied by ``lr_drop_factor`` at each of the fractions
    ``lr_drops`` of the ``epochs``; ``passes`` shuffled passes over the training images per
    epoch, in batches of ``batch_size``; random crops (and flips where the data set allows them)
    with ``augment``; ``precision`` (``auto``: bf16 autocast on CUDA, float32 on the CPU).
    What shapes training has no default: every run states it (a chapter from its parameters,
    whose defaults are the paper's, :data:`PAPER`)."""
    epochs: int = _f("epochs of the run (the paper: 200)")
    passes: int = _f("passes over the training images per epoch", 1)
    batch_size: int = _f("minibatch size")
    lr: float = _f("SGD's learning rate at the start")
    lr_drops: tuple[float, ...] = _f("fractions of the epochs at which the learning rate drops "
                                     "(the paper: epochs 100 and 150 of 200)",
                                     fixed_in_code=(0.5, 0.75))
    lr_drop_factor: float = _f("the learning rate's factor at each drop", fixed_in_code=0.1)
    momentum: float = _f("SGD's momentum")
    weight_decay: float = _f("SGD's weight decay")
    augment: bool = _f("random crops (and flips where the data set allows them)", True)
    precision: str = _f("bf16 autocast on CUDA, float32 on the CPU")

    def __post_init__(self) -> None:
        for name in ("lr", "momentum", "weight_decay", "lr_drop_factor"):
            v = getattr(self, name)   # 0 and 0.0 hash alike
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                object.__setattr__(self, name, float(v))
        for name in PER_SETTING:
            object.__setattr__(self, name, check_int(name, getattr(self, name), minimum=1))
        check_positive("lr", self.lr)
        check_probability("momentum", self.momentum)
        check_nonnegative("weight_decay", self.weight_decay)
        check_choice("precision", self.precision, PRECISIONS)
        self._check_schedule()

    def _check_schedule(self) -> None:
        drops = self.lr_drops
        if isinstance(drops, (str, bytes)) or not hasattr(drops, "__iter__"):
            raise ValueError(f"lr_drops must be a list of fractions of the epochs in (0, 1], "
                             f"got {drops!r}")
        drops = tuple(float(check_probability("lr_drops (fractions of the epochs)", f))
                      for f in drops)
        if any(f == 0 for f in drops) or list(drops) != sorted(drops):
            raise ValueError(f"lr_drops must be increasing fractions of the epochs in (0, 1], "
                             f"got {list(drops)}")
        object.__setattr__(self, "lr_drops", drops)
        factor = check_probability("lr_drop_factor (the learning rate's factor at each drop)",
                                   self.lr_drop_factor)
        if factor == 0:
            raise ValueError("lr_drop_factor (the learning rate's factor at each drop) must be "
                             "> 0, got 0")

    @property
    def training(self) -> Recipe:
        """The recipe alone (of a run's configuration, which carries it among other fields)."""
        return Recipe(**{f.name: getattr(self, f.name) for f in fields(Recipe)})

    def lr_at(self, epoch: int) -> float:
        """The learning rate of epoch ``epoch`` (from 0): ``lr`` times ``lr_drop_factor`` for
        each fraction ``f`` of ``lr_drops`` with ``epoch >= floor(f * epochs)`` (the fractions
        read as the decimals they are written as). The paper's: divided by 10 at 50 % and again
        at 75 % of the epochs (epochs 100 and 150 of 200)."""
        drops = sum(epoch >= math.floor(Fraction(repr(f)) * self.epochs) for f in self.lr_drops)
        return self.lr * self.lr_drop_factor ** drops

    def sgd(self, epoch: int) -> dict[str, Any]:
        """SGD's settings in epoch ``epoch`` (from 0): every field of the recipe that the
        optimizer reads -- the learning rate of the schedule (:meth:`lr_at`), the momentum and
        the weight decay -- as ``torch.optim.SGD``'s keywords. The one place where the recipe
        reaches the optimizer: :meth:`optimizer` builds SGD from it, and each epoch sets it
        (:meth:`dsmlib.models.sec5_distillation.trainer.Trainer.start_epoch`), so that a
        trainer kept from another run trains with this run's settings."""
        return {"lr": self.lr_at(epoch), "momentum": self.momentum,
                "weight_decay": self.weight_decay}

    def optimizer(self, parameters: Any) -> Any:
        """SGD over ``parameters`` with the settings of epoch 0 (:meth:`sgd`)."""
        import torch
        return torch.optim.SGD(parameters, **self.sgd(0))


#: The paper's recipe (Section 5, after He et al. 2016): 200 epochs, batch 64, lr 0.1 divided
#: by 10 at 50 % and 75 %, momentum 0.9, weight decay 1e-4, crops and flips. The one place its
#: numbers are written.
PAPER = Recipe(epochs=200, passes=1, batch_size=64, lr=0.1, lr_drops=(0.5, 0.75),
               lr_drop_factor=0.1, momentum=0.9, weight_decay=1e-4, augment=True,
               precision="auto")
#: The recipe's fields that recipe 2 fixed in code before they were fields, with the value it
#: fixed, which its runs trained with: at it, a field is left out of the key (never out of
#: ``config.json``).
FIXED_IN_CODE: dict[str, Any] = {f.name: f.metadata["fixed_in_code"] for f in fields(Recipe)
                                 if "fixed_in_code" in f.metadata}


def chapter_fields() -> list[tuple[str, Any, Any]]:
    """The recipe's fields a chapter declares as parameters (all but :data:`PER_SETTING`), as
    ``(name, type, dataclass field)`` for :func:`dataclasses.make_dataclass`: the paper's
    value (:data:`PAPER`) as default, the recipe's help."""
    from ...foundation.parameters import param
    return [(f.name, f.type, param(getattr(PAPER, f.name), f.metadata["help"]))
            for f in fields(Recipe) if f.name not in PER_SETTING]


def paper_values(*names: str) -> dict[str, Any]:
    """The paper's value of each named field of the recipe (all of them without names): what a
    test or a benchmark that trains "as the paper does" states, typing no number of its own."""
    return {n: getattr(PAPER, n) for n in (names or [f.name for f in fields(Recipe)])}
