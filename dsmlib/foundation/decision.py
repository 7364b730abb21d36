"""How a verdict is reached (foundation): one case against its band, and a family of cases.

A case's verdict is an equivalence test of its confidence interval against a tolerance band
fixed before measuring (:func:`verdict`); a claim that must hold in every case combines them
(:func:`combine_all`). Used by :mod:`dsmlib.foundation.claims`, which re-exports these names.

**Several cases, one family-wise rule.** A claim decided over several cases is decided by
Holm's step-down procedure at the family-wise level ``1 - CONFIDENCE`` (:func:`holm_verdicts`),
for confirming and for refuting alike. Each case carries its *p-value* (:func:`decision_p`): the
smallest ``alpha`` at which its own ``1 - alpha`` interval lies wholly inside the band
(``towards = "confirmed"``) or wholly outside it (``towards = "refuted"``). Holm sorts the cases
by p-value and decides the ``j``-th (of ``k``) while ``p <= alpha / (k - j + 1)``; the others
stay inconclusive. So a case decided under Holm is also decided by its own 99 % interval (the
one shown), while a case whose 99 % interval alone would decide may stay undecided in a large
family; the details say so. The claim is refuted when any case is, confirmed when all are.

:func:`bonferroni_verdicts` is the rule the ledger does not use, kept to measure what it would
change.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Sequence

from .checks import check_real
from .stats import t_quantile

VERDICTS = ("confirmed", "refuted", "inconclusive")
CONFIDENCE = 0.99  # level of every interval in the ledger
#: The family-wise rule of every claim decided over several cases, as the ledger states it.
FAMILY_RULE = ("Holm's step-down procedure at family-wise error rate "
               f"{1 - CONFIDENCE:.0%}, for confirming and for refuting")


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


def decision_p(measured: float, se: float, band: Sequence[float | None], *,
               dof: float = math.inf) -> tuple[float, str | None]:
    """The p-value of a case ``measured +- t se`` and the verdict it points to.

    Inside the band the p-value is the smallest ``alpha`` whose ``1 - alpha`` interval lies
    wholly inside it (``"confirmed"``); outside, the smallest whose interval misses it
    (``"refuted"``): ``2 P(T > d / se)`` with ``d`` the distance to the nearer (inside) or the
    near (outside) edge, Student-t with ``dof`` (normal if infinite), so that ``p <= alpha``
    exactly when :func:`interval` at level ``1 - alpha`` decides. With ``se = 0`` the point
    decides at once (0) unless it sits on an edge (1, towards nothing)."""
    lo, hi = parse_band(band)
    if se == 0:
        v = verdict([measured, measured], band)
        return (0.0, v) if v != "inconclusive" else (1.0, None)
    if lo <= measured <= hi:
        distance, towards = min(measured - lo, hi - measured), "confirmed"
    else:
        distance, towards = max(lo - measured, measured - hi), "refuted"
    if distance == 0:
        return 1.0, None
    z = distance / se
    from scipy import stats   # on first use: see dsmlib.foundation.stats.t_quantile
    tail = stats.t.sf(z, dof) if math.isfinite(dof) else stats.norm.sf(z)
    return float(min(1.0, 2.0 * tail)), towards


#: Below this ``alpha`` (about the smallest ``1 - level`` a float distinguishes from 1),
#: :func:`interval_p` stops searching and reports it.
P_FLOOR = 1e-15


def interval_p(interval_at: Callable[[float], Sequence[float]],
               band: Sequence[float | None]) -> tuple[float, str | None]:
    """:func:`decision_p` for an interval that has no ``+- t se`` form (an exact binomial or
    Poisson interval): ``interval_at(level)`` must widen with ``level``. The direction is the
    verdict of a nearly-zero-level interval; the p-value is found by bisection on
    ``log alpha`` (to 1e-6 relative), at least :data:`P_FLOOR`."""
    towards = verdict(interval_at(1e-9), band)
    if towards == "inconclusive":
        return 1.0, None

    def decides(log_alpha: float) -> bool:
        return verdict(interval_at(1.0 - math.exp(log_alpha)), band) == towards

    lo, hi = math.log(P_FLOOR), math.log(1.0 - 1e-9)
    if decides(lo):
        return P_FLOOR, towards
    while hi - lo > 1e-6:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if decides(mid) else (mid, hi)
    return float(math.exp(hi)), towards


def p_towards(c: Any) -> tuple[float, str | None]:
    """A case's (p-value, direction) for :func:`holm_verdicts`. A caveat pins it to (1, None).
    A :class:`~dsmlib.foundation.claims.Case` points where its ``towards`` says; a
    :class:`~dsmlib.foundation.claims.Claim` (no ``towards``) where its own verdict does. A case
    made without a p-value counts as decided just at its own level (conservative)."""
    if getattr(c, "caveat", ""):
        return 1.0, None
    if hasattr(c, "towards"):
        towards = c.towards
    else:
        towards = c.verdict if c.verdict != "inconclusive" else None
    if c.p_value is not None:
        return (float(c.p_value), towards) if towards else (1.0, None)
    v = verdict(c.interval, c.band)
    return (1.0 - CONFIDENCE, v) if v != "inconclusive" else (1.0, None)


def holm_verdicts(cases: Sequence[Any], *, alpha: float = 1.0 - CONFIDENCE
                  ) -> list[str]:
    """Each case's verdict under Holm's step-down procedure at family-wise level ``alpha``:
    sorted by p-value, the ``j``-th of ``k`` (from 0) is decided, towards its direction, while
    ``p <= alpha / (k - j)``; from the first that fails on, the cases stay inconclusive. With
    one case this is the case's own verdict at ``1 - alpha``."""
    pt = [p_towards(c) for c in cases]
    out = ["inconclusive"] * len(pt)
    for j, i in enumerate(sorted(range(len(pt)), key=lambda i: pt[i][0])):
        p, towards = pt[i]
        if towards is None or p > alpha / (len(pt) - j):
            break
        out[i] = towards
    return out


def holm_adjusted(cases: Sequence[Any]) -> list[float]:
    """Holm-adjusted p-values: a case is decided under :func:`holm_verdicts` at ``alpha``
    exactly when its adjusted p-value is at most ``alpha`` (and it points somewhere)."""
    ps = [p_towards(c)[0] for c in cases]
    out, running = [1.0] * len(ps), 0.0
    for j, i in enumerate(sorted(range(len(ps)), key=lambda i: ps[i])):
        running = max(running, min(1.0, (len(ps) - j) * ps[i]))
        out[i] = running
    return out


def bonferroni_verdicts(cases: Sequence[Any], *, alpha: float = 1.0 - CONFIDENCE
                        ) -> list[str]:
    """Each case's verdict under Bonferroni (``p <= alpha / k``): the rule the ledger does not
    use, kept to measure what it would change."""
    pt = [p_towards(c) for c in cases]
    return [t if t is not None and p <= alpha / len(pt) else "inconclusive" for p, t in pt]


def family_p(cases: Sequence[Any]) -> float:
    """The smallest family-wise ``alpha`` at which :func:`dsmlib.foundation.claims.every_case` reaches a verdict:
    the smallest adjusted p-value of a case pointing outside its band, else (every case
    pointing inside) the largest adjusted p-value."""
    adj, towards = holm_adjusted(cases), [p_towards(c)[1] for c in cases]
    out = [a for a, t in zip(adj, towards) if t == "refuted"]
    if out:
        return min(out)
    return max(adj) if all(t == "confirmed" for t in towards) else 1.0
