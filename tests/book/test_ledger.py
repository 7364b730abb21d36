"""Tests of dsmlib.book.ledger: the results files round-trip into the ledger and the summary."""
from __future__ import annotations

import json

from dsmlib.book import ledger
from dsmlib.foundation import claims as C


def test_results_round_trip_and_ledger(tmp_path):
    cl = [C.measure("ols.a", "Statement | with bar", paper=1, measured=1.0, se=0.01,
                    band=(0.9, 1.1)),
          C.measure("ols.b", "Other", paper=0, measured=0.5, se=0.01, band=(None, 0.1),
                    source="book")]
    path = C.write_results(cl, notebook="ols", profile="smoke", results_dir=tmp_path)
    assert path == tmp_path / "smoke" / "ols.json"
    doc = json.loads(path.read_text())
    assert doc["notebook"] == "ols" and doc["profile"] == "smoke"
    assert {"id", "statement", "paper", "measured", "interval", "verdict"} <= set(doc["claims"][0])
    docs = C.load_results(tmp_path, "smoke")
    md = ledger.ledger_markdown(docs, chapter_paths={"ols": "chapters/ols"}, profile="smoke")
    assert "{doc}`ols <chapters/ols>`" in md
    assert "Statement \\| with bar" in md and "✘ refuted" in md and "✔ confirmed" in md
    summary = ledger.summary_markdown(docs, profile="smoke")
    assert "**2 claims**: 1 confirmed, 1 refuted" in summary
