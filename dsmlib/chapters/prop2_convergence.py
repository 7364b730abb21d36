"""Chapter ``prop2_convergence``: the convergence bound of Proposition 2, Eq. (18), measured.

Three processes from one starting point (:mod:`dsmlib.theory.dsm`): (a) SGD with fresh label
noise, (b) the discrete doubly stochastic model, Eq. (17), and (c) the SDE, Eq. (16), solved on
a finer grid on the same Brownian paths as (b).

- **Strong error**: Eq. (18) is an upper bound, ``E||Theta(k eta) - theta_bar_k||^2 <= C eta^2``
  for all ``k <= T/eta``. It is read where it binds: at the small-``eta`` end, the peak over
  ``k`` of the mean-square error, divided by ``eta^2`` (the constant ``C``, which must stay
  bounded), and the local slope of the peak between the two smallest steps (at least 2). No
  power law is fitted across the range for the verdict (the error is ``A eta^2 + B eta^3``,
  not a power law). The claim is decided on state-dependent diffusions only (noise through
  ``Sigma^SGD(theta)`` or through ``grad f(theta)``): with additive noise (least squares with the
  label-noise term only) slope 2 follows from Euler-Maruyama's order alone, whatever the
  ``sqrt(eta)``; that case is known exactly (:mod:`dsmlib.theory.em_exact`) and is an identity
  check of its own (``prop2.strong_order_additive``).
- **Control**: the same with the ``eta`` inside the diffusion coefficient held fixed: then
  Euler-Maruyama's own order shows (mean-square error ``O(h)`` for state-dependent diffusion,
  ``O(h^2)`` for additive noise).
- **C against sigma^2**: the constant at the smallest step for several label-noise variances.
- **Weak comparison** (:mod:`.prop2_weak`): do the clouds of (a) and (b) at ``T`` approach each
  other as ``eta`` shrinks, and at what rate?
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..foundation.checks import check_int, check_positive
from ..foundation.claims import Case, Claim, case, every_case
from ..foundation.rng import child_seed, resolve_device
from ..foundation.stats import LACK_OF_FIT_ALPHA, LogLogFit, loglog_fit
from ..models.settings import least_squares_setting, mlp_setting
from ..theory.brownian import BrownianIncrements, grid_steps
from ..theory.dsm import Problem, as_problem, dsm_sde, sgd_label_noise
from ..theory.em_exact import additive_em_mse
from ..theory.sde import solve, strong_error_paths
from .prop2_weak import WEAK_BAND, WEAK_RATE, WeakComparison, power_fit, weak_comparison
from .parameters.prop2_convergence import Parameters

__all__ = ["Parameters", "STRONG_BAND", "CONTROL_BANDS", "WEAK_BAND", "WEAK_RATE", "LOF_ALPHA",
           "prop2_problems", "step_sizes", "local_slope", "StrongSweep", "strong_sweep",
           "sigma2_sweeps", "WeakComparison", "weak_comparison", "power_fit",
           "lack_of_fit_note", "prop2_claims", "coupled_paths", "path_explorer_states"]

STRONG_BAND = (1.8, None)           # Eq. (18): C eta^2 bounded, i.e. local slope >= 2, within 0.2
CONTROL_BANDS = {1.0: (0.5, 1.5), 2.0: (1.5, 2.5)}   # predicted slope -> nearer it than the other
LOF_ALPHA = LACK_OF_FIT_ALPHA       # lack of fit rejected below this p-value: the law decides nothing


def prop2_problems(*, n_samples: int = 16, seed: int = 0, device: Any = "cpu"
                   ) -> dict[str, Problem]:
    """Least squares ``f = theta^T x`` (``x ~ N(0, diag(1, 1/4))``, ``beta* = (1, 1)``, start
    ``(0.3, 1.8)``) and a tanh MLP with one input and two hidden units (``d = 7``) labelled by
    a teacher MLP, each on ``n_samples`` points, started at its own parameters, in float64 on
    ``device`` (``"auto"``: CUDA when present)."""
    dev = resolve_device(device)
    ls = least_squares_setting(n=n_samples, scales=(1.0, 0.5), seed=seed)
    mlp = mlp_setting(n=n_samples, in_dim=1, hidden=2, seed=seed)
    return {name: as_problem(s.model.to(dev), s.X, s.y_clean)
            for name, s in (("least squares", ls), ("tanh MLP", mlp))}


def step_sizes(eta_max: float, halvings: int) -> list[float]:
    """``eta_max, eta_max/2, ..., eta_max/2^halvings``."""
    eta_max = check_positive("eta_max", eta_max)
    halvings = check_int("halvings", halvings, minimum=2)
    return [eta_max / 2 ** j for j in range(halvings + 1)]


def local_slope(etas: np.ndarray, values: np.ndarray, cov: np.ndarray) -> tuple[float, float]:
    """Log-log slope of ``values`` between the two smallest step sizes (the last two entries)
    and its standard error by the delta method, from the covariance ``cov`` of ``values``
    (they share their paths, so the covariance is not diagonal)."""
    v, c = np.asarray(values, float)[-2:], np.asarray(cov, float)[-2:, -2:]
    if np.any(v <= 0):
        raise ValueError(f"values must be positive for a log-log slope, got {v}")
    dx = math.log(etas[-1] / etas[-2])
    g = np.array([-1.0 / v[0], 1.0 / v[1]]) / dx          # gradient of the slope in (v0, v1)
    return float(np.log(v[1] / v[0]) / dx), float(np.sqrt(max(g @ c @ g, 0.0)))


@dataclass
class StrongSweep:
    """Mean-square errors ``E||Theta(k eta) - theta_bar_k||^2`` over step sizes: at ``T``
    (``mean``, ``cov``, with a descriptive power-law ``fit``) and at their peak over
    ``k <= T/eta`` (``peak``, ``peak_cov``, at times ``peak_time``), on which the verdict rests;
    ``exact_peak`` is the exact expected peak where theory gives it (linear drift, additive
    noise), else None."""

    name: str
    fixed_diffusion: bool      # the control: eta inside the coefficient held at etas[0]
    sgd_noise: bool            # False: the label-noise term only
    etas: np.ndarray
    mean: np.ndarray
    cov: np.ndarray            # covariance of ``mean`` (shared paths: not diagonal)
    fit: LogLogFit
    n_paths: int
    peak: np.ndarray | None = None
    peak_cov: np.ndarray | None = None
    peak_time: np.ndarray | None = None
    exact_peak: np.ndarray | None = None
    sigma2: float | None = None

    @property
    def label(self) -> str:
        noise = "SGD + label noise" if self.sgd_noise else "label noise only"
        return f"{self.name}, {noise}"

    @property
    def additive(self) -> bool:
        """Least squares with the label-noise term only: constant diffusion, additive noise."""
        return self.name == "least squares" and not self.sgd_noise

    @property
    def predicted(self) -> float:
        """Eq. (18)'s 2; for the control Euler-Maruyama's 1 (state-dependent diffusion) or 2
        (least squares with label noise only: constant diffusion, additive noise)."""
        return 2.0 if (not self.fixed_diffusion or self.additive) else 1.0

    @property
    def local_slopes(self) -> np.ndarray:
        """Slopes of the peak error between successive step sizes (of the error at ``T``
        when no peak was recorded)."""
        y = self.mean if self.peak is None else self.peak
        return np.diff(np.log(y)) / np.diff(np.log(self.etas))

    @property
    def last_slope(self) -> tuple[float, float]:
        """Local slope of the peak error between the two smallest steps, and its SE."""
        return local_slope(self.etas, self.peak, self.peak_cov)

    @property
    def ratio(self) -> tuple[np.ndarray, np.ndarray]:
        """``max_k E||.||^2 / eta^2`` per step (the constant ``C`` of Eq. 18 where it binds)
        and its standard errors."""
        e2 = self.etas ** 2
        return self.peak / e2, np.sqrt(np.diag(self.peak_cov)) / e2

    def case(self, source: str | None = None) -> Case:
        """The local slope between the two smallest steps against its band (``source``:
        default the paper's for Eq. 16, the book's for the control)."""
        band = CONTROL_BANDS[self.predicted] if self.fixed_diffusion else STRONG_BAND
        slope, se = self.last_slope
        exact = (None if self.exact_peak is None
                 else local_slope(self.etas, self.exact_peak, np.zeros((2, 2)))[0])
        return case(paper=self.predicted, measured=slope, se=se, band=band, exact=exact,
                    quantity="local slope of max over k ≤ T/η of E‖Θ(kη) − θ̄ₖ‖², "
                             f"between η = {self.etas[-2]:g} and {self.etas[-1]:g} (two "
                             "points: lack of fit cannot be tested; every pair's local slope "
                             "is in the local-slopes table)",
                    source=source or ("book" if self.fixed_diffusion else "paper"))


def exact_peaks(problem: Problem, *, etas, horizon: float, refine: int, batch_size: int,
                sigma2: float, diffusion_eta: float | None = None) -> np.ndarray:
    """Exact ``max_k E||theta_eta(k eta) - theta_ref(k eta)||^2`` per step for a *linear*
    model with the label-noise term only (Eq. 16 with drift ``-H (theta - beta)`` and constant
    diffusion ``(eta sigma^2 / b H)^(1/2)``, ``H = X^T X / N``), from
    :func:`dsmlib.theory.em_exact.additive_em_mse`."""
    X = problem.X.detach().cpu().numpy().astype(float)
    y = problem.y.detach().cpu().numpy().astype(float)
    H = X.T @ X / X.shape[0]
    beta = np.linalg.lstsq(X, y, rcond=None)[0].reshape(-1)
    u0 = problem.theta0.detach().cpu().numpy().astype(float) - beta
    lam, Q = np.linalg.eigh(H)
    out = []
    for eta in etas:
        scale = eta if diffusion_eta is None else diffusion_eta
        G = Q @ np.diag(np.sqrt(np.clip(lam, 0, None) * scale * sigma2 / batch_size)) @ Q.T
        out.append(additive_em_mse(H, G, u0, eta=eta, horizon=horizon, refine=refine).max())
    return np.array(out)


def strong_sweep(problem: Problem, name: str, *, etas, horizon: float, refine: int,
                 n_paths: int, batch_size: int, sigma2: float, fixed_diffusion: bool = False,
                 sgd_noise: bool = True, seed: Any = 0, progress: bool = False) -> StrongSweep:
    """Eq. (17) with step ``eta`` against Eq. (16) with step ``eta / refine``, on the same
    Brownian paths, from ``problem.theta0``, at every ``k <= horizon / eta``, for every
    ``eta``. The peak over ``k`` is that of the mean over paths; its per-path values give the
    covariance across step sizes."""
    n_paths = check_int("n_paths", n_paths, minimum=3)
    etas = [check_positive("etas", e) for e in etas]
    if len(etas) < 2:
        raise ValueError(f"etas must hold at least two step sizes, got {len(etas)}")
    for e in etas:
        grid_steps(horizon, e, name="eta")
    diffusion_eta = etas[0] if fixed_diffusion else None
    sdes = [dsm_sde(problem, eta=e, batch_size=batch_size, sigma2=sigma2, sgd_noise=sgd_noise,
                    diffusion_eta=diffusion_eta) for e in etas]
    x0 = problem.theta0.expand(n_paths, -1).clone()
    paths = [e.cpu().numpy() for e in strong_error_paths(
        sdes, x0, etas, horizon=horizon, refine=refine, seed=seed, progress=progress)]
    at_T = np.stack([e[:, -1] for e in paths], axis=1)
    k_star = [int(np.argmax(e.mean(axis=0))) for e in paths]
    at_peak = np.stack([e[:, k] for e, k in zip(paths, k_star)], axis=1)
    mean, cov = at_T.mean(axis=0), np.cov(at_T, rowvar=False) / n_paths
    exact = None
    if name == "least squares" and not sgd_noise:
        exact = exact_peaks(problem, etas=etas, horizon=horizon, refine=refine,
                            batch_size=batch_size, sigma2=sigma2, diffusion_eta=diffusion_eta)
    return StrongSweep(name, fixed_diffusion, sgd_noise, np.array(etas), mean, cov,
                       loglog_fit(np.array(etas), mean, y_cov=cov), n_paths,
                       peak=at_peak.mean(axis=0), peak_cov=np.cov(at_peak, rowvar=False) / n_paths,
                       peak_time=np.array([(k + 1) * e for k, e in zip(k_star, etas)]),
                       exact_peak=exact, sigma2=float(sigma2))


def sigma2_sweeps(problem: Problem, name: str, *, sigma2s, etas, horizon: float, refine: int,
                  n_paths: int, batch_size: int, sgd_noise: bool = True, seed: Any = 0
                  ) -> list[StrongSweep]:
    """:func:`strong_sweep` (Eq. 16, not the control) for each label-noise variance in
    ``sigma2s``: how the constant ``C`` of Eq. (18) grows with ``sigma^2``."""
    return [strong_sweep(problem, name, etas=etas, horizon=horizon, refine=refine,
                         n_paths=n_paths, batch_size=batch_size, sigma2=check_positive("sigma2s", s2),
                         sgd_noise=sgd_noise, seed=child_seed(seed, 4, j))
            for j, s2 in enumerate(sigma2s)]


def lack_of_fit_note(fits: dict[str, LogLogFit | None]) -> str:
    """One line per fit: its chi-square and p-value, and whether the law is rejected (then it
    decides nothing; no interval is widened)."""
    parts = []
    for key, f in fits.items():
        if f is None:
            parts.append(f"{key}: no fit")
            continue
        parts.append(f"{key}: χ² = {f.chi2:.3g} on {f.dof} dof, p = {f.p_value:.2g}"
                     + (", law rejected (inconclusive)" if f.p_value < LOF_ALPHA else ""))
    return "Lack of fit — " + "; ".join(parts) + "."


def constant_note(sweeps: list[StrongSweep]) -> str:
    """The constant ``max_k E||.||^2 / eta^2`` at the smallest step of each sweep."""
    parts = []
    for s in sweeps:
        r, se = s.ratio
        parts.append(f"{s.label}: {r[-1]:.3g} ± {se[-1]:.2g} (SE)")
    return f"C = maxₖ E‖Θ(kη) − θ̄ₖ‖²/η² at η = {sweeps[0].etas[-1]:g}: " + "; ".join(parts) + "."


def prop2_claims(strong: list[StrongSweep], weak: list[WeakComparison]) -> list[Claim]:
    """The claims of the chapter (ids fixed): the bound on state-dependent diffusions, its
    additive case apart (an identity of Euler-Maruyama), the control and the weak rate."""
    main = [s for s in strong if not s.fixed_diffusion and not s.additive]
    additive = [s for s in strong if not s.fixed_diffusion and s.additive]
    ctrl = {s.label: s.case() for s in strong if s.fixed_diffusion}
    claims = [
        every_case("prop2.strong_order",
                   "The discrete doubly stochastic model (Eq. 17) is an order-1 strong "
                   "approximation of the SDE (Eq. 16): E‖Θ(kη) − θ̄ₖ‖² ≤ Cη² for all "
                   "k ≤ T/η (Prop. 2, Eq. 18), where the diffusion depends on the state.",
                   {s.label: s.case() for s in main}, scope="setting",
                   note="Read where the bound binds: the peak over k ≤ T/η of the mean-square "
                        "error must fall at least like η² between the two smallest steps "
                        "(band: local slope ≥ 1.8), so that C stays bounded as η shrinks. Only "
                        "state-dependent diffusions decide it (noise through Σ^SGD(θ), or "
                        "through ∇f(θ) for the MLP's label noise): there Euler–Maruyama alone "
                        "gives η, and the η² rests on the √η in the coefficient. "
                        + constant_note(main) + " Assumption A1 (bounded gradients) holds on "
                        "the region the paths visit, not on all of ℝ^d."),
        every_case("prop2.fixed_diffusion_control",
                   "The η² of Eq. (18) rests on the √η inside the diffusion coefficient: held "
                   "fixed, the error falls like h (state-dependent diffusion; Euler–Maruyama's "
                   "strong order 1/2) or h² (additive noise).", ctrl,
                   note="Local slope of the peak error between the two smallest steps h; "
                        "band: nearer the predicted 1 or 2 than the other."),
        every_case("prop2.weak_sgd_vs_dsm",
                   "SGD with unbiased label noise follows the discrete doubly stochastic model "
                   "(Eq. 17) in distribution as η shrinks, at rate η: the energy coefficient H "
                   "between their distributions at T falls like η.",
                   {w.name: w.case() for w in weak},
                   note="The paper's Remark after Prop. 2 calls Eq. 17 'a tight approximation' "
                        "of SGD and states no rate; the rate 1 is the book's (a standardised "
                        "difference of order √η, squared). Band: rate within 0.5 of 1. "
                        + lack_of_fit_note({w.name: w.fit for w in weak})),
    ]
    if additive:
        claims.insert(1, every_case(
            "prop2.strong_order_additive",
            "With additive noise (least squares, label-noise term only: constant diffusion) "
            "the error of Eq. 17 against Eq. 16 falls like η² from Euler–Maruyama's own "
            "order, whatever the √η in the coefficient.",
            {s.label: s.case(source="book") for s in additive}, kind="identity",
            note="Not evidence for Prop. 2's η², which it gives whether or not the diffusion "
                 "scales with √η: an identity check of the code against the exact expected "
                 "error (dsmlib.theory.em_exact, in 'exact'). " + constant_note(additive)))
    return claims


def coupled_paths(problem: Problem, *, eta: float, horizon: float, batch_size: int,
                  sigma2: float, n_paths: int, refine: int = 8,
                  seed: int = 0) -> dict[str, np.ndarray]:
    """Sample paths of the three processes from ``theta0``: (a) SGD, (b) Eq. (17) with step
    ``eta`` and (c) Eq. (16) with step ``eta / refine``, (b) and (c) on the same Brownian
    paths; each ``(steps + 1, n_paths, d)``."""
    K = grid_steps(horizon, eta, name="eta")
    x0 = problem.theta0.expand(n_paths, -1).clone()
    sde = dsm_sde(problem, eta=eta, batch_size=batch_size, sigma2=sigma2)
    bm = BrownianIncrements(horizon=horizon, fine_dt=eta / refine, block_dt=eta,
                            n_paths=n_paths, dim=sde.noise_dim, seed=child_seed(seed, 3, 0),
                            device=x0.device, dtype=x0.dtype)
    sgd = sgd_label_noise(problem, x0, eta=eta, steps=K, batch_size=batch_size, noise=sigma2,
                          seed=child_seed(seed, 3, 1), save=True)
    out = dict(sgd=sgd, dsm=solve(sde, x0, bm.increments(eta), eta, save=True),
               sde=solve(sde, x0, bm.increments(eta / refine), eta / refine, save=True))
    return {k: v.cpu().numpy() for k, v in out.items()}


def path_explorer_states(problem: Problem, *, etas, sigma2s, horizon: float, batch_size: int,
                         n_paths: int = 3, refine: int = 8, seed: int = 0) -> list[dict]:
    """States for :func:`dsmlib.figures.prop2_convergence.path_explorer`, sigma2-major."""
    return [coupled_paths(problem, eta=e, horizon=horizon, batch_size=batch_size, sigma2=s2,
                          n_paths=n_paths, refine=refine, seed=seed)
            for s2 in sigma2s for e in etas]
