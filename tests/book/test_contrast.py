"""Claims across scales (issue 50, item 7; issue 60, item 3): the same case side by side at
every scale that measured it, a contrast marked from the difference of the two estimates with
both errors, the settings that differ named; and the tables a chapter attaches to its results,
shown for every scale in the ledger."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dsmlib.book.site.ledger import ledger_markdown
from dsmlib.book.references.contrast import (Z_CONTRAST, contrast_html, contrast_rows,
                                             difference, scales_of,
                                             split_case, tables_html)
from dsmlib.book.references.stored import Reference

WORDS = {"depth": "ResNet depth", "lr": "learning rate η", "n_train": "training images"}


def _case(case: str, measured: float, se: float, verdict: str = "inconclusive") -> dict:
    half = Z_CONTRAST * se
    return dict(case=case, measured=measured, se=se, interval=[measured - half, measured + half],
                verdict=verdict, band=[1e-12, None], size="size not decided")


def _doc(measured: float, se: float, *, depth: int, lr: float, verdict="inconclusive",
         setting="digits, 50 images", extra_cases: tuple = ()) -> dict:
    details = [_case(setting, measured, se, verdict),
               *(_case(f"{setting}: {name}", m, e) for name, m, e in extra_cases)]
    claim = dict(id="fig1.noisy_beats_teacher", statement="s", verdict=verdict,
                 measured=measured, interval=details[0]["interval"],
                 band=[1e-12, None], paper=0.0, unit="points", size="size not decided",
                 quantity="gain", case=setting, details=details)
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


def test_a_contrast_is_marked_where_the_difference_excludes_zero():
    """Both inconclusive, so no verdict differs. −0.05 (SE 0.66) here and +1.41 (SE 0.74)
    there: the difference, 1.46 with SE 0.99, holds 0, no contrast. At SE 0.2 and 0.2 the
    difference's interval leaves 0 out: a contrast, with the settings that differ."""
    built = _doc(-0.05, 0.66, depth=8, lr=0.1)
    ref = _doc(1.41, 0.74, depth=56, lr=0.02, setting="digits, 100 images")
    (row,) = contrast_rows(scales_of(built, [_ref(ref)], "quick"))
    assert row["contrasts"] == [] and row["case"] == "" and row["kind"] == "limited"
    built = _doc(-0.05, 0.2, depth=8, lr=0.1)
    ref = _doc(1.41, 0.2, depth=56, lr=0.02, setting="digits, 100 images")
    (row,) = contrast_rows(scales_of(built, [_ref(ref)], "quick"))
    (pair,) = row["contrasts"]
    assert pair["a"] == "quick (this build)" and pair["b"] == "gpu reference"
    assert pair["confounds"] == ["depth", "lr"] and not pair["stale"]
    assert pair["difference"]["measured"] == -1.46
    assert [c["setting"] for c in row["cells"]] == ["digits, 50 images", "digits, 100 images"]
    text = contrast_html(scales_of(built, [_ref(ref)], "quick"))
    assert "Δ" in text and "≠" not in text     # ≠ means "verdict differs" in the ledger
    assert "they differ in ResNet depth, learning rate η" in text
    assert "1 of 1 cases show one" in text
    assert "fig2.train_loss_to_zero" not in text       # only the claims named for contrast


def test_the_old_mark_fired_without_a_difference_the_new_one_holds_its_level():
    """Two scales with the same true value, SEs 0.1 and 0.6 (the audit's): "one interval
    excludes the other's estimate" fires in about two runs in three; the difference's 99 %
    interval in about 1 % (20,000 simulated pairs; binomial SE 0.07 %, tolerance 0.4 %: a false
    failure is a 5-SE event)."""
    rng = np.random.default_rng(60)
    n, old, new = 20_000, 0, 0
    for a, b in zip(rng.normal(0, 0.1, n), rng.normal(0, 0.6, n)):
        ca, cb = _case("s", a, 0.1), _case("s", b, 0.6)
        old += not (ca["interval"][0] <= b <= ca["interval"][1]) or \
            not (cb["interval"][0] <= a <= cb["interval"][1])
        new += difference(ca, cb)["differs"]
    assert 0.6 < old / n < 0.75
    assert abs(new / n - 0.01) < 0.004


def test_cases_are_compared_like_with_like():
    """"some student" at σ² = 0.25 here and σ² = 4 there is not a comparison: only cases of the
    same name (in a setting of the same kind) are set side by side; a full-data case never
    faces a data-limited one."""
    built = _doc(0.5, 0.3, depth=8, lr=0.1, extra_cases=(("σ² = 0.25", 0.2, 0.1),
                                                          ("vs Hinton student", 1.0, 0.2)))
    ref = _doc(0.4, 0.3, depth=56, lr=0.02, setting="digits, 100 images",
               extra_cases=(("σ² = 4", 3.0, 0.1), ("vs Hinton student", 2.5, 0.2)))
    ref["claims"][0]["details"].append(_case("digits, full data: vs Hinton student", 9.0, 0.1))
    rows = contrast_rows(scales_of(built, [_ref(ref)], "quick"))
    assert [(r["case"], r["kind"]) for r in rows] == [("", "limited"),
                                                      ("vs Hinton student", "limited")]
    hinton = rows[1]
    assert [c["case"]["measured"] for c in hinton["cells"]] == [1.0, 2.5]
    assert split_case("digits, 100 images: p = 0.1", ["digits, 100 images"]) == (
        "digits, 100 images", "p = 0.1")


def test_a_stale_reference_is_contrasted_but_labelled_stale():
    built = _doc(-0.05, 0.2, depth=8, lr=0.1)
    ref = _doc(1.41, 0.2, depth=56, lr=0.02)
    rows = contrast_rows(scales_of(built, [_ref(ref, fresh=False)], "quick"))
    assert rows[0]["contrasts"][0]["stale"] and rows[0]["cells"][1]["scale"].endswith("(stale)")


def test_nothing_to_contrast_without_a_reference_or_named_claims():
    built = _doc(0.0, 1.0, depth=8, lr=0.1)
    assert contrast_html(scales_of(built, [], "quick")) == ""
    bare = dict(built, extra={})
    assert contrast_html(scales_of(bare, [_ref(built)], "quick")) == ""


def test_a_case_is_split_at_the_longest_matching_setting():
    settings = {"digits, 50 images": {}, "digits, 500 images": {}}
    assert split_case("digits, 500 images: p = 0.1", settings) == ("digits, 500 images",
                                                                   "p = 0.1")
    assert split_case("digits, 50 images", settings) == ("digits, 50 images", "")
    assert split_case("q", settings) == (None, "q")


def test_the_ledger_shows_the_contrast_and_every_scales_tables():
    built = _doc(-0.05, 0.5, depth=8, lr=0.1)
    ref = _doc(1.41, 0.5, depth=56, lr=0.02)
    text = ledger_markdown([built], chapter_paths={}, profile="quick",
                           references={"sec5_distillation": [_ref(ref)]})
    assert "Across scales." in text and "they differ in ResNet depth" in text
    assert text.count("Distillation against noise") == 2        # this build's and the gpu one's
    assert "(gpu reference)" in text
    assert tables_html(scales_of(dict(built, extra={}), [], "quick")) == ""


def test_a_claim_judged_at_one_scale_only_is_not_set_side_by_side():
    built = _doc(-0.05, 0.5, depth=8, lr=0.1)
    ref = _doc(1.41, 0.5, depth=56, lr=0.02)
    ref["claims"] = [c for c in ref["claims"] if c["id"] != "fig1.noisy_beats_teacher"]
    assert contrast_rows(scales_of(built, [_ref(ref)], "quick")) == []
    assert contrast_html(scales_of(built, [_ref(ref)], "quick")) == ""
