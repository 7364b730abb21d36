"""Tests of dsmlib.book.ledger and dsmlib.foundation.results: results files round-trip into the
ledger, the errata, the summary and the coverage statement."""
from __future__ import annotations

import json

import pytest

from dsmlib.book import ledger
from dsmlib.foundation import claims as C
from dsmlib.foundation.results import load_results, write_results


def _claims():
    return [C.measure("ols.a", "Statement | with $x^2$", paper=1, measured=1.0, se=0.01,
                      band=(0.9, 1.1), scope="setting", exact=1.0),
            C.measure("ols.b", "Other", paper=0, measured=0.5, se=0.01, band=(None, 0.1),
                      source="book"),
            C.measure("prop1.c", "Refuted one", paper=1, measured=3.0, se=0.01, band=(0.9, 1.1),
                      scope="assumptions", condition="Holds if x.", note="A note.")]


def test_results_round_trip_and_ledger(tmp_path):
    path = write_results(_claims()[:2], notebook="ols", profile="smoke", results_dir=tmp_path)
    write_results(_claims()[2:], notebook="prop1_noise", profile="smoke", results_dir=tmp_path)
    assert path == tmp_path / "smoke" / "ols.json"
    doc = json.loads(path.read_text())
    assert doc["notebook"] == "ols" and doc["profile"] == "smoke"
    assert {"id", "statement", "paper", "measured", "interval", "verdict", "exact",
            "scope", "condition"} <= set(doc["claims"][0])
    docs = load_results(tmp_path, "smoke")
    paths = {"ols": "chapters/ols", "prop1_noise": "chapters/prop1_noise"}
    md = ledger.ledger_markdown(docs, chapter_paths=paths, profile="smoke")
    assert "## {doc}`chapters/ols`" in md and "```{raw} html" in md
    assert "✘ refuted" in md and "✔ confirmed" in md
    assert '<span class="math notranslate nohighlight">\\(x^2\\)</span>' in md
    summary = ledger.summary_markdown(docs, profile="smoke")
    assert "**3 claims**: 1 confirmed, 2 refuted" in summary
    assert "1 under *assumptions*" in summary
    errata = ledger.errata_markdown(docs, chapter_paths=paths, profile="smoke")
    assert "Refuted one" in errata and "Holds if x." in errata and "Statement" not in errata
    coverage = ledger.coverage_markdown(docs, profile="smoke")
    assert "Proposition 1" in coverage and "not measured yet" in coverage


def test_results_files_are_checked(tmp_path):
    c = C.measure("same", "s", paper=1, measured=1.0, se=0.0, band=(0, 2), scope="assumptions")
    with pytest.raises(ValueError, match="unique"):
        write_results([c, c], notebook="n", profile="smoke", results_dir=tmp_path)
    with pytest.raises(ValueError, match="scope"):
        write_results([C.measure("x", "s", paper=1, measured=1.0, se=0.0, band=(0, 2))],
                      notebook="n", profile="smoke", results_dir=tmp_path)
    refuted = C.measure("y", "s", paper=1, measured=5.0, se=0.0, band=(0, 2), scope="setting")
    with pytest.raises(ValueError, match="condition"):
        write_results([refuted], notebook="n", profile="smoke", results_dir=tmp_path)
    bad = tmp_path / "smoke" / "bad.json"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text(json.dumps({"notebook": "bad", "profile": "smoke",
                               "claims": [{"id": "x", "verdict": "probably"}]}))
    with pytest.raises(ValueError, match="verdict 'probably'"):
        load_results(tmp_path, "smoke")
