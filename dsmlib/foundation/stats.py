"""Statistics (foundation): uncertainty for Monte-Carlo estimates from correlated chains.

Successive SGD iterates are correlated, so the naive ``std / sqrt(n)`` understates the error of
a time average. The batch-means method cuts a stationary series into ``n_batches`` contiguous
blocks much longer than its correlation time; block statistics are then nearly independent, and
their spread gives the standard error.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .checks import check_int, check_real


def batch_statistic(series: np.ndarray, fn: Callable[[np.ndarray], np.ndarray], *,
                    n_batches: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Estimate ``fn(series)`` and its standard error by batch means.

    ``series`` has time along axis 0. ``fn`` maps a block of the series to a number or array.
    The estimate is ``fn`` of the whole series; the standard error is the standard deviation of
    ``fn`` over ``n_batches`` equal contiguous blocks divided by ``sqrt(n_batches)``.
    """
    series = np.asarray(series)
    n_batches = check_int("n_batches", n_batches, minimum=2)
    if series.shape[0] < 2 * n_batches:
        raise ValueError(f"series must have at least 2 * n_batches = {2 * n_batches} samples "
                         f"along axis 0, got {series.shape[0]}")
    usable = series.shape[0] - series.shape[0] % n_batches
    blocks = np.split(series[:usable], n_batches)
    values = np.array([fn(b) for b in blocks])
    estimate = np.asarray(fn(series))
    se = values.std(axis=0, ddof=1) / np.sqrt(n_batches)
    return estimate, se


@dataclass(frozen=True)
class BlockMoments:
    """Means and covariances (normalised by n) of ``n_batches`` contiguous blocks of a
    d-dimensional series, and of the whole series: enough for any statistic of the first two
    moments, computed once."""

    means: np.ndarray      # (K, d)
    covs: np.ndarray       # (K, d, d)
    mean: np.ndarray       # (d,)
    cov: np.ndarray        # (d, d)

    def statistic(self, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Batch-means estimate and standard error of ``fn(mean, cov)`` (as
        :func:`batch_statistic`, whole series for the estimate, block spread for the error)."""
        values = np.array([fn(m, c) for m, c in zip(self.means, self.covs)])
        k = len(self.means)
        return np.asarray(fn(self.mean, self.cov)), values.std(axis=0, ddof=1) / np.sqrt(k)


def block_moments(series: np.ndarray, *, n_batches: int = 50) -> BlockMoments:
    """:class:`BlockMoments` of a ``(n, d)`` series (time along axis 0)."""
    series = np.asarray(series, dtype=float)
    n_batches = check_int("n_batches", n_batches, minimum=2)
    if series.ndim != 2 or series.shape[0] < 2 * n_batches:
        raise ValueError(f"series must be (n, d) with n >= 2 * n_batches = {2 * n_batches}, "
                         f"got shape {series.shape}")
    usable = series.shape[0] - series.shape[0] % n_batches
    blocks = series[:usable].reshape(n_batches, usable // n_batches, series.shape[1])
    means = blocks.sum(axis=1) / blocks.shape[1]
    seconds = np.stack([b.T @ b for b in blocks]) / blocks.shape[1]
    covs = seconds - means[:, :, None] * means[:, None, :]
    mean = series.sum(axis=0) / series.shape[0]
    cov = series.T @ series / series.shape[0] - np.outer(mean, mean)
    return BlockMoments(means, covs, mean, cov)


def batch_means(series: np.ndarray, *, n_batches: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Time average of a stationary series (axis 0) and its batch-means standard error."""
    return batch_statistic(series, lambda b: b.mean(axis=0), n_batches=n_batches)


def covariance(block: np.ndarray) -> np.ndarray:
    """Sample covariance (normalised by n) of a block of d-dimensional points."""
    centred = block - block.mean(axis=0)
    return centred.T @ centred / block.shape[0]


def t_quantile(level: float, dof: float) -> float:
    """Two-sided Student-t quantile for a ``level`` confidence interval."""
    level = check_real("level", level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    # scipy.stats is imported where it is first used, here and below: its import takes 1.1-1.5 s
    # (0.6 s of it scipy 1.17 rewriting docstrings), which every command-line start that only
    # reads claims paid before.
    from scipy import stats
    return float(stats.t.ppf(0.5 + level / 2.0, dof))


def log_log_slope(x: np.ndarray, y: np.ndarray, y_se: np.ndarray) -> tuple[float, float]:
    """Weighted least-squares slope of ``log y`` on ``log x`` and its standard error.

    ``y_se`` are standard errors of ``y``; the delta method gives ``se(log y) = y_se / y``.
    """
    x, y, y_se = (np.asarray(a, dtype=float) for a in (x, y, y_se))
    if not (x.shape == y.shape == y_se.shape) or x.ndim != 1 or x.size < 2:
        raise ValueError("x, y and y_se must be 1-D arrays of the same length >= 2")
    if np.any(x <= 0) or np.any(y <= 0) or np.any(y_se <= 0):
        raise ValueError("x, y and y_se must be positive for a log-log fit")
    lx, ly, w = np.log(x), np.log(y), (y / y_se) ** 2
    xm = np.sum(w * lx) / w.sum()
    sxx = np.sum(w * (lx - xm) ** 2)
    slope = np.sum(w * (lx - xm) * ly) / sxx
    return float(slope), float(1.0 / np.sqrt(sxx))


def thin(points: np.ndarray, max_points: int) -> np.ndarray:
    """Every k-th row so that at most ``max_points`` remain, as float32 (a systematic
    subsample, used to keep embedded figure data small)."""
    max_points = check_int("max_points", max_points, minimum=1)
    step = max(1, int(np.ceil(points.shape[0] / max_points)))
    return np.asarray(points[::step], dtype=np.float32)


@dataclass(frozen=True)
class CrossedMean:
    """The grand mean of a crossed ``units x items`` table (e.g. seeds x test images: every
    seed is scored on the same images) as an estimate of the mean over *both* populations,
    and its standard error from the two-way random-effects model without replication,
    ``y[s, i] = mu + a_s + b_i + e_si``.

    ``Var(mean) = (sigma_a^2 + sigma_e^2 / n) / S + sigma_b^2 / n``: ``unit_var`` is the first
    term (the spread of the units' means over ``S``, which more units shrink) and ``item_var``
    the second (the items' own sampling error, which no number of units removes), estimated
    from the mean squares as ``MS_units / (n S)`` and ``(MS_items - MS_error) / (S n)``
    (clipped at 0). ``dof``: Satterthwaite's, for a Student-t interval."""
    mean: float
    se: float
    dof: float
    unit_var: float
    item_var: float
    units: int
    items: int

    def se_with(self, units: int) -> float:
        """The standard error with ``units`` units on the same items (a planning figure)."""
        return math.sqrt(self.unit_var * self.units / units + self.item_var)


def crossed_mean(table: np.ndarray) -> CrossedMean:
    """:class:`CrossedMean` of ``table`` (``units x items``, at least 2 x 2)."""
    y = np.asarray(table, dtype=float)
    if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2:
        raise ValueError(f"table must be a units x items array of at least 2 x 2, got shape "
                         f"{y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("table must be finite")
    S, n = y.shape
    grand = float(y.mean())
    unit_means, item_means = y.mean(axis=1), y.mean(axis=0)
    ms_units = n * float(((unit_means - grand) ** 2).sum()) / (S - 1)
    ms_items = S * float(((item_means - grand) ** 2).sum()) / (n - 1)
    resid = y - unit_means[:, None] - item_means[None, :] + grand
    ms_error = float((resid ** 2).sum()) / ((S - 1) * (n - 1))
    unit_var = ms_units / (n * S)
    item_var = max(ms_items - ms_error, 0.0) / (S * n)
    var = unit_var + item_var
    if item_var > 0:      # Satterthwaite: var = (MS_u + MS_i - MS_e) / (S n)
        parts = ((ms_units, S - 1), (ms_items, n - 1), (ms_error, (S - 1) * (n - 1)))
        denom = sum((m / (S * n)) ** 2 / df for m, df in parts)
        dof = var ** 2 / denom if denom > 0 else float(S - 1)
    else:
        dof = float(S - 1)
    return CrossedMean(mean=grand, se=math.sqrt(var), dof=float(dof), unit_var=unit_var,
                       item_var=item_var, units=S, items=n)


@dataclass(frozen=True)
class LogLogFit:
    """A straight line through ``(log x, log y)`` (generalised least squares) and its
    lack-of-fit check.

    ``se`` is the slope's standard error from the points' own errors (``intercept_se`` the
    intercept's, where known); ``chi2 = r^T Cov^-1 r`` of the residuals with ``dof = k - 2``
    degrees of freedom and ``p_value`` its upper tail; ``lack_of_fit`` when ``p_value <
    alpha``. ``se_widened`` (``se`` times the Birge ratio ``sqrt(chi2 / dof)`` on lack of fit)
    and ``dof_interval`` describe how far the points scatter about the line; no claim uses
    them, because a law that lack of fit rejects decides nothing
    (:func:`dsmlib.foundation.claims.fit_case`). With two points (``dof = 0``) lack of fit cannot be
    tested.
    """

    slope: float
    intercept: float
    se: float
    chi2: float
    dof: int
    p_value: float | None
    lack_of_fit: bool
    se_widened: float
    dof_interval: float
    intercept_se: float | None = None

    @classmethod
    def from_chi2(cls, slope: float, intercept: float, se: float, chi2: float, dof: int, *,
                  alpha: float = 0.01, intercept_se: float | None = None) -> "LogLogFit":
        """A fit from its numbers, with the lack-of-fit test (and the descriptive widening)
        applied at ``alpha``."""
        if dof == 0:
            return cls(slope, intercept, se, chi2, 0, None, False, se, np.inf, intercept_se)
        from scipy import stats
        p = float(stats.chi2.sf(chi2, dof))
        bad = p < alpha
        birge = max(1.0, float(np.sqrt(chi2 / dof)))
        return cls(slope, intercept, se, chi2, dof, p, bad, se * birge if bad else se,
                   float(dof) if bad else np.inf, intercept_se)

    @property
    def inflation(self) -> float:
        """The Birge ratio ``sqrt(chi2 / dof)`` when it exceeds 1, else 1."""
        return float(np.sqrt(max(1.0, self.chi2 / self.dof))) if self.dof else 1.0

    def widened_se(self, alpha: float = 0.01) -> float:
        """``se`` times :attr:`inflation` when the lack-of-fit test rejects at ``alpha``."""
        return self.se * (self.inflation if self.p_value is not None and self.p_value < alpha
                          else 1.0)

    def describe(self, shape: str = "a straight line") -> str:
        """One line for a claim's note; ``shape``: the curve fitted (a polynomial's
        :meth:`PolyFit.as_line` is not a straight line)."""
        if self.dof == 0:
            return "two points: lack of fit cannot be tested"
        verdict = (f"the points are not on {shape}: the law is rejected and decides nothing "
                   f"(they scatter {self.inflation:.3g} times their errors)" if self.lack_of_fit
                   else f"consistent with {shape}")
        return f"lack of fit χ² = {self.chi2:.3g} on {self.dof} dof, p = {self.p_value:.3g}: {verdict}"


#: Significance level of every lack-of-fit check in the book (fixed before measuring).
LACK_OF_FIT_ALPHA = 0.01


def loglog_fit(x: np.ndarray, y: np.ndarray, y_se: np.ndarray | None = None, *,
               y_cov: np.ndarray | None = None, alpha: float = LACK_OF_FIT_ALPHA) -> LogLogFit:
    """Fit ``log y = a + s log x`` by generalised least squares, with a chi-square lack of fit.

    Give either ``y_se`` (independent standard errors of ``y``) or ``y_cov``, the full
    covariance of ``y`` (for estimates that share their samples, e.g. errors at several step
    sizes measured on the same Brownian paths). The delta method gives
    ``Cov(log y) = Cov(y) / (y y^T)``.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape or x.size < 2:
        raise ValueError("x, y and y_se must be 1-D arrays of the same length >= 2")
    if (y_se is None) == (y_cov is None):
        raise ValueError("give exactly one of y_se and y_cov")
    cov = (np.diag(np.asarray(y_se, dtype=float) ** 2) if y_cov is None
           else np.asarray(y_cov, dtype=float))
    if cov.shape != (x.size, x.size) or not np.all(np.isfinite(cov)):
        raise ValueError(f"x, y and y_se must be 1-D arrays of the same length >= 2 (y_cov "
                         f"{x.size}x{x.size}), and finite")
    if np.any(x <= 0) or np.any(y <= 0) or np.any(np.diag(cov) <= 0):
        raise ValueError("x, y and y_se must be positive for a log-log fit")
    if np.unique(x).size < 2:
        raise ValueError("x must take at least two distinct values for a slope")
    lx, ly = np.log(x), np.log(y)
    try:
        W = np.linalg.inv(cov / np.outer(y, y))
    except np.linalg.LinAlgError:
        raise ValueError("y_cov must be positive definite") from None
    A = np.column_stack([np.ones_like(lx), lx])
    info = A.T @ W @ A
    beta = np.linalg.solve(info, A.T @ W @ ly)
    r = ly - A @ beta
    chi2, dof = float(r @ W @ r), x.size - 2
    cov_beta = np.linalg.inv(info)
    return LogLogFit.from_chi2(float(beta[1]), float(beta[0]), float(np.sqrt(cov_beta[1, 1])),
                               chi2, dof, alpha=alpha, intercept_se=float(np.sqrt(cov_beta[0, 0])))


@dataclass(frozen=True)
class PolyFit:
    """A weighted polynomial ``y = c_0 + c_1 x + ... + c_m x^m`` and its lack of fit:
    ``coef`` and their covariance ``cov`` (from the points' own errors), ``chi2`` on ``dof =
    k - m - 1`` degrees of freedom, ``p_value`` its upper tail (None with ``dof = 0``)."""

    coef: np.ndarray
    cov: np.ndarray
    chi2: float
    dof: int
    p_value: float | None

    @property
    def degree(self) -> int:
        return len(self.coef) - 1

    def as_line(self, alpha: float = LACK_OF_FIT_ALPHA) -> LogLogFit:
        """The intercept ``c_0`` and the linear coefficient ``c_1`` (as ``slope``) with their
        standard errors and this fit's lack of fit, in :class:`LogLogFit`'s form."""
        return LogLogFit.from_chi2(float(self.coef[1]), float(self.coef[0]),
                                   float(np.sqrt(self.cov[1, 1])), self.chi2, self.dof,
                                   alpha=alpha, intercept_se=float(np.sqrt(self.cov[0, 0])))


def poly_fit(x: np.ndarray, y: np.ndarray, y_se: np.ndarray, degree: int) -> PolyFit:
    """Weighted least squares of ``y`` on the powers ``x^0 .. x^degree`` (independent errors
    ``y_se``), with the chi-square lack of fit of the residuals."""
    x, y, y_se = (np.asarray(a, dtype=float) for a in (x, y, y_se))
    degree = check_int("degree", degree, minimum=1)
    if x.ndim != 1 or x.shape != y.shape or x.shape != y_se.shape or x.size < degree + 1:
        raise ValueError(f"x, y and y_se must be 1-D arrays of the same length >= degree + 1 "
                         f"= {degree + 1}")
    if np.any(y_se <= 0) or not np.all(np.isfinite(np.concatenate([x, y, y_se]))):
        raise ValueError("y_se must be positive and x, y, y_se finite")
    A = np.vander(x, degree + 1, increasing=True) / y_se[:, None]
    cov = np.linalg.inv(A.T @ A)
    coef = cov @ A.T @ (y / y_se)
    chi2 = float(((A @ coef - y / y_se) ** 2).sum())
    dof = x.size - degree - 1
    from scipy import stats
    return PolyFit(coef, cov, chi2, dof, float(stats.chi2.sf(chi2, dof)) if dof else None)


def lowest_fitting_poly(x: np.ndarray, y: np.ndarray, y_se: np.ndarray, *, max_degree: int = 2,
                        alpha: float = LACK_OF_FIT_ALPHA) -> PolyFit:
    """The polynomial of lowest degree (from 1 up to ``max_degree``, leaving at least one
    degree of freedom) whose lack of fit is not rejected at ``alpha``; the highest one tried
    when none holds (its p-value then says so). With two points, the line through them (its
    lack of fit cannot be tested: ``p_value`` None)."""
    n = len(np.asarray(x))
    if n < 2:
        raise ValueError(f"x must hold at least two points for a line, got {n}")
    max_degree = min(check_int("max_degree", max_degree, minimum=1), n - 2)
    if max_degree < 1:
        return poly_fit(x, y, y_se, 1)
    for m in range(1, max_degree + 1):
        fit = poly_fit(x, y, y_se, m)
        if fit.p_value is not None and fit.p_value >= alpha:
            return fit
    return fit
