"""The data of a group's lanes (models layer). A group trains runs that differ only in their
seed as the members of one grouped network (:mod:`dsmlib.models.sec5_distillation.lockstep`); each **lane** of it
-- one teacher, or the students of one teacher and stream -- has its own data split (seeded by
its teacher's seed: its own training, validation and test images, normalised by its own
training images), its own batches, crops and noise, and, for students, its own teacher.

:class:`Lanes` holds each lane's split and each member's lane, and gives a split's images in
the form the grouped network reads (:class:`dsmlib.models.networks.CifarResNet`): one lane's
``(N, C, H, W)`` as they are, shared by its members, exactly as a group of one lane has always
read them; several lanes' stacked, ``(N, L, C, H, W)``, with their labels ``(L, N)``.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from .datasets import DataSplit

__all__ = ["SPLITS", "Lanes"]

SPLITS = ("train", "val", "test")


class Lanes:
    """Each member's lane ``of[k]`` and each lane's data split ``splits[l]`` (every split of the
    same shapes, on one device). Several lanes' images are stacked once, when first asked for."""

    def __init__(self, of: Sequence[int], splits: Sequence[DataSplit]) -> None:
        self.of, self.splits = tuple(int(v) for v in of), tuple(splits)
        if not self.splits or sorted(set(self.of)) != list(range(len(self.splits))):
            raise ValueError(f"the group's {len(set(self.of))} lanes need one data split each, "
                             f"got {len(self.splits)}")
        first = self.splits[0]
        for s in self.splits[1:]:
            for name in SPLITS:
                a, b = getattr(first, f"X_{name}"), getattr(s, f"X_{name}")
                if a.shape != b.shape or a.device != b.device:
                    raise ValueError(f"the lanes' {name} images must have one shape and device: "
                                     f"{tuple(a.shape)} on {a.device} != {tuple(b.shape)} on "
                                     f"{b.device}")
        self.first = first
        self._stacked: dict[str, tuple[Tensor, Tensor]] = {}

    @classmethod
    def of_group(cls, lanes: Sequence[int], data: DataSplit | Sequence[DataSplit] | Lanes
                 ) -> Lanes:
        """The lanes of a group whose members' lanes are ``lanes``, from one split (a group of
        one lane), one split per lane, or lanes already."""
        if isinstance(data, Lanes):
            if data.of != tuple(lanes):
                raise ValueError(f"the data's lanes {list(data.of)} are not the group's "
                                 f"{list(lanes)}")
            return data
        return cls(lanes, [data] if isinstance(data, DataSplit) else data)

    @property
    def count(self) -> int:
        """``L``, the number of lanes."""
        return len(self.splits)

    @property
    def member_lanes(self) -> tuple[int, ...] | None:
        """Each member's lane, None for a group of one lane (its members share its images)."""
        return None if self.count == 1 else self.of

    @property
    def device(self) -> torch.device:
        return self.first.device

    def split(self, name: str) -> tuple[Tensor, Tensor]:
        """Split ``name``'s images and labels: one lane's as they are, ``(N, C, H, W)`` and
        ``(N,)``; several lanes' ``(N, L, C, H, W)`` and ``(L, N)``."""
        if self.count == 1:
            return getattr(self.first, f"X_{name}"), getattr(self.first, f"y_{name}")
        if name not in self._stacked:
            self._stacked[name] = (
                torch.stack([getattr(s, f"X_{name}") for s in self.splits], dim=1),
                torch.stack([getattr(s, f"y_{name}") for s in self.splits]))
        return self._stacked[name]

    def training_images(self) -> tuple[Tensor, Tensor]:
        """Every lane's training images and labels, ``(L, n, C, H, W)`` and ``(L, n)`` (one
        lane's a view of its split's), which the training step indexes by lane and batch."""
        if self.count == 1:
            return self.first.X_train.unsqueeze(0), self.first.y_train.unsqueeze(0)
        return (torch.stack([s.X_train for s in self.splits]),
                torch.stack([s.y_train for s in self.splits]))

    def subsample(self, n: int) -> Tensor:
        """The first ``n`` training images of every lane, in :meth:`split`'s form (``G`` is
        measured on them)."""
        if self.count == 1:
            return self.first.X_train[:n]
        return torch.stack([s.X_train[:n] for s in self.splits], dim=1)

    def labels_of(self, y: Tensor, k: int) -> Tensor:
        """Member ``k``'s labels among a split's (:meth:`split`)."""
        return y if self.count == 1 else y[self.of[k]]

    def logits_of(self, t: Tensor, lane: int) -> Tensor:
        """Lane ``lane``'s logits ``(N, L)`` from a lane-grouped network's output (one lane's:
        as they are)."""
        return t if self.count == 1 else t[:, lane]
