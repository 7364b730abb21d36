"""Reference executions (dsmlib.book.references: stored, run, section, scales, freshness):
stored with their provenance, checked against their notebooks, marked fresh or stale, shown
in the ledger, the errata and a GPU chapter's page; a book without any is unchanged."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from dsmlib.book.site import ledger
from dsmlib.book.site.pages import references_markdown
from dsmlib.book.execute.provenance import dirty_files
from dsmlib.book.references import run as reference_run, stored as R
from dsmlib.book.references.scales import differing_claims, stale_differ_text
from dsmlib.book.references.section import SECTION_TAG, reference_cells, with_reference_sections
from dsmlib.book.execute.store import executed_path, results_path
from dsmlib.foundation import claims as C
from helpers import copy_book

PLOTLY = R.PLOTLY_JSON
PATHS = {"ols": "chapters/ols"}


def _claims(shift: float = 0.0) -> list[dict]:
    """Three claims; ``shift`` moves the second one's measurement out of its band."""
    return [asdict(c) for c in [
        C.measure("ols.a", "A", paper=1, measured=1.0, se=0.01, band=(0.9, 1.1), scope="setting"),
        C.measure("ols.b", "B", paper=1, measured=1.0 + shift, se=0.01, band=(0.9, 1.1),
                  scope="setting", condition="Holds if x."),
        C.measure("ols.c", "C", paper=1, measured=3.0, se=0.01, band=(0.9, 1.1),
                  scope="assumptions", condition="Holds if y.")]]


def _figure_cell(name: str = "fig-ols-one") -> dict:
    fig = {"data": [{"type": "scatter", "x": [1, 2], "y": [3, 4]}],
           "layout": {"xaxis": {"title": {"text": "x"}}, "yaxis": {"title": {"text": "y"}}}}
    return {"cell_type": "code", "execution_count": 3, "id": "f",
            "metadata": {"tags": ["hide-input"],
                         "mystnb": {"figure": {"caption": "One figure.", "name": name}}},
            "source": "figs.one()",
            "outputs": [{"output_type": "display_data", "metadata": {},
                         "data": {PLOTLY: fig, "text/html": "<div>" + "x" * 5000 + "</div>"}}]}


def _notebook(profile: str, key: str, params: dict, gpu: str | None = None) -> dict:
    prov = {"profile": profile, "parameters": params, "set_by": {}, "wall_s": 12.0,
            "hardware": {"cpu": "Test CPU", "cpu_count": 2, "gpu": gpu},
            "versions": {"python": "3", "numpy": "2", "torch": "2"}, "commit": "abc123"}
    cells = [
        {"cell_type": "markdown", "id": "t", "metadata": {}, "source": "# Title"},
        {"cell_type": "code", "execution_count": 1, "id": "p",
         "metadata": {"tags": ["parameters", "remove-cell"]}, "source": "seed = 0",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "secret path"}]},
        {"cell_type": "markdown", "id": "h", "metadata": {}, "source": "## Results\n\ntext"},
        {"cell_type": "code", "execution_count": 2, "id": "g", "metadata": {}, "source": "glue()",
         "outputs": [{"output_type": "display_data", "metadata": {},
                      "data": {"application/papermill.record/text/plain": "1"}},
                     {"output_type": "stream", "name": "stdout", "text": "scope note\n"},
                     {"output_type": "stream", "name": "stderr", "text": "progress bar\n"}]},
        _figure_cell(),
        {"cell_type": "markdown", "id": "r", "metadata": {}, "source": "## Reader guide\n"},
        {"cell_type": "code", "execution_count": 4, "id": "z", "metadata": {}, "source": "x",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "after the guide"}]}]
    return {"cells": cells, "metadata": {"widgets": {"state": {}},
                                         "dsmlib": {"key": key, "provenance": prov}},
            "nbformat": 4, "nbformat_minor": 5}


def fake_execution(root: Path, profile: str, name: str = "ols", *, key: str = "k1",
                   claims: list[dict] | None = None, params: dict | None = None,
                   gpu: str | None = None) -> None:
    """An executed chapter and its results, consistent as the runner writes them."""
    params = {"profile": profile, "seed": 0, **(params or {})}
    nb = executed_path(root, profile, name)
    nb.parent.mkdir(parents=True, exist_ok=True)
    nb.write_text(json.dumps(_notebook(profile, key, params, gpu), indent=1))
    res = results_path(root, profile, name)
    res.parent.mkdir(parents=True, exist_ok=True)
    res.write_text(json.dumps({"notebook": name, "profile": profile,
                               "claims": claims if claims is not None else _claims(),
                               "run": {"profile": profile, "parameters": params, "key": key,
                                       "custom": False}}))


def test_store_slims_and_keeps_the_provenance(tmp_path):
    fake_execution(tmp_path, "paper")
    nb_path = R.store_reference(tmp_path, "paper", "ols")
    res_path = R.reference_paths(tmp_path, "paper", "ols")[1]
    assert nb_path == tmp_path / "reference" / "paper" / "ols.ipynb" and res_path.exists()
    nb = json.loads(nb_path.read_text())
    assert "widgets" not in nb["metadata"]
    assert nb["metadata"]["dsmlib"]["provenance"]["commit"] == "abc123"
    fig = nb["cells"][4]["outputs"][0]["data"]
    assert PLOTLY in fig and "text/html" not in fig      # the site's copy is rebuilt, not kept
    assert "\n" not in nb_path.read_text()                  # compact JSON
    assert nb_path.stat().st_size < executed_path(tmp_path, "paper", "ols").stat().st_size / 3
    assert json.loads(res_path.read_text()) == json.loads(
        results_path(tmp_path, "paper", "ols").read_text())


def test_store_refuses_results_of_another_run_and_oversized_notebooks(tmp_path, monkeypatch):
    fake_execution(tmp_path, "paper")
    res = results_path(tmp_path, "paper", "ols")
    doc = json.loads(res.read_text())
    doc["run"]["key"] = "other"
    res.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="does not match .*content key"):
        R.store_reference(tmp_path, "paper", "ols")
    assert not (tmp_path / "reference").exists()
    fake_execution(tmp_path, "paper")
    monkeypatch.setattr(R, "MAX_BYTES", 1000)
    with pytest.raises(ValueError, match="over the 1 kB budget"):
        R.store_reference(tmp_path, "paper", "ols")
    assert not (tmp_path / "reference").exists()


def test_load_marks_fresh_and_stale_and_leaves_out_the_built_profile(tmp_path):
    fake_execution(tmp_path, "paper", key="k-paper")
    R.store_reference(tmp_path, "paper", "ols")
    fake_execution(tmp_path, "gpu", key="k-old", gpu="Test GPU")
    R.store_reference(tmp_path, "gpu", "ols")
    current = {("paper", "ols"): "k-paper", ("gpu", "ols"): "k-new"}
    refs = R.load_references(tmp_path, ["ols", "prop1_noise"], lambda p, n, o: current[p, n])
    assert [(r.profile, r.fresh) for r in refs] == [("gpu", False), ("paper", True)]
    assert refs[0].device == "Test GPU" and refs[1].device == "Test CPU, 2 cores"
    # re-derived from run records: where they trained too, said once when it is the same kind
    cpu = {"hardware": {"cpu": "Test CPU", "cpu_count": 2, "gpu": None}}
    gpu = {"hardware": {"cpu": "Test CPU", "cpu_count": 16, "gpu": "Test GPU"}}
    derived = lambda trained: replace(refs[1], provenance={**refs[1].provenance,  # noqa: E731
                                                          "trained": trained})
    assert derived(gpu).device == "Test GPU (training), Test CPU, 2 cores (analysis)"
    assert derived(cpu).device == "Test CPU, 2 cores"
    assert refs[0].commit == "abc123"
    only = R.load_references(tmp_path, ["ols"], lambda p, n, o: current[p, n], exclude="paper")
    assert [r.profile for r in only] == ["gpu"]
    assert R.load_references(tmp_path / "nowhere", ["ols"], lambda p, n, o: "") == []


def test_load_fails_on_a_reference_whose_results_do_not_match_its_notebook(tmp_path):
    fake_execution(tmp_path, "paper")
    R.store_reference(tmp_path, "paper", "ols")
    nb_path, res_path = R.reference_paths(tmp_path, "paper", "ols")
    doc = json.loads(res_path.read_text())
    doc["run"]["parameters"]["seed"] = 7
    res_path.write_text(json.dumps(doc))
    with pytest.raises(ValueError) as err:
        R.load_references(tmp_path, ["ols"], lambda p, n, o: "k1")
    msg = str(err.value)
    assert "reference/paper/ols.json" in msg and "reference/paper/ols.ipynb" in msg
    assert "seed" in msg and "\n" not in msg
    res_path.unlink()
    with pytest.raises(ValueError, match="has no ols.json beside it"):
        R.load_references(tmp_path, ["ols"], lambda p, n, o: "k1")


def _refs(tmp_path: Path) -> tuple[list[dict], dict[str, list[R.Reference]]]:
    """A quick build's results and two references: a fresh paper one whose ``ols.b`` is
    refuted, and a stale gpu one whose ``ols.a`` would differ."""
    fake_execution(tmp_path, "paper", key="kp", claims=_claims(shift=5.0), params={"n": 9})
    R.store_reference(tmp_path, "paper", "ols")
    stale = _claims()
    stale[0] = asdict(C.measure("ols.a", "A", paper=1, measured=9.0, se=0.01, band=(0.9, 1.1),
                                scope="setting", condition="c"))
    fake_execution(tmp_path, "gpu", key="kg", claims=stale, gpu="Test GPU")
    R.store_reference(tmp_path, "gpu", "ols")
    refs = R.load_references(tmp_path, ["ols"], lambda p, n, o: {"paper": "kp", "gpu": "new"}[p])
    built = {"notebook": "ols", "profile": "quick", "claims": _claims(),
             "run": {"profile": "quick", "parameters": {"profile": "quick", "seed": 0}}}
    return [built], R.references_by_chapter(refs)


def test_ledger_shows_every_scale_and_marks_differences_and_stale_references(tmp_path):
    docs, by_chapter = _refs(tmp_path)
    assert differing_claims(docs[0]["claims"], by_chapter["ols"]) == {"ols.b"}
    md = ledger.ledger_markdown(docs, chapter_paths=PATHS, profile="quick",
                                references=by_chapter)
    assert "At every scale" in md and md.count("≠ differs") == 2
    scales = md[md.index("At every scale"):]
    row_b = scales[scales.index("<code>ols.b</code>"):].split("</tr>")[0]
    assert "≠ differs" in row_b and "✘ refuted" in row_b and "✔ confirmed" in row_b
    assert "(stale)</span>" not in row_b
    # Issue 31: a stale reference's difference is marked and counted too, labelled stale.
    row_a = scales[scales.index("<code>ols.a</code>"):].split("</tr>")[0]
    assert "≠ differs (stale)" in row_a and "stale" in row_a
    assert differing_claims(docs[0]["claims"], by_chapter["ols"], stale=True) == {"ols.a"}
    assert "1 differs only in a stale reference (marked ≠ stale)" in scales
    assert "<code>gpu</code> reference (stale)" in md and "Test GPU" in md
    assert "changed since commit <code>abc123</code>" in md
    assert "Test CPU, 2 cores" in md
    assert "1 with a different verdict" in md and "**stale** (code changed" in md
    gpu_line = next(line for line in md.splitlines() if line.startswith("- **`gpu`**"))
    assert "0 with a different verdict from this build; 1 differs, in a stale reference" in gpu_line
    # the plural follows the references, not the differences (the ledger said "2 differ, in
    # stale references" of the one stale gpu reference of sec5_distillation)
    assert stale_differ_text(2, 1) == "2 differ, in a stale reference"
    assert stale_differ_text(3, 2) == "3 differ, in stale references"
    summary = ledger.summary_markdown(docs, profile="quick", references=by_chapter)
    assert ("the `paper` references cover 1 chapter; the fresh one re-measures 3 of these "
            "claims, and 1 of their verdicts differs") in summary
    assert "1 of their verdicts differs from this build's (1 decided the other way)" in summary
    # a stale reference is counted with the others (issue 53: "4 chapters" of 5 references)
    assert re.search(r"the `gpu` references cover 1 chapter \(1 of them stale: `\w+`\); "
                     r"1 verdict of the stale one differs from this build's \(1 "
                     r"(decided the other way|decided here but inconclusive there|inconclusive "
                     r"here but decided there); stale: measured with code that has changed "
                     r"since\)", summary), summary


def test_errata_say_which_errata_stand_at_the_papers_scale(tmp_path):
    docs, by_chapter = _refs(tmp_path)
    errata = ledger.errata_markdown(docs, chapter_paths=PATHS, profile="quick",
                                    references=by_chapter)
    assert "1 of these 1 errata are re-measured with the same verdict (`ols.c`)" in errata
    assert "*At the paper's scale*: ✘ refuted, measured 3" in errata
    paper, gpu = errata.split("*At the `gpu` scale*")
    assert "(the erratum stands)" in paper and "repeat" not in paper
    # every scale is read (issue 63): the fixture's gpu reference ran with the build's own
    # parameters (seed 0 only), so it is named a repeat, and stale
    assert "**stale** reference" in gpu and "so it is a repeat" in gpu.split("\n")[0]
    assert "`ols.b`: " not in errata         # a paper claim, not a correction
    # A paper reference that ran with the build's own parameters says it is a repeat.
    same = {**docs[0], "run": {"parameters": {"profile": "quick", "seed": 0, "n": 9}}}
    errata = ledger.errata_markdown([same], chapter_paths=PATHS, profile="quick",
                                    references=by_chapter)
    assert "so it is a repeat" in errata and "1 of them by a reference that repeats" in errata


def test_a_book_without_references_is_unchanged(tmp_path):
    docs, _ = _refs(tmp_path)
    for refs in (None, {}):
        md = ledger.ledger_markdown(docs, chapter_paths=PATHS, profile="quick", references=refs)
        assert md == ledger.ledger_markdown(docs, chapter_paths=PATHS, profile="quick")
        assert "At every scale" not in md and "reference" not in md
        errata = ledger.errata_markdown(docs, chapter_paths=PATHS, profile="quick",
                                        references=refs)
        assert "paper's scale" not in errata
        assert ledger.summary_markdown(docs, profile="quick", references=refs) == \
            ledger.summary_markdown(docs, profile="quick")
        assert "other scales" not in ledger.summary_markdown(docs, profile="quick")
    assert references_markdown([], PATHS) == ""
    from dsmlib.book.site.build import site_chapter

    class Spec:
        name, gpu = "ols", True
    fake_execution(tmp_path, "quick")
    text = executed_path(tmp_path, "quick", "ols").read_text()
    assert site_chapter(tmp_path, Spec, "quick", []) == text


def test_a_gpu_chapter_page_shows_its_fresh_reference_in_a_section_of_its_own(tmp_path):
    docs, by_chapter = _refs(tmp_path)
    gpu, paper = by_chapter["ols"]
    page = _notebook("quick", "kq", {"profile": "quick"})
    before = json.dumps(page)
    out = with_reference_sections(page, [reference_cells(json.loads(paper.notebook.read_text()),
                                                          paper)])
    assert json.dumps(page) == before                    # the input is not modified
    srcs = ["".join(c["source"]) for c in out["cells"]]
    at = next(i for i, s in enumerate(srcs) if s.startswith("## The `paper` reference"))
    guide = srcs.index("## Reader guide\n")
    assert at < guide and all(SECTION_TAG in out["cells"][i]["metadata"]["tags"]
                              for i in range(at, guide))
    added = out["cells"][at:guide]
    assert "Test CPU" in added[0]["source"] and "commit <code>abc123</code>" in added[0]["source"]
    # issue 63, item 7: the reference's outputs behind one toggle, not one per output, and
    # its figures unnumbered (the page has one Figure 1, the build's)
    (code,) = [c for c in added if c["cell_type"] == "code"]
    assert code["source"] == "# outputs of the paper reference"
    assert {"remove-input", "hide-output"} <= set(code["metadata"]["tags"])
    assert code["metadata"]["mystnb"]["code_prompt_show"] == ("Show the paper reference's "
                                                             "figures and tables (2)")
    assert "figure" not in code["metadata"].get("mystnb", {})
    outs = code["outputs"]
    texts = [o.get("text") or o.get("data", {}).get("text/html", "") for o in outs]
    assert "scope note\n" in texts                                   # no glue, no stderr
    assert any("Results (<code>paper</code> reference)" in t for t in texts)   # the heading
    caption = next(t for t in texts if "ref-caption" in t)
    assert "(<code>paper</code> reference.)" in caption
    assert any('class="dsm-plotly-data"' in t for t in texts)
    assert not any("after the guide" in json.dumps(c) for c in added)
    assert with_reference_sections(page, []) == page


def test_reference_verdict_rows_say_which_execution_they_come_from(tmp_path):
    """On a page with this build's verdict table and a reference's, every verdict row of the
    reference carries ``data-scale='reference <profile>'`` and its table a caption naming that
    execution (device, and commit when stale); this build's rows stay ``build``."""
    from dsmlib.figures.tables import claims_html
    _, by_chapter = _refs(tmp_path)
    _, paper = by_chapter["ols"]
    claim = C.measure("x.a", "A holds.", paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1))
    table = {"output_type": "display_data", "metadata": {},
             "data": {"text/html": claims_html([claim]), "text/plain": "<HTML>"}}
    page = _notebook("quick", "kq", {"profile": "quick"})
    page["cells"][3]["outputs"].append(table)
    ref_nb = _notebook("paper", "kp", {"profile": "paper"})
    ref_nb["cells"][3]["outputs"].append(table)
    for fresh in (True, False):
        out = with_reference_sections(page, [reference_cells(ref_nb, replace(paper, fresh=fresh))])
        html = [o["data"]["text/html"] for c in out["cells"] if c["cell_type"] == "code"
                for o in c.get("outputs", []) if "text/html" in o.get("data", {})
                and "verdicts" in o["data"]["text/html"]]
        own, ref = html
        assert own.count("data-scale='build'") == 2 and "reference" not in own
        assert ref.count("data-scale='reference paper'") == 2 and "data-scale='build'" not in ref
        caption = ref.split("<caption>")[1].split("</caption>")[0]
        assert caption.startswith("Verdicts of the <code>paper</code> reference execution (Test CPU")
        assert ("stale: commit <code>abc123</code>" in caption) is (not fresh)


def test_a_stale_reference_is_shown_under_a_notice_never_as_current(tmp_path):
    """A stale reference keeps its section, but its heading says stale, a notice names the
    commit it was executed at, and every figure caption says stale; a fresh one has none."""
    _, by_chapter = _refs(tmp_path)
    _, paper = by_chapter["ols"]
    page = _notebook("quick", "kq", {"profile": "quick"})
    ref_nb = json.loads(paper.notebook.read_text())
    fresh = with_reference_sections(page, [reference_cells(ref_nb, replace(paper, fresh=True))])
    stale = with_reference_sections(page, [reference_cells(ref_nb, replace(paper, fresh=False))])
    head = next(c["source"] for c in stale["cells"] if SECTION_TAG in c["metadata"].get("tags", []))
    assert head.startswith("## The `paper` reference execution (stale)")
    assert "<strong>Stale.</strong> Executed at commit <code>abc123</code>" in head
    assert "python -m dsmlib reference ols --profile paper" in head
    [caption] = [o["data"]["text/html"] for c in stale["cells"]
                 if SECTION_TAG in c["metadata"].get("tags", []) and c["cell_type"] == "code"
                 for o in c["outputs"] if "ref-caption" in o.get("data", {}).get("text/html", "")]
    assert "(<code>paper</code> reference, stale: commit abc123.)" in caption
    assert "stale" not in json.dumps([c for c in fresh["cells"]
                                      if SECTION_TAG in c["metadata"].get("tags", [])]).lower()
    from dsmlib.book.site.build import site_chapter, site_subpages
    fake_execution(tmp_path, "quick")
    gpu_ref = by_chapter["ols"][0]                      # the stale gpu reference of _refs
    assert not gpu_ref.fresh

    class Spec:
        name, gpu, title = "ols", True, "Least squares"
    # the chapter's page: the heading says stale, a line says so, and links to its page
    chapter = site_chapter(tmp_path, Spec, "quick", [gpu_ref], ["gpu"])
    assert "reference execution (stale)" in chapter and "its page says what changed" in chapter
    assert "{doc}`its own page <ols/gpu>`" in chapter and "ref-caption" not in chapter
    # its page: the whole notice, what changed and the command that refreshes it
    (page,) = site_subpages(tmp_path, Spec, "quick", [gpu_ref], ["gpu"]).values()
    assert "# The `gpu` reference execution (stale)" in page
    assert "<strong>Stale.</strong> Executed at commit" in page and "{doc}`Least squares <../ols>`" \
        in page
    # a shown reference without a page in _toc.yml: the build says which line to add
    with pytest.raises(ValueError, match="- file: book/chapters/ols/gpu"):
        site_chapter(tmp_path, Spec, "quick", [gpu_ref])
    Spec.gpu = False                                    # a CPU chapter shows no section
    assert "reference execution" not in site_chapter(tmp_path, Spec, "quick", [gpu_ref])


def _git_book(tmp_path: Path) -> Path:
    root = copy_book(tmp_path / "book")
    for cmd in (["init", "-q"], ["add", "-A"],
                ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "book"]):
        subprocess.run(["git", *cmd], cwd=root, check=True, capture_output=True)
    return root


def test_reference_refuses_a_dirty_tree_with_a_one_line_error(tmp_path):
    root = _git_book(tmp_path)
    assert dirty_files(root) == []
    (root / "reference" / "paper").mkdir(parents=True, exist_ok=True)
    (root / "reference" / "paper" / "x.json").write_text("{}")   # references never count
    (root / "_config.yml").write_text((root / "_config.yml").read_text() + "\n# edit\n")
    assert dirty_files(root) == ["_config.yml"]
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), "reference",
                           "ols", "--profile", "smoke", "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "uncommitted changes (_config.yml)" in lines[0]
    assert "--allow-dirty" in lines[0]
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), "reference",
                           "--profile", "nope"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "unknown profile 'nope'" in proc.stderr


def test_gpu_chapters_need_a_gpu_unless_allowed(tmp_path, monkeypatch, capsys):
    root = copy_book(tmp_path / "book")
    monkeypatch.setattr(reference_run, "needs_gpu", lambda spec, profile: spec.gpu)
    with pytest.raises(ValueError, match="sec5_distillation under profile 'gpu' needs a GPU"):
        reference_run.make_references(root, ["sec5_distillation"], profile="gpu",
                                      progress=False)
    ran = []
    monkeypatch.setattr(reference_run, "execute", lambda root, names, **kw: ran.extend(names))
    monkeypatch.setattr(reference_run, "store_reference", lambda root, profile, name: name)
    out = reference_run.make_references(root, None, profile="gpu", progress=False)
    assert "sec5_distillation" not in ran and "ols" in ran and out == ran
    assert "sec5_distillation: skipped (profile 'gpu' needs a GPU" in capsys.readouterr().err


@pytest.mark.slow
def test_reference_runs_resume_chapter_by_chapter(tmp_path, monkeypatch):
    """A stored, up-to-date reference is not executed again; a changed profile makes it
    stale, and the next run executes it again."""
    root = copy_book(tmp_path / "book")
    stored = reference_run.make_references(root, ["ols"], profile="smoke", progress=False)
    assert stored == [root / "reference" / "smoke" / "ols.ipynb"]
    nb = json.loads(stored[0].read_text())
    assert nb["metadata"]["dsmlib"]["provenance"]["profile"] == "smoke"
    assert nb["metadata"]["dsmlib"]["provenance"]["hardware"]["cpu_count"] >= 1

    def refuse(*a, **k):
        raise AssertionError("an up-to-date reference was executed again")
    monkeypatch.setattr(reference_run, "execute", refuse)
    assert reference_run.make_references(root, ["ols"], profile="smoke",
                                         progress=False) == stored
    spec = root / "notebooks" / "profiles.yml"
    spec.write_text(spec.read_text().replace("explorer_steps: 5000", "explorer_steps: 4000", 1))
    from dsmlib.book.references.freshness import current_references
    from dsmlib.book.profiles import load_specs
    refs = current_references(root, "quick", load_specs(root / "notebooks"))
    assert [(r.name, r.profile, r.fresh) for r in refs if r.profile == "smoke"] == [
        ("ols", "smoke", False)]
    with pytest.raises(AssertionError, match="executed again"):
        reference_run.make_references(root, ["ols"], profile="smoke", progress=False)


@pytest.mark.slow
def test_the_built_site_shows_the_references(smoke_book):
    """The smoke site (tests/conftest.py) carries the committed references and the fixture
    gpu reference of Section 5: the ledger shows every scale, the reproducibility page lists
    them, the Section 5 page shows a short section per reference that links to its page, and
    the fixture's page its figures and verdicts; a CPU chapter's page shows none."""
    html = smoke_book / "_build" / "html" / "book"
    sec5 = (html / "chapters" / "sec5_distillation.html").read_text()
    section = sec5[sec5.index('<section id="the-gpu-reference-execution"'):]
    section = section[:section.index("</section>")]
    assert "Test fixture." in section and 'href="sec5_distillation/gpu.html"' in section
    assert 'class="dsm-plotly-data"' not in section          # its figures are on its page
    page = (html / "chapters" / "sec5_distillation" / "gpu.html").read_text()
    assert "Test fixture." in page and 'href="../sec5_distillation.html"' in page
    assert page.count('class="dsm-plotly-data"') >= 2
    assert "reference.)" in page                            # the figures' captions
    assert any(badge in page for badge in ("✔ confirmed", "✘ refuted", "? inconclusive"))
    assert "Executed under the <code>gpu</code> profile" in page
    ols = (html / "chapters" / "ols.html").read_text()
    assert "reference execution" not in ols[ols.index("<article"):ols.index("</article>")]
    ledger_page = (html / "ledger.html").read_text()
    assert "At every scale" in ledger_page and "<code>gpu</code> reference" in ledger_page
    assert "Reference executions" in (html / "reproducibility.html").read_text()


def test_errata_list_the_books_corrections_at_the_papers_scale(tmp_path):
    def book(measured: float) -> dict:
        return asdict(C.measure("ols.fix", "A correction", paper=1, measured=measured, se=0.01,
                                band=(0.9, 1.1), source="book", condition="c"))
    built = {"notebook": "ols", "claims": [book(1.0)], "run": {"parameters": {"seed": 0}}}

    def ref(profile: str, fresh: bool) -> R.Reference:
        doc = {"claims": [book(2.0)], "run": {"parameters": {"seed": 1}}}
        return R.Reference(profile, "ols", doc, {"commit": "c0ffee", "hardware": {}}, "k",
                           fresh, tmp_path / "x.ipynb")
    errata = ledger.errata_markdown([built], chapter_paths=PATHS, profile="quick",
                                    references={"ols": [ref("paper", True)]})
    line = next(s for s in errata.splitlines() if s.startswith("- `ols.fix`"))
    assert "✔ confirmed in this build" in line and "✘ refuted at the paper's scale" in line
    assert "the verdict differs from this build" in line
    stale = ledger.errata_markdown([built], chapter_paths=PATHS, profile="quick",
                                   references={"ols": [ref("paper", False)]})
    line = next(s for s in stale.splitlines() if s.startswith("- `ols.fix`"))
    assert "**stale**, commit `c0ffee`" in line and "differs" not in line
    assert "corrections at the paper's scale" not in ledger.errata_markdown(
        [built], chapter_paths=PATHS, profile="quick", references={"ols": [ref("gpu", True)]})


def test_differences_are_told_apart_by_kind():
    """The introduction said "9 of their verdicts differ from this build's" where all 9 were
    decided here and inconclusive there (issue 46, item 6): each kind is counted apart."""
    from dsmlib.book.references.scales import difference_kinds, differences_text

    class Ref:
        def claims(self):
            return {"a": {"verdict": "refuted"}, "b": {"verdict": "inconclusive"},
                    "c": {"verdict": "confirmed"}, "d": {"verdict": "inconclusive"},
                    "e": {"verdict": "confirmed"}}
    here = [{"id": "a", "verdict": "confirmed"}, {"id": "b", "verdict": "confirmed"},
            {"id": "c", "verdict": "inconclusive"}, {"id": "d", "verdict": "refuted"},
            {"id": "e", "verdict": "confirmed"}, {"id": "f", "verdict": "refuted"}]
    kinds = difference_kinds(here, Ref())
    assert kinds == {"decided the other way": 1, "decided here but inconclusive there": 2,
                     "inconclusive here but decided there": 1}
    assert differences_text(kinds) == ("1 decided the other way, 2 decided here but inconclusive "
                                       "there and 1 inconclusive here but decided there")
    assert differences_text({"decided the other way": 0, "decided here but inconclusive there": 9,
                             "inconclusive here but decided there": 0}) == \
        "9 decided here but inconclusive there"
