"""Data sets of Section 5: the paper's 80/20 split, the fixed digits test split, normalisation,
upsampling, clear errors offline (the file formats: test_dataset_files.py), and the on-device crop-and-flip augmentation."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dsmlib.models.data import DIGITS_SIZE
from dsmlib.models.sec5_distillation.dataset_specs import SPECS
from dsmlib.models.sec5_distillation.datasets import augment, load_dataset


def _rows(X: torch.Tensor) -> set[bytes]:
    return {r.cpu().numpy().tobytes() for r in X.reshape(X.shape[0], -1)}


def test_digits_split_sizes_disjoint_and_seeded(device):
    a = load_dataset("digits", split_seed=0, device=device)
    n_test = round(0.2 * DIGITS_SIZE)
    n_val = round(0.2 * (DIGITS_SIZE - n_test))
    assert a.X_test.shape[0] == n_test and a.X_val.shape[0] == n_val
    assert a.X_train.shape == (DIGITS_SIZE - n_test - n_val, 1, 8, 8)
    assert a.X_train.device.type == device.type and a.y_train.dtype == torch.int64
    # scikit-learn's digits contain a few duplicate images, so compare index-free: almost
    # nothing of the test set reappears in train or validation
    test = _rows(a.X_test)
    assert len(test & _rows(a.X_train)) + len(test & _rows(a.X_val)) <= 5
    b = load_dataset("digits", split_seed=0, device=device)
    assert torch.equal(a.X_train, b.X_train) and torch.equal(a.y_val, b.y_val)
    c = load_dataset("digits", split_seed=1, device=device)
    assert torch.equal(a.y_test, c.y_test)                  # the test split is fixed (its
    za, zc = ((x - x.mean()) / x.std() for x in (a.X_test, c.X_test))   # scaling is the split's)
    assert float((za - zc).abs().max()) < 1e-5
    assert not torch.equal(a.y_train, c.y_train)            # the train/val split is seeded
    assert "held-out test split" in a.note


def test_normalisation_from_the_training_images_alone():
    """The statistics are the training images' (mean 0, sd 1 there, to rounding), not those of
    the validation images or of the official training set: with 100 training images the scaling
    follows those 100, and the validation images are then off centre."""
    d = load_dataset("digits", device="cpu")
    assert abs(float(d.X_train.mean())) < 1e-5 and abs(float(d.X_train.std()) - 1) < 1e-4
    full = torch.cat([d.X_train, d.X_val])
    assert abs(float(full.mean())) > 1e-4            # validation images were not in the mean
    lim = load_dataset("digits", train_limit=100, device="cpu")
    assert abs(float(lim.X_train.mean())) < 1e-5 and abs(float(lim.X_train.std()) - 1) < 1e-4
    assert not torch.allclose(lim.X_val, d.X_val)    # scaled by other statistics
    # the same images, affinely rescaled: raw = x * sd + mean recovers one from the other
    a, b = d.X_val.flatten().double(), lim.X_val.flatten().double()
    slope = float(((a - a.mean()) * (b - b.mean())).sum() / ((a - a.mean()) ** 2).sum())
    assert float((b - (b.mean() + slope * (a - a.mean()))).abs().max()) < 1e-4


def test_normalisation_and_upsampling():
    d = load_dataset("digits", device="cpu")
    up = load_dataset("digits", image_size=32, device="cpu")
    assert up.X_train.shape[1:] == (1, 32, 32) and up.pad == 4 and d.pad == 1
    assert torch.equal(up.y_train, d.y_train)
    lim = load_dataset("digits", train_limit=100, device="cpu")
    assert lim.X_train.shape[0] == 100 and torch.equal(lim.y_train, d.y_train[:100])


def test_bad_input_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_dataset("mnist")
    for name in ("cifar100", "svhn"):     # where torchvision's files go, or how to fetch them
        with pytest.raises(ValueError, match="is missing.*nothing is downloaded unless asked.*"
                                             "put torchvision's files .* in .*grid download.*"
                                             "download=True"):
            load_dataset(name, data_dir=tmp_path)
    with pytest.raises(ValueError, match="'cifar10' is missing.*`make data`"):
        load_dataset("cifar10", data_dir=tmp_path)
    with pytest.raises(ValueError, match="val_fraction"):
        load_dataset("digits", val_fraction=1.0)
    with pytest.raises(ValueError, match="train_limit"):
        load_dataset("digits", train_limit=1)
    assert SPECS["cifar100"].num_classes == 100 and not SPECS["svhn"].flip


def test_augment_is_a_shifted_window_of_the_padded_image(device):
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(64, 3, 6, 6, generator=torch.Generator().manual_seed(1)).to(device)
    out = augment(x, g, pad=2, flip=True)
    assert out.shape == x.shape and out.device.type == device.type
    xp = F.pad(x, (2, 2, 2, 2))
    for i in range(x.shape[0]):
        windows = [xp[i, :, a:a + 6, b:b + 6] for a in range(5) for b in range(5)]
        assert any(torch.equal(out[i], w) or torch.equal(out[i], w.flip(2)) for w in windows)
    assert torch.equal(augment(x, g, pad=0, flip=False), x)


def test_augment_flips_half_and_crops_uniformly():
    """Flip frequency and crop offsets over 20,000 draws: each within 5 binomial standard
    errors of 1/2 and of 1/3 (false failure < 1e-5 for the four checks together)."""
    n = 20_000
    g = torch.Generator().manual_seed(3)
    x = torch.arange(3.0).reshape(1, 1, 1, 3).expand(n, 1, 1, 3).contiguous()
    flipped = augment(x, g, pad=0, flip=True)[:, 0, 0, 0] == 2
    assert abs(float(flipped.float().mean()) - 0.5) < 5 * math.sqrt(0.25 / n)
    rows = (torch.arange(3.0) + 1).expand(n, 1, 3, 3).contiguous()   # every row [1, 2, 3]
    shifted = augment(rows, g, pad=1, flip=False)[:, 0, 1, 1]       # centre pixel: 1, 2 or 3
    for v in (1.0, 2.0, 3.0):
        frac = float((shifted == v).float().mean())
        assert abs(frac - 1 / 3) < 5 * math.sqrt(2 / 9 / n)


def test_train_images_counts_the_split_load_dataset_makes():
    from dsmlib.models.sec5_distillation.datasets import train_images
    assert train_images("digits") == load_dataset("digits", device="cpu").X_train.shape[0] == 1150
    assert train_images("cifar10") == 40_000 and train_images("svhn") == 73_257 - 14_651
