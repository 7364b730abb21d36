"""The tiny run of Section 5 that the models tests train, written once (not a test module):
ResNet-8 on 96 of the 8x8 digits, batch 32, two epochs, ``G`` on 4 images. A test states only
what it changes."""
from __future__ import annotations

import dataclasses

from dsmlib.models.sec5_distillation.recipe import paper_values
from dsmlib.models.sec5_distillation.run_config import RunConfig

#: The training hyperparameters RunConfig takes without defaults: the paper's recipe, the
#: chapter's quick values (a test states only what it changes).
HYPER = paper_values("lr", "lr_drops", "lr_drop_factor", "momentum", "weight_decay", "precision")

TINY_TEACHER = RunConfig(dataset="digits", depth=8, epochs=2, batch_size=32, train_limit=96,
                         n_gradnorm=4, **HYPER)


def tiny_teacher(**changes) -> RunConfig:
    """:data:`TINY_TEACHER` with ``changes`` (checked as any configuration is)."""
    return dataclasses.replace(TINY_TEACHER, **changes)
