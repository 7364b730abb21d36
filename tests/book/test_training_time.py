"""A reference's training time comes from its run records, everywhere it is stated (issue 71,
item 4): ``python -m dsmlib list``, its provenance line and the reproducibility page say the
seconds its records sum to, each run's share of its group's time
(:func:`dsmlib.book.references.records.record_seconds`), with the analysis's time apart, and
never the wall time of the command that committed the records (``cpu-cifar10``: 19 s, where its
records sum to 14,811 s).

Fabricated here: three small records, a teacher alone and two students in lockstep, that sum to
hours, committed as a reference's records by the book's own :func:`store_run_records`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsmlib.book.commands.cli import run_time
from dsmlib.book.references.records import (load_manifest, record_seconds, records_dir,
                                            records_seconds, store_run_records,
                                            training_seconds)
from dsmlib.book.references.stored import Reference, reference_paths
from dsmlib.book.site.pages import references_markdown
from dsmlib.book.execute.provenance_html import (duration_text, provenance_line,
                                                 provenance_table, provenance_text,
                                                 trained_seconds)
from tiny_runs import tiny_teacher

PROFILE, NAME = "cpu-test", "sec5_distillation"
EPOCHS = 10
#: A teacher's epoch alone (lockstep 1): 600 s of steps, 60 of measurements, 40 of G: 700 s
TEACHER_ROW = {"train_s": 600.0, "eval_s": 60.0, "gradnorm_s": 40.0, "lockstep": 1}
#: Two students' epoch in lockstep: 1,200 s for the group, 600 s each
STUDENT_ROW = {"train_s": 1000.0, "eval_s": 100.0, "gradnorm_s": 100.0, "lockstep": 2}
RECORDS_S = EPOCHS * 700.0 + 2 * EPOCHS * 600.0        # 19,000 s: 5.3 h
COMMAND_S, ANALYSIS_S = 19.2, 18.4                      # the commands' own wall times
CPU = {"cpu": "Test EPYC", "cpu_count": 2, "gpu": None}
VERSIONS = {"python": "3.11.7", "numpy": "2.4.6", "torch": "2.14.1"}


def fabricate_runs(runs_dir: Path) -> list:
    """A teacher and two students' finished records (config.json, done.json) under
    ``runs_dir``, ``EPOCHS`` rows each; returns their configurations."""
    configs = [tiny_teacher(seed=11), tiny_teacher(seed=12), tiny_teacher(seed=13)]
    for config, row in zip(configs, (TEACHER_ROW, STUDENT_ROW, STUDENT_ROW)):
        d = runs_dir / config.key()
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps(config.to_dict()))
        history = [{"epoch": e, **row} for e in range(EPOCHS)]
        (d / "done.json").write_text(json.dumps({"config": config.to_dict(),
                                                 "history": history}))
    return configs


@pytest.fixture
def reference(tmp_path) -> dict:
    """A reference of ``NAME`` under ``PROFILE`` re-derived from fabricated records: its
    records committed (with their manifest) and its notebook's provenance; returns the
    provenance."""
    root = tmp_path / "book"
    configs = fabricate_runs(tmp_path / "trained")
    store_run_records(root, PROFILE, NAME, configs, tmp_path / "trained",
                      {"profile": PROFILE, "commit": "aaaa00000000", "hardware": CPU,
                       "versions": VERSIONS, "wall_s": COMMAND_S})
    trained = load_manifest(root, PROFILE, NAME)["trained"]
    prov = {"profile": PROFILE, "commit": "bbbb00000000", "hardware": CPU, "versions": VERSIONS,
            "wall_s": ANALYSIS_S, "parameters": {}, "trained": trained}
    nb = reference_paths(root, PROFILE, NAME)[0]
    nb.write_text(json.dumps({"cells": [], "metadata": {"dsmlib": {"provenance": prov}}}))
    return {"root": root, "configs": configs, "provenance": prov}


def test_a_records_time_is_each_runs_share_of_its_groups_epochs():
    """One record: every row's steps, measurements and G over the runs that shared them."""
    assert record_seconds([TEACHER_ROW] * 3) == pytest.approx(2100.0)
    assert record_seconds([STUDENT_ROW] * 3) == pytest.approx(1800.0)
    assert record_seconds([{"train_s": 5.0, "eval_s": None, "lockstep": None}]) == 5.0
    assert record_seconds([]) == 0.0


def test_the_records_of_a_reference_sum_to_hours_and_the_manifest_says_so(reference):
    """The committed manifest's training time is the records' sum (19,000 s), not the 19 s
    of the command that committed them; each group's time is counted once."""
    root, configs = reference["root"], reference["configs"]
    keys = [c.key() for c in configs]
    base = records_dir(root, PROFILE)
    assert records_seconds(base, keys) == pytest.approx(RECORDS_S)
    assert records_seconds(base, keys + keys[:1]) == pytest.approx(RECORDS_S)   # each once
    assert training_seconds(configs, base) == pytest.approx(RECORDS_S)
    trained = load_manifest(root, PROFILE, NAME)["trained"]
    assert trained_seconds(trained) == pytest.approx(RECORDS_S)
    assert trained["wall_s"] == COMMAND_S
    assert trained_seconds({"wall_s": COMMAND_S}) is None          # never the command's time
    assert duration_text(RECORDS_S) == "5.3 h"
    assert [duration_text(s) for s in (19.2, 299.3, 7300)] == ["19 s", "5.0 min", "2.0 h"]


def test_list_states_the_records_training_time_and_the_analysis_apart(reference):
    """``python -m dsmlib list``'s line for the reference."""
    line = run_time(reference["root"], PROFILE, NAME)
    assert line == ("reference: trained on Test EPYC, 2 cores: 5.3 h of training (19,000 s, "
                    "summed from its run records); analysed in 18 s on Test EPYC, 2 cores"), line


def test_the_provenance_line_states_the_records_training_time(reference):
    """The line under the chapter's title where the reference is shown."""
    text = provenance_text(reference["provenance"])
    assert "with torch 2.14.1: 5.3 h of training (19,000 s, summed from its run records)" in text
    assert text.endswith("(Python 3.11.7, numpy 2.4.6, torch 2.14.1) in 18 s."), text
    assert "19 s" not in text and "<code>" in provenance_line(reference["provenance"])


def test_the_reproducibility_page_states_the_records_training_time(reference):
    """The page's table of references, and its table of this build's chapters (for a chapter
    whose provenance names a training)."""
    prov = reference["provenance"]
    ref = Reference(profile=PROFILE, name=NAME, doc={}, provenance=prov, key="k", fresh=True,
                    notebook=reference_paths(reference["root"], PROFILE, NAME)[0])
    expected = "analysis 18 s; 5.3 h of training (19,000 s, summed from its run records)"
    page = references_markdown([ref], {NAME: f"chapters/{NAME}"})
    assert expected in page and "19 s" not in page, page
    table = provenance_table({NAME: prov}, {NAME: f"chapters/{NAME}"})
    assert expected in table and "19 s" not in table, table
