"""Reading CIFAR-10/100 and SVHN from torchvision's on-disk layout without torchvision: synthetic
files in exactly the official formats round-trip; an unofficial checksum warns and names the
file; a missing, unreadable or misshapen file is a one-line error saying which."""
from __future__ import annotations

import os
import pickle
import warnings

import numpy as np
import pytest
import torch
from scipy.io import savemat

from dataset_fakes import py2_pickle, write_cifar, write_svhn
from dsmlib.foundation.rng import as_generator, child_seed
from dsmlib.models.sec5_distillation import dataset_files as df
from dsmlib.models.sec5_distillation import datasets
from dsmlib.models.sec5_distillation.datasets import load_dataset


def read_quietly(name, data_dir, verify=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", df.ChecksumWarning)
        return df.read_arrays(name, data_dir, verify=verify)


def one_line_error(match, fn, *args, **kw):
    with pytest.raises(df.DatasetFileError, match=match) as info:
        fn(*args, **kw)
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)
    assert "is not in" not in str(info.value)
    return str(info.value)


def test_the_python2_fake_is_a_python2_pickle(tmp_path):
    raw = py2_pickle({"data": np.arange(3, dtype=np.uint8), "labels": [1, 2]})
    assert b"U\x04data" in raw and b"cnumpy.core.multiarray\n_reconstruct\n" in raw
    assert b"BINUNICODE" not in raw and b"X\x04\x00\x00\x00data" not in raw
    back = pickle.loads(raw, encoding="latin1")
    assert back["labels"] == [1, 2] and np.array_equal(back["data"], np.arange(3))


@pytest.mark.parametrize("name, py2", [("cifar10", True), ("cifar10", False), ("cifar100", True)])
def test_cifar_batches_round_trip(tmp_path, name, py2):
    written = write_cifar(tmp_path, name, n_train=53, n_test=17, py2=py2)
    got = read_quietly(name, tmp_path)
    assert got[0].shape == (53, 3, 32, 32) and got[0].dtype == np.uint8
    assert got[1].dtype == np.int64
    for a, b in zip(got, written):
        assert np.array_equal(a, b)


def test_svhn_mat_round_trips_and_reads_10_as_0(tmp_path):
    written = write_svhn(tmp_path, n_train=40, n_test=25)
    got = read_quietly("svhn", tmp_path)
    for a, b in zip(got, written):
        assert np.array_equal(a, b)
    assert 0 in got[1] and got[1].max() <= 9
    stored = df.read_svhn_mat(tmp_path / "train_32x32.mat")[1]
    assert np.array_equal(stored, written[1])


def test_unofficial_checksum_warns_naming_each_file(tmp_path, monkeypatch):
    write_cifar(tmp_path, "cifar10")
    first = tmp_path / "cifar-10-batches-py" / "data_batch_1"
    monkeypatch.setitem(df.CIFAR10_MD5, "data_batch_1", df.file_md5(first))   # "official"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df.read_arrays("cifar10", tmp_path)
    named = sorted(str(w.message).split(": ")[1].split(" ")[0] for w in caught
                   if issubclass(w.category, df.ChecksumWarning))
    assert named == sorted(str(p) for p in df.dataset_files("cifar10", tmp_path)[1:])
    assert "torchvision's is " + df.CIFAR10_MD5["test_batch"] in str(caught[-1].message)
    with pytest.warns(df.ChecksumWarning, match="not the official file"):
        line = df.check_dataset("cifar10", tmp_path)
    assert line.startswith("cifar10: 100 train / 40 test images") and "5 file(s) differ" in line


def test_missing_files_say_how_to_get_them(tmp_path):
    for name in ("cifar10", "cifar100", "svhn"):
        msg = one_line_error("is missing.*nothing is downloaded unless asked.*grid download",
                             df.read_arrays, name, tmp_path)
        assert str(df.dataset_files(name, tmp_path)[0]) in msg
    write_cifar(tmp_path, "cifar10")
    (tmp_path / "cifar-10-batches-py" / "data_batch_3").unlink()
    msg = one_line_error("data_batch_3 is missing;", df.read_arrays, "cifar10", tmp_path)
    assert "more of its files" not in msg


def test_unreadable_files_are_errors_saying_so(tmp_path):
    write_cifar(tmp_path, "cifar10")
    write_svhn(tmp_path)
    batch = tmp_path / "cifar-10-batches-py" / "data_batch_2"
    batch.write_bytes(b"not a pickle at all")
    one_line_error(f"{batch} cannot be read as a pickled CIFAR batch", read_quietly, "cifar10",
                   tmp_path)
    mat = tmp_path / "test_32x32.mat"
    mat.write_bytes(b"\x00" * 300)
    one_line_error(f"{mat} cannot be read as a MATLAB .mat file", read_quietly, "svhn", tmp_path)


class Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.mkdir, (self.path,)


def test_a_data_file_never_runs_code(tmp_path):
    write_cifar(tmp_path, "cifar10")
    target = tmp_path / "pwned"
    batch = tmp_path / "cifar-10-batches-py" / "test_batch"
    batch.write_bytes(pickle.dumps({"data": Evil(str(target))}))
    one_line_error("cannot be read.*refers to .*mkdir", read_quietly, "cifar10", tmp_path)
    assert not target.exists()


def test_wrong_shapes_are_errors_saying_so(tmp_path):
    write_cifar(tmp_path, "cifar100")
    train = tmp_path / "cifar-100-python" / "train"
    entry = {"data": np.zeros((4, 1024), np.uint8), "fine_labels": [0, 1, 2, 3]}
    train.write_bytes(py2_pickle(entry))
    one_line_error(r"has data of shape \(4, 1024\).*\(n, 3072\)", read_quietly, "cifar100",
                   tmp_path)
    train.write_bytes(py2_pickle({"data": np.zeros((4, 3072), np.uint8), "labels": [0] * 4}))
    one_line_error("has no 'fine_labels' entry", read_quietly, "cifar100", tmp_path)
    train.write_bytes(py2_pickle({"data": np.zeros((4, 3072), np.uint8), "fine_labels": [0] * 3}))
    one_line_error("labels of shape", read_quietly, "cifar100", tmp_path)
    train.write_bytes(py2_pickle({"data": np.zeros((2, 3072), np.uint8), "fine_labels": [0, 100]}))
    one_line_error(r"labels in \[0, 100\], outside 0..99", read_quietly, "cifar100", tmp_path)
    train.write_bytes(py2_pickle([1, 2]))
    one_line_error("holds a list, not the dict", read_quietly, "cifar100", tmp_path)

    write_svhn(tmp_path)
    mat = tmp_path / "train_32x32.mat"
    savemat(mat, {"X": np.zeros((28, 28, 1, 5), np.uint8), "y": np.ones((5, 1), np.uint8)})
    one_line_error(r"has X of shape \(28, 28, 1, 5\).*\(32, 32, 3, n\)", read_quietly, "svhn",
                   tmp_path)
    savemat(mat, {"X": np.zeros((32, 32, 3, 5), np.uint8), "y": np.ones((4, 1), np.uint8)})
    one_line_error(r"has y of shape \(4, 1\); it must be \(5, 1\)", read_quietly, "svhn", tmp_path)
    savemat(mat, {"X": np.zeros((32, 32, 3, 2), np.uint8), "y": np.array([[0], [3]], np.uint8)})
    one_line_error(r"labels in \[0, 3\], outside 1..10", read_quietly, "svhn", tmp_path)


def test_load_dataset_reads_the_files(tmp_path):
    Xtr, ytr, Xte, yte = write_cifar(tmp_path, "cifar10", n_train=100, n_test=40)
    with pytest.warns(df.ChecksumWarning):
        d = load_dataset("cifar10", data_dir=tmp_path, device="cpu", train_limit=30)
    assert d.X_train.shape == (30, 3, 32, 32) and d.X_val.shape == (20, 3, 32, 32)
    assert torch.equal(d.y_test, torch.as_tensor(yte)) and d.pad == 4 and d.spec.flip
    # normalised with the per-channel statistics of the training images alone (issue 35): not
    # the validation images', nor the whole official training set's
    train = as_generator(child_seed(0, 0)).permutation(100)[20:][:30]
    fit = torch.as_tensor(Xtr[train] / 255.0).float()
    mean, std = fit.mean(dim=(0, 2, 3), keepdim=True), fit.std(dim=(0, 2, 3), keepdim=True)
    raw = torch.as_tensor(Xte, dtype=torch.float32) / 255
    assert torch.allclose(d.X_test * std + mean, raw, atol=1e-5)
    assert torch.allclose(d.X_train.mean(dim=(0, 2, 3)), torch.zeros(3), atol=1e-5)
    write_svhn(tmp_path)
    with pytest.warns(df.ChecksumWarning):
        s = load_dataset("svhn", data_dir=tmp_path, device="cpu")
    assert s.X_train.shape[1:] == (3, 32, 32) and not s.spec.flip and "official test set" in s.note


def test_download_is_asked_for_only_when_files_are_missing(tmp_path, monkeypatch):
    calls = []

    def fake_fetch(name, data_dir):
        calls.append(name)
        write_cifar(data_dir, name)
        return "fetched"
    monkeypatch.setattr(datasets, "fetch", fake_fetch)
    with pytest.warns(df.ChecksumWarning):
        load_dataset("cifar100", data_dir=tmp_path, download=True, device="cpu")
        load_dataset("cifar100", data_dir=tmp_path, download=True, device="cpu")
    assert calls == ["cifar100"]
