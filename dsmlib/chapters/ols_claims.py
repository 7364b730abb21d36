"""Claims of the ``ols`` chapter: every quantitative statement of Section 6, measured on the
simulated panels of :mod:`dsmlib.chapters.ols`, each beside its exact value.

Every claim carries ``exact``: the same statistic evaluated on the exact stationary law of the
algorithm that is run (:func:`dsmlib.theory.least_squares.stationary_mean` and
``stationary_covariance``), so the note, the verdict and the ledger speak of one thing.

Statistics that mean the same thing at every setting:

- centres are judged coordinate by coordinate (a joint box), never by the norm of a mean,
  whose estimate is biased upwards;
- proportionality ("Cov ∝ σ²", "Cov ∝ Σ̄_N") is judged by whether ``tr C / x`` stays constant
  across panels, as ratios to the first panel, never by a log-log slope through curved points;
- growth ("the span grows with ...") is judged panel to panel: each ratio of traces above 1;
- second-moment statistics of a panel whose iterates have no finite fourth moment are
  flagged (:attr:`dsmlib.chapters.ols.PanelResult.heavy_tail_caveat`) and cannot decide;
- the centre is judged for the one draw of labels a run sees (Sec. 6.3, "centered at the
  optimal point"); averaged over draws of the label noise (Remark 5's ``lim E beta_k``), with
  the cloud's shape and its sweeps of ``eta`` and ``B``, in :mod:`dsmlib.chapters.ols_cloud`.
"""
from __future__ import annotations

import numpy as np

from ..foundation.claims import Case, Claim, case, every_case, joint_case
from .ols import BETA_STAR, PanelResult

__all__ = ["CENTRE_BAND", "COV_PAPER_BAND", "COV_EXACT_BAND", "RATIO_BAND", "SHAPE_BAND",
           "CONVERGED_BAND", "centre_claims", "covariance_claims", "trace_ratio_case",
           "span_claims", "shape_claims", "noiseless_claims", "figure3_claims"]

# Tolerance bands, fixed before measuring.
CENTRE_BAND = 0.1            # the centre within 0.1 cloud radii (per coordinate: 0.1/√d)
COV_PAPER_BAND = (0.8, 1.25)  # a covariance scale within a factor 1.25 of the paper's
COV_EXACT_BAND = (0.95, 1 / 0.95)  # ... and within 5 % of the exact recursion's
RATIO_BAND = (1 / 1.1, 1.1)  # "proportional": tr C / x constant across panels within 10 %
SHAPE_BAND = 1.25            # an axis-variance ratio within a factor 1.25
CONVERGED_BAND = (None, 1e-8)  # noiseless SGD at β* after K steps


def _radius(cov: np.ndarray) -> float:
    return float(np.sqrt(np.trace(cov) / cov.shape[0]))


def _centre_case(r: PanelResult, target: np.ndarray, source: str) -> Case:
    """(centre − target) per coordinate in units of the cloud's RMS radius (a joint box).

    The ratio is taken block by block, so its interval carries the radius's uncertainty too;
    that part needs a finite fourth moment, hence the heavy-tail caveat when the offset is
    not small.
    """
    est, se = r.stat(lambda m, c: (m - target) / _radius(c))
    half = CENTRE_BAND / np.sqrt(r.problem.d)
    caveat = r.heavy_tail_caveat if np.abs(est).max() > half else ""
    return joint_case(est, se, paper=0.0, band=(-half, half), source=source,
                      dof=r.n_batches - 1, exact=(r.exact_mean - target) / _radius(r.exact_cov),
                      quantity="(centre − target) / the cloud's RMS radius, per coordinate", caveat=caveat)


def centre_claims(results: list[PanelResult]) -> list[Claim]:
    """Where the cloud is centred: at β* (the paper) or at β̂ (exact)."""
    return [
        every_case(
            "ols.stationary_mean",
            "In every panel the label-noisy SGD cloud, for the one draw of labels a run sees, "
            "is centred at $\\beta^*$ (Sec. 6.3: SGD 'would asymptotically converge to a "
            "distribution centered at the optimal point').",
            {r.panel.key: _centre_case(r, BETA_STAR, "paper") for r in results},
            note="The exact stationary mean of SGD with labels drawn once is the least-squares "
                 "fit $\\hat\\beta$ to the noisy labels, which differs from $\\beta^*$ by "
                 "$(X^\\top X)^{-1}X^\\top\\varepsilon$.",
            scope="setting",
            condition="Holds on average over label-noise draws ($\\mathbb{E}\\hat\\beta = \\beta^*$, "
                      "Remark 5's expectation: ols.mean_over_draws), or with noise redrawn at every "
                      "step; for one draw the offset shrinks like $\\sigma/\\sqrt N$."),
        every_case(
            "ols.stationary_mean_exact",
            "In every panel the cloud is centred at $\\hat\\beta$, the least-squares fit to the "
            "noisy labels.",
            {r.panel.key: _centre_case(r, r.exact_mean, "book") for r in results},
            kind="identity"),
    ]


def _trace(r: PanelResult) -> tuple[float, float]:
    est, se = r.stat(lambda m, c: np.trace(c))
    return float(est), float(se)


def _cov_case(r: PanelResult, target: np.ndarray, source: str, band) -> Case:
    est, se = r.stat(lambda m, c: np.trace(c) / np.trace(target))
    return case(paper=1.0, measured=float(est), se=float(se), band=band, source=source,
                quantity="tr(measured cov) / tr(predicted cov)", dof=r.n_batches - 1,
                exact=float(np.trace(r.exact_cov) / np.trace(target)),
                caveat=r.heavy_tail_caveat)


def covariance_claims(results: list[PanelResult]) -> list[Claim]:
    """The covariance's scale: the paper's (ησ²/B)·Σ̄_N against the exact one."""
    return [
        every_case(
            "ols.stationary_cov_paper",
            "In every panel the stationary covariance is $\\frac{\\eta\\sigma^2}{B}\\bar\\Sigma_N$ "
            "(Remark 5, Eq. 30).",
            {r.panel.key: _cov_case(r, r.paper_cov, "paper", COV_PAPER_BAND) for r in results},
            note="To first order in $\\eta$ the stationary covariance solves "
                 "$\\bar\\Sigma C + C\\bar\\Sigma = \\eta Q$, which is close to "
                 "$\\frac{\\eta\\sigma^2}{2B} I$: isotropic, and smaller than the paper's by "
                 "about $2\\lambda(\\bar\\Sigma)$.",
            scope="assumptions",
            condition="$\\frac{\\eta\\sigma^2}{B}\\bar\\Sigma_N$ is the covariance of one step's "
                      "label-noise term, not of the stationary cloud; the cloud's covariance "
                      "solves $\\bar\\Sigma C + C\\bar\\Sigma \\approx \\eta Q$."),
        every_case(
            "ols.stationary_cov_exact",
            "In every panel the stationary covariance equals the fixed point of SGD's exact "
            "second-moment recursion.",
            {r.panel.key: _cov_case(r, r.exact_cov, "book", COV_EXACT_BAND) for r in results},
            kind="identity"),
    ]


def trace_ratio_case(num: PanelResult, den: PanelResult, x_num: float, x_den: float,
                band, quantity: str) -> Case:
    """``(tr C_num / x_num) / (tr C_den / x_den)`` of two independent panels (delta method)."""
    (t1, s1), (t0, s0) = _trace(num), _trace(den)
    ratio = (t1 / x_num) / (t0 / x_den)
    se = ratio * np.hypot(s1 / t1, s0 / t0)
    exact = (np.trace(num.exact_cov) / x_num) / (np.trace(den.exact_cov) / x_den)
    caveat = "; ".join(c for c in (num.heavy_tail_caveat, den.heavy_tail_caveat) if c)
    return case(paper=1.0, measured=float(ratio), se=float(se), band=band, quantity=quantity,
                dof=min(num.n_batches, den.n_batches) - 1, exact=float(exact), caveat=caveat)


_SPANS = [  # (suffix, panels in increasing x, x of a panel, x's symbol, kind)
    # Panels a-d share their inputs and standardised noise, so the exact covariance is exactly
    # linear in σ²: both σ² claims are identities of this design.
    ("sigma2", "abcd", lambda r: r.problem.sigma2, "σ²", "identity"),
    ("trace", "ebf", lambda r: float(np.trace(r.problem.sample_cov)), "tr Σ̄_N", "empirical"),
]
_SPAN_TEXT = {  # (grows, proportional, condition for "grows", condition and note for "proportional")
    "sigma2": ("The span of the cloud grows with $\\sigma^2$ (panels a–d).",
               "The covariance is proportional to $\\sigma^2$ (Eq. 30): "
               "$\\operatorname{tr}C/\\sigma^2$ is the same in panels a–d.",
               "The exact covariance is linear in $\\sigma^2$, so this holds at every stable $\\eta$.",
               "A constant $\\operatorname{tr}C/\\sigma^2$ needs $C \\propto \\sigma^2$, which "
               "the exact stationary covariance is when the panels share their inputs and "
               "standardised noise, as here.",
               "Proportionality means the ratios are 1. With the panels' common inputs and "
               "standardised noise, the exact covariance is exactly linear in σ²."),
    "trace": ("The span of the cloud grows with $\\operatorname{tr}\\Sigma$ (panels e, b, f).",
              "The covariance is proportional to $\\bar\\Sigma_N$ (Eq. 30): "
              "$\\operatorname{tr}C/\\operatorname{tr}\\bar\\Sigma_N$ is the same in panels e, b, f.",
              "To first order in $\\eta$ the span does not depend on $\\Sigma$ at all; it "
              "grows only through the $O(\\eta^2)$ terms, i.e. where $\\eta$ is a sizeable "
              "fraction of $\\eta_{\\max}$.",
              "A constant $\\operatorname{tr}C/\\operatorname{tr}\\bar\\Sigma_N$ needs "
              "$C \\propto \\bar\\Sigma_N$; to first order the stationary covariance is "
              "$\\frac{\\eta\\sigma^2}{2B}I$, independent of $\\bar\\Sigma_N$.",
              "Proportionality means the ratios are 1. To first order in η the exact "
              "covariance does not depend on Σ̄_N at all."),
}


def span_claims(results: list[PanelResult]) -> list[Claim]:
    """How the span grows with σ² (a–d) and with tr Σ̄_N (e, b, f)."""
    by = {r.panel.key: r for r in results}
    claims = []
    for suffix, panels, x_of, x_name, kind in _SPANS:
        keys = [k for k in panels if k in by]
        if len(keys) < 2:
            continue
        grows = {f"{a}→{b}": trace_ratio_case(by[b], by[a], 1.0, 1.0, (1.0, None),
                                         "tr C of the next panel / tr C of this one")
                 for a, b in zip(keys, keys[1:])}
        first = by[keys[0]]
        rate = {f"{k} vs {keys[0]}": trace_ratio_case(by[k], first, x_of(by[k]), x_of(first),
                                                 RATIO_BAND, f"(tr C/{x_name}) / (tr C/{x_name}) "
                                                 f"of panel {keys[0]}") for k in keys[1:]}
        grow_text, rate_text, grow_condition, rate_condition, rate_note = _SPAN_TEXT[suffix]
        claims.append(every_case(f"ols.span_vs_{suffix}", grow_text, grows, scope="setting",
                                 condition=grow_condition,
                                 note="Qualitative claim: every ratio of consecutive traces "
                                      "above 1 confirms it.", kind=kind))
        claims.append(every_case(
            f"ols.span_vs_{suffix}_rate", rate_text, rate, scope="assumptions",
            condition=rate_condition, note=rate_note, kind=kind))
    return claims


def _axis_ratio(cov_pop: np.ndarray, c: np.ndarray) -> float:
    """Variance along Σ's principal axis over variance along its minor axis, for ``c``."""
    w, v = np.linalg.eigh(cov_pop)
    major, minor = v[:, -1], v[:, 0]
    return float(major @ c @ major / (minor @ c @ minor))


def shape_claims(results: list[PanelResult]) -> list[Claim]:
    """The cloud's orientation along Σ's principal axis (panels g, h)."""
    shape, strength = {}, {}
    for r in (r for r in results if r.panel.key in ("g", "h")):
        est, se = r.stat(lambda m, c: _axis_ratio(r.problem.cov, c))
        paper = _axis_ratio(r.problem.cov, r.problem.sample_cov)
        kw = dict(paper=paper, measured=float(est), se=float(se), dof=r.n_batches - 1,
                  exact=_axis_ratio(r.problem.cov, r.exact_cov), caveat=r.heavy_tail_caveat,
                  quantity="cloud variance along Σ's major axis / along its minor axis")
        shape[r.panel.key] = case(band=(1.0, None), **kw)
        strength[r.panel.key] = case(band=(paper / SHAPE_BAND, paper * SHAPE_BAND), **kw)
    if not shape:
        return []
    return [
        every_case("ols.shape_vs_sigma",
                   "The cloud is elongated along $\\Sigma$'s principal axis (panels g, h).", shape,
                   note="Qualitative claim: an axis-variance ratio above 1 confirms it.",
                   scope="setting", condition="Holds where the exact ratio exceeds 1."),
        every_case("ols.shape_vs_sigma_strength",
                   "The cloud's axis-variance ratio equals $\\bar\\Sigma_N$'s (Eq. 30: "
                   "$C \\propto \\bar\\Sigma_N$).",
                   strength, scope="assumptions",
                   condition="$\\bar\\Sigma_N$'s shape belongs to one step's label noise; the drift "
                             "towards $\\hat\\beta$ undoes most of it, leaving the much rounder shape of "
                             "the exact covariance."),
    ]


def noiseless_claims(results: list[PanelResult]) -> list[Claim]:
    """The label-noiseless companion converges to β* (deterministic given the seed)."""
    cases = {r.panel.key: case(
        paper=0.0, measured=float(np.linalg.norm(r.clean[-1] - r.problem.beta_star)), se=0.0,
        band=CONVERGED_BAND, exact=0.0,
        quantity="$\\|\\beta_K - \\beta^*\\|$ of label-noiseless SGD after $K$ steps") for r in results}
    return [every_case(
        "ols.noiseless_converges",
        "Label-noiseless SGD converges to $\\beta^*$ (same minibatches, no label noise).",
        cases,
        note="Deterministic given the seed: the interval is the single measured value. "
             "Empirical: whether K steps reach β* depends on η, K and the panel's data.",
        scope="setting", condition="Needs K beyond the burn-in of the slowest panel.")]


def figure3_claims(results: list[PanelResult]) -> list[Claim]:
    """Every claim of Section 6 checked against the simulated panels."""
    return (centre_claims(results) + covariance_claims(results) + span_claims(results)
            + shape_claims(results) + noiseless_claims(results))
