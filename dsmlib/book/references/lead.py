"""A chapter page's first screen across scales (book layer): every claim's verdict at every
scale the page shows, the paper's own data first, and the strongest evidence for each, so that
the page's opening speaks for every execution on it (issue 63, item 1).

A chapter opts in through its results' ``extra``: ``short`` (a few words per claim id) and
``settings`` (per setting, its ``dataset`` and ``depth``, which name the scale). A claim's
*strongest evidence* is the decided verdict with the smallest p-value among the fresh scales;
where fresh scales decide it both ways, the first screen says they disagree.
"""
from __future__ import annotations

import html
from typing import Any, Sequence

from ...figures.tables import BADGES, data_table, fmt_number
from .contrast import Scale

__all__ = ["DATA_WORDS", "scale_words", "ordered_scales", "strongest", "first_screen_html"]

#: How the first screen names a data set.
DATA_WORDS = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "svhn": "SVHN",
              "digits": "digits"}


def _settings(sc: Scale) -> list[dict[str, Any]]:
    return list((sc.extra.get("settings") or {}).values())


def scale_words(sc: Scale) -> str:
    """A scale in words: its data and network, then the execution, e.g. ``CIFAR-10,
    ResNet-8 (cpu-cifar10 reference)``."""
    sets = _settings(sc)
    data = ", ".join(dict.fromkeys(DATA_WORDS.get(s.get("dataset"), str(s.get("dataset")))
                                   for s in sets)) or "?"
    depth = sorted({s.get("depth") for s in sets if s.get("depth")})
    net = f", ResNet-{'/'.join(map(str, depth))}" if depth else ""
    return f"{data}{net} ({sc.label})"


def ordered_scales(scales: Sequence[Scale]) -> list[Scale]:
    """The paper's data first (a scale whose settings are all on a data set other than
    digits), then the others, each group in the order given (this build before the
    references)."""
    paper = [sc for sc in scales if _settings(sc) and all(s.get("dataset") != "digits"
                                                          for s in _settings(sc))]
    return paper + [sc for sc in scales if sc not in paper]


def strongest(cid: str, scales: Sequence[Scale]) -> str:
    """The strongest evidence for claim ``cid`` across the fresh ``scales`` (HTML): the
    decided verdict with the smallest p-value, or that the scales disagree, or that none
    decides it."""
    decided = [(sc, c) for sc in scales if sc.fresh for c in [sc.claim(cid)]
               if c is not None and c["verdict"] != "inconclusive"]
    if not decided:
        return "no scale decides it yet"
    ways = {c["verdict"] for _, c in decided}
    if len(ways) > 1:
        return ("the scales disagree: " + "; ".join(
            f"{BADGES[c['verdict']]} at {html.escape(scale_words(sc))}" for sc, c in decided))
    sc, c = min(decided, key=lambda sc_c: 1.0 if sc_c[1].get("p_value") is None
                else sc_c[1]["p_value"])
    return f"{BADGES[c['verdict']]} at {html.escape(scale_words(sc))}"


def _cell(c: dict[str, Any] | None) -> str:
    if c is None:
        return "<span class='absent'>not measured</span>"
    unit = f" {html.escape(c['unit'])}" if c.get("unit") else ""
    size = f"<br><span class='size'>{html.escape(c['size'].split(' (')[0])}</span>" \
        if c.get("size") else ""
    return (f"<span class='badge {c['verdict']}'>{BADGES[c['verdict']]}</span> "
            f"{fmt_number(c['measured'])} <span class='iv'>[{fmt_number(c['interval'][0])}, "
            f"{fmt_number(c['interval'][1])}]</span>{unit}{size}")


def first_screen_html(scales: Sequence[Scale]) -> str:
    """The first screen's table (HTML): one row per claim of the first scale, in its words
    (``extra["short"]``), its verdict and value at each scale (the paper's data first), and
    the strongest evidence; "" with fewer than two scales or a chapter that names no claim in
    short words."""
    if len(scales) < 2 or not scales[0].extra.get("short"):
        return ""
    order = ordered_scales(scales)
    short = scales[0].extra.get("short") or {}
    ids = list(dict.fromkeys(c["id"] for sc in [scales[0], *order]    # every scale's claims
                             for c in sc.doc.get("claims", [])))
    head = ["Claim"] + [html.escape(scale_words(sc)) + ("" if sc.fresh else " (stale)")
                        for sc in order] + ["Strongest evidence"]
    rows = [[f"{html.escape(short.get(cid, cid))}<br><code>{html.escape(cid)}</code>"]
            + [_cell(sc.claim(cid)) for sc in order] + [strongest(cid, order)] for cid in ids]
    return data_table(head, rows, table_class="cases first-screen cards")
