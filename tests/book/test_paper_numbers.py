"""The paper's numbers on what reproduces the paper (dsmlib.book.site.paper_numbers; issue 46, item
8: the paper's Figure 1 appeared as "Figure 21" and its Eq. 24 beside "B(23)"), and captions that
say their number once (issue 63: "Figure 1 Figure 1 of the paper, measured")."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dsmlib.book.site.paper_numbers import (caption_text, paper_numbers, renumber,
                                            repeated_number)
from helpers import ROOT


def test_declared_numbers_are_read_from_cell_metadata():
    nb = {"cells": [
        {"cell_type": "code", "metadata": {"mystnb": {"figure": {"name": "fig-a"}},
                                           "dsmlib": {"paper_figure": 1}}},
        {"cell_type": "markdown", "metadata": {"dsmlib": {"paper_equations": {"eq-x": 24}}}},
        {"cell_type": "code", "metadata": {"mystnb": {"figure": {"name": "fig-b"}}}}]}
    assert paper_numbers(nb) == {"figure": {"fig-a": "1"}, "displaymath": {"eq-x": "24"}}
    with pytest.raises(ValueError, match="cell 0 has dsmlib.paper_figure but no"):
        paper_numbers({"cells": [{"metadata": {"dsmlib": {"paper_figure": 2}}}]})


def test_renumbering_gives_the_papers_numbers_and_b_to_the_books():
    toc = {"ch": {"figure": {"fig-a": (21,), "fig-b": (22,)},
                  "displaymath": {"equation-eq-x": (23,), "equation-eq-y": (24,)}},
           "other": {"displaymath": {"equation-eq-z": (1,)}}}
    renumber(toc, {"ch": {"figure": {"fig-a": "1"}, "displaymath": {"eq-x": "24"}}})
    assert toc == {"ch": {"figure": {"fig-a": ("1",), "fig-b": ("B1",)},
                          "displaymath": {"equation-eq-x": ("24",), "equation-eq-y": ("B2",)}},
                   "other": {"displaymath": {"equation-eq-z": ("B1",)}}}
    with pytest.raises(ValueError, match=r"figure\(s\) \['fig-gone'\] have a paper number"):
        renumber({"ch": {"figure": {}}}, {"ch": {"figure": {"fig-gone": "1"}}})
    with pytest.raises(ValueError, match=r"equation\(s\) \['equation-eq-gone'\]"):
        renumber({"ch": {"displaymath": {}}}, {"ch": {"displaymath": {"eq-gone": "3"}}})


def test_a_caption_opening_with_the_papers_figure_reads_on_from_its_number():
    """Sphinx writes "Figure 1 " before the text: the text goes on from there."""
    assert (caption_text("Figure 1", "Figure 1 of the paper, measured. Top: G")
            == "— the paper’s figure, measured. Top: G")
    assert (caption_text("Figure B4", "Figure 2 of the paper at our scale")
            == "— the paper’s Figure 2 at our scale")
    assert caption_text("Figure 3", "(the paper's, reproduced): clouds") == \
        "(the paper's, reproduced): clouds"
    assert caption_text("Figure 1", "Figures 1 of the paper") == "Figures 1 of the paper"


def test_a_repeated_number_is_found_and_others_are_not():
    assert repeated_number("Figure 1", "as in Figure 1.") and \
        repeated_number("Figure B3", "see Figure\nB3")
    assert not any(repeated_number("Figure 1", t) for t in (
        "— the paper's figure, measured", "Figure 12", "Figure 1.5", "Figure B1", "figure 1"))


def _caption_book(folder: Path,
                  captions: dict[str, tuple[str, int | None]]) -> subprocess.CompletedProcess:
    """A one-notebook Sphinx book, with the book's extension and ``-W``, whose cells are
    figures ``name: (caption, paper figure or None)``, built into ``folder/_build``."""
    def cell(name: str, caption: str, paper: int | None) -> dict:
        meta = {"mystnb": {"figure": {"name": name, "caption": caption}}}
        if paper is not None:
            meta["dsmlib"] = {"paper_figure": paper}
        out = {"output_type": "execute_result", "execution_count": 1, "metadata": {},
               "data": {"text/plain": "42"}}
        return {"cell_type": "code", "id": name, "execution_count": 1, "metadata": meta,
                "source": "42", "outputs": [out]}
    (folder / "conf.py").write_text(
        'extensions = ["myst_nb", "dsmlib.book.site.sphinx_ext"]\nnb_execution_mode = "off"\n'
        'numfig = True\nnumfig_format = {"figure": "Figure %s"}\nexclude_patterns = ["_build"]\n')
    cells = [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": "# Figures"}]
    cells += [cell(name, *spec) for name, spec in captions.items()]
    (folder / "index.ipynb").write_text(json.dumps(
        {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
         "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}}}))
    return subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "-q", ".",
                           "_build"], cwd=folder, capture_output=True, text=True, timeout=300)


def _captions(page: str) -> dict[str, str]:
    """``{figure id: number + text}`` of a built page's figure captions."""
    found = re.findall(r'<figure[^>]*id="([\w-]+)"[^>]*>.*?<span class="caption-number">'
                       r'([^<]*)</span><span class="caption-text">([^<]*)</span>', page, re.S)
    return {name: number + text for name, number, text in found}


def test_a_built_caption_says_its_number_once(tmp_path):
    """In a page built with the book's extension: "Figure 1 of the paper, ..." under the
    paper's Figure 1 reads "Figure 1 — the paper's figure, ..."; under the book's own number,
    "Figure B1 — the paper's Figure 1, ..."; a caption that says its own number elsewhere
    fails the build (``-W``), naming it."""
    proc = _caption_book(tmp_path, {"fig-a": ("Figure 1 of the paper, measured: G.", 1),
                                     "fig-b": ("Figure 1 of the paper, at other settings.",
                                               None)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _captions((tmp_path / "_build" / "index.html").read_text()) == {
        "fig-a": "Figure 1 — the paper’s figure, measured: G.",
        "fig-b": "Figure B1 — the paper’s Figure 1, at other settings."}
    bad = tmp_path / "bad"
    bad.mkdir()
    proc = _caption_book(bad, {"fig-c": ("A cloud; Figure 1 shows it again.", 1)})
    assert proc.returncode != 0 and "the caption of Figure 1 says its number again" in proc.stderr


PAPER_FIGURES = {"ols": {"fig-ols-figure3": "3"},
                 "sec5_distillation": {"fig-sec5-figure1": "1", "fig-sec5-figure2": "2"}}


def test_the_built_pages_show_the_papers_numbers(smoke_book):
    """In the smoke site: the paper's Figures 1-3 are captioned and cross-referenced with the
    paper's numbers, the book's own figures "Figure B…"; an equation declared as the paper's
    reads "(24)", the others "(B…)"."""
    html = smoke_book / "_build" / "html" / "book" / "chapters"
    for chapter, figures in PAPER_FIGURES.items():
        page = (html / f"{chapter}.html").read_text()
        for name, number in figures.items():
            caption = re.search(rf'<figure[^>]*id="{name}"[^>]*>.*?<span class="caption-number">'
                                rf'([^<]*)</span>', page, re.S)
            assert caption and caption.group(1).strip() == f"Figure {number}", name
            refs = re.findall(rf'href="#{name}"[^>]*><span class="std std-numref">([^<]*)<', page)
            assert all(r == f"Figure {number}" for r in refs), (name, refs)
        others = re.findall(r'<span class="caption-number">Figure ([^<]*)</span>', page)
        assert all(n.strip().startswith("B") for n in others
                   if n.strip() not in figures.values()), others
        for name, caption in _captions(page).items():      # issue 63: once, and read on
            number = caption.split()[1]
            assert not repeated_number(f"Figure {number}", caption.split(" ", 2)[2]), caption
    page = (html / "ols.html").read_text()
    tags = dict(re.findall(r'id="equation-([\w-]+)">\s*<span class="eqno">\((\w+)\)', page))
    assert tags == {"eq-paper-limit": "30", "eq-sgd": "B1", "eq-exact-mean": "B2",
                    "eq-exact-cov": "B3", "eq-first-order": "B4"}
    refs = re.findall(r'<a class="reference internal" href="#equation-([\w-]+)">([^<]*)</a>',
                      page)
    assert ("eq-paper-limit", "(30)") in refs and ("eq-sgd", "(B1)") in refs
    assert all(text == f"({tags[label]})" for label, text in refs)
    prop1 = (html / "prop1_noise.html").read_text()
    assert dict(re.findall(r'id="equation-([\w-]+)">\s*<span class="eqno">\((\w+)\)',
                           prop1)) == {"eq-split": "12", "eq-terms": "13", "eq-prop1": "14",
                                       "eq-swap": "24"}


def test_every_declared_number_is_a_number_of_the_paper():
    """A declared paper number names a numbered equation or figure of the paper's source."""
    tex = (ROOT.parent / "shared" / "paper" / "doubly-stochastic-models.tex")
    if not tex.exists():
        pytest.skip("the paper's source is not beside this clone")
    text = re.sub(r"(?<!\\)%.*", "", tex.read_text())
    n_eq = sum(1 for b in re.findall(r"\\begin\{equation\}(.*?)\\end\{equation\}", text, re.S)
               if "\\nonumber" not in b and "\\notag" not in b)
    n_fig = len(re.findall(r"\\begin\{figure\*?\}", text))
    for md in (ROOT / "notebooks").glob("*.md"):
        for meta in re.findall(r"^\+\+\+ (\{.*\})$", md.read_text(), re.M):
            for label, n in json.loads(meta).get("dsmlib", {}).get("paper_equations", {}).items():
                assert 1 <= int(n) <= n_eq, (md.name, label, n)
        for n in re.findall(r"^  paper_figure: (\d+)$", md.read_text(), re.M):
            assert 1 <= int(n) <= n_fig, (md.name, n)
