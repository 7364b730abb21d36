"""Claims set side by side across scales (book layer): each case of the claims a chapter names
for contrast, at every scale that measured the *same case*, with the settings each was
measured in.

A chapter opts in through its results' ``extra``: ``contrast`` (the ids of the claims whose
cases are comparable across scales), ``settings`` (per setting name, what was held fixed:
data, network, augmentation, noise grids, learning rate, batch, training and test images,
steps, seeds, δ...) and ``setting_words`` (a reader's name for each entry). A case is named
``<setting>: <case>`` (or ``<setting>``); two scales are compared on a case only where both
measured it under the same name in a setting of the same kind (the full data, or a
data-limited one): the swap's "vs noiseless student" faces "vs noiseless student", σ² = 0.25
faces σ² = 0.25, never another scale's headline.

A **contrast** is marked from the difference of the two estimates with both errors: where the
99 % interval of ``a − b`` (the two cases' 99 % half-widths in quadrature) excludes 0 (one interval leaving out
the other's estimate fires about two times in three with no real difference, at SEs of 0.1 and
0.6). Every setting that differs between the two is named: a contrast between scales is not an
effect of any one of them. A stale reference is compared too, labelled stale.

The same ``extra`` may carry ``tables`` (title, columns, rows of text): tables the chapter wants
shown for every scale in the ledger (:func:`tables_html`).
"""
from __future__ import annotations

import html
import math
from typing import Any, Sequence

from ...figures.tables import BADGES, data_table, fmt_number
from .stored import Reference

__all__ = ["Scale", "scales_of", "split_case", "setting_kind",
           "Z_CONTRAST", "difference", "contrast_rows", "contrast_html", "tables_html"]

#: The two-sided normal quantile of a contrast's 99 % interval.
Z_CONTRAST = 2.5758293035489004


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


def split_case(case: str, settings: dict[str, Any] | Sequence[str]) -> tuple[str | None, str]:
    """``(setting, the rest)`` of a case named ``<setting>`` or ``<setting>: <rest>`` (the
    longest setting name that matches); ``(None, case)`` where none does."""
    for s in sorted(settings, key=len, reverse=True):
        if case == s:
            return s, ""
        if case.startswith(f"{s}: "):
            return s, case[len(s) + 2:]
    return None, case


def setting_kind(setting: str) -> str:
    """``full`` for a setting on a data set's whole training set, else ``limited``."""
    return "full" if setting.endswith("full data") else "limited"


def difference(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    """``a − b`` of two measured cases with both errors, its 99 % interval, and whether it
    excludes 0; None where either case has no standard error. The interval's half-width is
    the two cases' own 99 % half-widths added in quadrature, so a case of few seeds (a
    Student-t quantile of 9.9 at 2 degrees of freedom) keeps its width; with normal errors
    this is exactly ``Z_CONTRAST * sqrt(se_a² + se_b²)``."""
    if a.get("se") is None or b.get("se") is None:
        return None
    d = float(a["measured"]) - float(b["measured"])
    half = math.hypot(*((float(c["interval"][1]) - float(c["interval"][0])) / 2 for c in (a, b)))
    lo, hi = d - half, d + half
    return {"measured": d, "se": math.hypot(float(a["se"]), float(b["se"])),
            "interval": [lo, hi], "differs": lo > 0 or hi < 0}


def _found(scales: Sequence[Scale], cid: str) -> dict[tuple[str, str], list[Any]]:
    """Per (kind of setting, case name): each scale's case of claim ``cid`` (None where it has
    none), in its scale's setting."""
    found: dict[tuple[str, str], list[Any]] = {}
    for i, sc in enumerate(scales):
        c = sc.claim(cid)
        settings = sc.extra.get("settings") or {}
        for d in (c or {}).get("details", []):
            setting, rest = split_case(d["case"], settings)
            if setting is None:
                continue
            cells = found.setdefault((setting_kind(setting), rest), [None] * len(scales))
            if cells[i] is None:
                cells[i] = dict(scale=sc.label, fresh=sc.fresh, case=d, claim=c,
                                setting=setting, values=settings.get(setting))
    return found


def contrast_rows(scales: Sequence[Scale]) -> list[dict[str, Any]]:
    """Per claim named for contrast by the first scale, per case measured under the same name
    (in a setting of the same kind) at two scales or more: each scale's case (value,
    interval, verdict, setting and its settings), and per pair of scales the difference of
    the two estimates with both errors (:func:`difference`), a contrast where its interval
    excludes 0, with every setting that differs (``confounds``)."""
    if not scales:
        return []
    rows = []
    for cid in scales[0].extra.get("contrast") or []:
        for (kind, rest), cells in _found(scales, cid).items():
            if sum(x is not None for x in cells) < 2:
                continue       # measured at one scale only: nothing to set side by side
            cells = [x if x is not None else dict(scale=sc.label, fresh=sc.fresh, case=None,
                                                  claim=sc.claim(cid), setting=None, values=None)
                     for x, sc in zip(cells, scales)]
            pairs = []
            for i, a in enumerate(cells):
                for b in cells[i + 1:]:
                    if a["case"] is None or b["case"] is None:
                        continue
                    diff = difference(a["case"], b["case"])
                    va, vb = a["values"] or {}, b["values"] or {}
                    pairs.append(dict(a=a["scale"], b=b["scale"], difference=diff,
                                      differs=bool(diff and diff["differs"]),
                                      stale=not (a["fresh"] and b["fresh"]),
                                      confounds=[k for k in dict.fromkeys([*va, *vb])
                                                 if va.get(k) != vb.get(k)]))
            rows.append(dict(claim=cid, case=rest, kind=kind, cells=cells, pairs=pairs,
                             contrasts=[p for p in pairs if p["differs"]]))
    return rows


def _value(d: dict[str, Any] | None, claim: dict[str, Any] | None) -> str:
    if d is None:
        return "<span class='absent'>not measured</span>"
    u = d.get("unit", (claim or {}).get("unit", ""))      # the case's own unit first
    unit = f" {html.escape(u)}" if u else ""
    size = f"<br><span class='size'>{html.escape(d['size'])}</span>" if d.get("size") else ""
    return (f"<span class='badge {d['verdict']}'>{BADGES[d['verdict']]}</span> "
            f"{fmt_number(d['measured'])} <span class='iv'>[{fmt_number(d['interval'][0])}, "
            f"{fmt_number(d['interval'][1])}]</span>{unit}{size}")


def _words(scales: Sequence[Scale]) -> dict[str, str]:
    out: dict[str, str] = {}
    for sc in scales:
        out.update(sc.extra.get("setting_words") or {})
    return out


def _fmt(v: Any) -> str:
    return fmt_number(v) if isinstance(v, float) else html.escape(f"{v:,}" if isinstance(v, int)
                                                                  else str(v))


def _pair_text(p: dict[str, Any], words: dict[str, str]) -> str:
    conf = ", ".join(html.escape(words.get(k, k)) for k in p["confounds"]) or "nothing"
    diff = p["difference"]
    value = ("no standard error to compare" if diff is None else
             f"{fmt_number(diff['measured'])} [{fmt_number(diff['interval'][0])}, "
             f"{fmt_number(diff['interval'][1])}]")
    return (f"<span class='contrast{' differs' if p['differs'] else ''}"
            f"{' stale' if p['stale'] else ''}'>{'Δ ' if p['differs'] else ''}"
            f"{html.escape(p['a'])} − {html.escape(p['b'])}: {value}</span>; "
            f"they differ in {conf}")


def contrast_html(scales: Sequence[Scale]) -> str:
    """The across-scales table (HTML): per claim and case, each scale's value of the same case
    with its setting, and the difference of each pair with both errors, marked (Δ) where its
    99 % interval excludes 0, with the settings that differ; then the settings of every scale.
    "" with fewer than two scales or no case measured at two."""
    rows = contrast_rows(scales)
    if len(scales) < 2 or not rows:
        return ""
    words = _words(scales)
    head = ["Claim, case"] + [html.escape(s.label) for s in scales] + ["Differences (99 %)"]
    body, classes = [], []
    for r in rows:
        kind = "full data" if r["kind"] == "full" else "data-limited"
        name = (f"<code>{html.escape(r['claim'])}</code><br>"
                f"{html.escape(r['case']) + ' ' if r['case'] else ''}"
                f"<span class='setting'>({kind})</span>")
        body.append([name]
                    + [_value(c["case"], c["claim"]) + (f"<br><span class='setting'>"
                                                         f"{html.escape(c['setting'])}</span>"
                                                         if c["setting"] else "")
                       for c in r["cells"]]
                    + ["<br>".join(_pair_text(p, words) for p in r["pairs"])])
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
    return (f"<div class='contrasts'><p><strong>Across scales.</strong> The same case at every "
            "scale that measured it, side by side (compared only under the same name, in a "
            "setting of the same kind). A contrast (Δ) is marked where the 99 % interval of "
            "the difference of the two estimates, with both errors, excludes 0; "
            f"{n} of {len(rows)} cases show one. Every setting that differs between two scales "
            "is named: a contrast is not an effect of any one of them.</p>"
            f"<details><summary>The {len(rows)} cases at every scale</summary>{table}</details>"
            "<details><summary>The settings of each scale</summary>"
            f"{settings}</details></div>")


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
