"""The paper's own numbers on the figures and equations that reproduce it (book layer).

Sphinx numbers figures and equations across the whole book, so the paper's Figure 1 appeared
as "Figure 21" and its Eq. 24 as "B(23)". A chapter says which of its figures and equations
reproduce one of the paper's in its cells' metadata:

- a figure cell: ``dsmlib: {paper_figure: 1}`` beside its ``mystnb: figure: name: ...``;
- any cell (a Markdown cell's ``+++ {"dsmlib": ...}`` line): ``dsmlib: {paper_equations:
  {eq-swap: 24}}``, by the equations' labels.

The book's extension (:mod:`dsmlib.book.site.sphinx_ext`) then gives those the paper's number,
"Figure 1" and "(24)", in their captions, equation tags and every ``{numref}`` and ``{eq}`` to
them; the book's own figures read "Figure B1", "Figure B2", ... and its equations "(B1)",
"(B2)", ... (``math_eqref_format`` ``({number})``), numbered in the book's order with the
paper's left out: a number without a B is always the paper's.

Sphinx writes a caption's number before its text ("Figure 1 " + text), so a caption never
says its number itself (issue 63: "Figure 1 Figure 1 of the paper, measured"):
:func:`caption_text` turns a text that opens with "Figure N of the paper" into "— the paper's
figure, ..." (or "— the paper's Figure N, ..." under another number), and names any other
place where a caption repeats its own number.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["BOOK", "paper_numbers", "renumber", "declared_numbers", "caption_text",
           "repeated_number"]

#: How the book's own N-th figure or equation is numbered ("Figure B3", "(B3)"); one that
#: reproduces the paper's carries the paper's number alone ("Figure 1", "(24)").
BOOK = "B{}"


def paper_numbers(notebook: dict[str, Any]) -> dict[str, dict[str, str]]:
    """``{"figure": {name: "1"}, "displaymath": {label: "24"}}`` from the cells' ``dsmlib``
    metadata of an executed notebook (see the module docstring); a ``paper_figure`` on a cell
    without a figure name is an error naming the cell."""
    out: dict[str, dict[str, str]] = {"figure": {}, "displaymath": {}}
    for i, cell in enumerate(notebook.get("cells", [])):
        meta = cell.get("metadata") or {}
        ours = meta.get("dsmlib") or {}
        if "paper_figure" in ours:
            name = ((meta.get("mystnb") or {}).get("figure") or {}).get("name")
            if not name:
                raise ValueError(f"cell {i} has dsmlib.paper_figure but no "
                                 "mystnb.figure.name to give it to")
            out["figure"][str(name)] = str(ours["paper_figure"])
        for label, number in (ours.get("paper_equations") or {}).items():
            out["displaymath"][str(label)] = str(number)
    return out


def renumber(toc_fignumbers: dict[str, dict[str, dict[str, tuple]]],
             declared: dict[str, dict[str, dict[str, str]]]) -> None:
    """In place: the paper's numbers for the figures and equations each document ``declared``
    (by figure name and equation label, :func:`paper_numbers`), and the book's own numbered
    "B1", "B2", ... per kind, in Sphinx's order with the paper's left out (no gap where one
    was). A declared name or label the document does not have is an error naming it (a
    renamed label would otherwise lose its paper number silently)."""
    book: dict[str, list] = {"figure": [], "displaymath": []}
    for docname, kinds in toc_fignumbers.items():
        mine = declared.get(docname, {})
        for kind, prefix, what in (("figure", "", "figure"),
                                   ("displaymath", "equation-", "equation")):
            numbered = kinds.get(kind, {})
            paper = {prefix + name: number for name, number in mine.get(kind, {}).items()}
            missing = sorted(set(paper) - set(numbered))
            if missing:
                raise ValueError(f"{docname}: {what}(s) {missing} have a paper number but no "
                                 f"such name; {what}s: {sorted(numbered)}")
            for node_id, number in numbered.items():
                if node_id in paper:
                    numbered[node_id] = (paper[node_id],)
                else:
                    book[kind].append((tuple(number), docname, node_id))
    for kind, entries in book.items():
        for i, (_, docname, node_id) in enumerate(sorted(entries), start=1):
            toc_fignumbers[docname][kind][node_id] = (BOOK.format(i),)
    for docname in set(declared) - set(toc_fignumbers):
        if any(declared[docname].values()):
            raise ValueError(f"{docname}: paper numbers declared, but it has no numbered "
                             "figure or equation")


def declared_numbers(sources: dict[str, Path]) -> dict[str, dict[str, dict[str, str]]]:
    """:func:`paper_numbers` of every notebook among ``sources`` (docname -> source path)."""
    out = {}
    for docname, path in sources.items():
        if Path(path).suffix == ".ipynb":
            out[docname] = paper_numbers(json.loads(Path(path).read_text()))
    return out


#: A caption's text that opens by naming one of the paper's figures: "Figure 1 of the paper".
PAPER_OPENING = re.compile(r"^\s*Figure\s+(?P<number>\w+)\s+of\s+the\s+paper\b")


def caption_text(label: str, text: str) -> str:
    """The text of a caption that Sphinx writes after its number ``label`` ("Figure 1",
    "Figure B3"): an opening "Figure N of the paper" becomes "— the paper’s figure" where
    ``label`` is "Figure N" ("Figure 1 — the paper’s figure, measured. ..."), else "— the
    paper’s Figure N" (the apostrophe as Sphinx's smartquotes write the rest); any other text
    is returned as it is."""
    match = PAPER_OPENING.match(text)
    if match is None:
        return text
    number = match.group("number")
    named = "figure" if label.split()[-1] == number else f"Figure {number}"
    return f"— the paper\u2019s {named}" + text[match.end():]     # as smartquotes write it


def repeated_number(label: str, text: str) -> bool:
    """Whether a caption's ``text`` says its own number ``label`` ("Figure 1") again, which
    Sphinx already writes before it."""
    words = r"\s+".join(map(re.escape, label.split()))
    return re.search(rf"(?<!\w){words}(?!\w|\.\d)", text) is not None
