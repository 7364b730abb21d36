"""What each image data set of Section 5 is (models and data layer): its classes, channels,
native size and augmentation, by name. Kept apart from :mod:`dsmlib.models.sec5_distillation.datasets`, which
loads the images with torch, so that a run's configuration and the chapter's parameters can be
checked without importing torch (1.5-2 s of every command-line start); and the sizes of
their official splits."""
from __future__ import annotations

from dataclasses import dataclass

from ...foundation.checks import check_choice, check_probability
from ..data import DIGITS_SIZE

__all__ = ["DatasetSpec", "SPECS", "DATASETS", "DIGITS_TEST_FRACTION", "OFFICIAL_TRAIN",
           "OFFICIAL_TEST", "train_images"]


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
#: Digits has no official test set: a fixed held-out fraction of its images stands in for it.
DIGITS_TEST_FRACTION = 0.2

# Images in the official training sets (digits: the part left by its held-out test split).
OFFICIAL_TRAIN = {"digits": DIGITS_SIZE - int(round(DIGITS_TEST_FRACTION * DIGITS_SIZE)),
                  "cifar10": 50_000, "cifar100": 50_000, "svhn": 73_257}
# Images in the test sets every run is scored on (digits: its held-out split).
OFFICIAL_TEST = {"digits": int(round(DIGITS_TEST_FRACTION * DIGITS_SIZE)), "cifar10": 10_000,
                 "cifar100": 10_000, "svhn": 26_032}


def train_images(name: str, val_fraction: float = 0.2, pool: int | None = None) -> int:
    """The training images of a split of ``name`` (:func:`load_dataset` with all of them):
    its official training set (or its ``pool``) less the validation part."""
    n = OFFICIAL_TRAIN[check_choice("dataset", name, DATASETS)] if pool is None else pool
    val_fraction = check_probability("val_fraction", val_fraction)
    if pool is None:
        return n - int(round(val_fraction * n))
    c = SPECS[name].num_classes
    return n - c * int(round(val_fraction * n / c))
