"""Claims as tables and summaries (figures layer), for the chapters and the ledger.

A verdict table leads with what a reader looks for: the verdict, the paper's value, the exact
theory's and the measurement with its interval. Everything else (the statement's quantity, the
band, the scope, what would make a refuted claim hold or might decide an undecided one, the
note, every case) folds into an expandable row. The table fits a 784 px column and collapses into cards on a phone
(``book/_assets/custom.css``).

Statements may carry LaTeX between ``$...$``: the Markdown summary keeps it (MyST renders it),
and the HTML tables wrap it for MathJax the way Sphinx does.
"""
from __future__ import annotations

import html
import math
import re
from dataclasses import asdict, is_dataclass
from typing import Any, Iterable

from ..foundation.claims import CONFIDENCE

__all__ = ["BADGES", "BUILD", "condition_label", "fmt_number", "fmt_interval", "fmt_band",
           "band_words", "plain_quantity", "math_html", "claims_html", "claims_table",
           "cases_table", "data_table", "verdict_summary", "reference_scale", "with_scale"]

BADGES = {"confirmed": "✔ confirmed", "refuted": "✘ refuted", "inconclusive": "? inconclusive"}
SCOPE_TEXT = {"assumptions": "wrong (or right) even under the paper's own assumptions",
              "setting": "about the experiment as the paper describes running it",
              "reading": "depends on one reading of an ambiguous text"}
LEVEL = f"{CONFIDENCE:.0%}"
#: The ``data-scale`` of a verdict row made by the page's own execution; a reference
#: execution's rows carry :func:`reference_scale` (set by :func:`with_scale` when the book shows
#: them), so that a reader, and a test, can tell two tables of the same claims apart.
BUILD = "build"


def reference_scale(profile: str) -> str:
    """The ``data-scale`` of the rows of the ``profile`` reference execution."""
    return f"reference {profile}"


def condition_label(verdict: str) -> str:
    """How a claim's ``condition`` is introduced: for a refuted claim it is the correction;
    for an undecided one only a guess at what would decide it (nothing measured it)."""
    return ("What would make it hold" if verdict == "refuted"
            else "What might decide it (a guess, not measured)")


def fmt_number(x: float | None, open_end: str = "—") -> str:
    """Four significant digits; ``open_end`` for a missing value, ∞ for infinities."""
    if x is None:
        return open_end
    if not math.isfinite(x):
        return "∞" if x > 0 else ("−∞" if x < 0 else "NaN")
    return f"{x:.4g}".replace("-", "−")


def fmt_interval(iv: list[float]) -> str:
    return f"[{fmt_number(iv[0])}, {fmt_number(iv[1])}]"


def fmt_band(band: list[float | None]) -> str:
    return f"[{fmt_number(band[0], '−∞')}, {fmt_number(band[1], '∞')}]"


def _open(v: float | None) -> bool:
    return v is None or math.isinf(v)


def paper_words(c: dict[str, Any]) -> str:
    """What the paper says, as the Paper column shows it: its value, or, for a directional
    claim (paper value 0 and a band that is a sign), "> 0" or "< 0"."""
    lo, hi = c.get("band") or (None, None)
    if c.get("paper") == 0 and hi is None and lo is not None and 0 <= lo < 1e-9:
        return "&gt; 0"
    if c.get("paper") == 0 and lo is None and hi is not None and -1e-9 < hi < 0:
        return "&lt; 0"
    return fmt_number(c.get("paper"))


def band_words(band: list[float | None]) -> str:
    """What a claim is tested against, in words: "below 0" (a band ending a hair below zero:
    a sign), "at least 1", "between 0.9 and 1.1"."""
    lo, hi = band

    def word(v: float) -> str:
        return "0" if v != 0 and abs(v) < 1e-9 else fmt_number(v)
    if _open(lo) and _open(hi):
        return "any value"
    if _open(lo):
        return f"below {word(hi)}" if abs(hi) < 1e-9 and hi < 0 else f"at most {word(hi)}"
    if _open(hi):
        return f"above {word(lo)}" if abs(lo) < 1e-9 and lo > 0 else f"at least {word(lo)}"
    return f"between {word(lo)} and {word(hi)}"


_JOINT = re.compile(r", coordinate (\d+) of (\d+) \(joint (\d+) ?% box\)")


def plain_quantity(text: str, case: str = "") -> str:
    """A claim's quantity in a reader's words, then the case that heads it (``case``, the
    claim's own field): ``m, component 2 of 2 (the intervals of all 2 components hold together
    at 99 %) (shown: case e, the one that heads the claim)`` for ``m, coordinate 2 of 2 (joint
    99 % box)`` headed by case ``e``."""
    text = _JOINT.sub(r", component \1 of \2 (the intervals of all \2 components hold "
                      r"together at \3 %)", text)
    return f"{text} (shown: case {case}, the one that heads the claim)".strip() if case else text


_MATH = re.compile(r"\$([^$]+)\$")


def math_html(text: str) -> str:
    """Escape ``text`` for HTML, turning ``$...$`` into MathJax inline math as Sphinx does."""
    parts, last = [], 0
    for m in _MATH.finditer(text):
        parts.append(html.escape(text[last:m.start()]))
        parts.append('<span class="math notranslate nohighlight">\\(' + html.escape(m.group(1))
                     + "\\)</span>")
        last = m.end()
    parts.append(html.escape(text[last:]))
    return "".join(parts)


def data_table(head: list[str], rows: list[list[str]], labels: list[str] | None = None, *,
               row_classes: list[str] | None = None, table_class: str = "cases cards",
               scale: str | None = None) -> str:
    """An HTML table of numbers (cells already formatted) that becomes one card per row on a
    phone, each cell after its column's label (``labels``: plain text; ``head`` by default).
    A ``scale`` (verdict rows) goes on every body row as ``data-scale``."""
    labels = labels or [re.sub(r"<[^>]+>", "", h) for h in head]
    row_classes = row_classes or [""] * len(rows)
    if len(labels) != len(head) or any(len(r) != len(head) for r in rows):
        raise ValueError(f"every row and labels must have {len(head)} cells, like head")
    if len(row_classes) != len(rows):
        raise ValueError(f"row_classes must have one entry per row ({len(rows)})")
    th = "".join(f"<th>{h}</th>" for h in head)
    attr = f" data-scale='{html.escape(scale, quote=True)}'" if scale else ""
    body = "".join((f"<tr{attr} class='{c}'>" if c else f"<tr{attr}>")
                   + "".join(f"<td data-label='{html.escape(lab, quote=True)}'>{v}</td>"
                             for lab, v in zip(labels, r)) + "</tr>"
                   for c, r in zip(row_classes, rows))
    return f"<table class='{table_class}'><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _as_dict(c: Any) -> dict[str, Any]:
    return asdict(c) if is_dataclass(c) else dict(c)


def _case_verdict(r: dict[str, Any]) -> str:
    """A case's verdict under the family-wise rule, and its own where that differs."""
    alone = (f" <span class='alone'>({BADGES[r['verdict_alone']]} by its own interval; Holm "
             "leaves it undecided)</span>" if r.get("verdict_alone") else "")
    return BADGES[r["verdict"]] + alone


def _unit(c: dict[str, Any]) -> str:
    """`` points`` after a number of a claim with a unit, "" for a pure number."""
    return f" {html.escape(c['unit'])}" if c.get("unit") else ""


def _cases_html(details: list[dict[str, Any]], unit: str = "") -> str:
    """The cases of a claim: one unit in the headers where every case has the claim's,
    else each value with its own (a claim of accuracy cases in points and G cases in ln
    ratios: issue 63, item 5)."""
    rows = [r for r in details if "verdict" in r and "interval" in r]
    if not rows:
        return ""
    units = {r.get("unit", unit.strip()) for r in rows}
    shared = units.pop() if len(units) == 1 else None
    head = f", {shared}" if shared else ""

    def own(r: dict[str, Any]) -> str:
        return "" if shared is not None or not r.get("unit") else f" {html.escape(r['unit'])}"
    return data_table(
        ["Case", "Verdict", "Exact", f"Measured [{LEVEL}]{head}", f"Band{head}"],
        [[math_html(str(r["case"])), _case_verdict(r), fmt_number(r.get("exact")),
          f"{fmt_number(r['measured'])}{own(r)} {fmt_interval(r['interval'])}",
          fmt_band(r["band"]) + own(r)]
         for r in rows],
        row_classes=[f"v-{r['verdict']}" for r in rows], table_class="cases case-verdicts cards",
        scale=BUILD)


def _details_html(c: dict[str, Any]) -> str:
    items = [("Quantity", math_html(plain_quantity(c.get("quantity", ""), c.get("case", "")))),
             ("Band (fixed before measuring)", fmt_band(c["band"]))]
    if c.get("scope"):
        items.append(("Scope", f"<em>{c['scope']}</em>: {SCOPE_TEXT[c['scope']]}"))
    if c.get("condition") and c["verdict"] != "confirmed":
        items.append((condition_label(c["verdict"]), math_html(c["condition"])))
    if c.get("note"):
        items.append(("Note", math_html(c["note"])))
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items if v)
    return (f"<details><summary>Details</summary><dl>{dl}</dl>"
            f"{_cases_html(c.get('details', []), _unit(c))}</details>")


def claims_html(claims: Iterable[Any]) -> str:
    """The verdict table of some claims (dataclasses or result dicts), as HTML."""
    head = "".join(f"<th class='c-{k}'>{h}</th>" for k, h in [
        ("verdict", "Verdict"), ("claim", "Claim"), ("paper", "Paper"), ("exact", "Exact"),
        ("measured", f"Measured [{LEVEL} CI]")])
    rows = []
    for c in map(_as_dict, claims):
        tag = " <span class='book-tag'>book</span>" if c.get("source") == "book" else ""
        if c.get("kind") == "identity":
            tag += " <span class='kind-tag' title='checks the code against the math'>identity</span>"
        unit = _unit(c)
        way = (f"<div class='size'>{html.escape(c['size'])}</div>" if c.get("size") else "")
        rows.append(
            f"<tr data-scale='{BUILD}' class='claim v-{c['verdict']}'>"
            f"<td class='c-verdict'><span class='badge {c['verdict']}'>{BADGES[c['verdict']]}</span>"
            f"{way}</td>"
            f"<td class='c-claim'><code>{html.escape(c['id'])}</code>{tag}"
            f"<div class='stmt'>{math_html(c['statement'])}</div></td>"
            f"<td class='c-paper'>{paper_words(c)} "
            f"<span class='band'>tested: {band_words(c['band'])}{unit}</span></td>"
            f"<td class='c-exact'>{fmt_number(c.get('exact'))}</td>"
            f"<td class='c-measured'>{fmt_number(c['measured'])} "
            f"<span class='iv'>{fmt_interval(c['interval'])}</span>{unit}</td></tr>"
            f"<tr data-scale='{BUILD}' class='more'><td colspan='5'>{_details_html(c)}</td></tr>")
    return (f"<table class='verdicts'><thead><tr>{head}</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


_ROW = re.compile(r"<tr(?: data-scale='[^']*')?( class='(?:claim |more|v-))")
_VERDICT_TABLE = re.compile(r"(<table class='(?:verdicts|cases case-verdicts cards)'>)")


def with_scale(page_html: str, scale: str, caption: str = "") -> str:
    """``page_html`` (outputs of :func:`claims_html` / :func:`cases_table`, of any version of
    this module) with every verdict row's ``data-scale`` set to ``scale``, and ``caption``
    (HTML) as the caption of every verdict table."""
    attr = html.escape(scale, quote=True)
    out = _ROW.sub(lambda m: f"<tr data-scale='{attr}'{m.group(1)}", page_html)
    if caption:
        out = _VERDICT_TABLE.sub(lambda m: f"{m.group(1)}<caption>{caption}</caption>", out)
    return out


def claims_table(claims) -> Any:
    """:func:`claims_html` for display in a notebook."""
    from IPython.display import HTML
    return HTML(claims_html(claims))


def cases_table(claims) -> Any:
    """The per-case verdicts of claims that must hold in every case, for display."""
    from IPython.display import HTML
    parts = [f"<p><code>{html.escape(c['id'])}</code>: {math_html(c['statement'])}</p>"
             + _cases_html(c.get("details", []), _unit(c)) for c in map(_as_dict, claims)]
    return HTML("<div class='cases-block'>" + "".join(parts) + "</div>")


def verdict_summary(claims) -> Any:
    """The "In short" list: each claim's verdict, measurement with its interval, band, exact
    value and note, readable on its own (Markdown, for ``glue:md``)."""
    from IPython.display import Markdown
    lines = []
    for c in map(_as_dict, claims):
        book = " *(the book's correction)*" if c.get("source") == "book" else ""
        exact = f"; exact {fmt_number(c['exact'])}" if c.get("exact") is not None else ""
        hold = (f" *{condition_label(c['verdict'])}:* {c['condition']}"
                if c.get("condition") and c["verdict"] != "confirmed" else "")
        note = f" {c['note']}" if c.get("note") else ""
        unit = f" {c['unit']}" if c.get("unit") else ""
        way = f"; size: {c['size']}" if c.get("size") else ""
        lines.append(
            f"- **{BADGES[c['verdict']]}**{book}: {c['statement']} Measured "
            f"{fmt_number(c['measured'])}{unit}, {LEVEL} CI {fmt_interval(c['interval'])}{unit}, "
            f"band {fmt_band(c['band'])}{unit}, paper {fmt_number(c['paper'])}{exact}{way}."
            f"{hold}{note} (`{c['id']}`)")
    return Markdown("\n".join(lines))
