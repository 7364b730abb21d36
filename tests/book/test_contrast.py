"""Claims across scales (issue 50, item 7): each scale's headline side by side, a contrast
marked wherever one scale's interval excludes the other's estimate (not only where verdicts
differ), the settings that differ named as confounds; and the tables a chapter attaches to its
results, shown for every scale in the ledger."""
from __future__ import annotations

from pathlib import Path

from dsmlib.book.ledger import ledger_markdown
from dsmlib.book.references.contrast import (contrast_html, contrast_rows, headline_setting,
                                             scales_of, tables_html)
from dsmlib.book.references.stored import Reference

WORDS = {"depth": "ResNet depth", "lr": "learning rate η", "n_train": "training images"}


def _doc(measured: float, half: float, *, depth: int, lr: float, verdict="inconclusive",
         setting="digits, 50 images") -> dict:
    claim = dict(id="fig1.noisy_beats_teacher", statement="s", verdict=verdict,
                 measured=measured, interval=[measured - half, measured + half],
                 band=[1.0, None], paper=0.0, unit="points", direction="cannot tell",
                 quantity=f"gain (deciding case: {setting})", details=[])
    other = dict(claim, id="fig2.train_loss_to_zero", unit="", quantity="loss")
    return {"notebook": "sec5_distillation", "claims": [claim, other],
            "extra": {"contrast": ["fig1.noisy_beats_teacher"], "setting_words": WORDS,
                      "settings": {setting: dict(depth=depth, lr=lr, n_train=50),
                                   "digits, full data": dict(depth=depth, lr=lr, n_train=1150)},
                      "tables": [{"title": "Distillation against noise", "columns": ["a", "b"],
                                  "rows": [["x", "+1.00"]]}]}}


def _ref(doc: dict, profile: str = "gpu", fresh: bool = True) -> Reference:
    return Reference(profile, "sec5_distillation", doc, {"commit": "c0ffee"}, "k", fresh,
                     Path("x.ipynb"))


def test_a_contrast_is_marked_where_an_interval_excludes_the_other_estimate():
    """Both inconclusive, so no verdict differs. −0.05 ± 1.7 here and +1.41 ± 1.9 there: each
    interval holds the other's estimate, no contrast. −0.05 ± 0.5 here: this build's interval
    [−0.55, 0.45] leaves out +1.41, a contrast, whose confounds are the settings that differ."""
    built = _doc(-0.05, 1.7, depth=8, lr=0.1)
    ref = _doc(1.41, 1.9, depth=56, lr=0.02, setting="digits, 100 images")
    (row,) = contrast_rows(scales_of(built, [_ref(ref)], "quick"))
    assert row["contrasts"] == []
    built = _doc(-0.05, 0.5, depth=8, lr=0.1)
    (row,) = contrast_rows(scales_of(built, [_ref(ref)], "quick"))
    (pair,) = row["contrasts"]
    assert pair["a"] == "quick (this build)" and pair["b"] == "gpu reference"
    assert pair["confounds"] == ["depth", "lr"] and not pair["stale"]
    assert [c["setting"] for c in row["cells"]] == ["digits, 50 images", "digits, 100 images"]
    text = contrast_html(scales_of(built, [_ref(ref)], "quick"))
    assert "≠" in text and "confounds: ResNet depth, learning rate η" in text
    assert "1 of 1 claims show one" in text
    assert "fig2.train_loss_to_zero" not in text       # only the claims named for contrast


def test_a_stale_reference_is_contrasted_but_labelled_stale():
    built = _doc(-0.05, 0.5, depth=8, lr=0.1)
    ref = _doc(1.41, 0.5, depth=56, lr=0.02)
    rows = contrast_rows(scales_of(built, [_ref(ref, fresh=False)], "quick"))
    assert rows[0]["contrasts"][0]["stale"] and rows[0]["cells"][1]["scale"].endswith("(stale)")


def test_nothing_to_contrast_without_a_reference_or_named_claims():
    built = _doc(0.0, 1.0, depth=8, lr=0.1)
    assert contrast_html(scales_of(built, [], "quick")) == ""
    bare = dict(built, extra={})
    assert contrast_html(scales_of(bare, [_ref(built)], "quick")) == ""


def test_the_headline_setting_is_the_longest_matching_prefix():
    settings = {"digits, 50 images": {}, "digits, 500 images": {}}
    assert headline_setting({"quantity": "q (deciding case: digits, 500 images: p = 0.1)"},
                            settings) == "digits, 500 images"
    assert headline_setting({"quantity": "q"}, settings) is None


def test_the_ledger_shows_the_contrast_and_every_scales_tables():
    built = _doc(-0.05, 0.5, depth=8, lr=0.1)
    ref = _doc(1.41, 0.5, depth=56, lr=0.02)
    text = ledger_markdown([built], chapter_paths={}, profile="quick",
                           references={"sec5_distillation": [_ref(ref)]})
    assert "Across scales." in text and "confounds: ResNet depth" in text
    assert text.count("Distillation against noise") == 2        # this build's and the gpu one's
    assert "(gpu reference)" in text
    assert tables_html(scales_of(dict(built, extra={}), [], "quick")) == ""


def test_a_claim_judged_at_one_scale_only_is_not_set_side_by_side():
    built = _doc(-0.05, 0.5, depth=8, lr=0.1)
    ref = _doc(1.41, 0.5, depth=56, lr=0.02)
    ref["claims"] = [c for c in ref["claims"] if c["id"] != "fig1.noisy_beats_teacher"]
    assert contrast_rows(scales_of(built, [_ref(ref)], "quick")) == []
    assert contrast_html(scales_of(built, [_ref(ref)], "quick")) == ""
