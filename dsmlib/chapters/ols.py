"""Chapter ``ols``: the least-squares experiment of Section 6 (Figure 3) and its claims.

Eight panels: (a)-(d) ``Sigma = 20 I`` with ``sigma^2`` in {0.25, 0.5, 1, 2}; (e)-(h)
``sigma^2 = 0.5`` with ``Sigma`` in {10 I, 100 I, diag(10, 100), diag(100, 10)}. Each panel runs
label-noisy SGD and its label-noiseless companion on the same minibatch sequence.

Design choices the paper leaves open, made explicit here:

- all panels share the data seed, so (a)-(d) see the same inputs and the same standardised
  noise rescaled by ``sigma`` (common random numbers); each panel has its own SGD seed;
- SGD starts at the origin; statistics use the iterates after
  :func:`dsmlib.theory.least_squares.burn_in_steps`.

Beyond the figure: the cloud's shape against the exact Gaussian (:func:`shape_moments`), sweeps
of ``eta`` and ``B`` around panel (b) (:func:`run_sweep`), and the centre averaged over
label-noise draws (:func:`mean_over_draws`, Remark 5's expectation).

The claims are in :mod:`dsmlib.chapters.ols_claims`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..foundation.checks import check_int
from ..foundation.rng import as_generator, child_seed
from ..foundation.stats import BlockMoments, batch_statistic, block_moments, thin
from ..theory import least_squares as ols
from ..theory.least_squares_sgd import sgd_time_averages, sgd_trajectories
from ..theory.least_squares_tails import fourth_moment_limit
from .parameters.ols import N_BATCHES, Parameters

__all__ = ["Parameters", "BETA_STAR", "COVARIANCES", "HEAVY_TAIL_MARGIN", "Panel", "PanelResult",
           "paper_panels", "run_panel", "run_figure3", "explorer_states", "THIRD_MOMENTS",
           "shape_moments", "moment_bound", "run_sweep", "MeanOverDraws", "mean_over_draws"]

#: Second-moment statistics are flagged once eta reaches this fraction of the fourth-moment
#: limit (1 % below it, the Monte-Carlo error of eta_4 is ~0.1 %).
HEAVY_TAIL_MARGIN = 0.99

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
    eta: float = 0.01
    batch_size: int = 5
    replace: bool = False
    known_eta_4: float | None = None   # the fourth-moment limit, when already computed

    @property
    def cloud(self) -> np.ndarray:
        """Stationary part of the noisy trajectory."""
        return self.noisy[self.burn_in:]

    def stat(self, fn) -> tuple[np.ndarray, np.ndarray]:
        """Batch-means estimate and standard error of ``fn(mean, cov)`` of the cloud."""
        return self.moments.statistic(fn)

    @cached_property
    def moments(self) -> BlockMoments:
        """Block means and covariances of the stationary cloud (computed once)."""
        return block_moments(self.cloud, n_batches=self.n_batches)

    @property
    def empirical_cov(self) -> np.ndarray:
        return self.moments.cov

    @property
    def empirical_mean(self) -> np.ndarray:
        return self.moments.mean

    @cached_property
    def eta_max(self) -> float:
        """The mean-square stability limit of this panel's SGD."""
        return ols.stability_limit(self.problem, self.batch_size, replace=self.replace)

    @cached_property
    def eta_4(self) -> float:
        """The fourth-moment limit: beyond it the cloud's covariance has no finite variance."""
        if self.known_eta_4 is not None:
            return self.known_eta_4
        return fourth_moment_limit(self.problem, self.batch_size, replace=self.replace)

    @cached_property
    def heavy_tail_caveat(self) -> str:
        """Non-empty when second-moment statistics of this cloud cannot be trusted."""
        if self.eta < HEAVY_TAIL_MARGIN * self.eta_4:
            return ""
        return (f"panel {self.panel.key}: η = {self.eta:g} is {self.eta / self.eta_max:.0%} of the "
                f"stability limit η_max = {self.eta_max:.4g} and beyond the fourth-moment limit "
                f"η₄ = {self.eta_4:.4g}, so the iterates have heavy tails and a covariance "
                "estimate has no finite variance: its interval cannot be trusted")


def run_panel(panel: Panel, *, eta: float, batch_size: int, steps: int, n: int, data_seed: int,
              sgd_seed, replace: bool, n_batches: int = N_BATCHES,
              clean: bool = True) -> PanelResult:
    """Simulate one panel of Figure 3 (noisy and noiseless runs on shared minibatches; with
    ``clean=False`` the noiseless run is skipped and ``clean`` holds only the start)."""
    problem = ols.make_problem(n, panel.cov, BETA_STAR, panel.sigma2, seed=data_seed)
    try:
        burn = ols.burn_in_steps(problem, eta, batch_size, replace=replace)
    except ValueError as err:
        raise ValueError(f"panel ({panel.key}) {panel.title}: {err}") from None
    if steps < burn + 2 * n_batches:
        raise ValueError(f"steps must be at least burn-in + 2 * n_batches = "
                         f"{burn + 2 * n_batches} for panel {panel.key}, got {steps}")
    kw = dict(replace=replace, seed=sgd_seed)
    noisy = sgd_trajectories(problem, eta, batch_size, steps, label_noise="fixed", **kw)[0]
    clean = (sgd_trajectories(problem, eta, batch_size, steps, label_noise="none", **kw)[0]
             if clean else noisy[:1] * 0.0)
    return PanelResult(
        panel=panel, problem=problem, noisy=noisy, clean=clean, burn_in=burn,
        exact_mean=ols.stationary_mean(problem),
        exact_cov=ols.stationary_covariance(problem, eta, batch_size, replace=replace),
        paper_cov=ols.paper_covariance(problem, eta, batch_size), n_batches=n_batches,
        eta=float(eta), batch_size=int(batch_size), replace=bool(replace))


def run_figure3(*, eta: float = 0.01, batch_size: int = 5, steps: int = 1_000_000, n: int = 100,
                seed: int = 0, replace: bool = False, panels: list[Panel] | None = None,
                progress: bool = False, sgd_seed: int | None = None) -> list[PanelResult]:
    """All panels of Figure 3 on the data drawn from ``seed``; panel ``i`` runs SGD on the
    seed ``child_seed(sgd_seed, i)`` (``sgd_seed`` defaults to ``seed``)."""
    sgd_seed = seed if sgd_seed is None else sgd_seed
    panels = paper_panels() if panels is None else panels
    it = panels
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(panels, desc="Figure 3 panels")
    results, eta_4 = [], {}
    for i, p in enumerate(it):
        r = run_panel(p, eta=eta, batch_size=batch_size, steps=steps, n=n, data_seed=seed,
                      sgd_seed=child_seed(sgd_seed, i), replace=replace)
        key = np.asarray(p.cov, float).tobytes()   # panels with one Σ share their inputs
        r.known_eta_4 = eta_4.setdefault(key, r.eta_4)
        results.append(r)
    return results


#: The standardised third moments E[z_i z_j z_k] of a 2-D cloud, one per symmetric index.
THIRD_MOMENTS = ((0, 0, 0), (0, 0, 1), (0, 1, 1), (1, 1, 1))


def shape_moments(r: PanelResult) -> tuple[np.ndarray, np.ndarray]:
    """Mardia's moments of the stationary cloud against the exact Gaussian
    ``N(beta_hat, C_exact)``: with ``z = L^{-1}(beta - beta_hat)`` (``L L^T = C_exact``), the four
    standardised third moments :data:`THIRD_MOMENTS` (all 0 for a Gaussian; Mardia's skewness is
    the sum of their squares, with multiplicities) and the relative excess of Mardia's kurtosis,
    ``E|z|^4 / (d (d + 2)) - 1`` (0 for a Gaussian). Batch-means estimates and standard errors
    (5 values each); the exact moments standardise, so no plug-in bias."""
    if r.problem.d != 2:
        raise ValueError(f"shape_moments needs a two-parameter problem, got d = {r.problem.d}")
    L = np.linalg.cholesky(r.exact_cov)
    z = np.linalg.solve(L, (r.cloud - r.exact_mean).T).T

    def fn(b: np.ndarray) -> np.ndarray:
        third = [np.mean(b[:, i] * b[:, j] * b[:, k]) for i, j, k in THIRD_MOMENTS]
        return np.array(third + [np.mean((b ** 2).sum(axis=1) ** 2) / 8.0 - 1.0])
    est, se = batch_statistic(z, fn, n_batches=r.n_batches)
    return np.asarray(est), np.asarray(se)


def moment_bound(r: PanelResult, order: int = 8, *, n_draws: int = 200_000,
                 seed: int = 0) -> float:
    """``E ||I - eta H||_2^order`` over the run's minibatches (Monte Carlo): below 1 it proves the
    stationary cloud's ``order``-th moment finite (Minkowski on ``e' = A e + eta zeta``), which
    a batch-means interval of a fourth-moment statistic needs (``order = 8``). A sufficient
    condition only: at or above 1 the moment may still be finite."""
    from ..theory.minibatch import draw_minibatches
    idx = draw_minibatches(r.problem.n, r.batch_size, n_draws, replace=r.replace, seed=seed)
    xb = r.problem.X[idx]
    H = np.einsum("mbi,mbj->mij", xb, xb) / r.batch_size
    norms = np.linalg.norm(np.eye(r.problem.d) - r.eta * H, ord=2, axis=(1, 2))
    return float(np.mean(norms ** order))


def run_sweep(panel: Panel, *, etas, batch_sizes, eta: float, batch_size: int, steps: int,
              n: int, seed: int, replace: bool) -> tuple[list[PanelResult], list[PanelResult]]:
    """Panel ``panel`` (its data from ``seed``) at each ``eta`` of ``etas`` with ``batch_size``,
    and at each ``B`` of ``batch_sizes`` with ``eta``: label-noisy SGD only, ``steps`` steps,
    SGD seeds ``child_seed(seed, 2000, k)``. Returns the eta runs and the B runs."""
    configs = [(float(e), int(batch_size)) for e in etas] + [(float(eta), int(b)) for b in batch_sizes]
    runs = [run_panel(panel, eta=e, batch_size=b, steps=steps, n=n, data_seed=seed,
                      sgd_seed=child_seed(seed, 2000, k), replace=replace, clean=False)
            for k, (e, b) in enumerate(configs)]
    return runs[:len(etas)], runs[len(etas):]


@dataclass
class MeanOverDraws:
    """Each label-noise draw's time-averaged centre and least-squares fit, and the radius of
    the first draw's exact cloud (the unit)."""

    panel: Panel
    beta_star: np.ndarray
    centres: np.ndarray        # (M, d) time averages after the burn-in, one per draw
    beta_hats: np.ndarray      # (M, d) each draw's least-squares fit, the exact centre
    radius: float              # sqrt(tr C_exact / d) of the panel's own draw
    steps: int

    def offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean over draws of (centre - beta*) per coordinate in units of the radius, and its
        standard error (draws are independent)."""
        rel = (self.centres - self.beta_star) / self.radius
        return rel.mean(axis=0), rel.std(axis=0, ddof=1) / np.sqrt(rel.shape[0])


def mean_over_draws(panel: Panel, *, eta: float, batch_size: int, n_draws: int, steps: int,
                    n: int, seed: int, replace: bool) -> MeanOverDraws:
    """Remark 5's ``lim E beta_k`` with the expectation also over the label noise: the inputs of
    ``panel`` (data seed ``seed``) with ``n_draws`` fresh draws of the label noise (from
    ``child_seed(seed, 3000)``), each run by SGD for its burn-in plus ``steps`` steps (streams
    ``child_seed(seed, 3001)``) and averaged over those ``steps``."""
    n_draws = check_int("n_draws", n_draws, minimum=2)
    steps = check_int("steps", steps, minimum=1)
    base = ols.make_problem(n, panel.cov, BETA_STAR, panel.sigma2, seed=seed)
    burn = ols.burn_in_steps(base, eta, batch_size, replace=replace)
    noise = as_generator(child_seed(seed, 3000)).standard_normal((n_draws, n))
    labels = base.y_clean + np.sqrt(base.sigma2) * noise
    centres = sgd_time_averages(base, labels, eta, batch_size, steps, burn_in=burn,
                                seed=child_seed(seed, 3001), replace=replace)
    hats = np.linalg.lstsq(base.X, labels.T, rcond=None)[0].T
    radius = float(np.sqrt(np.trace(ols.stationary_covariance(base, eta, batch_size,
                                                              replace=replace)) / base.d))
    return MeanOverDraws(panel, base.beta_star, centres, hats, radius, int(steps))


def explorer_states(*, sigma2s, covs: dict[str, np.ndarray], eta: float, batch_size: int,
                    steps: int, n: int = 100, seed: int = 0, replace: bool = False,
                    max_points: int = 200, transient_steps: int = 300) -> list[dict]:
    """Precomputed states for :func:`dsmlib.figures.ols.cloud_explorer`, ordered Σ-major."""
    states = []
    for j, (label, cov) in enumerate(covs.items()):
        for i, s2 in enumerate(sigma2s):
            r = run_panel(Panel(f"{j}{i}", label, np.asarray(cov, float), float(s2)), eta=eta,
                          batch_size=batch_size, steps=steps, n=n, data_seed=seed,
                          sgd_seed=child_seed(seed, 1000 + j, i), replace=replace)
            states.append(dict(cloud=thin(r.cloud, max_points),
                               clean=r.clean[: transient_steps + 1: 2].astype(np.float32),
                               mean_emp=r.empirical_mean, cov_emp=r.empirical_cov,
                               mean_exact=r.exact_mean, cov_exact=r.exact_cov,
                               beta_star=r.problem.beta_star, cov_paper=r.paper_cov))
    return states
