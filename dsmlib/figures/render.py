"""The renderer that makes plotly figures work in the static site (figures layer).

Under ipykernel plotly >= 6 emits only ``application/vnd.plotly.v1+json``, which myst-nb drops.
:class:`BookRenderer` also emits ``text/html``: an empty ``div`` and the figure's JSON in a
``<script type="application/json">``, with no plotly.js and no inline call. The site's small
loader (``book/_assets/dsm-plotly.js``) finds these, fetches plotly.js once, after the page has
painted, and draws them; pages without a figure never load plotly.js.

Embedded data is slimmed: float64 arrays (and long float lists) become float32, which plotly
encodes as base64 typed arrays, half the bytes, with no visible loss.
"""
from __future__ import annotations

import base64
import hashlib
import html as _html
from typing import Any

import numpy as np
import plotly.io as pio
from plotly.io._base_renderers import MimetypeRenderer, PlotlyRenderer

__all__ = ["RENDERER", "BookRenderer", "book_template", "setup", "slim", "figure_html"]

RENDERER = "dsm_book"


def slim(obj: Any) -> Any:
    """A copy of a figure dict with float arrays (and float lists of > 8 items) as float32,
    including arrays plotly has already encoded as ``{"dtype": "f8", "bdata": ...}``."""
    if isinstance(obj, dict):
        if obj.get("dtype") == "f8" and isinstance(obj.get("bdata"), str):
            arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.float64)
            return {**obj, "dtype": "f4",
                    "bdata": base64.b64encode(arr.astype(np.float32).tobytes()).decode()}
        return {k: slim(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return obj.astype(np.float32) if obj.dtype.kind == "f" else obj
    if isinstance(obj, (list, tuple)):
        if len(obj) > 8 and all(isinstance(x, float) for x in obj):
            return np.asarray(obj, dtype=np.float32)
        return [slim(x) for x in obj]
    return obj


def figure_html(fig_dict: dict[str, Any]) -> str:
    """The static-site HTML of one figure: a placeholder and its JSON, drawn by the loader.

    Its id is a hash of the JSON, so the same figure gives the same bytes in every build (the
    loader draws into the placeholder just before the JSON, so two equal figures on one page
    are both drawn)."""
    height = fig_dict.get("layout", {}).get("height") or 450
    spec = {"data": fig_dict.get("data", []), "layout": fig_dict.get("layout", {}),
            "config": {"displaylogo": False, "responsive": True}}
    payload = pio.to_json(spec, validate=False).replace("</", "<\\/")
    uid = f"dsm-fig-{hashlib.sha256(payload.encode()).hexdigest()[:16]}"
    return (f'<div id="{uid}" class="plotly-graph-div dsm-plotly" '
            f'style="height:{int(height)}px; width:100%;"></div>'
            f'<script type="application/json" class="dsm-plotly-data" '
            f'data-target="{_html.escape(uid)}">{payload}</script>')


class BookRenderer(MimetypeRenderer):
    """Emit the plotly JSON mimetype (for Jupyter) next to the site's ``text/html``."""

    def to_mimebundle(self, fig_dict: dict[str, Any]) -> dict[str, Any]:
        small = slim(fig_dict)
        bundle = PlotlyRenderer().to_mimebundle(small)
        bundle["text/html"] = figure_html(small)
        return bundle


def book_template() -> Any:
    """The book's conventions on top of ``plotly_white``: tick labels of large and small
    numbers as powers of ten (10⁻⁴, not plotly's SI "100µ", which reads as a unit on a
    dimensionless axis), on every x and y axis."""
    import plotly.graph_objects as go
    axis = dict(exponentformat="power", showexponent="all")
    return go.layout.Template(layout=dict(xaxis=axis, yaxis=axis))


def setup() -> None:
    """Prepare a chapter's kernel, the first thing every chapter calls: make :data:`RENDERER`
    plotly's default renderer and use the book's template."""
    pio.renderers[RENDERER] = BookRenderer()
    pio.renderers.default = RENDERER
    pio.templates[RENDERER] = book_template()
    pio.templates.default = f"plotly_white+{RENDERER}"
