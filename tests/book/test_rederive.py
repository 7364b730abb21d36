"""A reference of a chapter that trains commits its run records, and is re-derived on a CPU
from them when only the analysis changed (issue 42, dsmlib.book.references.records): the whole
road, on the smoke book's Section 5 execution (tests/conftest.py), in a git copy of it.

Its execution stands in for a GPU reference (its provenance is stamped with a GPU and the first
commit); the reference made from it commits config.json and done.json per run and nothing else;
an analysis-only change (the notebook's text) marks it re-derivable; the re-derivation, with
the training runs deleted, gives the same claims to the last digit and names both commits and
devices; a missing record is refused with its key; a changed run configuration marks it as
needing a GPU, and is refused too."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dsmlib.book.profiles import load_specs
from dsmlib.book.execute.provenance_html import provenance_line
from dsmlib.book.references import run as reference_run
from dsmlib.book.references.freshness import current_references
from dsmlib.book.references.records import (RECORD_FILES, load_manifest, profile_runs,
                                            records_dir, training_key)
from dsmlib.book.references.scales import reference_caption
from dsmlib.book.references.section import reference_cells
from dsmlib.book.references.stored import reference_paths
from dsmlib.book.execute.store import executed_path, results_path
from dsmlib.models.sec5_distillation.runs import CONFIG, DONE
from helpers import copy_book

pytestmark = pytest.mark.slow
NAME, PROFILE = "sec5_distillation", "smoke"
GPU = "Test GPU (stands in for the H200)"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root,
                          check=True, capture_output=True, text=True).stdout.strip()


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "--short=12", "HEAD")


def section5(root: Path):
    specs = load_specs(root / "notebooks")
    return next(r for r in current_references(root, "quick", specs)
                if r.name == NAME and r.profile == PROFILE), specs[NAME]


def test_a_gpu_reference_is_rederived_on_the_cpu_from_its_run_records(smoke_book, tmp_path):
    root = tmp_path / "book"
    shutil.copytree(smoke_book, root, ignore=shutil.ignore_patterns("_build"))
    (root / ".gitignore").write_text("results/\nbook/\n_build/\n")
    shutil.rmtree(root / "reference")     # the other references: each costs a plan per look
    git(root, "init", "-q")
    trained_at = commit(root, "the book")
    chapter = executed_path(root, PROFILE, NAME)          # the "GPU" execution
    nb = json.loads(chapter.read_text())
    prov = nb["metadata"]["dsmlib"]["provenance"]
    prov["commit"], prov["hardware"]["gpu"] = trained_at, GPU
    chapter.write_text(json.dumps(nb))
    claims = json.loads(results_path(root, PROFILE, NAME).read_text())["claims"]

    # the reference commits one record per run: its configuration and metrics, no weights
    stored = reference_run.make_references(root, [NAME], profile=PROFILE, allow_cpu=True,
                                           progress=False)
    assert stored == [reference_paths(root, PROFILE, NAME)[0]]
    configs = profile_runs(load_specs(root / "notebooks")[NAME], PROFILE)
    records = records_dir(root, PROFILE)
    assert sorted(p.name for p in records.iterdir() if p.is_dir()) == sorted(
        c.key() for c in configs)
    assert {f.name for d in records.iterdir() if d.is_dir() for f in d.iterdir()} == {
        CONFIG, DONE} == set(RECORD_FILES)
    manifest = load_manifest(root, PROFILE, NAME)
    assert manifest["training_key"] == training_key(configs)
    assert manifest["trained"]["commit"] == trained_at
    assert manifest["trained"]["hardware"]["gpu"] == GPU
    ref, _ = section5(root)
    assert ref.fresh and ref.refresh == ""

    # an analysis-only change: the records cover every run, so it is re-derivable
    source = root / "notebooks" / f"{NAME}.md"
    source.write_text(source.read_text() + "\nA sentence added by the analysis.\n")
    analysed_at = commit(root, "an analysis-only change, with the run records")
    ref, _ = section5(root)
    assert not ref.fresh and ref.refresh == "rederive"
    command = f"python -m dsmlib reference {NAME} --profile {PROFILE} --rederive"
    assert "Only the analysis changed" in ref.reason and command in ref.reason
    assert command in ref.hint and "re-derivable on a CPU" in reference_caption(ref)
    assert command in reference_cells({"cells": []}, ref)[0]["source"]

    # re-derived without the training runs (weights, checkpoints): the same claims
    shutil.rmtree(root / "results" / "runs")
    reference_run.make_references(root, [NAME], profile=PROFILE, rederive=True,
                                  progress=False)
    doc = json.loads(reference_paths(root, PROFILE, NAME)[1].read_text())
    assert doc["claims"] == claims
    assert doc["run"]["parameters"]["runs_dir"] == f"reference/{PROFILE}/runs"
    assert doc["run"]["parameters"]["train_missing"] is False
    meta = json.loads(reference_paths(root, PROFILE, NAME)[0].read_text())["metadata"]["dsmlib"]
    p = meta["provenance"]
    assert p["commit"] == analysed_at and p["trained"]["commit"] == trained_at
    assert p["trained"]["hardware"]["gpu"] == GPU and p["hardware"]["gpu"] != GPU
    line = provenance_line(p)
    assert f"GPU {GPU}) at commit <code>{trained_at}</code>" in line, line
    assert f"no GPU) at commit <code>{analysed_at}</code>" in line or p["hardware"]["gpu"], line
    ref, _ = section5(root)
    assert ref.fresh and ref.origin.startswith(f"trained on {GPU} at commit {trained_at}, "
                                               "analysed on ")
    assert ref.origin.endswith(f"at commit {analysed_at}")

    # a missing record is refused with its key, on the command line in one line
    gone = configs[-1].key()
    shutil.move(records / gone, tmp_path / gone)
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), "reference",
                           NAME, "--profile", PROFILE, "--rederive", "--force"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert f"1 of its {len(configs)} runs have no committed record" in proc.stderr
    assert gone in proc.stderr and "needs a GPU run" in proc.stderr
    shutil.move(tmp_path / gone, records / gone)

    # something that trains changed (a run configuration): it needs a GPU
    profiles = root / "notebooks" / "profiles.yml"
    text = profiles.read_text()
    assert text.count("headroom_seeds: [0, 1, 2]") == 1
    profiles.write_text(text.replace("headroom_seeds: [0, 1, 2]", "headroom_seeds: [0, 1, 3]"))
    ref, spec = section5(root)
    new = [c.key() for c in profile_runs(spec, PROFILE) if not (records / c.key()).exists()]
    assert not ref.fresh and ref.refresh == "gpu" and len(new) == 6   # a teacher, 5 students
    assert "Training changed" in ref.reason and new[0] in ref.reason
    assert "needs a GPU run" in reference_caption(ref) and "--rederive" not in ref.hint
    with pytest.raises(ValueError, match=f"6 of its {len(configs)} runs have no committed "
                                         f"record .*{new[0]}"):
        reference_run.make_references(root, [NAME], profile=PROFILE, rederive=True,
                                      progress=False, allow_dirty=True)


def test_the_committed_gpu_reference_has_no_records_and_needs_a_gpu(tmp_path):
    """The gpu reference committed before run records existed is not re-derived: it stays
    stale until a GPU run makes it again (with its records), and says so."""
    root = copy_book(tmp_path / "book")
    shutil.rmtree(root / "reference" / "paper", ignore_errors=True)   # a plan per reference
    if not reference_paths(root, "gpu", NAME)[0].exists():
        pytest.skip("no committed gpu reference of Section 5")
    if load_manifest(root, "gpu", NAME) is not None:
        pytest.skip("the committed gpu reference has its run records")
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), "reference",
                           NAME, "--profile", "gpu", "--rederive"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "no run records were committed" in proc.stderr and "GPU" in proc.stderr
    ref = next(r for r in current_references(root, "quick", load_specs(root / "notebooks"))
               if r.name == NAME and r.profile == "gpu")
    assert not ref.fresh and ref.refresh == "gpu" and "No run records" in ref.reason
