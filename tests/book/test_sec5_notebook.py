"""The Section 5 notebook under the smoke profile: it executes, records its claims (one level per
noise kind: no steps between levels, so no "more noise" claims) with a case in each setting, and
a second execution reads the finished runs instead of training them again.

The first execution is the session's smoke book's (tests/conftest.py): Section 5's notebook
executes once per test session, and the second execution runs in a copy of that book."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow
IDS = {"fig1.noise_lowers_gradnorm_sigma2", "fig1.noise_lowers_gradnorm_p",
       "fig1.gradnorm_below_control_over_epochs", "fig1.student_below_teacher",
       "fig1.noisy_beats_teacher", "fig1.noisy_beats_noiseless", "fig1.some_student_beats_teacher",
       "fig1.validation_selection_near_best", "fig2.train_loss_to_zero",
       "fig2.swap_flatter_and_better"}
SETTINGS = ("digits, 256 images", "digits, 64 images")
ACCURACY = {"fig1.noisy_beats_teacher", "fig1.noisy_beats_noiseless",
            "fig1.some_student_beats_teacher", "fig1.validation_selection_near_best",
            "fig2.swap_flatter_and_better"}


def execute(root, *args):
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), "execute",
                           "sec5_distillation", "--profile", "smoke", "--no-progress", *args],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def test_notebook_executes_and_reuses_finished_runs(smoke_book, tmp_path):
    root = tmp_path / "again"      # the smoke book's execution, its runs and results
    shutil.copytree(smoke_book, root, ignore=shutil.ignore_patterns("_build"))
    doc = json.loads((root / "results" / "smoke" / "sec5_distillation.json").read_text())
    gate = doc["extra"]["not_judged"]           # settings below the accuracy gate, with why
    assert set(gate) <= set(SETTINGS) and all(w.startswith("not judged: ") for w in gate.values())
    judged = [s for s in SETTINGS if s not in gate]
    only_acc = ACCURACY - {"fig2.swap_flatter_and_better"}
    assert {c["id"] for c in doc["claims"]} == (IDS if judged else IDS - only_acc)
    for c in doc["claims"]:
        assert c["scope"] in ("setting", "reading")
        assert "digits" in c["note"]
        for s in (judged if c["id"] in only_acc else SETTINGS):    # a case in each setting
            assert any(d["case"].startswith(s) for d in c["details"]), (c["id"], s)
        for d in c["details"]:           # no accuracy case of a setting below the gate
            assert d.get("delta") is None or not any(d["case"].startswith(s) for s in gate)
    done = sorted((root / "results" / "runs").glob("*/done.json"))
    assert len(done) == (2 + 3) * 6 + 2        # per seed a teacher and 5 students (smoke: 2
                                               # full-data seeds, 3 headroom seeds, the fewest
                                               # that decide); the curve's 2 teachers
    # the export is `grid collect`'s alone: a hand run with other parameters cannot replace it
    assert not list((root / "results" / "runs").glob("collected-*.json"))
    stamps = [p.stat().st_mtime_ns for p in done]
    proc = execute(root, "--force")       # executed again: the runs are read, not trained
    assert "executing sec5_distillation (profile smoke)" in proc.stderr, proc.stderr[-4000:]
    assert [p.stat().st_mtime_ns for p in done] == stamps          # nothing retrained
    again = json.loads((root / "results" / "smoke" / "sec5_distillation.json").read_text())
    assert again["claims"] == doc["claims"]
    nb = json.loads((root / "book" / "chapters" / "smoke" / "sec5_distillation.ipynb").read_text())
    text = json.dumps(nb)
    assert "needs GPUs" in text and "fig-sec5-figure1" in text and "fig-sec5-figure2" in text
    assert "fig-sec5-gradnorm-epochs" in text and "CIFAR-100 is not in this grid" in text
    raw = (root / "book" / "chapters" / "smoke" / "sec5_distillation.ipynb").read_text()
    assert ("<td data-label='setting'>digits, 256 images</td><td data-label='p'>0.3</td>"
            "<td data-label='κ²'>0.44</td>") in raw                # the kappa^2 table (HTML)
    for piece in ("fig-sec5-curve", "noise-units", "by-setting", "delta-verdicts",
                  "seeds-to-decide", "Batches: the students of one teacher"):
        assert piece in text, piece
