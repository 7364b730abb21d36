"""Claims about fitted laws (foundation): a log-log slope as a claim, with the lack of fit of
its straight line checked and, where the line does not describe the points, the interval
widened (:func:`slope_claim`)."""
from __future__ import annotations

from typing import Any, Sequence

from .claims import Claim, measure
from .stats import loglog_fit

__all__ = ["slope_claim"]


def slope_claim(id: str, statement: str, x: Sequence[float], y: Sequence[float],
                y_se: Sequence[float], *, paper: float, band: Sequence[float | None],
                quantity: str = "", source: str = "paper", note: str = "",
                details: list[dict[str, Any]] | None = None, exact: float | None = None,
                scope: str | None = None, condition: str = "") -> Claim:
    """A claim about the slope of ``log y`` on ``log x``, with its lack of fit checked.

    The fit is :func:`dsmlib.foundation.stats.loglog_fit`. When a straight line does not
    describe the points, the interval is widened by the Birge ratio with ``k - 2`` degrees of
    freedom, and the note says so; the fit's numbers go into ``details``.
    """
    fit = loglog_fit(x, y, y_se)
    rows = list(details or []) + [{"case": "fit", "slope": fit.slope, "se": fit.se,
                                   "chi2": fit.chi2, "dof": fit.dof, "p_value": fit.p_value,
                                   "se_widened": fit.se_widened}]
    return measure(id, statement, paper=paper, measured=fit.slope, se=fit.se_widened,
                   dof=fit.dof_interval, band=band, quantity=quantity, source=source,
                   note=f"{note} Fit: {fit.describe()}.".strip(), details=rows, exact=exact,
                   scope=scope, condition=condition)
