"""Chapter ``ols``: the least-squares experiment of Section 6 (Figure 3) and its claims.

Eight panels: (a)-(d) ``Sigma = 20 I`` with ``sigma^2`` in {0.25, 0.5, 1, 2}; (e)-(h)
``sigma^2 = 0.5`` with ``Sigma`` in {10 I, 100 I, diag(10, 100), diag(100, 10)}. Each panel runs
label-noisy SGD and its label-noiseless companion on the same minibatch sequence.

Design choices the paper leaves open, made explicit here:

- all panels share the data seed, so (a)-(d) see the same inputs and the same standardised
  noise rescaled by ``sigma`` (common random numbers); each panel has its own SGD seed;
- SGD starts at the origin; statistics use the iterates after
  :func:`dsmlib.theory.least_squares.burn_in_steps`.

The claims are in :mod:`dsmlib.chapters.ols_claims`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..foundation.rng import child_seed
from ..foundation.stats import BlockMoments, block_moments, thin
from ..theory import least_squares as ols
from ..theory.least_squares_sgd import sgd_trajectories
from ..theory.least_squares_tails import fourth_moment_limit

__all__ = ["BETA_STAR", "COVARIANCES", "HEAVY_TAIL_MARGIN", "Panel", "PanelResult",
           "paper_panels", "run_panel", "run_figure3", "explorer_states"]

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
              sgd_seed, replace: bool, n_batches: int = 50) -> PanelResult:
    """Simulate one panel of Figure 3 (noisy and noiseless runs on shared minibatches)."""
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
    clean = sgd_trajectories(problem, eta, batch_size, steps, label_noise="none", **kw)[0]
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


def explorer_states(*, sigma2s, covs: dict[str, np.ndarray], eta: float, batch_size: int,
                    steps: int, n: int = 100, seed: int = 0, replace: bool = False,
                    max_points: int = 300, transient_steps: int = 300) -> list[dict]:
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
