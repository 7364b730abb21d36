"""Chapter ``sec5_distillation``: noisy self-distillation (Section 5, Figures 1 and 2), in a wing
of its own (chapters layer). Its page imports this package and the chapter's figures alone.

Read in this order:

- :mod:`.grid`: the grid of runs, built once from the chapter's parameters (what the wing
  reads of them: :class:`.grid.GridParameters`; they are declared above the wing, in
  :mod:`dsmlib.chapters.parameters.sec5_distillation`): per setting and seed a teacher and its
  students;
- :mod:`.launch` (and :mod:`.seed_runs`, the CPU's way): training the grid's runs, resuming
  them, collecting their records (the models are :mod:`dsmlib.models.sec5_distillation`);
- :mod:`.results`: the records arranged by cell and seed;
- :mod:`.gains` (the accuracy rule: direction decides, size against δ beside it) and
  :mod:`.claims` (every claim of Figures 1 and 2);
- :mod:`.readouts`, :mod:`.scope`, :mod:`.summary`: what the page reads off the results
  besides its claims, what the grid does not measure, and the page's opening;
- :mod:`.gpu_cost` and :mod:`.cpu_budget`: what the paper's grid costs on a GPU, and the rule
  that sized the CPU's CIFAR-10 reference.

This module re-exports the chapter's results' API; it imports no torch, and nothing of the
chapter's parameters (tests/chapters/test_sec5_wing.py).
"""
from . import results
from .results import *  # noqa: F401,F403

__all__ = list(results.__all__)
