"""Claims with measured verdicts (foundation).

A claim compares what the paper says (a number, or a formula evaluated) with a measurement and
its confidence interval. The verdict follows an equivalence test against a tolerance band that
is stated *before* looking at the measurement:

- ``confirmed``: the whole confidence interval lies inside the band;
- ``refuted``: the interval and the band do not overlap;
- ``inconclusive``: they overlap only partly (the measurement cannot decide).

Verdicts are always computed by :func:`verdict`; nothing writes one by hand. A :class:`Case` is
one such measurement; a :class:`Claim` is a case with an id and a statement, or the combination
of several cases that must all hold (:func:`every_case`). Builders for the recurring forms:
:func:`case` (estimate and standard error), :func:`ratio_case` (measured over predicted) and
:func:`slope_claim` (a fitted log-log slope). Each notebook writes its claims to
``results/<profile>/<notebook>.json``.

Every claim of the paper carries a ``scope`` saying what a refutation refutes
(:data:`SCOPES`): ``assumptions`` (wrong even under the paper's own assumptions), ``setting``
(wrong for the experiment as the paper describes running it, though right under another
averaging) or ``reading`` (wrong under one reading of an ambiguous text).
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Sequence

from .checks import check_choice, check_real
from .stats import log_log_slope, t_quantile

VERDICTS = ("confirmed", "refuted", "inconclusive")
SCOPES = ("assumptions", "setting", "reading")
CONFIDENCE = 0.99  # level of every interval in the ledger
BADGES = {"confirmed": "✔ confirmed", "refuted": "✘ refuted", "inconclusive": "? inconclusive"}


def parse_band(band: Sequence[float | None]) -> tuple[float, float]:
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
    blo, bhi = parse_band(band)
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


def quantile(dof: float = math.inf) -> float:
    """The two-sided Student-t quantile of the ledger's :data:`CONFIDENCE` level (normal for
    infinite ``dof``). Figures use it too, so their error bars are the claims' intervals."""
    return t_quantile(CONFIDENCE, dof if math.isfinite(dof) else 1e9)


@dataclass
class Case:
    """One measurement judged against a band. Construct with :func:`case`."""

    paper: float
    measured: float
    interval: list[float]
    band: list[float | None]   # None marks an open end
    verdict: str
    quantity: str = ""
    source: str = "paper"      # "paper": the paper's claim; "book": a correction derived here
    se: float | None = None
    exact: float | None = None  # the exact theory's value of the same statistic, where known


@dataclass
class Claim:
    """One quantitative claim and its measured verdict. Construct with :func:`measure`,
    :func:`every_case` or :func:`slope_claim`."""

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
    exact: float | None = None     # exact theory, computed with the measurement's statistic
    scope: str | None = None       # for the paper's claims: one of SCOPES
    condition: str = ""            # for refutations: what would make the statement hold


def case(*, paper: float, measured: float, se: float, band: Sequence[float | None],
         quantity: str = "", source: str = "paper", dof: float = math.inf,
         exact: float | None = None) -> Case:
    """A measurement from an estimate and its standard error.

    The interval is ``measured +- t * se`` at the ledger's :data:`CONFIDENCE` level (Student-t
    with ``dof`` degrees of freedom, normal if infinite). ``band`` is the tolerance band around
    the paper's value within which the claim counts as confirmed.
    """
    measured = check_real("measured", measured)
    se = check_real("se", se)
    if se < 0:
        raise ValueError(f"se must be >= 0, got {se}")
    check_choice("source", source, ["paper", "book"])
    q = quantile(dof)
    interval = [measured - q * se, measured + q * se]
    return Case(paper=float(paper), measured=measured, interval=interval,
                band=[None if math.isinf(b) else b for b in parse_band(band)],
                verdict=verdict(interval, band), quantity=quantity, source=source, se=se,
                exact=None if exact is None else float(exact))


def ratio_case(estimate: float, se: float, predicted: float, *, band: Sequence[float | None],
               quantity: str = "", source: str = "paper", dof: float = math.inf,
               exact: float | None = None) -> Case:
    """``estimate / predicted`` against the paper's ratio 1 (``se`` scales the same way)."""
    predicted = check_real("predicted", predicted)
    if predicted == 0:
        raise ValueError("predicted must be non-zero for a ratio")
    return case(paper=1.0, measured=estimate / predicted, se=se / abs(predicted), band=band,
                quantity=quantity, source=source, dof=dof, exact=exact)


def _check_scope(scope: str | None, source: str) -> str | None:
    if scope is not None:
        check_choice("scope", scope, SCOPES)
    return scope


def from_case(id: str, statement: str, c: Case, *, note: str = "",
              details: list[dict[str, Any]] | None = None, scope: str | None = None,
              condition: str = "") -> Claim:
    """A claim whose verdict is that of one case."""
    return Claim(id=id, statement=statement, paper=c.paper, measured=c.measured,
                 interval=list(c.interval), band=list(c.band), verdict=c.verdict,
                 quantity=c.quantity, source=c.source, se=c.se, note=note,
                 details=list(details or []), exact=c.exact,
                 scope=_check_scope(scope, c.source), condition=condition)


def measure(id: str, statement: str, *, paper: float, measured: float, se: float,
            band: Sequence[float | None], quantity: str = "", source: str = "paper",
            note: str = "", dof: float = math.inf, details: list[dict[str, Any]] | None = None,
            exact: float | None = None, scope: str | None = None,
            condition: str = "") -> Claim:
    """Build a claim from an estimate and its standard error (see :func:`case`)."""
    c = case(paper=paper, measured=measured, se=se, band=band, quantity=quantity,
             source=source, dof=dof, exact=exact)
    return from_case(id, statement, c, note=note, details=details, scope=scope,
                     condition=condition)


def band_gap(c: Case | Claim) -> float:
    """How far the interval lies outside the band (negative when they overlap)."""
    lo, hi = parse_band(c.band)
    return max(lo - c.interval[1], c.interval[0] - hi)


def every_case(id: str, statement: str, cases: dict[str, Case | Claim], *, note: str = "",
               scope: str | None = None, condition: str = "") -> Claim:
    """A claim that must hold in every case (e.g. every panel of a figure).

    The verdict is :func:`combine_all` of the cases'. The headline numbers are those of the
    deciding case: the refuted case whose interval lies furthest from its band, else the first
    inconclusive case, else the first case. Every case is kept in ``details``.
    """
    if not cases:
        raise ValueError("cases must not be empty")
    overall = combine_all(c.verdict for c in cases.values())
    matching = [(k, c) for k, c in cases.items() if c.verdict == overall]
    key, head = (max(matching, key=lambda kc: band_gap(kc[1])) if overall == "refuted"
                 else matching[0])
    details = []
    for k, c in cases.items():
        row = {"case": k, "paper": c.paper, "measured": c.measured, "interval": c.interval,
               "band": c.band, "verdict": c.verdict}
        if c.exact is not None:
            row["exact"] = c.exact
        details.append(row)
    head = Case(**{**{f.name: getattr(head, f.name) for f in fields(Case)}, "verdict": overall,
                   "quantity": f"{head.quantity} (deciding case: {key})".strip()})
    return from_case(id, statement, head, note=note, details=details, scope=scope,
                     condition=condition)


def slope_claim(id: str, statement: str, x: Sequence[float], y: Sequence[float],
                y_se: Sequence[float], *, paper: float, band: Sequence[float | None],
                quantity: str = "", source: str = "paper", note: str = "",
                details: list[dict[str, Any]] | None = None, exact: float | None = None,
                scope: str | None = None, condition: str = "") -> Claim:
    """A claim about the slope of ``log y`` on ``log x`` (precision-weighted fit)."""
    import numpy as np
    slope, se = log_log_slope(np.asarray(x, float), np.asarray(y, float), np.asarray(y_se, float))
    return measure(id, statement, paper=paper, measured=slope, se=se, band=band,
                   quantity=quantity, source=source, note=note, details=details, exact=exact,
                   scope=scope, condition=condition)


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


def fmt_number(x: float | None, open_end: str = "—") -> str:
    """Four significant digits; ``open_end`` for a missing value, ∞ for infinities."""
    if x is None:
        return open_end
    if not math.isfinite(x):
        return "∞" if x > 0 else ("−∞" if x < 0 else "NaN")
    return f"{x:.4g}"
