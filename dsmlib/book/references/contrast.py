"""Claims set side by side across scales (book layer): this build's value of each claim a
chapter names for contrast, beside every reference's, with the settings each was measured in.

A chapter opts in through its results' ``extra``: ``contrast`` (the ids of the claims whose
values are comparable across scales), ``settings`` (per setting name, what was held fixed:
data, network, learning rate, batch, training size, steps, seeds...) and ``setting_words`` (a
reader's name for each entry). A claim's value at a scale is its headline, the case that
heads it; the setting is the one that case belongs to.

A **contrast** is marked wherever one scale's interval excludes the other's estimate, whatever
the verdicts say (two inconclusive verdicts can hide a gain of +1.41 points at one scale and
−0.05 at the other). Every setting that differs between the two is named as a **confound**: a
contrast between scales is not an effect of any one of them. A stale reference is compared too,
labelled stale.

The same ``extra`` may carry ``tables`` (title, columns, rows of text): tables the chapter wants
shown for every scale in the ledger (:func:`tables_html`).
"""
from __future__ import annotations

import html
import re
from typing import Any, Sequence

from ...figures.tables import BADGES, data_table, fmt_number
from .stored import Reference

__all__ = ["Scale", "scales_of", "headline_setting", "contrast_rows", "contrast_html",
           "tables_html"]

_DECIDING = re.compile(r"\(deciding case: (.+)\)\s*$")


class Scale:
    """One execution of a chapter: its label, results document and whether it is current."""

    def __init__(self, label: str, doc: dict[str, Any], fresh: bool = True) -> None:
        self.label, self.doc, self.fresh = label, doc, fresh

    @property
    def extra(self) -> dict[str, Any]:
        return self.doc.get("extra") or {}

    def claim(self, cid: str) -> dict[str, Any] | None:
        return next((c for c in self.doc.get("claims", []) if c["id"] == cid), None)


def scales_of(built: dict[str, Any], refs: Sequence[Reference], profile: str) -> list[Scale]:
    """This build's execution, then each reference's."""
    return [Scale(f"{profile} (this build)", built)] + [
        Scale(f"{r.profile} reference" + ("" if r.fresh else " (stale)"), r.doc, r.fresh)
        for r in refs]


def headline_setting(claim: dict[str, Any], settings: dict[str, Any]) -> str | None:
    """The setting of the case heading ``claim`` (named ``<setting>`` or ``<setting>: ...``),
    among ``settings``' names; None if it names none."""
    m = _DECIDING.search(claim.get("quantity", ""))
    case = m.group(1) if m else ""
    for s in sorted(settings, key=len, reverse=True):
        if case == s or case.startswith(f"{s}:"):
            return s
    return None


def _excludes(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether ``a``'s interval leaves out ``b``'s estimate."""
    lo, hi = a["interval"]
    return not lo <= b["measured"] <= hi


def contrast_rows(scales: Sequence[Scale]) -> list[dict[str, Any]]:
    """Per claim named for contrast by the first scale and judged at two scales or more, each
    scale's headline (claim, setting and its settings), and per pair of scales whether one's
    interval excludes the other's estimate, with the settings that differ (the confounds)."""
    if not scales:
        return []
    ids = list(scales[0].extra.get("contrast") or [])
    rows = []
    for cid in ids:
        cells = []
        for sc in scales:
            c = sc.claim(cid)
            settings = sc.extra.get("settings") or {}
            name = None if c is None else headline_setting(c, settings)
            cells.append(dict(scale=sc.label, fresh=sc.fresh, claim=c, setting=name,
                              values=settings.get(name) if name else None))
        if sum(c["claim"] is not None for c in cells) < 2:
            continue          # judged at one scale or none: nothing to set side by side
        pairs = []
        for i, a in enumerate(cells):
            for b in cells[i + 1:]:
                if a["claim"] is None or b["claim"] is None:
                    continue
                if _excludes(a["claim"], b["claim"]) or _excludes(b["claim"], a["claim"]):
                    va, vb = a["values"] or {}, b["values"] or {}
                    pairs.append(dict(a=a["scale"], b=b["scale"], stale=not (a["fresh"]
                                                                             and b["fresh"]),
                                      confounds=[k for k in dict.fromkeys([*va, *vb])
                                                 if va.get(k) != vb.get(k)]))
        rows.append(dict(claim=cid, cells=cells, contrasts=pairs))
    return rows


def _value(c: dict[str, Any] | None) -> str:
    if c is None:
        return "<span class='absent'>not judged</span>"
    unit = f" {html.escape(c['unit'])}" if c.get("unit") else ""
    way = (f"<br><span class='size'>{html.escape(c['size'].split(' (')[0])}</span>"
           if c.get("size") else "")
    return (f"<span class='badge {c['verdict']}'>{BADGES[c['verdict']]}</span> "
            f"{fmt_number(c['measured'])} <span class='iv'>[{fmt_number(c['interval'][0])}, "
            f"{fmt_number(c['interval'][1])}]</span>{unit}{way}")


def _words(scales: Sequence[Scale]) -> dict[str, str]:
    out: dict[str, str] = {}
    for sc in scales:
        out.update(sc.extra.get("setting_words") or {})
    return out


def _fmt(v: Any) -> str:
    return fmt_number(v) if isinstance(v, float) else html.escape(f"{v:,}" if isinstance(v, int)
                                                                  else str(v))


def contrast_html(scales: Sequence[Scale]) -> str:
    """The across-scales table (HTML): per claim, each scale's headline with its setting, and
    the contrasts with their confounds; then the settings each headline was measured in. ""
    with fewer than two scales or no claim named for contrast."""
    rows = contrast_rows(scales)
    if len(scales) < 2 or not rows:
        return ""
    words = _words(scales)
    head = ["Claim"] + [html.escape(s.label) for s in scales] + ["Contrast"]
    body, classes = [], []
    for r in rows:
        marks = []
        for p in r["contrasts"]:
            conf = ", ".join(html.escape(words.get(k, k)) for k in p["confounds"]) or "none"
            marks.append(f"<span class='contrast{' stale' if p['stale'] else ''}'>≠ "
                         f"{html.escape(p['a'])} and {html.escape(p['b'])}: one's interval "
                         f"excludes the other's estimate</span>; confounds: {conf}")
        body.append([f"<code>{html.escape(r['claim'])}</code>"]
                    + [_value(c["claim"]) + (f"<br><span class='setting'>"
                                             f"{html.escape(c['setting'])}</span>"
                                             if c["setting"] else "") for c in r["cells"]]
                    + ["<br>".join(marks) or "no contrast: each interval holds the other's "
                                             "estimate"])
        classes.append("contrast" if r["contrasts"] else "")
    table = data_table(head, body, row_classes=classes, table_class="cases contrast cards")
    shown = {(c["scale"], c["setting"]): c["values"] for r in rows for c in r["cells"]
             if c["values"]}
    keys = list(dict.fromkeys(k for v in shown.values() for k in v))
    settings = data_table(       # one row per setting, one column per scale: narrow
        ["Setting"] + [f"{html.escape(sc)}<br>{html.escape(name)}" for sc, name in shown],
        [[html.escape(words.get(k, k))] + [_fmt(v.get(k, "—")) for v in shown.values()]
         for k in keys], labels=["Setting"] + [f"{sc}, {name}" for sc, name in shown],
        table_class="cases contrast-settings cards")
    n = sum(bool(r["contrasts"]) for r in rows)
    return (f"<div class='contrasts'><p><strong>Across scales.</strong> Each claim's headline at "
            f"every scale, side by side. A contrast (≠) is marked wherever one scale's interval "
            f"excludes the other's estimate, whatever the verdicts; {n} of {len(rows)} claims "
            "show one. The settings that differ between two scales are named as confounds: a "
            "contrast is not an effect of any one of them.</p>"
            f"{table}<details><summary>The settings of each headline</summary>{settings}"
            "</details></div>")


def tables_html(scales: Sequence[Scale]) -> str:
    """Every table a chapter attached to its results (``extra["tables"]``), for each scale that
    has it, under its title and the scale's label (HTML); "" with none."""
    parts = []
    for sc in scales:
        for t in sc.extra.get("tables") or []:
            stale = " <span class='stale-tag'>stale</span>" if not sc.fresh else ""
            parts.append(f"<p><strong>{html.escape(t['title'])}</strong> "
                         f"({html.escape(sc.label)}){stale}</p>"
                         + (data_table([html.escape(c) for c in t["columns"]],
                                       [[html.escape(str(v)) for v in row] for row in t["rows"]],
                                       table_class="cases chapter-table cards")
                            if t["rows"] else "<p>No rows: nothing was judged.</p>"))
    return "<div class='chapter-tables'>" + "".join(parts) + "</div>" if parts else ""
