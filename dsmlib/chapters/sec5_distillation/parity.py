"""Whether bf16 costs a CPU grid accuracy (issue 69, item 2): teachers trained in bf16 autocast
and in float32 on the same seeds of one small CIFAR-10 setting -- the same split,
initialisation, batches and crops: runs whose configurations differ in their precision alone
-- and the paired difference of their test accuracy, bf16 - fp32, seed by seed, with its 99 %
interval (Student-t over the seeds, :func:`dsmlib.foundation.decision.interval`).

**The rule, fixed in code before any parity run.** A profile may train in bf16 on the CPU only
where this shows *no loss beyond seed noise*: the interval lies above ``-PARITY_BAND``
(:func:`dsmlib.foundation.decision.verdict` against the band ``(-PARITY_BAND, None)`` says
``"confirmed"``). :data:`PARITY_BAND` is one point of test accuracy: what a grid of ten seeds
resolves (:data:`dsmlib.chapters.sec5_distillation.cpu_budget.SEEDS`), so a loss within it is
below the seed noise of the grid's own means. ``"refuted"``: a loss beyond the band (the whole
interval below it); ``"inconclusive"``: too few seeds, or too much spread, to tell -- and no
bf16 either. A gain is no reason against bf16: the band is open above.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from ...foundation.decision import CONFIDENCE, interval, verdict
from ...models.sec5_distillation.run_config import RunConfig

__all__ = ["PARITY_BAND", "MIN_SEEDS", "PRECISIONS", "ParityRecord", "paired_accuracies",
           "parity_row"]

#: One point of test accuracy: what a ten-seed grid resolves.
PARITY_BAND = 0.01
#: Seeds the difference needs: an interval from two has one degree of freedom.
MIN_SEEDS = 3
#: The precisions compared: bf16 autocast against float32.
PRECISIONS = ("fp32", "bf16")


class ParityRecord(Protocol):
    """What a parity row reads of a run's record
    (:class:`dsmlib.models.sec5_distillation.runs.RunRecord`)."""
    config: RunConfig
    history: list[dict[str, Any]]
    done: bool


def _pair_key(config: RunConfig, seed: int | None = None) -> str:
    """Runs of equal keys are one pair: their configurations differ in their precision alone
    (with ``seed``: runs of one setting, the seed set to it)."""
    return replace(config, precision=PRECISIONS[0],
                   seed=config.seed if seed is None else seed).key()


def paired_accuracies(records: Sequence[ParityRecord]) -> dict[int, dict[str, float]]:
    """Per seed, each precision's final test accuracy, from finished teachers' records that
    pair up (one run per precision and seed, the pairs differing in their precision alone);
    refused, with the reason, otherwise."""
    got: dict[int, dict[str, float]] = {}
    keys: dict[int, str] = {}
    for r in records:
        c = r.config
        if c.role != "teacher" or c.precision not in PRECISIONS or not r.done:
            raise ValueError(f"a parity run is a finished teacher in {' or '.join(PRECISIONS)}: "
                             f"{c.label()} ({c.precision}, done={r.done})")
        if keys.setdefault(c.seed, _pair_key(c)) != _pair_key(c):
            raise ValueError(f"the runs of seed {c.seed} differ in more than their precision")
        if c.precision in got.setdefault(c.seed, {}):
            raise ValueError(f"two {c.precision} runs of seed {c.seed}")
        got[c.seed][c.precision] = float(r.history[-1]["test_acc"])
    if len({_pair_key(r.config, seed=0) for r in records}) > 1:
        raise ValueError("the parity runs must be one setting's seeds")
    unpaired = sorted(s for s, v in got.items() if set(v) != set(PRECISIONS))
    if unpaired:
        raise ValueError(f"seeds {unpaired} lack a run in one of {PRECISIONS}")
    return dict(sorted(got.items()))


def parity_row(records: Sequence[ParityRecord], *, band: float = PARITY_BAND,
               min_seeds: int = MIN_SEEDS) -> dict[str, Any]:
    """The parity row: per seed both accuracies and their difference, bf16 - fp32; its mean,
    standard error and 99 % interval (Student-t, ``seeds - 1`` degrees of freedom); the band;
    the verdict against it and whether it shows no loss beyond seed noise."""
    acc = paired_accuracies(records)
    if len(acc) < min_seeds:
        raise ValueError(f"parity needs at least {min_seeds} seeds, got {len(acc)}")
    seeds = list(acc)
    fp32 = np.array([acc[s]["fp32"] for s in seeds])
    bf16 = np.array([acc[s]["bf16"] for s in seeds])
    d = bf16 - fp32
    mean, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))
    lo_hi = interval(mean, se, dof=d.size - 1)
    said = verdict(lo_hi, (-band, None))
    setting = records[0].config
    return {"name": f"cpu_precision_parity_resnet{setting.depth}",
            "setting": setting.label().rsplit("/seed", 1)[0], "epochs": setting.epochs,
            "seeds": seeds, "fp32_test_acc": fp32.tolist(), "bf16_test_acc": bf16.tolist(),
            "differences": d.tolist(), "difference": mean, "se": se, "dof": d.size - 1,
            "level": CONFIDENCE, "interval": lo_hi, "band": [-band, None], "verdict": said,
            "no_loss_beyond_seed_noise": said == "confirmed"}
