"""Where a run's random numbers come from (models layer): every draw of Section 5's training is
a child of the run's seed, one stream per use.

- ``child_seed(seed, INIT)``: a network's initial weights (a student's are then its teacher's);
- ``child_seed(s, DATA, epoch)``: epoch ``epoch``'s order of the images, their crops and flips;
- ``child_seed(s, NOISE, epoch)``: its label noise;
- ``child_seed(seed, GRADNORM, epoch)``: the probes of ``G`` measured after epoch ``epoch``;

with ``s`` the run's stream (:func:`stream_seed`): a teacher's seed; for students
``child_seed(seed, STUDENTS, stream)``, so that a student never replays its teacher's batches
and crops. So an epoch is reproducible from the model and optimizer state alone (a resumed run
continues exactly), the training step draws nothing (it can be captured as a CUDA graph), and
the students of one seed and stream see the same batches and the same standard-normal draws at
every level (common random numbers): what lets them train in lockstep.

A group of several lanes (:mod:`dsmlib.models.sec5_distillation.lanes`) draws each lane's
batches from the stream of its first run, and each lane's probes from that run's seed
(:func:`lane_configs`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...foundation.rng import child_seed
from .run_config import RunConfig

__all__ = ["STREAM_INIT", "STREAM_DATA", "STREAM_NOISE", "STREAM_GRADNORM", "STREAM_STUDENTS",
           "stream_seed", "lane_configs", "lane_streams", "lane_seeds"]

STREAM_INIT, STREAM_DATA, STREAM_NOISE, STREAM_GRADNORM, STREAM_STUDENTS = 1, 2, 3, 4, 5


def stream_seed(config: RunConfig) -> int:
    """The seed of a run's epoch plans (batches, crops, noise): a teacher's ``seed``; a
    student's drawn from ``child_seed(seed, STUDENTS, stream)``, shared by the students of one
    teacher and stream (they train in lockstep), never its teacher's."""
    if config.role == "teacher":
        return config.seed
    node = child_seed(config.seed, STREAM_STUDENTS, config.stream)
    return int(node.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))   # an int root


def lane_configs(configs: Sequence[RunConfig], lanes: Sequence[int]) -> list[RunConfig]:
    """The first run of each lane, in lane order (``lanes``: each run's lane): what the lane's
    batches (its stream) and ``G``'s probes (its seed) are drawn from."""
    return [configs[list(lanes).index(lane)] for lane in range(max(lanes) + 1)]


def lane_streams(configs: Sequence[RunConfig], lanes: Sequence[int]) -> list[int]:
    """The seed of each lane's epoch plans (:func:`stream_seed` of its first run)."""
    return [stream_seed(c) for c in lane_configs(configs, lanes)]


def lane_seeds(configs: Sequence[RunConfig], lanes: Sequence[int]) -> int | list[int]:
    """The seed of each lane's ``G`` probes (its runs' seed): one lane's as an int."""
    seeds = [c.seed for c in lane_configs(configs, lanes)]
    return seeds[0] if len(seeds) == 1 else seeds
