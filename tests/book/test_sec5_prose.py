"""Section 5's prose is true at every scale (issue 70, item 3): each committed reference of the
chapter is re-derived from its run records into a copy of the book (as
``test_cpu_cifar10.py::test_the_committed_reference_is_rederived_to_the_last_digit`` does), and
every fact its executed notebook states about its setting is checked against those records:
whether the teachers fit their training images (and the range they reach), the device they
trained on, the data, the teachers' test accuracy and accuracy band, how many settings there
are, the rule that sized them, the SGD steps per run, and headings that hold at every scale."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, copy_book

pytestmark = pytest.mark.slow
CHAPTER = "sec5_distillation"
#: The Section 5 references committed (cpu-cifar10-fit joins once its reference is committed).
PROFILES = sorted(p.parent.name for p in (ROOT / "reference").glob(f"*/{CHAPTER}.json"))
#: Where a CIFAR-10 page may say "digits": the note on the quick build, the trial that chose
#: the students' loss, and digits' missing test set; nothing about its own setting.
DIGITS_ELSEWHERE = ("scikit-learn's 8×8 digits", "in a trial on digits",
                    "**Digits** has no official test set")
COUNTS = {1: "one", 2: "two", 3: "three"}
DEVICES = {"cpu": "a CPU", "cuda": "a GPU"}


def _text(nb: dict) -> tuple[str, str]:
    """(the static Markdown, every output, caption and glued value) of an executed notebook."""
    static, made = [], []
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown":
            static.append(src)
            continue
        made.append(str(((cell["metadata"].get("mystnb") or {}).get("figure") or {})
                        .get("caption") or ""))
        for out in cell.get("outputs", []):
            for key, value in (out.get("data") or {}).items():
                if key.endswith(("text/markdown", "text/html")):
                    made.append("".join(value) if isinstance(value, list) else value)
    return "\n".join(static), "\n".join(made)


def _teachers(runs: Path, entry: dict) -> list[dict]:
    """The final rows (and devices) of a setting's teachers, from their run records."""
    out = []
    for done in runs.glob("*/done.json"):
        rec = json.loads(done.read_text())
        c, last = rec["config"], rec["history"][-1]
        if c["role"] == "teacher" and c["dataset"] == entry["dataset"] \
                and last["n_train"] == entry["n_train"]:
            out.append(dict(last, device=rec.get("device")))
    return out


@pytest.fixture(scope="module", params=PROFILES)
def rederived(request, tmp_path_factory):
    """(profile, results, the re-derived notebook's static and made text) per reference."""
    profile = request.param
    root = copy_book(tmp_path_factory.mktemp(profile) / "book")
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), "reference",
                           CHAPTER, "--profile", profile, "--rederive", "--force",
                           "--allow-dirty", "--no-progress"],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((root / "reference" / profile / f"{CHAPTER}.json").read_text())
    nb = json.loads((root / "reference" / profile / f"{CHAPTER}.ipynb").read_text())
    return profile, doc, *_text(nb)


def test_each_setting_fact_is_its_records(rederived):
    profile, doc, static, made = rederived
    text = static + "\n" + made
    settings = doc["extra"]["settings"]
    runs = ROOT / "reference" / profile / "runs"
    assert "This build" not in text and "Two settings" not in text
    n = len(settings)
    assert f"This execution measures {COUNTS[n]} setting{'s' if n != 1 else ''}" in made
    devices = set()
    for name, entry in settings.items():
        teachers = _teachers(runs, entry)
        assert len(teachers) == entry["seeds"], name
        train = [100 * t["train_acc"] for t in teachers]
        lo, hi = min(train), max(train)
        span = f"{lo:.1f} %" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}–{hi:.1f} %"
        if lo >= 99.0:
            assert f"{name} ({entry['n_train']:,} training images; its teachers fit their " \
                   f"training images, {span} of them" in made, name
        else:
            assert f"its teachers do not fit their training images: they reach {span}" in made
            assert "so that every teacher fits" not in text
        test = sum(100 * t["test_acc"] for t in teachers) / len(teachers)
        assert f"{name}: its teachers reach {test:.2f} % test accuracy" in made
        assert f"{entry['steps']:,} SGD steps per run" in made
        devices |= {t["device"] for t in teachers}
    words = " and ".join(sorted(DEVICES[d] for d in devices))
    assert f"trained on {words}," in made
    if devices == {"cpu"}:
        assert "GPU budget" not in text and "GPU's minutes" not in text
    grid = doc["run"]["parameters"]
    if grid["curve_sizes"]:
        assert "read off the teachers' accuracy against the training-set size" in made
    else:
        assert "85–93" not in text and "not read off a curve (this grid has none)" in made
        if profile.startswith("cpu-cifar10"):
            assert "the CPU budget's rule" in made or "cpu_budget.FIT_IMAGES" in made


def test_the_data_is_its_own(rederived):
    """A CIFAR-10 reference says "digits" only where it speaks of another scale; a digits one
    says its verdicts describe digits."""
    profile, doc, static, made = rederived
    data = {s["dataset"] for s in doc["extra"]["settings"].values()}
    text = static + "\n" + made
    if "digits" in data:
        assert "The digits verdicts describe digits" in made
        return
    for allowed in DIGITS_ELSEWHERE:
        text = text.replace(allowed, "")
    assert "digits" not in text.lower(), re.findall(r".{60}digits.{60}", text.lower())[:3]
    assert "ResNet-" in made and "CIFAR-10, the paper's data" in made


def test_every_heading_holds_at_every_scale(rederived):
    """The headings are the chapter's own, none naming a number of settings or a band."""
    _, _, static, _ = rederived
    source = (ROOT / "notebooks" / f"{CHAPTER}.md").read_text()
    mine = re.findall(r"^#{1,3} .+$", static, re.M)
    assert mine and set(mine) <= set(re.findall(r"^#{1,3} .+$", source, re.M))
    assert not [h for h in mine if re.search(r"\b(two|2) settings|85|headroom", h, re.I)]
