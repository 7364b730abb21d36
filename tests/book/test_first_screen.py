"""The Section 5 page's first screen across scales (issue 63, item 1; ``book/references/lead``):
every claim of every scale in one row, the paper's data first, the strongest evidence starred,
a disagreement of fresh scales named, and no first screen with a single scale."""
from __future__ import annotations

import re

from dsmlib.book.references.contrast import Scale
from dsmlib.book.references.lead import first_screen_html, ordered_scales, strongest


def _claim(cid: str, verdict: str, measured: float, p: float | None, unit: str = "points",
           size: str = "") -> dict:
    return {"id": cid, "verdict": verdict, "measured": measured, "p_value": p,
            "interval": [measured - 1.0, measured + 1.0], "unit": unit, "size": size}


def _scale(label: str, dataset: str, depth: int, claims: list[dict], fresh: bool = True) -> Scale:
    extra = {"settings": {"s": {"dataset": dataset, "depth": depth}},
             "short": {"a": "noise helps", "b": "G falls"}}
    return Scale(label, {"claims": claims, "extra": extra}, fresh)


def _scales() -> list[Scale]:
    built = _scale("quick (this build)", "digits", 8,
                   [_claim("a", "confirmed", 2.0, 1e-3), _claim("b", "inconclusive", 0.1, 0.3,
                                                                 unit="ln ratio")])
    cifar = _scale("cpu-cifar10 reference", "cifar10", 8,
                   [_claim("a", "refuted", -7.0, 1e-9, size="by at least δ (loss − δ: 1)"),
                    _claim("b", "confirmed", -0.2, 1e-6, unit="ln ratio")])
    stale = _scale("gpu reference (stale)", "digits", 56,
                   [_claim("a", "confirmed", 9.0, 1e-30)], fresh=False)
    return [built, cifar, stale]


def test_the_paper_data_comes_first_and_the_strongest_fresh_evidence_is_starred():
    scales = _scales()
    assert [s.label for s in ordered_scales(scales)] == [
        "cpu-cifar10 reference", "quick (this build)", "gpu reference (stale)"]
    # a stale scale never counts, however small its p-value; fresh scales decide "a" both ways
    best, disagree = strongest("a", ordered_scales(scales))
    assert best.label == "cpu-cifar10 reference" and disagree
    best, disagree = strongest("b", ordered_scales(scales))
    assert best.label == "cpu-cifar10 reference" and not disagree
    html = first_screen_html(scales)
    head = html[:html.index("</thead>")]
    assert head.index("CIFAR-10, ResNet-8") < head.index("digits, ResNet-8 (quick")
    assert head.count("(stale)") == 1                      # said once, by its label
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", html[html.index("<tbody"):], re.S)
    assert len(rows) == 2                                   # one row per claim
    a, b = rows
    assert "noise helps" in a and "(points)" in a and "the scales disagree" in a
    assert "G falls" in b and "(ln ratio)" in b and "disagree" not in b
    # the star marks the CIFAR-10 cell only: the first data cell of each row
    cells_a = re.findall(r"<td[^>]*>(.*?)</td>", a, re.S)
    assert ["★" in c for c in cells_a] == [False, True, False, False]
    assert "by at least δ" in cells_a[1] and "loss − δ" not in cells_a[1]
    assert "not measured" in re.findall(r"<td[^>]*>(.*?)</td>", b, re.S)[3]


def test_one_scale_has_no_first_screen():
    assert first_screen_html(_scales()[:1]) == ""
