"""What each image data set of Section 5 is (models and data layer): its classes, channels,
native size and augmentation, by name. Kept apart from :mod:`dsmlib.models.datasets`, which
loads the images with torch, so that a run's configuration and the chapter's parameters can be
checked without importing torch (1.5-2 s of every command-line start)."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DatasetSpec", "SPECS", "DATASETS"]


@dataclass(frozen=True)
class DatasetSpec:
    """What a data set is: classes, channels, native size, and its augmentation."""
    name: str
    num_classes: int
    in_channels: int
    image_size: int
    pad: int            # random-crop padding at the native size
    flip: bool          # horizontal flips (not for digits or house numbers)


SPECS = {
    "digits": DatasetSpec("digits", 10, 1, 8, 1, False),
    "cifar10": DatasetSpec("cifar10", 10, 3, 32, 4, True),
    "cifar100": DatasetSpec("cifar100", 100, 3, 32, 4, True),
    "svhn": DatasetSpec("svhn", 10, 3, 32, 4, False),
}
DATASETS = tuple(SPECS)
