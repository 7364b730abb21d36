"""Claims about fitted laws (foundation): a fitted coefficient as a case, with the lack of fit
of its law checked. A law that the lack-of-fit test rejects decides nothing: its case is
inconclusive, with the coefficient and the test's p-value, and its interval is never widened
(a wider interval around a law that does not hold would confirm it by being vague)."""
from __future__ import annotations

from typing import Any, Sequence

from .claims import Case, Claim, case, from_case
from .stats import LACK_OF_FIT_ALPHA, LogLogFit, loglog_fit

__all__ = ["rejected_law_caveat", "fit_case", "slope_claim"]


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
             coefficient: str = "slope", what: str = "power law") -> Case:
    """A fitted ``coefficient`` (``"slope"`` or ``"intercept"``) of ``fit`` as a case: its own
    standard error (``fit.se`` for the slope), never widened; inconclusive, with the
    lack-of-fit p-value, when the law is rejected (:func:`rejected_law_caveat`). The quantity
    names the lack-of-fit p-value either way."""
    value = fit.slope if coefficient == "slope" else fit.intercept
    se = fit.se if coefficient == "slope" else fit.intercept_se
    if se is None:
        raise ValueError(f"the fit has no standard error for its {coefficient}")
    lof = ("lack of fit untestable with two points" if fit.p_value is None else
           f"lack of fit p = {fit.p_value:.2g}")
    return case(paper=paper, measured=value, se=se, band=band, source=source, exact=exact,
                quantity=f"{quantity} ({lof})".strip(), caveat=rejected_law_caveat(fit, what))


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
