"""Tests of dsmlib.claims: verdict logic, the results files and the ledger."""
from __future__ import annotations

import json
import math

import pytest

from types import SimpleNamespace

from dsmlib.book import ledger
from dsmlib.foundation import claims

C = SimpleNamespace(**vars(claims), **{k: getattr(ledger, k) for k in ledger.__all__})


@pytest.mark.parametrize("interval, band, expected", [
    ((0.9, 1.1), (0.8, 1.25), "confirmed"),
    ((0.5, 0.7), (0.8, 1.25), "refuted"),
    ((1.3, 1.4), (0.8, 1.25), "refuted"),
    ((0.7, 0.9), (0.8, 1.25), "inconclusive"),
    ((0.0, 0.05), (None, 0.1), "confirmed"),
    ((-0.01, 0.2), (None, 0.1), "inconclusive"),
    ((2.0, 3.0), (1.0, None), "confirmed"),
    ((0.1, 0.2), (1.0, math.inf), "refuted"),
])
def test_verdict(interval, band, expected):
    assert C.verdict(interval, band) == expected


def test_verdict_rejects_unordered_input():
    with pytest.raises(ValueError, match="ordered"):
        C.verdict((2.0, 1.0), (0.0, 3.0))
    with pytest.raises(ValueError, match="band must be a pair"):
        C.verdict((0.0, 1.0), (0.0,))


def test_measure_builds_a_99_percent_interval():
    c = C.measure("x.y", "s", paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1))
    assert c.interval == pytest.approx([1.0 - 2.5758 * 0.01, 1.0 + 2.5758 * 0.01], abs=1e-4)
    assert c.verdict == "confirmed" and c.band == [0.9, 1.1]
    wide = C.measure("x.y", "s", paper=1.0, measured=1.0, se=0.2, band=(0.9, 1.1))
    assert wide.verdict == "inconclusive"
    t = C.measure("x.y", "s", paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1), dof=5)
    assert t.interval[1] - t.interval[0] > c.interval[1] - c.interval[0]  # Student-t is wider


def test_measure_rejects_nan():
    with pytest.raises(ValueError, match="measured must be finite"):
        C.measure("x", "s", paper=1.0, measured=float("nan"), se=0.1, band=(0, 1))


def test_every_case_is_decided_by_the_worst_case():
    ok = C.measure("", "", paper=1, measured=1.0, se=0.01, band=(0.9, 1.1))
    near = C.measure("", "", paper=1, measured=0.5, se=0.01, band=(0.9, 1.1))
    far = C.measure("", "", paper=1, measured=0.1, se=0.01, band=(0.9, 1.1))
    combined = C.every_case("id", "st", {"a": ok, "b": near, "c": far})
    assert combined.verdict == "refuted" and combined.measured == 0.1
    assert [d["case"] for d in combined.details] == ["a", "b", "c"]
    assert C.every_case("id", "st", {"a": ok, "b": ok}).verdict == "confirmed"
    unsure = C.measure("", "", paper=1, measured=1.0, se=0.5, band=(0.9, 1.1))
    assert C.every_case("id", "st", {"a": ok, "b": unsure}).verdict == "inconclusive"


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
    md = C.ledger_markdown(docs, chapter_paths={"ols": "chapters/ols"}, profile="smoke")
    assert "{doc}`ols <chapters/ols>`" in md
    assert "Statement \\| with bar" in md and "✘ refuted" in md and "✔ confirmed" in md
    summary = C.summary_markdown(docs, profile="smoke")
    assert "**2 claims**: 1 confirmed, 1 refuted" in summary


def test_duplicate_ids_and_bad_results_are_rejected(tmp_path):
    c = C.measure("same", "s", paper=1, measured=1.0, se=0.0, band=(0, 2))
    with pytest.raises(ValueError, match="unique"):
        C.write_results([c, c], notebook="n", profile="smoke", results_dir=tmp_path)
    bad = tmp_path / "smoke" / "bad.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps({"notebook": "bad", "profile": "smoke",
                               "claims": [{"id": "x", "verdict": "probably"}]}))
    with pytest.raises(ValueError, match="verdict 'probably'"):
        C.load_results(tmp_path, "smoke")
