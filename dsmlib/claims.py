"""Claims with measured verdicts, and the book's claims ledger.

A claim compares what the paper says (a number, or a formula evaluated) with a measurement and
its confidence interval. The verdict follows an equivalence test against a tolerance band that
is stated *before* looking at the measurement:

- ``confirmed``: the whole confidence interval lies inside the band;
- ``refuted``: the interval and the band do not overlap;
- ``inconclusive``: they overlap only partly (the measurement cannot decide).

Verdicts are always computed by :func:`verdict`; nothing writes one by hand.
Each notebook writes its claims to ``results/<profile>/<notebook>.json``.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from ._checks import check_real
from .stats import t_quantile

VERDICTS = ("confirmed", "refuted", "inconclusive")
CONFIDENCE = 0.99  # level of every interval in the ledger


def _band(band: Sequence[float | None]) -> tuple[float, float]:
    """A band with ``None`` (or an infinity) for an open end, e.g. ``(None, 0.1)`` = "at most 0.1"."""
    if len(band) != 2:
        raise ValueError(f"band must be a pair (lo, hi), got {band!r}")
    lo = -math.inf if band[0] is None else float(band[0])
    hi = math.inf if band[1] is None else float(band[1])
    if math.isnan(lo) or math.isnan(hi):
        raise ValueError(f"band must not contain NaN, got {band!r}")
    return lo, hi


def verdict(interval: Sequence[float], band: Sequence[float | None]) -> str:
    """Equivalence-test verdict of a confidence ``interval`` against a tolerance ``band``."""
    lo, hi = (check_real("interval", v) for v in interval)
    blo, bhi = _band(band)
    if lo > hi or blo > bhi:
        raise ValueError(f"interval and band must be ordered (lo <= hi), got {interval}, {band}")
    if blo <= lo and hi <= bhi:
        return "confirmed"
    if hi < blo or lo > bhi:
        return "refuted"
    return "inconclusive"


def combine_all(verdicts: Iterable[str]) -> str:
    """Verdict of a claim that must hold in *every* case: refuted if any case is refuted,
    confirmed if all are confirmed, otherwise inconclusive."""
    vs = list(verdicts)
    for v in vs:
        if v not in VERDICTS:
            raise ValueError(f"verdicts must be among {VERDICTS}, got {v!r}")
    if not vs:
        raise ValueError("verdicts must not be empty")
    if "refuted" in vs:
        return "refuted"
    return "confirmed" if all(v == "confirmed" for v in vs) else "inconclusive"


@dataclass
class Claim:
    """One quantitative claim and its measured verdict. Construct with :func:`measure`."""

    id: str
    statement: str
    paper: float
    measured: float
    interval: list[float]
    band: list[float | None]   # None marks an open end
    verdict: str
    quantity: str = ""
    source: str = "paper"          # "paper": the paper's claim; "book": a correction derived here
    se: float | None = None
    note: str = ""
    details: list[dict[str, Any]] = field(default_factory=list)


def measure(id: str, statement: str, *, paper: float, measured: float, se: float,
            band: Sequence[float], quantity: str = "", source: str = "paper", note: str = "",
            dof: float = math.inf, details: list[dict[str, Any]] | None = None) -> Claim:
    """Build a claim from an estimate and its standard error.

    The interval is ``measured +- t * se`` at the ledger's :data:`CONFIDENCE` level (Student-t
    with ``dof`` degrees of freedom, normal if infinite). ``band`` is the tolerance band around
    the paper's value within which the claim counts as confirmed.
    """
    measured = check_real("measured", measured)
    se = check_real("se", se)
    if se < 0:
        raise ValueError(f"se must be >= 0, got {se}")
    q = t_quantile(CONFIDENCE, dof) if math.isfinite(dof) else t_quantile(CONFIDENCE, 1e9)
    interval = [measured - q * se, measured + q * se]
    return Claim(id=id, statement=statement, paper=float(paper), measured=measured,
                 interval=interval,
                 band=[None if math.isinf(b) else b for b in _band(band)],
                 verdict=verdict(interval, band), quantity=quantity, source=source, se=se,
                 note=note, details=list(details or []))


def every_case(id: str, statement: str, cases: dict[str, Claim], *, note: str = "") -> Claim:
    """A claim that must hold in every case (e.g. every panel of a figure).

    The verdict is :func:`combine_all` of the cases'. The headline numbers are those of the
    deciding case: the refuted case whose interval lies furthest from its band, else the first
    inconclusive case, else the first case. Every case is kept in ``details``.
    """
    if not cases:
        raise ValueError("cases must not be empty")
    overall = combine_all(c.verdict for c in cases.values())

    def gap(c: Claim) -> float:
        lo, hi = _band(c.band)
        return max(lo - c.interval[1], c.interval[0] - hi)

    matching = [(k, c) for k, c in cases.items() if c.verdict == overall]
    key, head = max(matching, key=lambda kc: gap(kc[1])) if overall == "refuted" else matching[0]
    details = [{"case": k, "paper": c.paper, "measured": c.measured, "interval": c.interval,
                "band": c.band, "verdict": c.verdict} for k, c in cases.items()]
    return Claim(id=id, statement=statement, paper=head.paper, measured=head.measured,
                 interval=head.interval, band=head.band, verdict=overall,
                 quantity=f"{head.quantity} (deciding case: {key})".strip(), source=head.source,
                 se=head.se, note=note, details=details)


def verdict_summary(claims: Sequence[Claim]) -> Any:
    """A Markdown bullet list of claims and their measured verdicts (for ``glue:md``)."""
    from IPython.display import Markdown
    lines = []
    for c in claims:
        book = c.source == "book"
        tag = " *(book's correction)*" if book else ""
        lines.append(f"- **{c.verdict}**{tag}: {c.statement} (measured {_fmt(c.measured)}, "
                     f"{'predicted' if book else 'paper'} {_fmt(c.paper)}; `{c.id}`)")
    return Markdown("\n".join(lines))


def write_results(claims: Sequence[Claim], *, notebook: str, profile: str,
                  results_dir: str | Path = "results", extra: dict[str, Any] | None = None) -> Path:
    """Write ``results/<profile>/<notebook>.json`` as ``{"notebook", "profile", "claims"}``."""
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"claim ids must be unique within a notebook, got {ids}")
    path = Path(results_dir) / profile / f"{notebook}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"notebook": notebook, "profile": profile, "claims": [asdict(c) for c in claims]}
    if extra:
        doc["extra"] = extra
    path.write_text(json.dumps(doc, indent=2, default=_jsonable))
    return path


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def load_results(results_dir: str | Path, profile: str) -> list[dict[str, Any]]:
    """All notebooks' result documents for a profile, sorted by notebook name."""
    root = Path(results_dir) / profile
    docs = []
    for p in sorted(root.glob("*.json")):
        doc = json.loads(p.read_text())
        for key in ("notebook", "profile", "claims"):
            if key not in doc:
                raise ValueError(f"{p} is not a results file: missing {key!r}")
        for c in doc["claims"]:
            if c.get("verdict") not in VERDICTS:
                raise ValueError(f"{p}: claim {c.get('id')!r} has verdict {c.get('verdict')!r}")
        docs.append(doc)
    return docs


def _fmt(x: float | None, open_end: str = "—") -> str:
    if x is None:
        return open_end
    if not math.isfinite(x):
        return "∞" if x > 0 else ("−∞" if x < 0 else "NaN")
    return f"{x:.4g}"


_BADGE = {"confirmed": "✔ confirmed", "refuted": "✘ refuted", "inconclusive": "? inconclusive"}


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
                   c.get("quantity", "").replace("|", "\\|"), _fmt(c["paper"]),
                   _fmt(c["measured"]),
                   f"[{_fmt(c['interval'][0])}, {_fmt(c['interval'][1])}]",
                   f"[{_fmt(c['band'][0], '−∞')}, {_fmt(c['band'][1], '∞')}]", _BADGE[c["verdict"]]]
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
