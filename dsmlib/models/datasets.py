"""Image data sets of the self-distillation chapter (models and data layer), held on the device.

- ``digits``: scikit-learn's bundled 8x8 digits (1,797 images, no download), the offline
  default. It has no official test set: a seeded held-out test split of
  :data:`DIGITS_TEST_FRACTION` (drawn with :data:`DIGITS_TEST_SEED`, the same for every run)
  stands in for it.
- ``cifar10``, ``cifar100``, ``svhn``: read from torchvision's layout under ``data_dir`` by
  :mod:`dsmlib.models.dataset_files` (which says what a missing, unreadable or unofficial file
  is). They are downloaded only when the caller passes ``download=True``; nothing reaches the
  network otherwise.

The paper's split (Sec. 5.3): the official training set is cut, with a seeded permutation, into
80 % training and 20 % validation; the official test set is kept for testing. Images are
normalised per channel with the statistics of the training images alone (those a run trains on:
its split's training part, cut to ``train_limit``), so that nothing of the validation or test
images enters training, and may be upsampled (``image_size``: the CIFAR ResNets pool
globally, so any size works). :func:`augment` is the random crop (zero padding in normalised
units, i.e. the mean colour) and, where the set allows it, the horizontal flip, done on the
tensors' own device with a generator created there; its random numbers
(:func:`augment_draws`) can be drawn ahead of their images, as Section 5's epoch plan draws
them, and applied later (:func:`apply_augment`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..foundation.checks import check_choice, check_int, check_probability
from ..foundation.rng import as_generator, child_seed, resolve_device
from .data import DIGITS_SIZE, digits
from .dataset_files import download as fetch
from .dataset_files import missing_files, read_arrays

__all__ = ["DatasetSpec", "SPECS", "DATASETS", "DIGITS_TEST_FRACTION", "DIGITS_TEST_SEED",
           "OFFICIAL_TRAIN", "OFFICIAL_TEST", "DataSplit", "train_images", "load_dataset",
           "augment_draws", "apply_augment", "augment"]

DIGITS_TEST_FRACTION = 0.2
DIGITS_TEST_SEED = 20_240_501


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


@dataclass
class DataSplit:
    """Train / validation / test tensors on one device (inputs normalised, labels int64)."""
    spec: DatasetSpec
    image_size: int
    pad: int
    X_train: Tensor
    y_train: Tensor
    X_val: Tensor
    y_val: Tensor
    X_test: Tensor
    y_test: Tensor
    note: str

    @property
    def device(self) -> torch.device:
        return self.X_train.device


# Images in the official training sets (digits: the part left by its held-out test split).
OFFICIAL_TRAIN = {"digits": DIGITS_SIZE - int(round(DIGITS_TEST_FRACTION * DIGITS_SIZE)),
                  "cifar10": 50_000, "cifar100": 50_000, "svhn": 73_257}
# Images in the test sets every run is scored on (digits: its held-out split).
OFFICIAL_TEST = {"digits": int(round(DIGITS_TEST_FRACTION * DIGITS_SIZE)), "cifar10": 10_000,
                 "cifar100": 10_000, "svhn": 26_032}


def train_images(name: str, val_fraction: float = 0.2) -> int:
    """The training images of a split of ``name`` (:func:`load_dataset` with all of them):
    its official training set less the validation part."""
    n = OFFICIAL_TRAIN[check_choice("dataset", name, DATASETS)]
    return n - int(round(check_probability("val_fraction", val_fraction) * n))


def _file_arrays(name: str, data_dir: Path, download: bool
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """uint8 images ``(n, C, H, W)`` and int64 labels of the official train and test sets,
    fetched first if ``download`` and any file is missing."""
    if download and missing_files(name, data_dir):
        fetch(name, data_dir)
    return read_arrays(name, data_dir)


def _digits_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits in [0, 1] split once into a pseudo-official train part and a test part."""
    X, y = digits()
    perm = as_generator(DIGITS_TEST_SEED).permutation(len(y))
    n_test = int(round(DIGITS_TEST_FRACTION * len(y)))
    te, tr = perm[:n_test], perm[n_test:]
    return X[tr], y[tr], X[te], y[te]


def load_dataset(name: str, *, split_seed: int = 0, data_dir: str | Path = "data",
                 download: bool = False, image_size: int | None = None,
                 train_limit: int | None = None, val_fraction: float = 0.2,
                 device: Any = "auto") -> DataSplit:
    """Load ``name`` and cut its official training set into train / validation (seeded by
    ``split_seed``); the official (for digits: the fixed held-out) test set is kept.

    ``train_limit`` keeps only the first ``train_limit`` images of the training part (the
    data-limited setting of Section 5, and tiny test runs; validation and test are unchanged); ``image_size`` upsamples bilinearly (e.g. digits to 32x32 for the GPU
    profile). Everything is returned on ``device`` (``"auto"``: CUDA when present).
    """
    name = check_choice("dataset", name, DATASETS)
    split_seed = check_int("split_seed", split_seed, minimum=0)
    val_fraction = check_probability("val_fraction", val_fraction)
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must lie strictly between 0 and 1, got {val_fraction}")
    spec = SPECS[name]
    size = spec.image_size if image_size is None else check_int("image_size", image_size,
                                                                 minimum=4, maximum=512)
    dev = resolve_device(device)
    if name == "digits":
        Xtr, ytr, Xte, yte = _digits_arrays()
        scale = 1.0
    else:
        Xtr, ytr, Xte, yte = _file_arrays(name, Path(data_dir), bool(download))
        scale = 255.0
    perm = as_generator(child_seed(split_seed, 0)).permutation(len(ytr))
    n_val = int(round(val_fraction * len(ytr)))
    val, train = perm[:n_val], perm[n_val:]
    if train_limit is not None:
        train = train[:check_int("train_limit", train_limit, minimum=2)]

    Xfit = torch.as_tensor(Xtr[train], dtype=torch.float32) / scale   # the training images only
    mean = Xfit.mean(dim=(0, 2, 3), keepdim=True)
    std = Xfit.std(dim=(0, 2, 3), keepdim=True).clamp_min(1e-6)

    def prep(X: np.ndarray, idx: np.ndarray | None = None) -> Tensor:
        t = torch.as_tensor(X if idx is None else X[idx], dtype=torch.float32) / scale
        t = ((t - mean) / std).to(dev)
        if size != spec.image_size:
            t = F.interpolate(t, size=(size, size), mode="bilinear", align_corners=False)
        return t.contiguous()

    def labels(y: np.ndarray) -> Tensor:
        return torch.as_tensor(y, dtype=torch.int64, device=dev)

    pad = max(1, round(spec.pad * size / spec.image_size)) if spec.pad else 0
    test_note = ("held-out test split (20 %, fixed seed) standing in for an official test set"
                 if name == "digits" else "official test set")
    note = (f"{name}: {len(train)} train / {len(val)} validation (80/20 of the training set, "
            f"split seed {split_seed}) / {len(yte)} test ({test_note}); {size}x{size} pixels")
    return DataSplit(spec, size, pad, prep(Xtr, train), labels(ytr[train]), prep(Xtr, val),
                     labels(ytr[val]), prep(Xte), labels(yte), note)


def augment_draws(n: int, generator: torch.Generator, *, pad: int, flip: bool
                  ) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """The random numbers of :func:`augment` for ``n`` images: crop offsets ``dy, dx`` in
    ``[0, 2 pad]`` (None without padding) and flip flags (None without flips)."""
    dev = generator.device
    dy = dx = flips = None
    if pad:
        dy = torch.randint(0, 2 * pad + 1, (n,), generator=generator, device=dev)
        dx = torch.randint(0, 2 * pad + 1, (n,), generator=generator, device=dev)
    if flip:
        flips = torch.rand(n, generator=generator, device=dev) < 0.5
    return dy, dx, flips


def apply_augment(x: Tensor, dy: Tensor | None, dx: Tensor | None, flips: Tensor | None, *,
                  pad: int) -> Tensor:
    """Crop the zero-padded batch ``x`` (n, C, H, W) at ``(dy, dx)`` and flip where
    ``flips``; draws no random numbers."""
    n, c, h, w = x.shape
    dev = x.device
    if dy is not None:
        xp = F.pad(x, (pad, pad, pad, pad))
        rows = (dy[:, None] + torch.arange(h, device=dev))[:, None, :, None]
        cols = (dx[:, None] + torch.arange(w, device=dev))[:, None, None, :]
        x = xp[torch.arange(n, device=dev)[:, None, None, None],
               torch.arange(c, device=dev)[None, :, None, None], rows, cols]
    if flips is not None:
        x = torch.where(flips[:, None, None, None], x.flip(3), x)
    return x


def augment(x: Tensor, generator: torch.Generator, *, pad: int, flip: bool) -> Tensor:
    """Random ``pad``-pixel crops (zero padding) and, if ``flip``, random horizontal flips of
    the batch ``x``, drawn from ``generator`` on ``x``'s device."""
    return apply_augment(x, *augment_draws(x.shape[0], generator, pad=pad, flip=flip), pad=pad)
