"""Chapter ``ols``: the least-squares experiment of Section 6 (Figure 3) and its claims.

Eight panels: (a)-(d) ``Sigma = 20 I`` with ``sigma^2`` in {0.25, 0.5, 1, 2}; (e)-(h)
``sigma^2 = 0.5`` with ``Sigma`` in {10 I, 100 I, diag(10, 100), diag(100, 10)}. Each panel runs
label-noisy SGD and its label-noiseless companion on the same minibatch sequence.

Design choices the paper leaves open, made explicit here:

- all panels share the data seed, so (a)-(d) see the same inputs and the same standardised
  noise rescaled by ``sigma`` (common random numbers); each panel has its own SGD seed;
- SGD starts at the origin; statistics use the iterates after :func:`dsmlib.ols.burn_in_steps`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..foundation.claims import Case, Claim, case, every_case, measure
from ..foundation.rng import child_seed
from ..foundation.stats import batch_statistic, covariance, log_log_slope, thin
from ..theory import least_squares as ols
from ..theory.least_squares_sgd import sgd_trajectories

__all__ = ["BETA_STAR", "COVARIANCES", "Panel", "PanelResult", "paper_panels", "run_panel",
           "run_figure3", "explorer_states", "figure3_claims"]

BETA_STAR = np.array([1.0, 1.0])
#: The input covariances of the explorers (Figure 3's five settings of Sigma).
COVARIANCES = {
    "Σ = 20·I": 20 * np.eye(2),
    "Σ = 10·I": 10 * np.eye(2),
    "Σ = 100·I": 100 * np.eye(2),
    "Σ = diag(10, 100)": np.diag([10.0, 100.0]),
    "Σ = diag(100, 10)": np.diag([100.0, 10.0]),
}


@dataclass(frozen=True)
class Panel:
    key: str
    title: str
    cov: np.ndarray
    sigma2: float
    short: str = ""   # a compact title for small subplots


def paper_panels() -> list[Panel]:
    """The eight settings of Figure 3."""
    i2 = np.eye(2)
    return [
        Panel("a", "σ² = 0.25, Σ = 20·I", 20 * i2, 0.25, "σ²=0.25"),
        Panel("b", "σ² = 0.5, Σ = 20·I", 20 * i2, 0.5, "σ²=0.5"),
        Panel("c", "σ² = 1, Σ = 20·I", 20 * i2, 1.0, "σ²=1"),
        Panel("d", "σ² = 2, Σ = 20·I", 20 * i2, 2.0, "σ²=2"),
        Panel("e", "σ² = 0.5, Σ = 10·I", 10 * i2, 0.5, "Σ=10·I"),
        Panel("f", "σ² = 0.5, Σ = 100·I", 100 * i2, 0.5, "Σ=100·I"),
        Panel("g", "σ² = 0.5, Σ = diag(10, 100)", np.diag([10.0, 100.0]), 0.5, "Σ=diag(10,100)"),
        Panel("h", "σ² = 0.5, Σ = diag(100, 10)", np.diag([100.0, 10.0]), 0.5, "Σ=diag(100,10)"),
    ]


@dataclass
class PanelResult:
    """One panel: the problem, both trajectories, and the three stationary descriptions."""

    panel: Panel
    problem: ols.OLSProblem
    noisy: np.ndarray          # (steps + 1, d) label-noisy trajectory
    clean: np.ndarray          # (steps + 1, d) label-noiseless companion
    burn_in: int
    exact_mean: np.ndarray
    exact_cov: np.ndarray
    paper_cov: np.ndarray
    n_batches: int

    @property
    def cloud(self) -> np.ndarray:
        """Stationary part of the noisy trajectory."""
        return self.noisy[self.burn_in:]

    def stat(self, fn) -> tuple[np.ndarray, np.ndarray]:
        """Batch-means estimate and standard error of ``fn(cloud block)``."""
        return batch_statistic(self.cloud, fn, n_batches=self.n_batches)

    @property
    def empirical_cov(self) -> np.ndarray:
        return covariance(self.cloud)

    @property
    def empirical_mean(self) -> np.ndarray:
        return self.cloud.mean(axis=0)


def run_panel(panel: Panel, *, eta: float, batch_size: int, steps: int, n: int, data_seed: int,
              sgd_seed, replace: bool, n_batches: int = 50) -> PanelResult:
    """Simulate one panel of Figure 3 (noisy and noiseless runs on shared minibatches)."""
    problem = ols.make_problem(n, panel.cov, BETA_STAR, panel.sigma2, seed=data_seed)
    burn = ols.burn_in_steps(problem, eta, batch_size, replace=replace)
    if steps < burn + 2 * n_batches:
        raise ValueError(f"steps must be at least burn-in + 2 * n_batches = "
                         f"{burn + 2 * n_batches} for panel {panel.key}, got {steps}")
    kw = dict(replace=replace, seed=sgd_seed)
    noisy = sgd_trajectories(problem, eta, batch_size, steps, label_noise="fixed", **kw)[0]
    clean = sgd_trajectories(problem, eta, batch_size, steps, label_noise="none", **kw)[0]
    return PanelResult(
        panel=panel, problem=problem, noisy=noisy, clean=clean, burn_in=burn,
        exact_mean=ols.stationary_mean(problem),
        exact_cov=ols.stationary_covariance(problem, eta, batch_size, replace=replace),
        paper_cov=ols.paper_covariance(problem, eta, batch_size), n_batches=n_batches)


def run_figure3(*, eta: float = 0.01, batch_size: int = 5, steps: int = 1_000_000, n: int = 100,
                seed: int = 0, replace: bool = False, panels: list[Panel] | None = None,
                progress: bool = False) -> list[PanelResult]:
    """All panels of Figure 3; panel ``i`` uses SGD seed ``SeedSequence([seed, i])``."""
    panels = paper_panels() if panels is None else panels
    it = panels
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(panels, desc="Figure 3 panels")
    return [run_panel(p, eta=eta, batch_size=batch_size, steps=steps, n=n, data_seed=seed,
                      sgd_seed=child_seed(seed, i), replace=replace)
            for i, p in enumerate(it)]


def explorer_states(*, sigma2s, covs: dict[str, np.ndarray], eta: float, batch_size: int,
                    steps: int, n: int = 100, seed: int = 0, replace: bool = False,
                    max_points: int = 1500, transient_steps: int = 300) -> list[dict]:
    """Precomputed states for :func:`dsmlib.figures.ols.cloud_explorer`, ordered Σ-major."""
    states = []
    for j, (label, cov) in enumerate(covs.items()):
        for i, s2 in enumerate(sigma2s):
            r = run_panel(Panel(f"{j}{i}", label, np.asarray(cov, float), float(s2)), eta=eta,
                          batch_size=batch_size, steps=steps, n=n, data_seed=seed,
                          sgd_seed=child_seed(seed, 1000 + j, i), replace=replace)
            states.append(dict(cloud=thin(r.cloud, max_points),
                               clean=r.clean[: transient_steps + 1].astype(np.float32),
                               mean_emp=r.empirical_mean, cov_emp=r.empirical_cov,
                               mean_exact=r.exact_mean, cov_exact=r.exact_cov,
                               beta_star=r.problem.beta_star, cov_paper=r.paper_cov))
    return states


# ----------------------------------------------------------------------------------------------
# Claims. Tolerance bands (fixed before measuring): a centre within 0.1 cloud radii counts as
# "centred"; a covariance scale within a factor 1.25 counts as matching (5 % for the exact
# recursion); log-log slopes within +-0.1 of the predicted exponent; an aspect ratio within a
# factor 1.25.
# ----------------------------------------------------------------------------------------------
def _rms_radius(block: np.ndarray) -> float:
    return float(np.sqrt(np.trace(covariance(block)) / block.shape[1]))


def _axis_variance_ratio(cov_pop: np.ndarray):
    """``var along Sigma's principal axis / var along its minor axis`` of a block's cloud."""
    w, v = np.linalg.eigh(cov_pop)
    major, minor = v[:, -1], v[:, 0]

    def fn(block: np.ndarray) -> float:
        c = covariance(block)
        return float(major @ c @ major / (minor @ c @ minor))
    return fn, major, minor


def _centre_case(r: PanelResult, target: np.ndarray, source: str) -> Case:
    est, se = r.stat(lambda b: np.linalg.norm(b.mean(axis=0) - target) / _rms_radius(b))
    return case(paper=0.0, measured=float(est), se=float(se), band=(None, 0.1),
                quantity="‖centre − target‖ / cloud RMS radius", source=source,
                dof=r.n_batches - 1)


def centre_claims(results: list[PanelResult]) -> list[Claim]:
    """Where the cloud is centred: at beta* (the paper) or at beta_hat (exact)."""
    return [
        every_case(
            "ols.stationary_mean",
            "In every panel the label-noisy SGD cloud is centred at β* (Remark 5: lim E β_k = β*).",
            {r.panel.key: _centre_case(r, BETA_STAR, "paper") for r in results},
            note="The exact stationary mean of SGD with labels drawn once is the least-squares "
                 "fit β̂ to the noisy labels, which differs from β* by (XᵀX)⁻¹Xᵀε."),
        every_case(
            "ols.stationary_mean_exact",
            "In every panel the cloud is centred at β̂, the least-squares fit to the noisy labels.",
            {r.panel.key: _centre_case(r, r.exact_mean, "book") for r in results}),
    ]


def _cov_case(r: PanelResult, target: np.ndarray, source: str, band) -> Case:
    est, se = r.stat(lambda b: np.trace(covariance(b)) / np.trace(target))
    return case(paper=1.0, measured=float(est), se=float(se), band=band,
                quantity="tr(measured cov) / tr(predicted cov)", source=source,
                dof=r.n_batches - 1)


def covariance_claims(results: list[PanelResult]) -> list[Claim]:
    """The covariance's scale: the paper's (eta sigma^2/B) Sigma_bar against the exact one."""
    return [
        every_case(
            "ols.stationary_cov_paper",
            "In every panel the stationary covariance is (ησ²/B)·Σ̄_N (Remark 5, Eq. 30).",
            {r.panel.key: _cov_case(r, r.paper_cov, "paper", (0.8, 1.25)) for r in results},
            note="To first order in η the stationary covariance solves Σ̄C + CΣ̄ = ηQ, which is "
                 "close to (ησ²/2B)·I: isotropic, and smaller than the paper's by about 2λ(Σ̄)."),
        every_case(
            "ols.stationary_cov_exact",
            "In every panel the stationary covariance equals the fixed point of SGD's exact "
            "second-moment recursion.",
            {r.panel.key: _cov_case(r, r.exact_cov, "book", (0.95, 1.0 / 0.95)) for r in results}),
    ]


_SPAN_SPECS = [  # (id suffix, panels, x, x's name, "grows" statement, "rate" statement, note)
    ("sigma2", "abcd", lambda r: r.problem.sigma2, "σ² (panels a–d)",
     "The span of the cloud grows with σ² (panels a–d).",
     "The covariance is proportional to σ² (Eq. 30): log-log slope 1.", ""),
    ("trace", "ebf", lambda r: float(np.trace(r.problem.sample_cov)),
     "tr Σ̄_N (Σ = 10·I, 20·I, 100·I at σ² = 0.5)",
     "The span of the cloud grows with tr Σ (panels e, f).",
     "The covariance is proportional to Σ̄_N (Eq. 30): log-log slope 1 against tr Σ̄_N.",
     "; to first order in η the slope is 0"),
]


def _span_slope(by: dict[str, PanelResult], keys: list[str], x_of) -> tuple[float, float, list[dict]]:
    xs, ys, ses, rows = [], [], [], []
    for k in keys:
        r = by[k]
        est, se = r.stat(lambda b: np.trace(covariance(b)))
        xs.append(x_of(r)), ys.append(float(est)), ses.append(float(se))
        rows.append({"case": k, "x": x_of(r), "tr_cov": float(est), "se": float(se),
                     "tr_exact": float(np.trace(r.exact_cov)),
                     "tr_paper": float(np.trace(r.paper_cov))})
    slope, se = log_log_slope(np.array(xs), np.array(ys), np.array(ses))
    return slope, se, rows


def span_claims(results: list[PanelResult]) -> list[Claim]:
    """How the span grows with sigma^2 (panels a-d) and with tr Sigma (panels e, b, f)."""
    by = {r.panel.key: r for r in results}
    claims = []
    for suffix, panels, x_of, x_name, grows, rate, extra in _SPAN_SPECS:
        keys = [k for k in panels if k in by]
        if len(keys) < 2:
            continue
        slope, se, rows = _span_slope(by, keys, x_of)
        # Unweighted slope of the exact traces (equal weights: the points carry no noise).
        tr_exact = np.array([r["tr_exact"] for r in rows])
        exact = log_log_slope(np.array([r["x"] for r in rows]), tr_exact, tr_exact)[0]
        q = f"slope of log tr Cov against log {x_name}"
        exact_note = f"Exact recursion: slope {exact:.4f}{extra}."
        claims.append(measure(f"ols.span_vs_{suffix}", grows, paper=1.0, measured=slope, se=se,
                              band=(0.0, None), quantity=q, details=rows,
                              note="Qualitative claim: any positive slope confirms it. "
                                   + exact_note))
        claims.append(measure(f"ols.span_vs_{suffix}_rate", rate, paper=1.0, measured=slope,
                              se=se, band=(0.9, 1.1), quantity=q, details=rows, note=exact_note))
    return claims


def shape_claims(results: list[PanelResult]) -> list[Claim]:
    """The cloud's orientation along Sigma's principal axis (panels g, h)."""
    shape_cases, strength_cases = {}, {}
    for r in (r for r in results if r.panel.key in ("g", "h")):
        fn, major, minor = _axis_variance_ratio(r.problem.cov)
        est, se = r.stat(fn)
        sbar = r.problem.sample_cov
        paper_ratio = float(major @ sbar @ major / (minor @ sbar @ minor))
        exact_ratio = float(major @ r.exact_cov @ major / (minor @ r.exact_cov @ minor))
        q = "cloud variance along Σ's major axis / along its minor axis"
        shape_cases[r.panel.key] = case(paper=paper_ratio, measured=float(est), se=float(se),
                                        band=(1.0, None), quantity=q, dof=r.n_batches - 1)
        strength_cases[r.panel.key] = case(
            paper=paper_ratio, measured=float(est), se=float(se),
            band=(paper_ratio / 1.25, paper_ratio * 1.25),
            quantity=q + f" (exact recursion: {exact_ratio:.3f})", dof=r.n_batches - 1)
    if not shape_cases:
        return []
    return [
        every_case("ols.shape_vs_sigma",
                   "The cloud is elongated along Σ's principal axis (panels g, h).", shape_cases,
                   note="Qualitative claim: an axis-variance ratio above 1 confirms it."),
        every_case("ols.shape_vs_sigma_strength",
                   "The cloud's axis-variance ratio equals Σ̄_N's (Eq. 30: Cov ∝ Σ̄_N).",
                   strength_cases),
    ]


def noiseless_claims(results: list[PanelResult]) -> list[Claim]:
    """The label-noiseless companion converges to beta* (deterministic given the seed)."""
    conv_cases = {r.panel.key: case(
        paper=0.0, measured=float(np.linalg.norm(r.clean[-1] - r.problem.beta_star)), se=0.0,
        band=(None, 1e-8), quantity="‖β_K − β*‖ of label-noiseless SGD after K steps")
        for r in results}
    return [every_case(
        "ols.noiseless_converges",
        "Label-noiseless SGD converges to β* (same minibatches, no label noise).", conv_cases,
        note="Deterministic given the seed: the interval is the single measured value.")]


def figure3_claims(results: list[PanelResult]) -> list[Claim]:
    """Every claim of Section 6 checked against the simulated panels."""
    return (centre_claims(results) + covariance_claims(results) + span_claims(results)
            + shape_claims(results) + noiseless_claims(results))
