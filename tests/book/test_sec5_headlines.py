"""Issue 50's "done when", read off every committed Section 5 reference (and any built result
of the chapter found in results/): every accuracy claim's headline is one of its judged cases
(for "some student" the one with the highest lower bound), no headline is zero-width or the
whole range, no case of a setting below the gate carries a verdict, and no case with a spread
is set aside for the size of its standard error."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsmlib.chapters.sec5_distillation.gains import ACCURACY_IDS, SOME_IDS

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(ROOT.glob("reference/*/sec5_distillation.json")) + sorted(
    ROOT.glob("results/*/sec5_distillation.json"))


def check_headlines(doc: dict) -> None:
    gate = (doc.get("extra") or {}).get("not_judged")
    assert gate is not None, "the results name the settings below the accuracy gate"
    for c in doc["claims"]:
        if c["id"] not in ACCURACY_IDS:
            continue
        acc = [d for d in c["details"] if d.get("delta") is not None]
        for d in acc:
            assert not any(d["case"] == s or d["case"].startswith(f"{s}:") for s in gate), \
                (c["id"], d["case"], "a case below the gate")
            assert "test image's worth" not in d.get("caveat", ""), (c["id"], d["case"])
            if d.get("caveat") and d.get("se_seeds"):
                pytest.fail(f"{c['id']}: {d['case']} has a spread over seeds but a caveat")
        if c.get("unit") != "points":          # headed by a G case (the swap's "flatter")
            continue
        lo, hi = c["interval"]
        assert hi > lo, (c["id"], "zero-width headline")
        bounds = c.get("bounds") or [-100.0, 100.0]
        assert not (lo <= bounds[0] and hi >= bounds[1]), (c["id"], "the whole range")
        # the heading case is stored as data; a row shown beside the claim never heads it
        heads = [d for d in acc if d.get("heads")]
        assert len(heads) == 1 and not heads[0].get("beside"), (c["id"], "one heading case")
        assert heads[0]["interval"] == c["interval"] and heads[0]["measured"] == c["measured"]
        assert not heads[0].get("caveat"), (c["id"], "headline not a judged case")
        if c["id"] in SOME_IDS:
            usable = [d for d in acc if not d.get("caveat") and not d.get("beside")
                      and d["interval"][1] > d["interval"][0]]
            assert lo == max(d["interval"][0] for d in usable), c["id"]


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_headlines_are_judged_cases(path):
    check_headlines(json.loads(path.read_text()))


def test_a_reference_is_checked():
    assert any(p.parts[-3] == "reference" for p in DOCS), "no committed Section 5 reference"
