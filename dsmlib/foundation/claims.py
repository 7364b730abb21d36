"""Claims with measured verdicts (foundation).

A claim compares what the paper says (a number, or a formula evaluated) with a measurement and
its confidence interval. The verdict follows an equivalence test against a tolerance band that
is stated *before* looking at the measurement:

- ``confirmed``: the whole confidence interval lies inside the band;
- ``refuted``: the interval and the band do not overlap;
- ``inconclusive``: they overlap only partly (the measurement cannot decide).

Verdicts are always computed by :func:`verdict`; nothing writes one by hand. A :class:`Case` is
one such measurement; a :class:`Claim` is a case with an id and a statement, or the combination
of several cases that must all hold (:func:`every_case`), decided by one family-wise rule
(:mod:`dsmlib.foundation.decision`: each case's p-value and Holm's procedure).

**Kinds.** Every claim has a ``kind`` (:data:`KINDS`): ``identity`` when the statement holds
exactly by algebra from the definitions, for any data and setting, so that its measurement can
only disagree with the exact value through a bug or too few draws (it checks the code against
the math); ``empirical`` when its truth depends on the dynamics, the model or the data (a limit,
a rate, a bound, an approximation whose accuracy depends on the setting, a run's behaviour).
The default is ``empirical``; identities say so.

Builders for the recurring forms: :func:`case` (estimate and standard error), :func:`ratio_case`
(measured over predicted), :func:`interval_case` (an exact interval) and
:func:`slope_claim` (a fitted log-log slope, with its lack of fit checked: a law that the
lack-of-fit test rejects decides nothing, and its interval is never widened).
:func:`dsmlib.foundation.handoff.write_results` writes each notebook's claims to
``results/<profile>/<notebook>.json``.

Every claim of the paper carries a ``scope`` saying what a refutation refutes
(:data:`SCOPES`): ``assumptions`` (wrong even under the paper's own assumptions), ``setting``
(wrong for the experiment as the paper describes running it, though right under another
averaging) or ``reading`` (wrong under one reading of an ambiguous text).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Sequence

from .checks import check_choice, check_real
from .decision import (CONFIDENCE, FAMILY_RULE, P_FLOOR, VERDICTS, bonferroni_verdicts,  # noqa: F401
                       combine_all, decision_p, family_p, holm_adjusted,
                       holm_verdicts, interval, interval_p, joint_level, p_towards, parse_band,
                       quantile, verdict)
from .stats import LACK_OF_FIT_ALPHA, LogLogFit, loglog_fit

SCOPES = ("assumptions", "setting", "reading")
KINDS = ("identity", "empirical")


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
    p_value: float | None = None  # the smallest alpha whose 1 - alpha interval decides (see towards)
    towards: str | None = None    # the verdict a small enough alpha reaches; None: none can
    bounds: list[float] | None = None  # the quantity's possible range, where the interval is cut to it
    unit: str = ""              # the unit of measured, interval and band ("" : none, a pure number)


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
    kind: str = "empirical"        # one of KINDS: "identity" or "empirical"
    p_value: float | None = None   # the smallest alpha at which the claim's verdict is reached
    bounds: list[float] | None = None  # the quantity's possible range (see :func:`case`)
    unit: str = ""                 # the unit of measured, interval and band ("": a pure number)
    size: str = ""                 # a directional verdict's size against the smallest gain worth having
    case: str = ""                 # the case that heads it (:func:`deciding_case`), by its key in
    #                                ``details``; "" for a claim of one case


def case(*, paper: float, measured: float, se: float, band: Sequence[float | None],
         quantity: str = "", source: str = "paper", dof: float = math.inf,
         exact: float | None = None, level: float = CONFIDENCE, caveat: str = "",
         bounds: Sequence[float] | None = None, unit: str = "") -> Case:
    """A measurement from an estimate and its standard error.

    The interval is ``measured +- t * se`` at ``level`` (the ledger's :data:`CONFIDENCE`
    unless a joint interval needs more, see :func:`joint_level`; Student-t with ``dof``
    degrees of freedom, normal if infinite). ``band`` is the tolerance band around the
    paper's value within which the claim counts as confirmed. A non-empty ``caveat`` says why
    the interval cannot be trusted (e.g. heavy tails); the verdict is then ``inconclusive``
    by rule, whatever the interval says. The p-value (:func:`decision_p`) does not depend on
    ``level``. ``bounds``: the range the quantity can take (an accuracy lies in [0, 1], a
    difference of two in [-1, 1]); the interval is cut to it, which never loses coverage, and
    leaves the verdict as it is while the band's edges lie inside the range. ``unit``: the unit
    of the measurement, its interval and its band (e.g. ``"points"`` of accuracy).
    """
    measured = check_real("measured", measured)
    se = check_real("se", se)
    if se < 0:
        raise ValueError(f"se must be >= 0, got {se}")
    check_choice("source", source, ["paper", "book"])
    iv = interval(measured, se, dof=dof, level=level)
    if bounds is not None:
        lo, hi = (float(b) for b in bounds)
        if not lo <= measured <= hi:
            raise ValueError(f"measured must lie in bounds {[lo, hi]}, got {measured}")
        iv = [max(iv[0], lo), min(iv[1], hi)]
    p, towards = (1.0, None) if caveat else decision_p(measured, se, band, dof=dof)
    return Case(paper=float(paper), measured=measured, interval=iv,
                band=[None if math.isinf(b) else b for b in parse_band(band)],
                verdict="inconclusive" if caveat else verdict(iv, band),
                quantity=quantity, source=source, se=se,
                exact=None if exact is None else float(exact), caveat=caveat,
                p_value=p, towards=towards,
                bounds=None if bounds is None else [float(b) for b in bounds], unit=unit)


def interval_case(measured: float, interval_at: Callable[[float], Sequence[float]],
                  band: Sequence[float | None], *, paper: float, quantity: str = "",
                  source: str = "paper", level: float = CONFIDENCE,
                  exact: float | None = None) -> Case:
    """A case whose interval is ``interval_at(level)`` (an exact interval with no ``+- t se``
    form; ``interval_at`` must widen with the level), its p-value from :func:`interval_p`.
    Infinite ends are clipped to 1e300 so that results stay valid JSON."""
    check_choice("source", source, ["paper", "book"])
    clip = lambda iv: [min(float(iv[0]), 1e300), min(float(iv[1]), 1e300)]  # noqa: E731
    iv = clip(interval_at(level))
    p, towards = interval_p(lambda lev: clip(interval_at(lev)), band)
    return Case(paper=float(paper), measured=min(float(measured), 1e300), interval=iv,
                band=[None if math.isinf(b) else float(b) for b in parse_band(band)],
                verdict=verdict(iv, band), quantity=quantity, source=source,
                exact=None if exact is None else float(exact), p_value=p, towards=towards)


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
    the deciding coordinate (as in :func:`every_case`). The case's p-value is the box's: ``d``
    times the smallest coordinate p-value pointing outside the band, else ``d`` times the
    largest (every coordinate inside), so that ``p <= alpha`` exactly when the joint box at
    family-wise level ``1 - alpha`` decides.
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
    _, head = deciding_case({str(j): c for j, c in enumerate(cases)},
                            [c.verdict for c in cases])
    d = len(cases)
    out = [c.p_value for c in cases if c.towards == "refuted"]
    if caveat or any(c.towards is None for c in cases):
        p, towards = (min(1.0, d * min(out)), "refuted") if out else (1.0, None)
    elif out:
        p, towards = min(1.0, d * min(out)), "refuted"
    else:
        p, towards = min(1.0, d * max(c.p_value for c in cases)), "confirmed"
    return Case(**{**head.__dict__, "p_value": p, "towards": towards if p < 1.0 else None})


def from_case(id: str, statement: str, c: Case, *, note: str = "",
              details: list[dict[str, Any]] | None = None, scope: str | None = None,
              condition: str = "", kind: str = "empirical", size: str = "",
              case: str = "") -> Claim:
    """A claim whose verdict is that of one case (``size``, ``case``: see :class:`Claim`)."""
    if c.caveat and c.caveat not in note:
        note = f"{note} {c.caveat}".strip()
    return Claim(id=id, statement=statement, paper=c.paper, measured=c.measured,
                 interval=list(c.interval), band=list(c.band), verdict=c.verdict,
                 quantity=c.quantity, source=c.source, se=c.se, note=note,
                 details=list(details or []), exact=c.exact,
                 scope=None if scope is None else check_choice("scope", scope, SCOPES),
                 condition=condition, kind=check_choice("kind", kind, KINDS),
                 p_value=p_towards(c)[0], bounds=getattr(c, "bounds", None),
                 unit=getattr(c, "unit", ""), size=size, case=case)


def measure(id: str, statement: str, *, paper: float, measured: float, se: float,
            band: Sequence[float | None], quantity: str = "", source: str = "paper",
            note: str = "", dof: float = math.inf, details: list[dict[str, Any]] | None = None,
            exact: float | None = None, scope: str | None = None,
            condition: str = "", caveat: str = "", kind: str = "empirical",
            bounds: Sequence[float] | None = None, unit: str = "") -> Claim:
    """Build a claim from an estimate and its standard error (see :func:`case`)."""
    c = case(paper=paper, measured=measured, se=se, band=band, quantity=quantity,
             source=source, dof=dof, exact=exact, caveat=caveat, bounds=bounds, unit=unit)
    return from_case(id, statement, c, note=note, details=details, scope=scope,
                     condition=condition, kind=kind)


def band_gap(c: Case | Claim) -> float:
    """How far the interval lies outside the band (negative when they overlap)."""
    lo, hi = parse_band(c.band)
    return max(lo - c.interval[1], c.interval[0] - hi)


def overhang(c: Case | Claim) -> float:
    """How far the interval reaches beyond the band, on the side where it reaches furthest
    (negative: how far inside it stays): what keeps a case from being confirmed."""
    lo, hi = parse_band(c.band)
    return max(lo - c.interval[0], c.interval[1] - hi)


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


def can_decide(c: Case | Claim) -> bool:
    """Whether a case can head a claim: no caveat, an interval of positive width, and not the
    whole possible range (its ``bounds``): a placeholder says nothing a reader could check."""
    lo, hi = c.interval
    bounds = getattr(c, "bounds", None)
    whole = bounds is not None and lo <= bounds[0] and hi >= bounds[1]
    return not getattr(c, "caveat", "") and hi > lo and not whole


def deciding_case(cases: dict[str, Case | Claim], verdicts: Sequence[str] | None = None, *,
                  some: bool = False) -> tuple[str, Case | Claim]:
    """The one headline rule: ``(key, case)`` that heads a claim, given the cases' ``verdicts``
    under the family-wise rule (default :func:`holm_verdicts`). A case that can decide
    (:func:`can_decide`) comes first; a case with a caveat or a placeholder interval heads a
    claim only when no case can decide. Among those: for a claim that must hold in every case,
    refuted: the refuted case furthest from its band; confirmed: the case nearest a band edge
    (:func:`verdict_margin`); inconclusive: the undecided case that keeps it so, the one reaching
    furthest beyond its band (:func:`overhang`). For a claim that holds if ``some`` case holds
    (:func:`some_case`), the best evidence for it: confirmed, the confirmed case furthest
    inside its band; refuted, the case nearest its band; inconclusive, the undecided case
    reaching least beyond its band. First on a tie."""
    items = list(cases.items())
    verdicts = holm_verdicts([c for _, c in items]) if verdicts is None else list(verdicts)
    overall = some_verdict(verdicts) if some else combine_all(verdicts)
    rows = list(zip(items, verdicts))
    same = [kc for kc, v in rows if v == overall]
    decides = [kc for kc, _ in rows if can_decide(kc[1])]
    # a decided claim is headed by a case with its verdict (one that can decide, if any); an
    # undecided one by a case that can decide, undecided if any, never by a caveat while one
    # that can decide is there
    matching = ([kc for kc in same if can_decide(kc[1])]
                or (same if overall != "inconclusive" else decides) or same or decides
                or [kc for kc, _ in rows])
    if some:
        if overall == "confirmed":
            return max(matching, key=lambda kc: verdict_margin(kc[1]))
        if overall == "refuted":
            return min(matching, key=lambda kc: band_gap(kc[1]))
        return min(matching, key=lambda kc: overhang(kc[1]))
    if overall == "refuted":
        return max(matching, key=lambda kc: band_gap(kc[1]))
    if overall == "confirmed":
        return min(matching, key=lambda kc: verdict_margin(kc[1]))
    return max(matching, key=lambda kc: overhang(kc[1]))


def some_verdict(verdicts: Sequence[str]) -> str:
    """The "some case holds" rule: confirmed if any case is, refuted if all are, else
    inconclusive."""
    vs = list(verdicts)
    for v in vs:
        if v not in VERDICTS:
            raise ValueError(f"verdicts must be among {VERDICTS}, got {v!r}")
    return ("confirmed" if "confirmed" in vs else "refuted" if vs and set(vs) == {"refuted"}
            else "inconclusive")


def every_case(id: str, statement: str, cases: dict[str, Case | Claim], *, note: str = "",
               scope: str | None = None, condition: str = "",
               kind: str = "empirical") -> Claim:
    """A claim that must hold in every case (e.g. every panel of a figure).

    Each case is decided under the family-wise rule (:func:`holm_verdicts`); the claim is
    refuted if any case is, confirmed if all are, else inconclusive (:func:`combine_all`). The
    headline numbers are those of the deciding case (:func:`deciding_case`, the one headline
    rule), whose key the claim stores as ``case``. Every case is kept
    in ``details`` with its p-value, and, where its own interval alone would give another
    verdict, that verdict (``verdict_alone``).
    """
    if not cases:
        raise ValueError("cases must not be empty")
    values = list(cases.values())
    verdicts = holm_verdicts(values)
    overall = combine_all(verdicts)
    key, head = deciding_case(cases, verdicts)
    details = []
    for (k, c), v in zip(cases.items(), verdicts):
        row = {"case": k, "paper": c.paper, "measured": c.measured, "interval": c.interval,
               "band": c.band, "verdict": v, "p": p_towards(c)[0]}
        if c.verdict != v:
            row["verdict_alone"] = c.verdict
        if c.exact is not None:
            row["exact"] = c.exact
        if getattr(c, "caveat", ""):
            row["caveat"] = c.caveat
        if getattr(c, "bounds", None) is not None:
            row["bounds"] = c.bounds
        if getattr(c, "unit", ""):
            row["unit"] = c.unit
        details.append(row)
    caveats = sorted({f"({k}) {c.caveat}" for k, c in cases.items() if getattr(c, "caveat", "")})
    if caveats:
        note = (note + " Untrustworthy intervals: " + "; ".join(caveats)).strip()
    held = [f"({k}) {c.verdict}" for (k, c), v in zip(cases.items(), verdicts) if c.verdict != v]
    if held:
        note = (note + f" Holm's rule over the {len(cases)} cases leaves undecided "
                f"{len(held)} that {'its' if len(held) == 1 else 'their'} own "
                f"{CONFIDENCE:.0%} interval alone would decide: {', '.join(held)}.").strip()
    head = Case(**{**{f.name: getattr(head, f.name, f.default) for f in fields(Case)},
                   "verdict": overall})
    claim = from_case(id, statement, head, note=note, details=details, scope=scope,
                      condition=condition, kind=kind, case=key)
    claim.p_value = family_p(values)
    return claim


def some_case(id: str, statement: str, cases: dict[str, Case], *, note: str = "",
              scope: str | None = None, condition: str = "",
              extras: dict[str, dict[str, Any]] | None = None) -> Claim:
    """A claim that holds if *some* case holds: confirmed if any case is confirmed, refuted if
    every case is refuted, else inconclusive (:func:`some_verdict`), each case by its own
    interval. The cases' intervals must form a joint box (:func:`joint_level`), or "some"
    would be confirmed by chance among many. The headline is the best evidence for "some"
    (:func:`deciding_case` with ``some``), whose key the claim stores as ``case``; ``extras``
    go into each case's row of ``details``."""
    if not cases:
        raise ValueError("cases must not be empty")
    verdicts = [c.verdict for c in cases.values()]
    overall = some_verdict(verdicts)
    key, head = deciding_case(cases, verdicts, some=True)
    details = [{"case": k, "paper": c.paper, "measured": c.measured, "interval": c.interval,
                "band": c.band, "verdict": c.verdict, "se": c.se,
                **({"caveat": c.caveat} if c.caveat else {}),
                **({"bounds": c.bounds} if c.bounds is not None else {}),
                **({"unit": c.unit} if c.unit else {}),
                **(extras or {}).get(k, {})}
               for k, c in cases.items()]
    head = Case(**{**head.__dict__, "verdict": overall})
    return from_case(id, statement, head, note=note, details=details, scope=scope,
                     condition=condition, case=key)


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


# Claims about fitted laws: a fitted coefficient as a case, with the lack of fit of its law
# checked. A wider interval around a law that does not hold would confirm it by being vague.
def rejected_law_caveat(fit: LogLogFit, what: str = "power law") -> str:
    """The caveat of a coefficient whose law the lack-of-fit test rejects ("" when it holds
    or cannot be tested)."""
    if fit.p_value is None or fit.p_value >= LACK_OF_FIT_ALPHA:
        return ""
    return (f"the {what} is rejected by its lack of fit (χ² = {fit.chi2:.3g} on {fit.dof} dof, "
            f"p = {fit.p_value:.2g} < {LACK_OF_FIT_ALPHA:g}): its coefficient describes no law "
            "that holds over these points, so it cannot decide")


def fit_case(fit: LogLogFit, *, paper: float, band: Sequence[float | None],
             quantity: str = "", source: str = "paper", exact: float | None = None,
             coefficient: str = "slope", what: str = "power law",
             dof: float = math.inf) -> Case:
    """A fitted ``coefficient`` (``"slope"`` or ``"intercept"``) of ``fit`` as a case: its own
    standard error (``fit.se`` for the slope), never widened, with Student-t on ``dof``
    degrees of freedom where the points' errors are themselves estimated from few groups
    (normal by default); inconclusive, with the lack-of-fit p-value, when the law is rejected
    (:func:`rejected_law_caveat`). The quantity names the lack-of-fit p-value either way."""
    value = fit.slope if coefficient == "slope" else fit.intercept
    se = fit.se if coefficient == "slope" else fit.intercept_se
    if se is None:
        raise ValueError(f"the fit has no standard error for its {coefficient}")
    lof = ("lack of fit untestable with two points" if fit.p_value is None else
           f"lack of fit p = {fit.p_value:.2g}")
    return case(paper=paper, measured=value, se=se, band=band, source=source, exact=exact,
                quantity=f"{quantity} ({lof})".strip(), caveat=rejected_law_caveat(fit, what),
                dof=dof)


def slope_claim(id: str, statement: str, x: Sequence[float], y: Sequence[float],
                y_se: Sequence[float], *, paper: float, band: Sequence[float | None],
                quantity: str = "", source: str = "paper", note: str = "",
                details: list[dict[str, Any]] | None = None, exact: float | None = None,
                scope: str | None = None, condition: str = "",
                kind: str = "empirical") -> Claim:
    """A claim about the slope of ``log y`` on ``log x``, with its lack of fit checked.

    The fit is :func:`dsmlib.foundation.stats.loglog_fit`; the slope is judged with its own
    standard error, and a straight line that lack of fit rejects makes the claim inconclusive
    (:func:`fit_case`). The fit's numbers go into ``details``.
    """
    fit = loglog_fit(x, y, y_se)
    rows = list(details or []) + [{"case": "fit", "slope": fit.slope, "se": fit.se,
                                   "chi2": fit.chi2, "dof": fit.dof, "p_value": fit.p_value}]
    c = fit_case(fit, paper=paper, band=band, quantity=quantity, source=source, exact=exact)
    return from_case(id, statement, c, note=f"{note} Fit: {fit.describe()}.".strip(),
                     details=rows, scope=scope, condition=condition, kind=kind)
