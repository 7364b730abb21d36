"""How to cite (CITATION.cff, the README's and the site's BibTeX), Section 5's cost at the
paper's scale from the committed GPU benchmarks, and the claims as data (issue 33)."""
from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from pathlib import Path

import pytest
import yaml

import dsmlib
from dsmlib.book.site.citation import arxiv_id, bibtex, load_citation
from dsmlib.book.site.downloads import FIELDS, claims_csv, claims_json
from dsmlib.chapters.sec5_distillation.gpu_cost import cost_rows
from dsmlib.book.site.pages import cost_markdown
from helpers import ROOT


def test_citation_file_names_the_team_this_version_and_the_papers_arxiv_id():
    cff = load_citation(ROOT)
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["authors"] == [{"name": "The dsmlib team"}]
    assert cff["version"] == dsmlib.__version__
    [paper] = cff["references"]
    assert arxiv_id(paper) == "2304.00320"
    tex = (ROOT.parent / "shared" / "paper" / "doubly-stochastic-models.tex")
    if tex.exists():        # the title and authors are the manuscript's, in its order
        text = tex.read_text()
        assert paper["title"] in text
        names = re.findall(r"\\fnm\{([^}]*)\} \\sur\{([^}]*)\}", text)
        assert [(a["given-names"], a["family-names"]) for a in paper["authors"]] == names


def test_the_readme_shows_the_bibtex_the_site_shows():
    """The README points to CITATION.cff (the five-minute README of issue 45 shows no BibTeX
    of its own); any BibTeX it does show is the one the site shows."""
    text = bibtex(load_citation(ROOT))
    readme = (ROOT / "README.md").read_text()
    assert "CITATION.cff" in readme
    assert "@misc" not in readme or text in readme
    assert "@misc{dsmlib_book_2026," in text and "author = {{The dsmlib team}}" in text
    assert "eprint = {2304.00320}" in text and "archivePrefix = {arXiv}" in text


def test_a_citation_without_what_it_needs_is_refused(tmp_path):
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    del cff["version"]
    (tmp_path / "CITATION.cff").write_text(yaml.safe_dump(cff))
    with pytest.raises(ValueError, match="has no 'version'"):
        load_citation(tmp_path)


def test_section_5_cost_is_read_from_the_committed_gpu_runs(tmp_path):
    rows = cost_rows(ROOT)
    assert rows and {r["step"] for r in rows} >= {"graph", "eager"}
    text = cost_markdown(rows, 3)
    best = min(r["gpu_hours_per_seed"] for r in rows)
    assert f"**{best:.2f} GPU-hours per seed**" in text and "H100" in text
    assert f"about {best * 3:.0f} GPU-hours" in text
    run = tmp_path / "benchmarks" / "gpu_runs" / "2027-01-02_h200" / "call"
    run.mkdir(parents=True)
    (run / "bench.jsonl").write_text("not json\n" + json.dumps(dict(
        name="paper_grid_gpu_hours_graph", gpu_hours_per_seed=1.5,
        baseline_gpu_hours_per_seed=40.0, step="graph", device="NVIDIA H200")) + "\n")
    [row] = cost_rows(tmp_path)
    assert row["date"] == "2027-01-02" and row["call"].endswith("2027-01-02_h200/call")
    assert "No GPU session" in cost_markdown([], 3)


def test_claims_as_json_and_csv_keep_open_ends_open():
    rows = [{f: None for f in FIELDS} | {"notebook": "ols", "id": "ols.a", "verdict": "confirmed",
                                        "measured": 1.5, "interval": [1.0, 2.0],
                                        "band": [1.0, float("inf")], "statement": "a, \"b\"",
                                        "profile": "quick", "commit": "abc", "current": True}]
    doc = json.loads(claims_json(rows))            # standard JSON: no Infinity
    assert doc["claims"][0]["band"] == [1.0, None]
    [line] = list(csv.DictReader(io.StringIO(claims_csv(rows))))
    assert (line["band_low"], line["band_high"], line["interval_high"]) == ("1.0", "", "2.0")
    assert line["statement"] == 'a, "b"' and line["scope"] == ""


def test_the_citation_names_the_repository_and_the_commit_built():
    """The site's BibTeX adds the commit it was built from (none for an unknown or dirty
    checkout: no commit holds what such a build showed) and, where CITATION.cff gives one,
    the repository's address; without one (not yet published) nothing invents it. The
    README's first paragraph points at the paper's arXiv page, which a clone can open, not at
    ../shared/paper (issue 46, item 9)."""
    from dsmlib.book.site.citation import citation_markdown
    cff = load_citation(ROOT)
    url = "https://example.org/book.git"
    for given in ({**cff, "repository-code": url}, {k: v for k, v in cff.items()
                                                    if k != "repository-code"}):
        site = citation_markdown(given, "0123456789ab")
        assert "; commit 0123456789ab;" in site and "commit `0123456789ab` of its source" in site
        assert (f"url = {{{url}}}" in site) == ("repository-code" in given)
        assert ("url = {https://arxiv" in site) and site.count("url = {") == 1 + (
            "repository-code" in given)
        for unknown in ("unknown", "0123456789ab-dirty", None):
            assert "commit" not in bibtex(given, unknown)
            assert (url in citation_markdown(given, unknown)) == ("repository-code" in given)
    first = (ROOT / "README.md").read_text().split("\n\n")[1]
    assert "shared/paper" not in first and "https://arxiv.org/abs/2304.00320" in first
    broken = dict(cff)
    del broken["references"]
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "CITATION.cff").write_text(yaml.safe_dump(broken))
        with pytest.raises(ValueError, match="references"):
            load_citation(Path(d))
