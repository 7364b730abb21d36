"""Results documents of Section 5's committed references, and a fixture of the coming
``cpu-cifar10-fit`` reference made from ``cpu-cifar10``'s, shared by the first-screen tests."""
from __future__ import annotations

import copy
import json

from dsmlib.chapters.sec5_distillation import registry
from helpers import ROOT


def reference_doc(profile: str) -> dict:
    return json.loads((ROOT / "reference" / profile / "sec5_distillation.json").read_text())


def fit_fixture() -> dict:
    """A ``cpu-cifar10-fit``-shaped results document made from cpu-cifar10's: teachers that fit
    (100 %), no crops, "the teacher" as the baseline row by row, noise that helps."""
    doc = copy.deepcopy(reference_doc("cpu-cifar10"))
    (name, entry), = doc["extra"]["settings"].items()
    entry.update(augment="no", teacher_train_acc=100.0, teachers_fit="yes", baseline="teacher",
                 teacher_acc=44.17, device="a CPU")
    for c in doc["claims"]:
        if c["id"] == registry.NOISY_BEATS_TEACHER:
            c.update(verdict="confirmed", measured=1.25, interval=[0.5, 2.0])
            c["details"] = [dict(c["details"][0], measured=1.25, interval=[0.5, 2.0],
                                 verdict="confirmed", baseline="teacher", heads=True)]
        if c["id"] == registry.NOISY_BEATS_NOISELESS:
            c.update(verdict="inconclusive", measured=0.3, interval=[-0.4, 1.0])
            c["details"][1].update(measured=0.3, interval=[-0.4, 1.0], verdict="inconclusive",
                                   heads=True)
    return doc
