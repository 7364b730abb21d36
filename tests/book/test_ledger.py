"""Tests of dsmlib.book.site.ledger, dsmlib.foundation.handoff and dsmlib.book.execute.results:
results files round-trip into the ledger, the errata, the summary and the coverage statement."""
from __future__ import annotations

import copy
import json
from dataclasses import asdict
from pathlib import Path

import pytest

from dsmlib.book.site import ledger
from dsmlib.foundation import claims as C
from dsmlib.book.execute.results import load_results
from dsmlib.foundation.handoff import write_results
from helpers import chapter_parameters, write_profile_results


def _claims():
    return [C.measure("ols.a", "Statement | with $x^2$", paper=1, measured=1.0, se=0.01,
                      band=(0.9, 1.1), scope="setting", exact=1.0),
            C.measure("ols.b", "Other", paper=0, measured=0.5, se=0.01, band=(None, 0.1),
                      source="book"),
            C.measure("prop1.c", "Refuted one", paper=1, measured=3.0, se=0.01, band=(0.9, 1.1),
                      scope="assumptions", condition="Holds if x.", note="A note.")]


def test_results_round_trip_and_ledger(tmp_path):
    path = write_profile_results(_claims()[:2], "ols", "smoke", tmp_path)
    write_profile_results(_claims()[2:], "prop1_noise", "smoke", tmp_path)
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
    assert "**3 claims**: 1 confirmed (1 empirical confirmation, 0 identity checks passed), 2 refuted" in summary
    assert "1 under *assumptions*" in summary
    errata = ledger.errata_markdown(docs, chapter_paths=paths, profile="quick")
    assert "Refuted one" in errata and "Holds if x." in errata and "Statement" not in errata
    coverage = ledger.coverage_markdown(docs, profile="smoke")
    assert "Proposition 1" in coverage and "not measured yet" in coverage


def test_results_files_are_checked(tmp_path):
    c = C.measure("same", "s", paper=1, measured=1.0, se=0.0, band=(0, 2), scope="assumptions")
    n = chapter_parameters("n")
    with pytest.raises(ValueError, match="unique"):
        write_results([c, c], n, profile="smoke", root=tmp_path)
    with pytest.raises(ValueError, match="scope"):
        write_results([C.measure("x", "s", paper=1, measured=1.0, se=0.0, band=(0, 2))],
                      n, profile="smoke", root=tmp_path)
    refuted = C.measure("y", "s", paper=1, measured=5.0, se=0.0, band=(0, 2), scope="setting")
    with pytest.raises(ValueError, match="condition"):
        write_results([refuted], n, profile="smoke", root=tmp_path)
    assert not (tmp_path / "results").exists()                # nothing written
    bad = tmp_path / "smoke" / "bad.json"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text(json.dumps({"notebook": "bad", "profile": "smoke",
                               "claims": [{"id": "x", "verdict": "probably"}]}))
    with pytest.raises(ValueError, match="verdict 'probably'"):
        load_results(tmp_path, "smoke")


def _fixture_docs():
    """Two chapters whose claims cover every verdict from both sources, with known counts:
    paper: 2 confirmed, 2 refuted (assumptions, setting), 1 inconclusive;
    book: 1 confirmed, 1 refuted, 2 inconclusive."""
    def m(id_, verdict, source, scope=None):
        measured = {"confirmed": 1.0, "refuted": 3.0, "inconclusive": 1.1}[verdict]
        se = 0.05 if verdict == "inconclusive" else 0.001
        c = C.measure(id_, f"Claim {id_}", paper=1, measured=measured, se=se, band=(0.9, 1.1),
                      source=source, scope=scope,
                      condition={"refuted": "Holds if y.", "inconclusive": "Needs z."}.get(verdict, "")
                      if source == "paper" else "")
        assert c.verdict == verdict, (id_, c.verdict)
        return asdict(c)
    ols = [m("ols.p1", "confirmed", "paper", "setting"), m("ols.p2", "refuted", "paper", "assumptions"),
           m("ols.b1", "confirmed", "book"), m("ols.b2", "inconclusive", "book")]
    prop1 = [m("prop1.p3", "confirmed", "paper", "reading"), m("prop1.p4", "refuted", "paper", "setting"),
             m("prop1.p5", "inconclusive", "paper", "setting"), m("prop1.b3", "refuted", "book"),
             m("prop1.b4", "inconclusive", "book")]
    return [{"notebook": "ols", "profile": "quick", "claims": ols},
            {"notebook": "prop1_noise", "profile": "quick", "claims": prop1}]


PATHS = {"ols": "chapters/ols", "prop1_noise": "chapters/prop1_noise"}


def test_summary_counts_every_verdict_and_source():
    s = ledger.summary_markdown(_fixture_docs(), profile="quick")
    assert ("**9 claims**: 3 confirmed (3 empirical confirmations, 0 identity checks passed), "
            "3 refuted and 3 inconclusive") in s
    assert "2 are confirmed (**2 empirical confirmations, 0 identity checks passed**), 2 refuted " \
           "(1 under *assumptions*, 1 under *setting*) and 1 inconclusive" in s
    one = [{"notebook": "ols", "profile": "quick", "claims": _fixture_docs()[0]["claims"][:1]}]
    assert "**1 claim**: 1 confirmed" in ledger.summary_markdown(one, profile="quick")


def test_kinds_are_counted_apart_in_the_summary_and_the_coverage():
    """Issue 31: identity checks (code against math) are counted apart from empirical
    findings, in the introduction's summary and in the coverage table; results written
    before kinds existed count as empirical."""
    docs = _fixture_docs()
    docs[0]["claims"][0]["kind"] = "identity"          # ols.p1, a confirmed paper claim
    docs[0]["claims"][2]["kind"] = "identity"          # ols.b1, a confirmed book claim
    docs[1]["claims"][1]["kind"] = "identity"          # prop1.p4, refuted: a bug
    s = ledger.summary_markdown(docs, profile="quick")
    assert "3 confirmed (1 empirical confirmation, 2 identity checks passed)" in s
    # issue 53: a refuted identity of the paper is its formula against the exact theory,
    # not a bug (the intro said identities "cannot come out otherwise unless the code is wrong")
    assert ("3 refuted (1 of them an identity of the paper, whose formula disagrees with the "
            "exact theory)") in s
    assert "2 are confirmed (**1 empirical confirmation, 1 identity check passed**)" in s
    assert "*Identity* claims" in s and "unless the code is wrong;" in s
    assert "a *refuted* identity of the paper means that the paper's formula disagrees" in s
    both = copy.deepcopy(docs)
    both[1]["claims"][3]["kind"] = "identity"          # prop1.b3, a refuted book claim
    assert ("3 refuted (2 of them identities: 1 of the paper, whose formula disagrees with the "
            "exact theory; 1 of the book's own: a bug)") in ledger.summary_markdown(
                both, profile="quick")
    cov = ledger.coverage_markdown(docs, profile="quick")
    assert ("least squares (Eq. 30): 4 claims: 2 empirical (0 confirmed, 1 refuted, "
            "1 inconclusive) and 2 identity checks (2 passed, 0 refuted, 0 inconclusive)") in cov
    assert ("(Eq. 14): 5 claims: 4 empirical (1 confirmed, 1 refuted, 2 inconclusive) and "
            "1 identity check (0 passed, 1 refuted, 0 inconclusive)") in cov
    for c in docs[0]["claims"]:
        c.pop("kind", None)
    assert ledger.kind_of(docs[0]["claims"][0]) == "empirical"


def test_the_ledger_states_its_family_wise_rule_and_tags_identities():
    docs = _fixture_docs()
    docs[0]["claims"][0]["kind"] = "identity"
    md = ledger.ledger_markdown(docs, chapter_paths=PATHS, profile="quick")
    assert "Holm's step-down procedure at family-wise error rate 1%" in md
    assert md.count("class='kind-tag'") == 1


def test_coverage_counts_per_item_with_singular():
    cov = ledger.coverage_markdown(_fixture_docs(), profile="quick")
    assert "least squares (Eq. 30): 4 claims: 4 empirical (2 confirmed, 1 refuted, 1 inconclusive)" in cov
    assert "(Eq. 14): 5 claims: 5 empirical (1 confirmed, 2 refuted, 2 inconclusive)" in cov
    one = [{"notebook": "ols", "profile": "quick", "claims": _fixture_docs()[0]["claims"][:1]}]
    assert "1 claim: 1 empirical (1 confirmed, 0 refuted, 0 inconclusive)" in \
        ledger.coverage_markdown(one, profile="quick")
    assert "1 claims" not in ledger.coverage_markdown(one, profile="quick")


def test_errata_list_exactly_the_papers_unconfirmed_claims():
    err = ledger.errata_markdown(_fixture_docs(), chapter_paths=PATHS, profile="quick")
    numbered = [line for line in err.splitlines() if line.startswith("**") and ". Claim" in line]
    assert [n.split(". Claim ")[1].split("**")[0] for n in numbered] == \
        ["ols.p2", "prop1.p4", "prop1.p5"]                # book claims and confirmations: none
    assert [n.split(".")[0] for n in numbered] == ["**1", "**2", "**3"]
    assert err.count("*Correction.* Holds if y.") == 2
    # an undecided claim is not corrected: its condition is shown as the guess it is
    assert err.count("*What might decide it (a guess, not measured).* Needs z.") == 1
    assert "Correction.* Needs z." not in err
    # what a claim is tested against is said in words, not as a band "around the paper's"
    assert err.count("the claim holds if the value is ") == 3 and "around the paper's" not in err


def test_smoke_builds_list_no_errata_and_say_they_test_machinery():
    err = ledger.errata_markdown(_fixture_docs(), chapter_paths=PATHS, profile="smoke")
    assert "No errata under the `smoke` profile" in err and "Claim ols.p2" not in err
    assert "tests the book's machinery" in err
    # the summary leaves the notice to the page's own (sphinx_ext), and leaves the build out
    assert "left out" in ledger.summary_markdown(_fixture_docs(), profile="smoke")
    assert ledger.machinery_notice("quick") == "" and ledger.machinery_notice("paper") == ""


def test_results_record_their_run_and_custom_paths(tmp_path, capsys):
    """Without the runner's seal (a hand run, library code), write_results writes to the book's
    results/custom/, keyed by the values, never to results/<profile>/, and says where; with
    it, to the runner's staging file, with its content key. Both record the run."""
    from dsmlib.foundation.handoff import custom_results_path, parameters_hash, run_values
    params = chapter_parameters("ols", eta=0.01, sizes=(1, 2))
    values = run_values(params, "smoke")
    assert values == {"profile": "smoke", "eta": 0.01, "sizes": [1, 2]}     # as JSON holds it
    path = write_results(_claims()[:1], params, profile="smoke", root=tmp_path)
    assert path == custom_results_path(tmp_path, "ols", values)
    assert path.parent == tmp_path / "results" / "custom"
    assert not (tmp_path / "results" / "smoke").exists()
    run = json.loads(path.read_text())["run"]
    assert run["profile"] == "smoke" and run["parameters"] == values and run["custom"]
    assert run["changed"] is None                        # no book at tmp_path to compare with
    assert run["key"] is None and {"python", "numpy", "torch"} <= set(run["environment"])
    assert f"written to {path.resolve()}" in capsys.readouterr().out
    stage = tmp_path / "stage" / "ols.json"
    stage.parent.mkdir()
    seal = {"profile": "smoke", "parameters": values, "key": "abc", "stage": str(stage)}
    assert write_results(_claims()[:1], params, profile="smoke", seal=seal) == stage
    run = json.loads(stage.read_text())["run"]
    assert run["key"] == "abc" and not run["custom"] and "changed" not in run
    # a seal for other values, or another profile, is not this run's: custom again
    for other in ({**seal, "parameters": {**values, "eta": 0.02}}, {**seal, "profile": "quick"}):
        assert write_results(_claims()[:1], params, profile="smoke", seal=other,
                             root=tmp_path) == path
    assert parameters_hash({"b": [1, 2], "a": 1}) == parameters_hash({"a": 1, "b": (1, 2)})
    assert parameters_hash({"eta": 0.01}) != parameters_hash({"eta": 0.005})
    assert not list(tmp_path.glob("**/.*.tmp"))          # the atomic write left no temp file


def test_the_summary_opens_with_the_answer_not_the_arithmetic():
    """Issue 71, item 11: the introduction opened with the ledger's arithmetic and two findings
    of the quick build alone. It opens with the answer now (tests/book/test_answer.py), and the
    counts follow under their own label; the findings list is gone (the answer names the
    refutations, each at its strongest evidence)."""
    s = ledger.summary_markdown(_fixture_docs(), profile="quick")
    assert s.startswith("**What the book found**")
    assert s.index("**How the ledger counts.** Under the `quick` profile") > s.index("\n- ")
    assert "findings to take away" not in s and "What it found" not in s


def test_the_ledger_lets_its_across_scales_tables_wrap():
    """Issue 71, item 9: the across-scales tables ran past their column at 1400 px (810 px in
    784 px). With references the ledger carries the rule that lets their ids and intervals wrap
    (measured in tests/book/test_browser_ledger.py), once; a book without references has no
    such table and no rule."""
    docs = _fixture_docs()
    ref = ledger.Reference("paper", "ols", {"claims": docs[0]["claims"]}, {}, "k", True,
                           Path("paper/ols.ipynb"))
    md = ledger.ledger_markdown(docs, chapter_paths=PATHS, profile="quick",
                                references={"ols": [ref]})
    assert md.count(ledger.SCALES_CSS) == 1 and "table class='cases scales cards'" in md
    assert md.index(ledger.SCALES_CSS) < md.index("table class='cases scales cards'")
    assert "overflow-wrap: anywhere" in ledger.SCALES_CSS and "color" not in ledger.SCALES_CSS
    assert ledger.SCALES_CSS not in ledger.ledger_markdown(docs, chapter_paths=PATHS,
                                                           profile="quick")
