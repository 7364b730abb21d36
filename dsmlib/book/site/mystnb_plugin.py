"""A myst-nb mime-render plugin (book layer): the plotly JSON mimetype renders to nothing in the static book.

Figures carry both ``application/vnd.plotly.v1+json`` (for live Jupyter) and ``text/html`` (for
the book, see :mod:`dsmlib.plots`). myst-nb renders every mimetype of a bundle before choosing
one, and warns about the JSON one; this plugin claims it and ranks it below ``text/html``, so a
build with warnings-as-errors stays clean without suppressing any other warning.
"""
from __future__ import annotations

from typing import Any

PLOTLY_JSON = "application/vnd.plotly.v1+json"


class PlotlyJsonMimeRenderer:
    mime_priority_overrides = [("*", PLOTLY_JSON, None)]

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: Any) -> list | None:
        return [] if data.mime_type == PLOTLY_JSON else None
