"""Tests of dsmlib.book.site.answer: the introduction opens with the book's answer (issue 71,
item 11), at most six sentences, one per part of the paper, each resting on claims it names,
every number of it recomputed here from those claims, read at the strongest decided evidence
over this build and the committed references, with the setting named."""
from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path

import pytest

from dsmlib.book.references.stored import Reference, references_by_chapter
from dsmlib.book.site import answer as A
from dsmlib.book.site import ledger
from dsmlib.figures.tables import fmt_interval, fmt_number
from dsmlib.foundation import claims as C
from dsmlib.book.profiles import load_specs
from helpers import ROOT

#: The parts of the paper, as the chapters declare them in profiles.yml.
PARTS = A.parts(load_specs(ROOT / "notebooks"))

NUMBER = re.compile(r"[−-]?\d+(?:,\d{3})*(?:\.\d+)?(?:e[−+-]?\d+)?")


def _committed() -> dict[str, list[Reference]]:
    """Every committed reference's results (``reference/*/*.json``), each taken as fresh."""
    refs = [Reference(p.parent.name, p.stem, json.loads(p.read_text()), {}, "key", True,
                      p.with_suffix(".ipynb"))
            for p in sorted((ROOT / "reference").glob("*/*.json"))]
    return references_by_chapter(refs)


def _scale_doc(label: str, chapter: str, docs: list[dict], refs: dict[str, list[Reference]],
               profile: str) -> tuple[dict, bool]:
    """The results an execution label names, and whether that execution is fresh."""
    if label == f"{profile} (this build)":
        return next(d for d in docs if d["notebook"] == chapter), True
    for r in refs.get(chapter, []):
        if label == f"{r.profile} reference" + ("" if r.fresh else " (stale)"):
            return r.doc, r.fresh
    raise AssertionError(f"no execution {label!r} of {chapter}")


def check_sentence(s: A.Sentence, part: A.Part, docs: list[dict],
                   refs: dict[str, list[Reference]], profile: str) -> None:
    """Every claim a sentence names is read where it says, at the strongest fresh decided
    evidence; its verdict, value, interval (and unit) and id are in the text; and every number of
    the text, the paper's declared claim and the settings aside, is one of those claims'."""
    assert s.part == part.title and s.text.startswith(f"**{part.title}** {part.claim}")
    rest = s.text[len(f"**{part.title}** {part.claim}"):]
    allowed: set[str] = set()
    for b in s.basis:
        doc, fresh = _scale_doc(b.scale, part.chapter, docs, refs, profile)
        c = next(c for c in doc["claims"] if c["id"] == b.claim)
        assert b.verdict == c["verdict"] and f"`{b.claim}`" in rest
        unit = f" {c['unit']}" if c.get("unit") else ""
        value = f"{fmt_number(c['measured'])} {fmt_interval(c['interval'])}{unit}"
        assert value in rest, (b.claim, value)
        assert f"({c['verdict']}" in rest or "(inconclusive wherever" in rest
        assert b.setting in rest and (b.setting.endswith("(stale)") == (not fresh))
        allowed |= {fmt_number(c["measured"]), fmt_number(c.get("paper")),
                    *(fmt_number(x) for x in c["interval"])}
        rest = rest.replace(b.setting, "", 1).replace(f"`{b.claim}`", "", 1)
    stray = [n for n in NUMBER.findall(rest) if n.replace("-", "−") not in allowed]
    assert stray == [], (part.title, stray, rest)


def _strongest_by_hand(cid: str, executions: list[tuple[str, dict, bool]]) -> str | None:
    """The label of the fresh execution whose decided verdict of ``cid`` has the smallest
    p-value (None where no fresh one decides it)."""
    decided = [(c.get("p_value", 1.0), label) for label, doc, fresh in executions if fresh
               for c in doc["claims"] if c["id"] == cid and c["verdict"] != "inconclusive"]
    return min(decided)[1] if decided else None


def test_the_committed_references_answer_every_part_of_the_paper():
    """From the committed references alone (a machinery build counts for nothing), one
    sentence per part of the paper, six at most, every number recomputed from the claims each
    names, each read at the strongest decided evidence; Section 5 is read on CIFAR-10 (the
    paper's data), from the cpu-cifar10 reference, with its images and network named."""
    refs = _committed()
    sentences = A.answer([], refs, profile="smoke", build_counts=False)
    assert len(sentences) == len(PARTS) <= 6
    assert [s.part for s in sentences] == [p.title for p in PARTS]
    for s, part in zip(sentences, PARTS):
        assert s.basis, part.title
        check_sentence(s, part, [], refs, "smoke")
        executions = [(f"{r.profile} reference", r.doc, r.fresh) for r in refs[part.chapter]]
        if part.papers_data:
            executions = [e for e in executions if all(
                v.get("dataset") != "digits"
                for v in (e[1].get("extra") or {}).get("settings", {}).values())]
        for b in s.basis:
            best = _strongest_by_hand(b.claim, executions)
            assert best is None or b.scale == best, (b.claim, b.scale, best)
    sec5 = sentences[-1]
    assert {b.scale for b in sec5.basis} == {"cpu-cifar10 reference"}
    assert "CIFAR-10, 1,200 images, ResNet-8, `cpu-cifar10` reference" in sec5.text
    assert "fig1.noisy_beats_teacher" in {b.claim for b in sec5.basis}
    # what it is scored against is its heading row's baseline: cpu-cifar10's teachers do not
    # fit, so the continued teacher (issue 70, item 1)
    assert "test accuracy against the continued teacher (its teacher trained as long" in sec5.text


def test_every_part_is_declared_once_with_claims_its_chapter_makes():
    """The parts are the six the issue names, each claim id declared once, each one a claim
    of its chapter's committed reference, and no declared text types in a number of its own
    but the paper's names for its parts."""
    assert [p.chapter for p in PARTS] == ["prop1_noise", "prop2_convergence",
                                            "prop3_regularizer", "remark3_valley", "ols",
                                            "sec5_distillation"]
    refs = _committed()
    ids = []
    for p in PARTS:
        scales = [A.Scale(r.profile, r.doc) for r in refs[p.chapter]]
        mine = [e.claim_in(scales) for e in p.evidence]
        made = {c["id"] for r in refs[p.chapter] for c in r.doc["claims"]}
        assert all(mine) and set(mine) <= made, p.title
        ids += mine
        assert not re.search(r"\d", p.claim), p.claim
        for e in p.evidence:
            assert not re.search(r"\d", e.words), e.words
            assert "{v}" in e.words
    assert len(ids) == len(set(ids))
    # Section 5's evidence names roles its results resolve (extra["answer_ids"]), so that no
    # Section 5 claim id is written outside its registry
    sec5 = next(p for p in PARTS if p.chapter == "sec5_distillation")
    assert all(e.role and not e.claim for e in sec5.evidence)


def _claim(cid: str, verdict: str, p: float, measured: float = 1.0, **kw) -> dict:
    se = {"confirmed": 0.001, "refuted": 0.001, "inconclusive": 0.2}[verdict]
    m = {"confirmed": measured, "refuted": 3.0, "inconclusive": 1.1}[verdict]
    c = asdict(C.measure(cid, f"Claim {cid}", paper=1, measured=m, se=se, band=(0.9, 1.1),
                         scope="setting", condition="" if verdict == "confirmed" else "c", **kw))
    assert c["verdict"] == verdict
    c["p_value"] = p
    return c


def _ref(profile: str, chapter: str, claims: list[dict], fresh: bool = True,
         settings: dict | None = None) -> Reference:
    doc = {"notebook": chapter, "profile": profile, "claims": claims,
           "extra": {"settings": settings} if settings else {}}
    return Reference(profile, chapter, doc, {}, "k", fresh, Path(f"{profile}/{chapter}.ipynb"))


PROP2 = next(p for p in PARTS if p.chapter == "prop2_convergence")
SEC5 = next(p for p in PARTS if p.chapter == "sec5_distillation")


def test_the_strongest_decided_evidence_speaks_and_a_split_is_said():
    """Of two fresh decided executions the one with the smaller p-value speaks; where fresh
    executions decide a claim both ways the sentence says so; a claim no execution decides is
    read where it comes nearest and called inconclusive wherever measured; a stale reference
    speaks only where no fresh execution measured the claim, labelled stale; a machinery
    build is left out."""
    a, b = (e.claim for e in PROP2.evidence)
    built = {"notebook": "prop2_convergence", "profile": "quick",
             "claims": [_claim(a, "confirmed", 1e-3, 1.0), _claim(b, "inconclusive", 0.2)]}
    refs = {"prop2_convergence": [
        _ref("paper", "prop2_convergence", [_claim(a, "confirmed", 1e-9, 1.01),
                                             _claim(b, "inconclusive", 0.05)]),
        _ref("gpu", "prop2_convergence", [_claim(a, "refuted", 1e-2)])]}
    s = A.sentence(PROP2, A.execution_scales("prop2_convergence", [built], refs, "quick"))
    check_sentence(s, PROP2, [built], refs, "quick")
    assert [(x.claim, x.scale, x.disagree) for x in s.basis] == [
        (a, "paper reference", True), (b, "paper reference", False)]
    assert "another execution decides it the other way" in s.text
    assert "inconclusive wherever measured" in s.text
    # only a stale reference measured it: it speaks, labelled stale
    stale = {"prop2_convergence": [_ref("paper", "prop2_convergence",
                                        [_claim(a, "refuted", 1e-4)], fresh=False)]}
    s = A.sentence(PROP2, A.execution_scales("prop2_convergence", [], stale, "quick"))
    check_sentence(s, PROP2, [], stale, "quick")
    assert [x.scale for x in s.basis] == ["paper reference (stale)"]
    assert "`paper` reference (stale)" in s.text
    # a machinery build: its own claims are no evidence
    smoke = [{**built, "profile": "smoke"}]
    got = A.answer(smoke, {}, profile="smoke", build_counts=False)
    assert all(x.basis == () and "no execution of this book measures it yet" in x.text
               for x in got)
    assert [x.scale for x in A.answer(smoke, {}, profile="smoke")[1].basis] == \
        ["smoke (this build)"] * 2


def test_section_5_is_read_on_the_papers_data_where_there_is_any():
    """A digits execution, however decided, does not speak for Section 5 where a CIFAR-10 one
    measured the claim; with no execution on the paper's data the sentence says so and names
    the data it was read on."""
    from dsmlib.chapters.sec5_distillation.registry import ANSWER_IDS
    cid = ANSWER_IDS[SEC5.evidence[1].role]          # the role its results name
    digits = {"digits, full data": {"dataset": "digits", "n_train": 1000, "depth": 56}}
    cifar = {"cifar10, 1200 images": {"dataset": "cifar10", "n_train": 1200, "depth": 8}}
    on_digits = _ref("gpu", "sec5_distillation", [_claim(cid, "confirmed", 1e-12)],
                     settings=digits)
    on_cifar = _ref("cpu-cifar10", "sec5_distillation", [_claim(cid, "refuted", 1e-3)],
                    settings=cifar)
    for r in (on_digits, on_cifar):
        r.doc["extra"]["answer_ids"] = ANSWER_IDS
    refs = {"sec5_distillation": [on_digits, on_cifar]}
    s = A.answer([], refs, profile="quick")[-1]
    check_sentence(s, SEC5, [], refs, "quick")
    assert [(b.claim, b.scale) for b in s.basis] == [(cid, "cpu-cifar10 reference")]
    assert "CIFAR-10, 1,200 images, ResNet-8, `cpu-cifar10` reference" in s.text
    assert "paper's own data" not in s.text
    only = {"sec5_distillation": [on_digits]}
    s = A.answer([], only, profile="quick")[-1]
    check_sentence(s, SEC5, [], only, "quick")
    assert "(no execution here is on the paper's own data)" in s.text
    assert "digits, 1,000 images, ResNet-56, `gpu` reference" in s.text


def test_the_introduction_opens_with_the_answer_and_counts_below_it():
    """The summary the introduction includes opens with the answer (a machinery build's
    notice is above every page of such a build), and the counting rules and reference tallies
    come after it; book/intro.md includes it right after its opening paragraph."""
    refs = _committed()
    docs = [{"notebook": "ols", "profile": "quick",
             "claims": [_claim("ols.span_vs_sigma2", "confirmed", 1e-2)]}]
    md = ledger.summary_markdown(docs, profile="quick", references=refs)
    assert md.startswith(A.ANSWER_LEAD)
    answer_end = md.index("**How the ledger counts.**")
    assert md.index("At other scales") > answer_end and md.index("*Identity* claims") > answer_end
    bullets = md[:answer_end].count("\n- ")
    assert bullets == len(PARTS) <= 6
    smoke = ledger.summary_markdown(docs, profile="smoke", references=refs)
    assert smoke.startswith("**What the book found**")        # the page's notice says smoke
    assert "this `smoke` build's runs test the machinery and are left out" in smoke
    intro = (ROOT / "book" / "intro.md").read_text()
    first = intro.split("\n\n")
    assert first[2].startswith("```{include} _generated/summary.md")


def test_a_claim_whose_cases_measure_different_things_is_described_by_its_heading_case():
    """remark4.sigma2_strength's cases are an exponent of σ², an exponent of B and a small-η
    limit: where the exponent of B heads it (the quick build), the sentence says so, never that
    the limit is that number."""
    ev = next(e for p in PARTS for e in p.evidence if e.claim == "remark4.sigma2_strength")
    assert "power {v}" in ev.words_for("exponent of B") and "B" in ev.words_for("exponent of B")
    assert ev.words_for("η → 0 limit of speed / (ησ²m₂/B)") == ev.words
    assert "small-η limit" not in ev.words_for("exponent of B")
    assert not any(re.search(r"[0-9]", w) for _, w in ev.by_case)     # no number typed in
