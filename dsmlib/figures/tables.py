"""Claims as tables and summaries in a chapter (figures layer)."""
from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any

from ..foundation.claims import BADGES, fmt_number

__all__ = ["claims_table", "cases_table", "verdict_summary"]


def claims_table(claims) -> Any:
    """An HTML table of claims (dataclasses or dicts) for display in a notebook."""
    from IPython.display import HTML

    rows = []
    for c in claims:
        c = asdict(c) if is_dataclass(c) else c
        rows.append(
            "<tr>" + "".join(f"<td>{x}</td>" for x in [
                f"<code>{c['id']}</code>" + (" <em>(book)</em>" if c.get("source") == "book" else ""),
                c["statement"], c.get("quantity", ""), fmt_number(c["paper"]), fmt_number(c["measured"]),
                f"[{fmt_number(c['interval'][0])}, {fmt_number(c['interval'][1])}]",
                f"[{fmt_number(c['band'][0], '−∞')}, {fmt_number(c['band'][1], '∞')}]",
                BADGES[c["verdict"]]]) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ["Claim", "Statement", "Quantity", "Paper",
                                             "Measured", "99% interval", "Band", "Verdict"])
    return HTML(f"<table class='claims-table'><thead><tr>{head}</tr></thead><tbody>"
                + "".join(rows) + "</tbody></table>")


def cases_table(claims) -> Any:
    """An HTML table of the per-case details of claims that must hold in every case."""
    from IPython.display import HTML

    rows = []
    for c in claims:
        for d in c.details:
            rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in [
                f"<code>{c.id}</code>", d["case"], fmt_number(d["paper"]), fmt_number(d["measured"]),
                f"[{fmt_number(d['interval'][0])}, {fmt_number(d['interval'][1])}]",
                f"[{fmt_number(d['band'][0], '−∞')}, {fmt_number(d['band'][1], '∞')}]",
                BADGES[d["verdict"]]]) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ["Claim", "Case", "Paper", "Measured",
                                             "99% interval", "Band", "Verdict"])
    return HTML(f"<table class='claims-table'><thead><tr>{head}</tr></thead><tbody>"
                + "".join(rows) + "</tbody></table>")


def verdict_summary(claims: Sequence[Claim]) -> Any:
    """A Markdown bullet list of claims and their measured verdicts (for ``glue:md``)."""
    from IPython.display import Markdown
    lines = []
    for c in claims:
        book = c.source == "book"
        tag = " *(book's correction)*" if book else ""
        lines.append(f"- **{c.verdict}**{tag}: {c.statement} (measured {fmt_number(c.measured)}, "
                     f"{'predicted' if book else 'paper'} {fmt_number(c.paper)}; `{c.id}`)")
    return Markdown("\n".join(lines))
