"""The claims ledger page and the introduction's summary (book layer), generated at build time
from ``results/<profile>/*.json``."""
from __future__ import annotations

from typing import Any, Sequence

from ..foundation.claims import BADGES, CONFIDENCE, VERDICTS, fmt_number

__all__ = ["ledger_markdown", "summary_markdown"]


def ledger_markdown(docs: Sequence[dict[str, Any]], *, chapter_paths: dict[str, str],
                    profile: str) -> str:
    """The claims-ledger page: one table with every claim of every chapter."""
    lines = [
        "# Claims ledger",
        "",
        f"Every quantitative claim checked in this book, as measured under the `{profile}` "
        f"profile. Intervals are {int(CONFIDENCE * 100)} % confidence intervals; the band is the "
        "tolerance around the paper's value, fixed before measuring. A claim is *confirmed* "
        "when its whole interval lies inside the band, *refuted* when they do not overlap, and "
        "*inconclusive* otherwise. Claims marked *book* are corrections derived in this book.",
        "",
        "| Chapter | Claim | Statement | Quantity | Paper | Measured | Interval | Band | Verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for doc in docs:
        nb = doc["notebook"]
        link = f"{{doc}}`{nb} <{chapter_paths[nb]}>`" if nb in chapter_paths else nb
        for c in doc["claims"]:
            src = " *(book)*" if c.get("source") == "book" else ""
            row = [link, f"`{c['id']}`{src}", c["statement"].replace("|", "\\|"),
                   c.get("quantity", "").replace("|", "\\|"), fmt_number(c["paper"]),
                   fmt_number(c["measured"]),
                   f"[{fmt_number(c['interval'][0])}, {fmt_number(c['interval'][1])}]",
                   f"[{fmt_number(c['band'][0], '−∞')}, {fmt_number(c['band'][1], '∞')}]", BADGES[c["verdict"]]]
            lines.append("| " + " | ".join(row) + " |")
    if not docs:
        lines.append("| — | — | no results found: run `make book` | | | | | | |")
    lines.append("")
    return "\n".join(lines)


def summary_markdown(docs: Sequence[dict[str, Any]], *, profile: str) -> str:
    """A short count of verdicts, for the introduction."""
    counts = {v: 0 for v in VERDICTS}
    paper_counts = {v: 0 for v in VERDICTS}
    for doc in docs:
        for c in doc["claims"]:
            counts[c["verdict"]] += 1
            if c.get("source", "paper") == "paper":
                paper_counts[c["verdict"]] += 1
    total = sum(counts.values())
    return (f"Under the `{profile}` profile the book checks **{total} claims**: "
            f"{counts['confirmed']} confirmed, {counts['refuted']} refuted and "
            f"{counts['inconclusive']} inconclusive. Of the paper's own claims, "
            f"{paper_counts['confirmed']} are confirmed, {paper_counts['refuted']} refuted and "
            f"{paper_counts['inconclusive']} inconclusive; the rest are corrections derived "
            "here. See the {doc}`claims ledger <ledger>` for every number.\n")
