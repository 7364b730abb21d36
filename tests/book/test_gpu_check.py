"""benchmarks/gpu_check.sh cannot rot: its dry run (the same steps on the CPU, tiny settings)
collects the CUDA tests it names, runs the GPU benchmark's code path and stores the Section 5
chapter as a reference, in a throw-away copy of the book. The chapter's smoke execution and its
runs are the session's smoke book's (its notebook executes once per test session), so the
profile step stores it without executing it again, and the explore step reuses its teachers."""
from __future__ import annotations

import json
import re
import shutil
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, copy_book

pytestmark = pytest.mark.slow


def test_gpu_check_dry_run(smoke_book, tmp_path):
    (tmp_path / "book").mkdir()
    root = copy_book(tmp_path / "book")
    for name in ("benchmarks", "tests"):     # copy_book brings benchmarks/gpu_runs only
        shutil.copytree(ROOT / name, root / name, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("book/chapters/smoke/sec5_distillation.ipynb",      # the session's execution
                 "results/smoke/sec5_distillation.json", "results/runs"):
        src, dest = smoke_book / name, root / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest)
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "PY": sys.executable}
    proc = subprocess.run(["bash", "benchmarks/gpu_check.sh", "--dry-run", "tests", "profile",
                           "bench", "drift", "explore"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=1500)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    summary = (out / "summary.txt").read_text()
    for step in ("tests", "bench", "profile", "drift", "explore"):
        assert f"[gpu_check] {step}: exit 0" in summary, log[-4000:]
    collected = (out / "tests.txt").read_text().strip().splitlines()
    assert "collected" in collected[-1] and "error" not in collected[-1], collected[-1]
    assert sum("[cuda]" in line for line in collected) >= 10   # the CUDA cases it names exist
    rows = [json.loads(line) for line in (out / "bench.jsonl").read_text().splitlines()]
    names = {r["name"] for r in rows}
    assert {"gpu_teacher_eager", "gpu_gradnorm_cost_eager", "gpu_lockstep_k3_eager",
            "paper_grid_gpu_hours_eager", "gpu_teachers_across_seeds_eager",
            "gpu_students_across_seeds_eager"} <= names
    across = {r["name"]: r for r in rows if "across_seeds" in r["name"]}
    assert across["gpu_teachers_across_seeds_eager"]["images_per_s"] > 0
    assert across["gpu_students_across_seeds_eager"]["student_images_per_s"] > 0
    assert not any(n.endswith("_error") for n in names), rows
    assert all({"name", "ours_s", "baseline_s", "ratio"} <= set(r) for r in rows)
    drift = [json.loads(line) for line in (out / "drift.txt").read_text().splitlines()
             if line.startswith("{")]
    assert {r["name"] for r in drift} == {f"drift_{s}_{r}" for s in ("bf16", "fp32",
                                          "fp32_deterministic") for r in ("teacher", "students_k3")}
    assert all("error" not in r and r["rel_graph_eager"] == 0.0 for r in drift), drift  # all eager
    profile = (out / "profile.txt").read_text()
    assert "sec5_distillation: up to date (profile smoke), not re-executed" in profile, \
        profile[-3000:]                                    # the smoke book's execution, stored
    assert "fig1." in profile and "[gpu_check] claims of" in profile, profile[-3000:]
    for role in ("teacher", "student"):                       # where the profile's time went
        assert f"[gpu_check] time of the {role} runs: train_s " in profile, profile[-3000:]
        assert re.search(f"time of the {role} runs: .*; wall [0-9.]+ s, of which set-up and "
                         "checkpoints -?[0-9.]+ s", profile), profile[-3000:]
    explore = (out / "explore.txt").read_text()            # longer students, a custom run
    assert "[gpu_check] explore, student_epochs 3:" in explore, explore[-3000:]
    assert "fig1.noise_lowers_gradnorm_sigma2 | digits, 256 images: σ² = 4:" in explore, \
        explore[-3000:]
    assert re.search(r"digits, 256 images: σ² = 1: .* spread over seeds [0-9.]+; .*\n.*seeds for "
                     r"an 80 % chance of a verdict", explore), explore[-3000:]   # sigma2_gap.py's plan
    import tarfile
    with tarfile.open(out / "profile_runs.tgz") as tar:           # where the profile's time went
        names = tar.getnames()
    assert any(n.endswith("metrics.json") for n in names) and not any(n.endswith(".pt") for n in names)
    with tarfile.open(out / "reference_smoke.tgz") as tar:     # the stored reference, to commit
        names = tar.getnames()
        assert {"smoke/sec5_distillation.ipynb", "smoke/sec5_distillation.json"} <= set(names), names
        stored = json.load(tar.extractfile("smoke/sec5_distillation.ipynb"))
    assert stored["metadata"]["dsmlib"]["provenance"]["profile"] == "smoke"
    # 8 files come back from one device call: the default steps' 7, plus drift's and explore's
    assert "torch" in summary and len(list(out.rglob("*"))) <= 9
