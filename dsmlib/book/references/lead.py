"""A chapter page's first screen across scales (book layer): every claim's verdict at every
scale the page shows, the paper's own data first, and the strongest evidence for each, so that
the page's opening speaks for every execution on it (issue 63, item 1).

A chapter opts in through its results' ``extra``: ``short`` (a few words per claim id) and
``settings`` (per setting, its ``dataset`` and ``depth``, which name the scale). A claim's
*strongest evidence* is the decided verdict with the smallest p-value among the fresh scales,
starred; where fresh scales decide it both ways, the first screen says they disagree.
"""
from __future__ import annotations

import html
import math
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


def strongest(cid: str, scales: Sequence[Scale]) -> tuple[Scale | None, bool]:
    """The strongest evidence for claim ``cid`` across the fresh ``scales``: ``(scale,
    disagree)``, the scale whose decided verdict has the smallest p-value (``None`` when no
    fresh scale decides it), and whether fresh scales decide it both ways."""
    decided = [(sc, c) for sc in scales if sc.fresh for c in [sc.claim(cid)]
               if c is not None and c["verdict"] != "inconclusive"]
    if not decided:
        return None, False
    sc, _ = min(decided, key=lambda sc_c: 1.0 if sc_c[1].get("p_value") is None
                else sc_c[1]["p_value"])
    return sc, len({c["verdict"] for _, c in decided}) > 1


def _num(x: float | None) -> str:
    """Three significant digits (the sections further down give four)."""
    if x is None or not math.isfinite(x):
        return fmt_number(x)
    return f"{x:.3g}".replace("-", "−")


def _cell(c: dict[str, Any] | None, best: bool) -> str:
    """One claim at one scale: its badge (★ where it is the strongest evidence), value,
    interval, and a directional claim's size against δ."""
    if c is None:
        return "<span class='absent'>not measured</span>"
    star = "<span class='strongest' title='the strongest evidence'>★</span> " if best else ""
    size = f"<br><span class='size'>{html.escape(c['size'].split(' (')[0])}</span>" \
        if c.get("size") else ""
    return (f"{star}<span class='badge {c['verdict']}'>{BADGES[c['verdict']]}</span> "
            f"{_num(c['measured'])}<br><span class='iv'>"
            f"[{_num(c['interval'][0])}, {_num(c['interval'][1])}]</span>"
            f"{size}")


def _claim_cell(cid: str, words: str, unit: str, disagree: bool) -> str:
    unit = f" <span class='unit'>({html.escape(unit)})</span>" if unit else ""
    split = "<br><span class='disagree'>the scales disagree</span>" if disagree else ""
    return f"{html.escape(words)}{unit}<br><code>{html.escape(cid)}</code>{split}"


def first_screen_html(scales: Sequence[Scale]) -> str:
    """The first screen's table (HTML): one row per claim (every scale's claims), in the
    first scale's words (``extra["short"]``) with its unit, its verdict, value and interval at
    each scale (the paper's data first), the strongest evidence starred (:func:`strongest`);
    "" with fewer than two scales or a chapter that names no claim in short words."""
    if len(scales) < 2 or not scales[0].extra.get("short"):
        return ""
    order = ordered_scales(scales)
    short = scales[0].extra.get("short") or {}
    ids = list(dict.fromkeys(c["id"] for sc in [scales[0], *order]    # every scale's claims
                             for c in sc.doc.get("claims", [])))
    head = ["Claim"] + [html.escape(scale_words(sc)) for sc in order]   # its label says stale
    rows = []
    for cid in ids:
        best, disagree = strongest(cid, order)
        unit = next((c.get("unit") for sc in order for c in [sc.claim(cid)]
                     if c and c.get("unit")), "")
        rows.append([_claim_cell(cid, short.get(cid, cid), unit, disagree)]
                    + [_cell(sc.claim(cid), sc is best) for sc in order])
    return data_table(head, rows, table_class="cases first-screen cards")
