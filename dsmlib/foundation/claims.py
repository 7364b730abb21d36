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
:func:`dsmlib.foundation.claim_fits.slope_claim` (a fitted log-log slope).
:mod:`dsmlib.foundation.results`
writes each notebook's claims to ``results/<profile>/<notebook>.json``.

Every claim of the paper carries a ``scope`` saying what a refutation refutes
(:data:`SCOPES`): ``assumptions`` (wrong even under the paper's own assumptions), ``setting``
(wrong for the experiment as the paper describes running it, though right under another
averaging) or ``reading`` (wrong under one reading of an ambiguous text).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterable, Sequence

from .checks import check_choice, check_real
from .stats import t_quantile

VERDICTS = ("confirmed", "refuted", "inconclusive")
SCOPES = ("assumptions", "setting", "reading")
CONFIDENCE = 0.99  # level of every interval in the ledger


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


def gain_verdict(interval: Sequence[float], delta: float) -> str:
    """Verdict of a claimed gain judged against the smallest gain worth having, ``delta > 0``,
    fixed before measuring: ``confirmed`` when the interval lies above 0 and reaches past
    ``delta`` (a gain, and one of useful size is not excluded); ``refuted`` when it lies below
    ``delta`` (no gain of useful size, whatever its sign); otherwise ``inconclusive`` (the
    interval reaches 0 and ``delta``). As a band, ``[delta, inf)``: the refutation is the
    band's, the confirmation asks less than the band's (above 0 instead of above ``delta``)."""
    lo, hi = (check_real("interval", v) for v in interval)
    delta = check_real("delta", delta)
    if lo > hi or delta <= 0:
        raise ValueError(f"interval must be ordered and delta > 0, got {interval}, {delta}")
    if hi < delta:
        return "refuted"
    return "confirmed" if lo > 0 and hi > delta else "inconclusive"


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


def quantile(dof: float = math.inf, level: float = CONFIDENCE) -> float:
    """The two-sided Student-t quantile of the ledger's :data:`CONFIDENCE` level (normal for
    infinite ``dof``). Figures use it too, so their error bars are the claims' intervals."""
    return t_quantile(level, dof if math.isfinite(dof) else 1e9)


def interval(measured: float, se: float, *, dof: float = math.inf,
             level: float = CONFIDENCE) -> list[float]:
    """``measured +- t se`` (Student-t with ``dof``, normal if infinite, at ``level``): every
    claim's interval (:func:`case`); figures use it too, so a legend shows its claim's numbers."""
    q = quantile(dof, level)
    return [measured - q * se, measured + q * se]


def joint_level(n_coordinates: int) -> float:
    """Per-coordinate level of a joint (Bonferroni) box at the ledger's :data:`CONFIDENCE`."""
    if n_coordinates < 1:
        raise ValueError(f"n_coordinates must be >= 1, got {n_coordinates}")
    return 1.0 - (1.0 - CONFIDENCE) / n_coordinates


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
    caveat: str = ""            # why the interval cannot be trusted (then: inconclusive)


@dataclass
class Claim:
    """One quantitative claim and its measured verdict. Construct with :func:`measure`,
    :func:`every_case` or :func:`dsmlib.foundation.claim_fits.slope_claim`."""

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
         exact: float | None = None, level: float = CONFIDENCE, caveat: str = "") -> Case:
    """A measurement from an estimate and its standard error.

    The interval is ``measured +- t * se`` at ``level`` (the ledger's :data:`CONFIDENCE`
    unless a joint interval needs more, see :func:`joint_level`; Student-t with ``dof``
    degrees of freedom, normal if infinite). ``band`` is the tolerance band around the
    paper's value within which the claim counts as confirmed. A non-empty ``caveat`` says why
    the interval cannot be trusted (e.g. heavy tails); the verdict is then ``inconclusive``
    by rule, whatever the interval says.
    """
    measured = check_real("measured", measured)
    se = check_real("se", se)
    if se < 0:
        raise ValueError(f"se must be >= 0, got {se}")
    check_choice("source", source, ["paper", "book"])
    iv = interval(measured, se, dof=dof, level=level)
    return Case(paper=float(paper), measured=measured, interval=iv,
                band=[None if math.isinf(b) else b for b in parse_band(band)],
                verdict="inconclusive" if caveat else verdict(iv, band),
                quantity=quantity, source=source, se=se,
                exact=None if exact is None else float(exact), caveat=caveat)


def ratio_case(estimate: float, se: float, predicted: float, *, band: Sequence[float | None],
               quantity: str = "", source: str = "paper", dof: float = math.inf,
               exact: float | None = None) -> Case:
    """``estimate / predicted`` against the paper's ratio 1 (``se`` scales the same way)."""
    predicted = check_real("predicted", predicted)
    if predicted == 0:
        raise ValueError("predicted must be non-zero for a ratio")
    return case(paper=1.0, measured=estimate / predicted, se=se / abs(predicted), band=band,
                quantity=quantity, source=source, dof=dof, exact=exact)


def joint_case(estimates: Sequence[float], ses: Sequence[float], *, paper: float,
               band: Sequence[float | None], quantity: str = "", source: str = "paper",
               dof: float = math.inf, exact: Sequence[float] | None = None,
               caveat: str = "") -> Case:
    """A vector statistic judged coordinate by coordinate, with a joint (Bonferroni) box.

    Each coordinate gets an interval at :func:`joint_level` ``(d)``, so all ``d`` intervals hold
    together at the ledger's level; every coordinate must lie in ``band`` (e.g. a mean of zero
    within a tolerance). Unlike the norm of a mean, whose estimate is biased upwards and whose
    interval ``+- t se`` can run below zero, each coordinate's mean is unbiased. The headline is
    the deciding coordinate (as in :func:`every_case`).
    """
    est, se = list(map(float, estimates)), list(map(float, ses))
    if len(est) != len(se) or not est:
        raise ValueError("estimates and ses must be non-empty and of the same length")
    if exact is not None and len(exact) != len(est):
        raise ValueError("exact must have one value per coordinate")
    level = joint_level(len(est))
    cases = [case(paper=paper, measured=m, se=s, band=band, source=source, dof=dof, level=level,
                  exact=None if exact is None else exact[j], caveat=caveat,
                  quantity=f"{quantity}, coordinate {j + 1} of {len(est)} (joint "
                           f"{CONFIDENCE:.0%} box)") for j, (m, s) in enumerate(zip(est, se))]
    overall = combine_all(c.verdict for c in cases)
    matching = [c for c in cases if c.verdict == overall]
    if overall == "refuted":
        return max(matching, key=band_gap)
    return max(matching, key=lambda c: max(abs(c.interval[0]), abs(c.interval[1])))


def from_case(id: str, statement: str, c: Case, *, note: str = "",
              details: list[dict[str, Any]] | None = None, scope: str | None = None,
              condition: str = "") -> Claim:
    """A claim whose verdict is that of one case."""
    if c.caveat and c.caveat not in note:
        note = f"{note} {c.caveat}".strip()
    return Claim(id=id, statement=statement, paper=c.paper, measured=c.measured,
                 interval=list(c.interval), band=list(c.band), verdict=c.verdict,
                 quantity=c.quantity, source=c.source, se=c.se, note=note,
                 details=list(details or []), exact=c.exact,
                 scope=None if scope is None else check_choice("scope", scope, SCOPES),
                 condition=condition)


def measure(id: str, statement: str, *, paper: float, measured: float, se: float,
            band: Sequence[float | None], quantity: str = "", source: str = "paper",
            note: str = "", dof: float = math.inf, details: list[dict[str, Any]] | None = None,
            exact: float | None = None, scope: str | None = None,
            condition: str = "", caveat: str = "") -> Claim:
    """Build a claim from an estimate and its standard error (see :func:`case`)."""
    c = case(paper=paper, measured=measured, se=se, band=band, quantity=quantity,
             source=source, dof=dof, exact=exact, caveat=caveat)
    return from_case(id, statement, c, note=note, details=details, scope=scope,
                     condition=condition)


def band_gap(c: Case | Claim) -> float:
    """How far the interval lies outside the band (negative when they overlap)."""
    lo, hi = parse_band(c.band)
    return max(lo - c.interval[1], c.interval[0] - hi)


def verdict_margin(c: Case | Claim) -> float:
    """How far the interval must move (in the quantity's units) to change the verdict: to the
    nearer band edge (confirmed), to the band (refuted), the smaller of overlap and overhang
    (inconclusive); 0 with a caveat, which pins a case to inconclusive."""
    if getattr(c, "caveat", ""):
        return 0.0
    lo, hi = parse_band(c.band)
    ilo, ihi = c.interval
    if c.verdict == "confirmed":
        return min(ilo - lo, hi - ihi)
    gap = band_gap(c)
    if c.verdict == "refuted":
        return gap
    return min(-gap, max(lo - ilo, ihi - hi))


def deciding_case(cases: dict[str, Case | Claim]) -> tuple[str, Case | Claim]:
    """``(key, case)`` deciding an every-case verdict: the refuted case furthest from its band,
    else the case nearest to changing the verdict (:func:`verdict_margin`; first on a tie)."""
    overall = combine_all(c.verdict for c in cases.values())
    matching = [(k, c) for k, c in cases.items() if c.verdict == overall]
    if overall == "refuted":
        return max(matching, key=lambda kc: band_gap(kc[1]))
    return min(matching, key=lambda kc: verdict_margin(kc[1]))


def every_case(id: str, statement: str, cases: dict[str, Case | Claim], *, note: str = "",
               scope: str | None = None, condition: str = "") -> Claim:
    """A claim that must hold in every case (e.g. every panel of a figure).

    The verdict is :func:`combine_all` of the cases'. The headline numbers are those of the
    deciding case (:func:`deciding_case`): the refuted case whose interval lies furthest from
    its band, else the case nearest to changing the verdict. Every case is kept in ``details``.
    """
    if not cases:
        raise ValueError("cases must not be empty")
    overall = combine_all(c.verdict for c in cases.values())
    key, head = deciding_case(cases)
    details = []
    for k, c in cases.items():
        row = {"case": k, "paper": c.paper, "measured": c.measured, "interval": c.interval,
               "band": c.band, "verdict": c.verdict}
        if c.exact is not None:
            row["exact"] = c.exact
        if getattr(c, "caveat", ""):
            row["caveat"] = c.caveat
        details.append(row)
    caveats = sorted({f"({k}) {c.caveat}" for k, c in cases.items() if getattr(c, "caveat", "")})
    if caveats:
        note = (note + " Untrustworthy intervals: " + "; ".join(caveats)).strip()
    head = Case(**{**{f.name: getattr(head, f.name, f.default) for f in fields(Case)},
                   "verdict": overall,
                   "quantity": f"{head.quantity} (deciding case: {key})".strip()})
    return from_case(id, statement, head, note=note, details=details, scope=scope,
                     condition=condition)


def exact_verdict(c: Claim | Case) -> str | None:
    """The verdict the exact theory gives: each case's ``exact`` judged against its band
    (every case must hold for a multi-case claim); None where no exact value is known."""
    rows = [d for d in getattr(c, "details", []) if "band" in d and "verdict" in d]
    if rows:
        if any(d.get("exact") is None for d in rows):
            return None
        return combine_all(verdict([d["exact"], d["exact"]], d["band"]) for d in rows)
    if c.exact is None:
        return None
    return verdict([c.exact, c.exact], c.band)
