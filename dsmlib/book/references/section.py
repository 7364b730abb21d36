"""A reference execution shown beside its chapter (book layer): the figures and verdicts of,
say, the ``gpu`` reference of Section 5 (ResNet-56 on a GPU), with the reference's provenance
line, beside the run made at build time.

Each shown reference has a page of its own, a sub-page of its chapter
(:func:`reference_page_cells`: its heading as the title, its provenance, execution line and
finding, then its outputs, each part under a heading of that page's contents); the chapter
page keeps a short block per reference (:func:`reference_summary`: its heading, its execution
line and finding, a link to its page), so that no page carries every reference's figures
(the Section 5 page weighed 640 KB with two). :func:`reference_cells` is the whole section in
one cell behind one toggle, as chapter pages showed it before.

Only the outputs are copied, never the code: each output cell of the reference (figures with
their captions, verdict tables, printed scope notes) becomes output with its input removed.
A reference's figures are not numbered (the book's Figure 1 is the build's), and glue records
are dropped (their names belong to the page's own run).

A *stale* reference (executed with code that has changed since) is shown too, never as
current: its heading says stale, a notice under it names the commit it was executed at, and
every figure caption says so.
"""
from __future__ import annotations

import copy
import html
import re
from typing import Any

from ...figures.render import figure_html
from ...figures.tables import reference_scale, with_scale
from ..execute.cells import cell_source, cell_tags
from .inline_markup import inline_html
from ..execute.provenance_html import provenance_line
from .stored import PLOTLY_JSON, Reference

__all__ = ["SECTION_TAG", "SHOWN_GLUE", "site_outputs", "glued_markdown", "reference_parts",
           "markdown_cell", "reference_cells", "reference_page_cells", "PAGE_LINK",
           "summary_cells", "reference_summary",
           "contrast_cell", "first_screen_cell", "with_reference_sections"]

SECTION_TAG = "dsmlib-reference"
#: The heading before which reference sections go (else at the end of the page).
BEFORE_HEADING = "## Reader guide"
SKIP_TAGS = {"parameters", "injected-parameters", "remove-cell", "dsmlib-provenance"}
#: The glued Markdown of a reference shown under its section's heading, outside its toggle, by
#: the glue name's suffix (``<chapter>_execution``, ``<chapter>_finding``), with its lead-in.
SHOWN_GLUE = (("execution", ""), ("finding", "**Its finding.** "))
GLUE_MIME = "application/papermill.record/text/markdown"
#: Of those, what a chapter page's short block folds (its reference's page shows it open): the
#: finding repeats in prose the verdicts the first screen already sets side by side, and three
#: references' findings open would take 1,400 px of the Section 5 page.
FOLDED_GLUE = ("finding",)


def site_outputs(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A reference cell's outputs as the static site shows them: each figure's HTML rebuilt
    from its plotly JSON (:func:`dsmlib.figures.render.figure_html`), glue records dropped
    (their names belong to the page's own run)."""
    shown = []
    for out in outputs:
        data = dict(out.get("data") or {})
        if any(k.startswith("application/papermill.record") for k in data):
            continue
        if PLOTLY_JSON in data and "text/html" not in data:
            data["text/html"] = figure_html(data[PLOTLY_JSON])
        shown.append({**out, "data": data} if "data" in out else out)
    return shown


def _shown(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in site_outputs(outputs)
            if o.get("output_type") != "stream" or o.get("name") == "stdout"]


def glued_markdown(nb: dict[str, Any]) -> dict[str, str]:
    """Every Markdown value the notebook ``nb`` glued (``myst_nb.glue``), by glue name: the
    text a page's ``{glue:md}`` shows, which a reference section (outputs only) would drop."""
    out = {}
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            name = ((o.get("metadata") or {}).get("scrapbook") or {}).get("name")
            text = (o.get("data") or {}).get(GLUE_MIME)
            if name and text is not None:
                out[name] = "".join(text) if isinstance(text, list) else str(text)
    return out


def _glued_lines(ref_nb: dict[str, Any], name: str, fold: tuple[str, ...] = ()) -> str:
    """The reference's glued lines of :data:`SHOWN_GLUE` (Markdown), each a paragraph; those
    whose suffix is in ``fold`` each in a closed dropdown titled by its lead-in."""
    glued = glued_markdown(ref_nb)
    return "".join(
        f"\n\n:::{{dropdown}} {lead.strip(' *.')}\n{text}\n:::" if suffix in fold
        else f"\n\n{lead}{text}"
        for suffix, lead in SHOWN_GLUE if f"{name}_{suffix}" in glued
        for text in [glued[f"{name}_{suffix}"].strip()])


def _labelled(outputs: list[dict[str, Any]], ref: Reference) -> list[dict[str, Any]]:
    """The outputs with every verdict row marked as the reference's (``data-scale``) and every
    verdict table captioned with the execution it shows."""
    stale = "" if ref.fresh else f", stale: commit <code>{html.escape(ref.commit)}</code>"
    caption = (f"Verdicts of the <code>{html.escape(ref.profile)}</code> reference execution "
               f"({html.escape(ref.device)}{stale}), "
               "not of this build")
    out = []
    for o in outputs:
        data = o.get("data") or {}
        if "text/html" not in data:
            out.append(o)
            continue
        o = copy.deepcopy(o)
        text = data["text/html"]
        text = "".join(text) if isinstance(text, list) else text
        o["data"]["text/html"] = with_scale(text, reference_scale(ref.profile), caption)
        out.append(o)
    return out


def markdown_cell(text: str, i: int, profile: str) -> dict[str, Any]:
    """A Markdown cell of a reference's section (tagged ``SECTION_TAG``), the ``i``-th of
    ``profile``'s (its id)."""
    return {"cell_type": "markdown", "id": f"dsmlib-ref-{profile}-{i}",
            "metadata": {"tags": [SECTION_TAG]}, "source": text}


def _intro(ref_nb: dict[str, Any], ref: Reference) -> str:
    """What a reference's heading opens with (Markdown): where its figures and verdicts come
    from, a fixture's and a stale one's notice, its glued execution line and finding
    (:data:`SHOWN_GLUE`) and its provenance line."""
    p = ref.profile
    return (f"The figures and verdicts below were not made by this build: they come from "
            f"the chapter's committed `{p}` reference, executed once where its hardware "
            "is and stored with its provenance (`python -m dsmlib reference --profile "
            f"{p}`). The claims ledger shows its verdicts beside this build's.{_fixture(ref)}"
            f"{_stale_notice(ref)}{_glued_lines(ref_nb, ref.name)}\n\n"
            f"<div class='provenance'>{provenance_line(ref.provenance)}</div>\n")


def _fixture(ref: Reference) -> str:
    """A test fixture's notice (Markdown paragraph), or nothing."""
    return (f"\n\n<div class='fixture-notice'><strong>Test fixture.</strong> "
            f"{html.escape(ref.fixture)}</div>" if ref.fixture else "")


def _stale_notice(ref: Reference) -> str:
    """A stale reference's notice: the commit it was executed at, what changed since and what
    refreshes it (Markdown paragraph); nothing for a fresh one."""
    if ref.fresh:
        return ""
    return (f"\n\n<div class='stale-notice'><strong>Stale.</strong> Executed at commit "
            f"<code>{html.escape(ref.commit)}</code>; the code this page runs has changed since "
            "(the content key differs), so these figures and verdicts are not necessarily what the "
            f"current code gives, and the ledger greys them. {ref.reason} To refresh it: "
            + (ref.hint or f"<code>python -m dsmlib reference {html.escape(ref.name)} --profile "
                           f"{html.escape(ref.profile)}</code> where its hardware is") + ".</div>")


def _heading(ref: Reference, level: str = "##") -> str:
    return f"{level} The `{ref.profile}` reference execution{'' if ref.fresh else ' (stale)'}"


Outputs = list[dict[str, Any]]


def reference_parts(ref_nb: dict[str, Any], ref: Reference) -> list[tuple[str, list[Outputs]]]:
    """Every output of ``ref``'s notebook ``ref_nb`` before its reader guide, grouped under
    the section heading it came from: ``(heading, [each cell's outputs])``, each figure after its
    caption (HTML, saying whose it is: a reference's figures are not numbered, so the page
    has one Figure 1, the build's), each verdict table labelled as the reference's."""
    p = ref.profile
    stale = "" if ref.fresh else f", stale: commit {ref.commit}"
    parts: list[tuple[str, list[Outputs]]] = []
    heading = ""
    for cell in ref_nb.get("cells", []):
        tags = set(cell_tags(cell))
        if cell["cell_type"] == "markdown":
            src = cell_source(cell).lstrip()
            if any(line.startswith(BEFORE_HEADING) for line in src.splitlines()):
                break
            titles = [line[3:].strip() for line in src.splitlines() if line.startswith("## ")]
            heading = titles[-1] if titles else heading
            continue
        if cell["cell_type"] != "code" or tags & SKIP_TAGS:
            continue
        outputs = _shown(cell.get("outputs", []))
        if not outputs:
            continue
        if not parts or parts[-1][0] != heading:
            parts.append((heading, []))
        caption = ((cell["metadata"].get("mystnb") or {}).get("figure") or {}).get("caption")
        shown = [_html_output(f"<p class='ref-caption'>(<code>{html.escape(p)}</code> reference"
                              f"{html.escape(stale)}.) {inline_html(caption.strip())}</p>")
                 ] if caption else []
        parts[-1][1].append(shown + _labelled(outputs, ref))
    return parts


def reference_cells(ref_nb: dict[str, Any], ref: Reference) -> list[dict[str, Any]]:
    """The section showing ``ref`` (whose executed notebook is ``ref_nb``) in full: a heading,
    the provenance line, then every output before the reader guide, in one cell behind one
    toggle, each part named by an ``h4.ref-heading`` (:func:`reference_parts`)."""
    p = ref.profile
    cells = [markdown_cell(f"{_heading(ref)}\n\n{_intro(ref_nb, ref)}", 0, p)]
    shown: list[dict[str, Any]] = []
    count = 0
    for heading, cells_outputs in reference_parts(ref_nb, ref):
        if heading:
            shown.append(_html_output(f"<h4 class='ref-heading'>{inline_html(heading)} "
                                      f"(<code>{html.escape(p)}</code> reference)</h4>"))
        shown += [o for outputs in cells_outputs for o in outputs]
        count += len(cells_outputs)
    if shown:   # one toggle for the whole reference: its outputs in one cell, input removed
        cells.append({"cell_type": "code", "execution_count": None,
                      "id": f"dsmlib-ref-{p}-outputs",
                      "metadata": {"tags": ["remove-input", "hide-output", SECTION_TAG],
                                   "mystnb": {"code_prompt_show": f"Show the {p} reference's "
                                              f"figures and tables ({count})",
                                              "code_prompt_hide": "Hide them"}},
                      "outputs": shown, "source": f"# outputs of the {p} reference"})
    return cells


def reference_page_cells(ref_nb: dict[str, Any], ref: Reference,
                         chapter: str) -> list[dict[str, Any]]:
    """``ref``'s page of its own, a sub-page of its chapter: its heading as the page's title,
    a line back to its chapter (``chapter``: a ``{doc}`` target, ``Title <../name>``), what
    the chapter page held of it before (:func:`reference_cells`'s heading cell), then each part
    of its outputs under a heading of the page's contents (:func:`reference_parts`), unfolded:
    on its own page they are what a reader came for."""
    p = ref.profile
    cells = [markdown_cell(f"{_heading(ref, '#')}\n\nOne of the committed reference executions of "
                 f"{{doc}}`{chapter}`. {_intro(ref_nb, ref)}", 0, p)]
    for i, (heading, cells_outputs) in enumerate(reference_parts(ref_nb, ref), start=1):
        if heading:
            cells.append(markdown_cell(f"## {heading}\n", i, p))
        cells.append({"cell_type": "code", "execution_count": None,
                      "id": f"dsmlib-ref-{p}-outputs-{i}",
                      "metadata": {"tags": ["remove-input", SECTION_TAG]},
                      "outputs": [o for outputs in cells_outputs for o in outputs],
                      "source": f"# outputs of the {p} reference, part {i}"})
    return cells


#: The line that links a reference's block on its chapter's page to its page (``{page}``).
PAGE_LINK = "Its figures, tables and provenance are on {page}."


def summary_cells(heading: str, body: str, page: str, profile: str,
                  link: str = PAGE_LINK) -> list[dict[str, Any]]:
    """A reference's short block on its chapter's page: ``heading`` (Markdown, a ``##``
    heading of the page's contents), ``body`` (Markdown) and ``link``, whose ``{page}`` is a
    link to its page (``page``: a ``{doc}`` target relative to the chapter)."""
    to = f"{{doc}}`its own page <{page}>`"
    return [markdown_cell(f"{heading}\n\n{body.strip()}\n\n{link.format(page=to)}\n", 0, profile)]


def reference_summary(ref_nb: dict[str, Any], ref: Reference, page: str) -> list[dict[str, Any]]:
    """``ref``'s short block on its chapter's page (:func:`summary_cells`): its heading, a
    fixture's notice, for a stale one a line saying so (its page says what changed), its glued
    execution line and finding (:data:`SHOWN_GLUE`; the finding folded, :data:`FOLDED_GLUE`),
    and the link to its page ``page``."""
    stale = "" if ref.fresh else (
        f"\n\n<div class='stale-notice'><strong>Stale.</strong> Executed at commit "
        f"<code>{html.escape(ref.commit)}</code>, with code that has changed since; its page "
        "says what changed and how to refresh it.</div>")
    body = (f"From the chapter's committed `{ref.profile}` reference, not from this build."
            f"{_fixture(ref)}{stale}{_glued_lines(ref_nb, ref.name, fold=FOLDED_GLUE)}")
    return summary_cells(_heading(ref), body, page, ref.profile)


def _html_output(text: str) -> dict[str, Any]:
    return {"output_type": "display_data", "metadata": {},
            "data": {"text/html": text, "text/plain": re.sub(r"<[^>]+>", "", text)}}


def contrast_cell(contrast: str) -> list[dict[str, Any]]:
    """The page's section setting this build's claims beside the references' (``contrast``:
    :func:`dsmlib.book.references.contrast.contrast_html`); none when it is empty."""
    if not contrast:
        return []
    return [markdown_cell("## Across scales\n\nThis build's accuracy claims beside those of the "
                "chapter's committed reference executions (the same table is in the claims "
                f"ledger).\n\n```{{raw}} html\n{contrast}\n```\n", 0, "contrast")]


#: The paragraph before the first screen's table.
FIRST_SCREEN_LEAD = ("<p><strong>What each scale found.</strong> Every claim of this page at "
                     "every scale it shows, the paper's own data first: its verdict, value and "
                     "99 % interval (a directional accuracy claim with its size against δ); ★ "
                     "marks the strongest evidence across scales, the decided verdict with the "
                     "smallest p-value. The sections further down are each scale's in full; the "
                     "opening just below speaks for this build alone.</p>")


def first_screen_cell(opening: str) -> list[dict[str, Any]]:
    """The page's opening across scales (``opening``:
    :func:`dsmlib.book.references.lead.first_screen_html`, the answer in words then the
    table): the answer, :data:`FIRST_SCREEN_LEAD`, the table; none when it is empty."""
    if not opening:
        return []
    at = opening.find("<table")
    answer, table = (opening[:at], opening[at:]) if at >= 0 else ("", opening)
    return [markdown_cell(f"```{{raw}} html\n{answer}{FIRST_SCREEN_LEAD}{table}\n```\n", 0,
                "first-screen")]


def with_reference_sections(nb: dict[str, Any], sections: list[list[dict[str, Any]]],
                            lead: list[dict[str, Any]] | None = None,
                            first: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A copy of the page ``nb`` with ``first`` (:func:`first_screen_cell`) after its title
    cell, and ``lead`` (e.g. :func:`contrast_cell`), then each of ``sections`` (a reference's
    cells: :func:`reference_summary`, :func:`reference_cells`), before its reader guide (or at
    its end)."""
    nb = copy.deepcopy(nb)
    if not sections and not lead and not first:
        return nb
    cells = nb["cells"]
    if first:
        title = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                      and cell_source(c).lstrip().startswith("# ")), -1)
        cells[title + 1:title + 1] = first
    at = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
               and any(line.startswith(BEFORE_HEADING) for line in cell_source(c).splitlines())),
              len(cells))
    cells[at:at] = list(lead or []) + [c for section in sections for c in copy.deepcopy(section)]
    return nb
