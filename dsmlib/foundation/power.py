"""What would decide an undecided case (foundation): the number of independent units (seeds,
runs) at which a Student-t interval of the same kind and level would give a verdict.

A case measured as the mean of ``n`` independent units has the interval ``measured +- q se``
with ``q`` the two-sided Student-t quantile on ``n - 1`` degrees of freedom
(:func:`dsmlib.foundation.claims.interval`). Its verdict is decided (confirmed or refuted,
:func:`dsmlib.foundation.claims.verdict`) exactly when its half-width is below the distance
from the mean to the nearest band edge. If the truth were the measured value and the per-unit
spread ``s = se sqrt(n)``, then with ``m`` units the statistic ``T = (mean - edge) / (s_hat /
sqrt(m))`` is noncentral t with ``m - 1`` degrees of freedom and noncentrality ``(measured -
edge) sqrt(m) / s``, so the chance of a verdict is ``P(|T| > q_m)``: exact for a band with one
finite edge (every band of a sign claim); with two, an upper bound (it ignores the far edge).
:func:`units_to_decide` is the smallest ``m`` that makes it at least ``power``. It is a
planning figure, not evidence: it takes the measured effect and spread at face value.

A projection needs an effect: a measured value that lies within the claim's *resolution* of a
band edge (:func:`resolvable`; by default the rounding of float32 metrics, :data:`RESOLUTION`)
is a rounding residue, not a distance from the edge, and no number of units is projected for
it.
"""
from __future__ import annotations

import math
from typing import Sequence

from scipy import integrate as _integrate
from scipy import stats as _st

from .checks import check_int, check_real
from .claims import parse_band

__all__ = ["decision_power", "units_to_decide", "resolvable", "POWER", "MAX_UNITS",
           "RESOLUTION"]

POWER = 0.8          # the conventional planning power
MAX_UNITS = 100_000  # beyond this many units, :func:`units_to_decide` gives up (None)
#: The default resolution of a claim's quantity: metrics are recorded in float32 (relative
#: rounding 1.2e-7 on values of order 1), so a distance below 1e-6 from a band edge is rounding.
RESOLUTION = 1e-6


def _edge_distance(measured: float, band: Sequence[float | None]) -> float:
    """Distance from ``measured`` to the nearest finite edge of ``band``."""
    lo, hi = parse_band(band)
    return min(abs(measured - e) for e in (lo, hi) if math.isfinite(e))


def _level(half_width: float, se: float, n: int) -> float:
    """The two-sided level of an interval ``+- half_width`` made from ``se`` with ``n`` units."""
    return 2.0 * float(_st.t.cdf(half_width / se, n - 1)) - 1.0


def decision_power(distance: float, spread: float, units: int, level: float,
                   floor: float = 0.0) -> float:
    """Chance that a Student-t interval at ``level`` over ``units`` independent units, each
    with standard deviation ``spread``, clears a band edge lying ``distance`` from the true
    mean (the exact noncentral-t probability; the module's docstring). ``floor``: a part of the
    standard error that more units do not shrink (e.g. a test set's own sampling error, every
    unit being scored on the same items); the standard error with ``m`` units is then
    ``sqrt(spread^2 / m + floor^2)``, and the noncentral t with ``m - 1`` degrees of freedom is
    an approximation."""
    units = check_int("units", units, minimum=2)
    q = float(_st.t.ppf(0.5 + level / 2.0, units - 1))
    se = math.sqrt(spread ** 2 / units + floor ** 2)
    nc, dof = abs(distance) / se, units - 1
    p = float(_st.nct.sf(q, dof, nc) + _st.nct.cdf(-q, dof, nc))
    if math.isfinite(p):
        return min(1.0, p)

    # scipy's noncentral t gives NaN at some large noncentralities: then integrate
    # P(|Z + nc| > q sqrt(V / dof)), V ~ chi2(dof), over V's quantiles u (bounded for any dof).
    def given(u: float) -> float:
        w = q * math.sqrt(_st.chi2.ppf(u, dof) / dof)
        return float(_st.norm.sf(w - nc) + _st.norm.cdf(-w - nc))

    return min(1.0, float(_integrate.quad(given, 0.0, 1.0, limit=200)[0]))


def resolvable(measured: float, band: Sequence[float | None],
               resolution: float = RESOLUTION) -> bool:
    """Whether ``measured`` lies further than ``resolution`` from the nearest finite edge of
    ``band``: an effect distinguishable from zero at the claim's resolution."""
    resolution = check_real("resolution", resolution)
    if resolution < 0:
        raise ValueError(f"resolution must be >= 0, got {resolution}")
    return _edge_distance(check_real("measured", measured), band) > resolution


def units_to_decide(measured: float, se: float, interval: Sequence[float],
                    band: Sequence[float | None], units: int, *, power: float = POWER,
                    max_units: int = MAX_UNITS, resolution: float = RESOLUTION,
                    floor_se: float = 0.0, dof: float | None = None) -> int | None:
    """The fewest independent units for a verdict with probability ``power``, were the truth
    the ``measured`` value and the per-unit spread ``sqrt(se^2 - floor_se^2) sqrt(units)``
    (``floor_se``: the part of ``se`` more units do not shrink, see :func:`decision_power`);
    the interval's level is read from ``interval``'s half-width with ``dof`` degrees of freedom
    (default ``units - 1``; it may be a joint level). None when the measured value is not
    :func:`resolvable` from a band edge at ``resolution`` (then there is no effect to project),
    the spread is zero, or more than ``max_units`` would be needed (with a floor, also when no
    number of units brings the interval inside the edge's distance)."""
    measured, se = check_real("measured", measured), check_real("se", se)
    units = check_int("units", units, minimum=2)
    power = check_real("power", power)
    floor_se = check_real("floor_se", floor_se)
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must lie in (0, 1), got {power}")
    if not 0.0 <= floor_se <= se:
        raise ValueError(f"floor_se must lie in [0, se = {se}], got {floor_se}")
    if se <= 0 or not resolvable(measured, band, resolution):
        return None
    distance = _edge_distance(measured, band)
    half = (interval[1] - interval[0]) / 2.0
    level = (_level(half, se, units) if dof is None
             else 2.0 * float(_st.t.cdf(half / se, dof)) - 1.0)
    spread = math.sqrt(se ** 2 - floor_se ** 2) * math.sqrt(units)
    if spread <= 0:
        return None

    def enough(m: int) -> bool:
        return decision_power(distance, spread, m, level, floor_se) >= power

    if not enough(max_units):
        return None
    lo, hi = 1, 2
    while not enough(hi):           # power rises with m: bracket, then bisect
        lo, hi = hi, min(2 * hi, max_units)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi
