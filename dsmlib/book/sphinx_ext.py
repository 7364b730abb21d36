"""A small Sphinx extension for the book (book layer).

Jupyter Book 1 always loads ``sphinx_thebe``, whose inline ``const THEBE_JS_URL`` script is
added twice and throws ``Identifier 'THEBE_JS_URL' has already been declared`` on every page
(a Sphinx 7 quirk), and whose default points at a CDN. The book launches no Thebe kernel, so
this extension removes the thebe scripts from every page: no console error, nothing that
could reach for a CDN.
"""
from __future__ import annotations

from typing import Any


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


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", _drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
