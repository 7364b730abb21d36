"""The book's bibliography (issue 71, item 3): one BibTeX file, book/references.bib, with the
paper and the works it and the book use (He et al. 2016, Hinton et al. 2015, Krizhevsky 2009,
Holm 1979, the self-distillation works), a References page (sphinxcontrib-bibtex) listing
every entry, and ``{cite}`` roles that link to it. Built with ``-W -n``: an entry no page cites
yet, and a key cited but missing, would fail the build."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from helpers import ROOT

BIB = ROOT / "book" / "references.bib"
ENTRY = re.compile(r"^@(\w+)\{([^,\s]+),(.*?)^\}", re.M | re.S)
#: The keys the issue names, and the works they are.
REQUIRED = {"xiong2023sgd": "Stochastic Gradient Descent with Random Label Noises",
            "he2016deep": "Deep Residual Learning for Image Recognition",
            "hinton2015distilling": "Distilling the Knowledge in a Neural Network",
            "krizhevsky2009learning": "Learning Multiple Layers of Features from Tiny Images",
            "holm1979simple": "A Simple Sequentially Rejective Multiple Test Procedure",
            "mobahi2020self": "Self-Distillation Amplifies Regularization in {Hilbert} Space",
            "furlanello2018born": "Born Again Neural Networks"}
#: The self-distillation works the paper's Section 5 cites (its \cite keys).
PAPERS_SELF_DISTILLATION = {"zhang2019your", "xie2020self", "xu2020knowledge", "kim2020self"}
CITE = re.compile(r"\{cite(?::\w+)?\}`([^`]+)`")


def entries() -> dict[str, tuple[str, str]]:
    """The .bib file's entries: key -> (type, fields text)."""
    return {key: (kind, body) for kind, key, body in ENTRY.findall(BIB.read_text())}


def field(body: str, name: str) -> str:
    m = re.search(rf"^\s*{name}\s*=\s*\{{(.*)\}},?\s*$", body, re.M)
    return m[1] if m else ""


def test_the_bib_file_holds_every_work_with_its_key():
    got = entries()
    titles = {k: field(got[k][1], "title") for k in REQUIRED if k in got}
    assert set(titles) == set(REQUIRED)
    assert all(titles[k].startswith(t) for k, t in REQUIRED.items()), titles
    assert PAPERS_SELF_DISTILLATION <= set(got)
    assert field(got["xiong2023sgd"][1], "eprint") == "2304.00320"
    for key, (kind, body) in got.items():
        assert key == key.lower() and re.fullmatch(r"[a-z]+\d{4}[a-z]+", key), key
        year = field(body, "year")
        assert year == key[len(re.match(r"[a-z]+", key)[0]):][:4], key   # its key's year
        assert field(body, "author") and field(body, "title"), key
        assert re.sub(r"[^a-z]", "", field(body, "author").split(",")[0].lower()) == \
            re.match(r"[a-z]+", key)[0], key                         # its first author


def test_every_cited_key_is_in_the_bib_file_and_the_page_is_in_the_results_part():
    """A ``{cite}`` anywhere in the book's sources names an entry; the References page
    lists them all and sits in the table of contents' Results part."""
    keys = set(entries())
    sources = [*ROOT.glob("book/*.md"), *ROOT.glob("notebooks/*.md")]
    cited = {k.strip() for p in sources for ks in CITE.findall(p.read_text())
             for k in ks.split(",")}
    assert cited and cited <= keys, cited - keys
    page = (ROOT / "book" / "bibliography.md").read_text()
    assert re.search(r"```\{bibliography\}\n:all:\n```", page)
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    [results] = [p for p in toc["parts"] if p["caption"] == "Results"]
    assert {"file": "book/bibliography"} in results["chapters"]
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["bibtex_bibfiles"] == ["book/references.bib"]


def test_the_built_references_page_lists_every_entry_and_citations_link_to_it(smoke_book):
    html = smoke_book / "_build" / "html" / "book"
    page = (html / "bibliography.html").read_text()
    keys = set(entries())
    listed = set(re.findall(r'id="cite-([^"]+)"', page))
    assert listed == keys, keys ^ listed
    assert page.count('role="doc-biblioentry"') == len(keys)      # each entry once
    for key, title in REQUIRED.items():          # each entry's title, as the list shows it
        words = re.sub(r"[{}]", "", title).split()[:4]
        assert re.search(r"\s+".join(map(re.escape, words)), page, re.I), key
    # a {cite} on another page is a link to its entry, with its authors and year
    repro = (html / "reproducibility.html").read_text()
    link = re.search(r'<span class="bibtex-citation"[^>]*>\[<a class="reference internal" '
                     r'href="bibliography\.html#cite-he2016deep"[^>]*>(.*?)</a>\]', repro)
    assert link and re.sub(r"<[^>]+>", "", link[1]) == "He et al., 2016", link
    assert 'href="bibliography.html#cite-holm1979simple"' in repro
    # and the page is in the site's navigation, under Results
    intro = (html / "intro.html").read_text()
    nav = intro[intro.find("Results"):]
    assert 'href="bibliography.html"' in nav and ">References<" in nav
