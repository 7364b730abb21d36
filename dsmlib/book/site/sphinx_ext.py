"""A small Sphinx extension for the book (book layer).

Jupyter Book 1 always loads ``sphinx_thebe``, whose inline ``const THEBE_JS_URL`` script is
added twice and throws ``Identifier 'THEBE_JS_URL' has already been declared`` on every page
(a Sphinx 7 quirk), and whose default points at a CDN. The book launches no Thebe kernel, so
this extension removes the thebe scripts from every page: no console error, nothing that
could reach for a CDN.

Figures and equations that reproduce the paper's carry the paper's numbers
(:mod:`dsmlib.book.site.paper_numbers`), and no caption says its number twice: Sphinx writes
it before the caption's text, so a text that opens with "Figure N of the paper" reads "Figure
N — the paper's figure, ...", and any other repetition is a warning (an error under ``-W``).

Under a profile that only tests the machinery (``smoke``; the runner passes the profile in
``DSMLIB_PROFILE``), every page opens with a banner saying so.

It writes myst-nb's stylesheet before the pages (so that every build of the same results links
it the same way), and it also starts loading plotly.js early, without blocking the first paint, on the pages that
have a figure (and only there): an ``async`` script in the head, which the figure loader
(``dsm-plotly.js``) waits for.

On the search page it adds ``dsm-search.js``, which makes each result's snippet read the
result page's article, not its header's download buttons (issue 71, item 8).
"""
from __future__ import annotations

import html
import os
from typing import Any

from .ledger import machinery_notice
from .paper_numbers import caption_text, declared_numbers, renumber, repeated_number


def _drop_thebe(app: Any, pagename: str, templatename: str, context: dict[str, Any],
                doctree: Any) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    keep = []
    for js in scripts:
        name = str(js)
        body = getattr(js, "attributes", {}).get("body", "") if hasattr(js, "attributes") else ""
        if "thebe" in name.lower() or "THEBE_JS_URL" in str(body):
            continue
        keep.append(js)
    context["script_files"] = keep


def _plotly_early(app: Any, pagename: str, templatename: str, context: dict[str, Any],
                  doctree: Any) -> None:
    if "dsm-plotly-data" not in context.get("body", ""):
        return
    src = context["pathto"]("_static/plotly.min.js", 1)
    context["metatags"] = (context.get("metatags", "")
                           + f'\n    <script async id="dsm-plotly-js" src="{src}"></script>')


#: The search page's snippet reader (book/_assets/dsm-search.js): it replaces
#: ``Search.htmlToText`` of Sphinx's searchtools.js, so it runs after it (``defer``).
SEARCH_JS = "dsm-search.js"


def _search_snippets(app: Any, pagename: str, templatename: str, context: dict[str, Any],
                     doctree: Any) -> None:
    """On the search page only: the script that makes result snippets start with the result
    page's own text (Sphinx reads them from ``[role="main"]``, which holds the header)."""
    if pagename == "search":
        app.add_js_file(SEARCH_JS, loading_method="defer")


def _machinery_banner(app: Any, pagename: str, templatename: str, context: dict[str, Any],
                      doctree: Any) -> None:
    notice = machinery_notice(os.environ.get("DSMLIB_PROFILE", ""))
    if notice and "body" in context:
        context["body"] = ("<div class='admonition warning dsm-machinery-banner' role='note'>"
                           f"<p class='admonition-title'>Machinery test build</p><p>"
                           f"{html.escape(notice)}</p></div>\n" + context["body"])


def _mystnb_css_first(app: Any) -> None:
    """Write myst-nb's stylesheet before any page: myst-nb writes it when the build ends, so
    the pages of a fresh build linked it without the ``?v=`` checksum that a rebuild's
    rewritten pages had, and two builds of the same results differed in those bytes."""
    from myst_nb.sphinx_ext import add_global_html_resources
    if getattr(app.builder, "format", None) == "html":
        os.makedirs(os.path.join(app.builder.outdir, "_static"), exist_ok=True)
        add_global_html_resources(app, None)


def _paper_numbers(app: Any, env: Any) -> list[str]:
    """After Sphinx numbers the figures and equations (its toctree collector, on the same
    event): the paper's numbers where a chapter declares them, "B" before the book's own
    equation numbers (:mod:`dsmlib.book.site.paper_numbers`)."""
    if env.config.numfig:
        renumber(env.toc_fignumbers,
                 declared_numbers({d: env.doc2path(d) for d in env.found_docs}))
    return []


def _figure_label(app: Any, docname: str, figure: Any) -> str | None:
    """A numbered figure's number as its caption shows it ("Figure 1", "Figure B3")."""
    ids = figure.get("ids") or [None]
    number = app.env.toc_fignumbers.get(docname, {}).get("figure", {}).get(ids[0])
    if not number:
        return None
    return app.config.numfig_format["figure"] % ".".join(map(str, number))


def _captions_say_their_number_once(app: Any, doctree: Any, docname: str) -> None:
    """Each numbered figure's caption, after its number: an opening "Figure N of the paper"
    rewritten (:func:`~dsmlib.book.site.paper_numbers.caption_text`), and a warning where the
    text still says the figure's own number."""
    from docutils import nodes
    from sphinx.util import logging
    if not app.config.numfig:
        return
    for figure in doctree.findall(nodes.figure):
        label = _figure_label(app, docname, figure)
        caption = next((c for c in figure.children if isinstance(c, nodes.caption)), None)
        if label is None or caption is None:
            continue
        if caption.children and isinstance(caption[0], nodes.Text):
            caption.replace(caption[0], nodes.Text(caption_text(label, caption[0].astext())))
        if repeated_number(label, caption.astext()):
            logging.getLogger(__name__).warning(
                f"the caption of {label} says its number again (Sphinx writes it before the "
                f"caption): {caption.astext()[:80]!r}", location=figure)


def _source_link(app: Any, config: Any) -> None:
    """The header's link to the book's source repository, from ``CITATION.cff``'s
    ``repository-code`` (the one place that names it)."""
    from pathlib import Path

    from .citation import CITATION_FILE, load_citation
    root = next((d for d in (Path(app.srcdir), Path(app.confdir))
                 if (d / CITATION_FILE).exists()), None)
    url = load_citation(root).get("repository-code") if root is not None else None
    if not url:           # not published yet: no button rather than an address that is not
        return
    options = dict(config.html_theme_options or {})
    options.update(repository_url=str(url), use_repository_button=True)
    config.html_theme_options = options


def setup(app: Any) -> dict[str, Any]:
    app.connect("config-inited", _source_link)
    app.connect("env-get-updated", _paper_numbers, priority=900)
    app.connect("doctree-resolved", _captions_say_their_number_once)
    app.connect("builder-inited", _mystnb_css_first)
    app.connect("html-page-context", _machinery_banner, priority=900)
    app.connect("html-page-context", _drop_thebe, priority=900)
    app.connect("html-page-context", _plotly_early, priority=900)
    app.connect("html-page-context", _search_snippets, priority=500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
