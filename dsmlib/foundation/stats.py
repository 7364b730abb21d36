"""Statistics (foundation): uncertainty for Monte-Carlo estimates from correlated chains.

Successive SGD iterates are correlated, so the naive ``std / sqrt(n)`` understates the error of
a time average. The batch-means method cuts a stationary series into ``n_batches`` contiguous
blocks much longer than its correlation time; block statistics are then nearly independent, and
their spread gives the standard error.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import stats as _st

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
    return float(_st.t.ppf(0.5 + level / 2.0, dof))


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
class LogLogFit:
    """A power law ``y = A x^slope`` fitted on log-log axes, with its lack-of-fit test:
    ``chi2`` of the residuals against their covariance, ``dof = n - 2`` and ``p_value``
    (small: the points do not lie on one straight line within their errors)."""

    slope: float
    se: float
    intercept: float
    chi2: float
    dof: int
    p_value: float

    @property
    def inflation(self) -> float:
        """``sqrt(chi2 / dof)`` when it exceeds 1, else 1: the factor that makes the residuals
        consistent with their errors (the Birge ratio)."""
        return float(np.sqrt(max(1.0, self.chi2 / self.dof)))

    def widened_se(self, alpha: float) -> float:
        """``se``, multiplied by :attr:`inflation` when the lack-of-fit test rejects at
        level ``alpha`` (``p_value < alpha``)."""
        return self.se * (self.inflation if self.p_value < alpha else 1.0)


def loglog_fit(x: np.ndarray, y: np.ndarray, y_se: np.ndarray | None = None, *,
               y_cov: np.ndarray | None = None) -> LogLogFit:
    """Generalised least-squares fit of ``log y = intercept + slope * log x``.

    Give either ``y_se`` (independent errors) or ``y_cov``, the full covariance of ``y`` (for
    estimates that share their samples, e.g. errors at several step sizes measured on the same
    Brownian paths). The delta method gives ``Cov(log y) = y_cov / (y y^T)``. The lack-of-fit
    statistic ``chi2 = r^T Cov^-1 r`` of the residuals ``r`` has ``n - 2`` degrees of freedom,
    so at least 3 points are needed.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape or x.size < 3:
        raise ValueError("x and y must be 1-D arrays of the same length >= 3 (a lack-of-fit "
                         "test needs a degree of freedom)")
    if (y_se is None) == (y_cov is None):
        raise ValueError("give exactly one of y_se and y_cov")
    cov = (np.diag(np.asarray(y_se, dtype=float) ** 2) if y_cov is None
           else np.asarray(y_cov, dtype=float))
    if cov.shape != (x.size, x.size) or not np.all(np.isfinite(cov)):
        raise ValueError(f"y_se must have {x.size} entries / y_cov must be {x.size}x{x.size} "
                         "and finite")
    if np.any(x <= 0) or np.any(y <= 0) or np.any(np.diag(cov) <= 0):
        raise ValueError("x, y and the errors of y must be positive for a log-log fit")
    lx, ly = np.log(x), np.log(y)
    try:
        W = np.linalg.inv(cov / np.outer(y, y))
    except np.linalg.LinAlgError:
        raise ValueError("y_cov must be positive definite") from None
    A = np.column_stack([np.ones_like(lx), lx])
    info = A.T @ W @ A
    beta = np.linalg.solve(info, A.T @ W @ ly)
    r = ly - A @ beta
    chi2 = float(r @ W @ r)
    dof = x.size - 2
    return LogLogFit(slope=float(beta[1]), se=float(np.sqrt(np.linalg.inv(info)[1, 1])),
                     intercept=float(beta[0]), chi2=chi2, dof=dof,
                     p_value=float(_st.chi2.sf(chi2, dof)))
