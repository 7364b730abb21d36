"""Chapter ``prop2_convergence``: the convergence bound of Proposition 2, Eq. (18), measured.

Three processes from one starting point (:mod:`dsmlib.theory.dsm`): (a) SGD with fresh label
noise, (b) the discrete doubly stochastic model, Eq. (17), and (c) the SDE, Eq. (16), solved on
a finer grid on the same Brownian paths as (b).

- **Strong error**: ``E||Theta(T) - theta_bar_K||^2`` against ``eta`` (``K = T/eta``) for
  least squares and a tanh MLP; Eq. (18) says ``<= C eta^2``: a log-log slope of at least 2.
- **Control**: the same with the ``eta`` inside the diffusion coefficient held fixed: then
  Euler-Maruyama's own order shows (mean-square error ``O(h)`` for state-dependent diffusion,
  ``O(h^2)`` for additive noise).
- **Weak comparison**: do the clouds of (a) and (b) at ``T`` approach each other as ``eta``
  shrinks? Means, covariances and the unbiased sliced energy coefficient ``H``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize as _opt
from scipy import stats as _st

from ..foundation.checks import check_int, check_positive
from ..foundation.claims import Case, Claim, case, every_case
from ..foundation.distances import energy_coefficient, group_jackknife, random_directions
from ..foundation.rng import child_seed, resolve_device
from ..foundation.stats import LogLogFit, loglog_fit
from ..models.settings import least_squares_setting, mlp_setting
from ..theory.brownian import BrownianIncrements, grid_steps
from ..theory.dsm import Problem, as_problem, dsm_iteration, dsm_sde, sgd_label_noise
from ..theory.sde import solve, strong_errors

__all__ = ["STRONG_BAND", "CONTROL_BANDS", "WEAK_BAND", "LOF_ALPHA", "prop2_problems",
           "step_sizes", "StrongSweep", "strong_sweep", "WeakComparison", "weak_comparison",
           "power_fit", "lack_of_fit_note", "prop2_claims", "coupled_paths", "path_explorer_states"]

STRONG_BAND = (1.8, None)           # Eq. (18): slope >= 2, to within 0.2
CONTROL_BANDS = {1.0: (0.5, 1.5), 2.0: (1.5, 2.5)}   # predicted slope -> nearer it than the other
WEAK_BAND = (0.0, None)             # H shrinks as eta does
LOF_ALPHA = 0.01                    # lack of fit rejected below this p-value: widen the interval


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


@dataclass
class StrongSweep:
    """Mean-square errors ``E||Theta(T) - theta_bar_K||^2`` over step sizes, and their fit."""

    name: str
    fixed_diffusion: bool      # the control: eta inside the coefficient held at etas[0]
    sgd_noise: bool            # False: the label-noise term only
    etas: np.ndarray
    mean: np.ndarray
    cov: np.ndarray            # covariance of ``mean`` (shared paths: not diagonal)
    fit: LogLogFit
    n_paths: int

    @property
    def label(self) -> str:
        noise = "SGD + label noise" if self.sgd_noise else "label noise only"
        return f"{self.name}, {noise}"

    @property
    def predicted(self) -> float:
        """Eq. (18)'s 2; for the control Euler-Maruyama's 1 (state-dependent diffusion) or 2
        (least squares with label noise only: constant diffusion, additive noise)."""
        additive = self.name == "least squares" and not self.sgd_noise
        return 2.0 if (not self.fixed_diffusion or additive) else 1.0

    @property
    def se(self) -> float:
        return self.fit.widened_se(LOF_ALPHA)

    @property
    def local_slopes(self) -> np.ndarray:
        return np.diff(np.log(self.mean)) / np.diff(np.log(self.etas))

    def case(self) -> Case:
        band = CONTROL_BANDS[self.predicted] if self.fixed_diffusion else STRONG_BAND
        return case(paper=self.predicted, measured=self.fit.slope, se=self.se, band=band,
                    dof=self.fit.dof_interval,
                    quantity="log-log slope of the mean-square error in η",
                    source="book" if self.fixed_diffusion else "paper")


def strong_sweep(problem: Problem, name: str, *, etas, horizon: float, refine: int,
                 n_paths: int, batch_size: int, sigma2: float, fixed_diffusion: bool = False,
                 sgd_noise: bool = True, seed: Any = 0, progress: bool = False) -> StrongSweep:
    """Eq. (17) with step ``eta`` against Eq. (16) with step ``eta / refine``, on the same
    Brownian paths, from ``problem.theta0``, at ``horizon``, for every ``eta``."""
    n_paths = check_int("n_paths", n_paths, minimum=3)
    etas = [check_positive("etas", e) for e in etas]
    for e in etas:
        grid_steps(horizon, e, name="eta")
    sdes = [dsm_sde(problem, eta=e, batch_size=batch_size, sigma2=sigma2, sgd_noise=sgd_noise,
                    diffusion_eta=etas[0] if fixed_diffusion else None) for e in etas]
    x0 = problem.theta0.expand(n_paths, -1).clone()
    E = strong_errors(sdes, x0, etas, horizon=horizon, refine=refine, seed=seed,
                      progress=progress).cpu().numpy()
    mean, cov = E.mean(axis=0), np.cov(E, rowvar=False) / n_paths
    return StrongSweep(name, fixed_diffusion, sgd_noise, np.array(etas), mean, cov,
                       loglog_fit(np.array(etas), mean, y_cov=cov), n_paths)


def power_fit(x: np.ndarray, y: np.ndarray, y_se: np.ndarray) -> LogLogFit | None:
    """``y = A x^s`` by weighted least squares on the *linear* scale (so estimates at or below
    zero, as an unbiased distance near zero gives, keep their weight), with the lack-of-fit
    ``chi2`` on ``n - 2`` degrees of freedom. ``None`` if the fit does not converge."""
    x, y, y_se = (np.asarray(a, dtype=float) for a in (x, y, y_se))
    pos = y > 0
    s0 = np.polyfit(np.log(x[pos]), np.log(y[pos]), 1)[0] if pos.sum() >= 2 else 1.0
    a0 = np.log(max(y.max(), 1e-300)) - s0 * np.log(x[np.argmax(y)])
    model = lambda t, la, s: np.exp(la + s * np.log(t))  # noqa: E731
    try:
        (la, s), pcov = _opt.curve_fit(model, x, y, p0=(a0, s0), sigma=y_se,
                                       absolute_sigma=True, maxfev=20_000)
    except (RuntimeError, ValueError):
        return None
    if not np.all(np.isfinite(pcov)):
        return None
    chi2 = float(np.sum(((y - model(x, la, s)) / y_se) ** 2))
    dof = x.size - 2
    return LogLogFit.from_chi2(float(s), float(la), float(np.sqrt(pcov[1, 1])), chi2, dof,
                               alpha=LOF_ALPHA)


@dataclass
class WeakComparison:
    """Clouds of SGD (a) and of Eq. (17) (b) at ``T``, per ``eta``: the sliced energy
    coefficient ``H`` (unbiased) and the naive one, the mean gap ``||m_a - m_b|| /
    sqrt(tr C_b)`` and the covariance ratio ``tr C_a / tr C_b``, each with its jackknife SE."""

    name: str
    etas: np.ndarray
    H: np.ndarray
    H_se: np.ndarray
    H_naive: np.ndarray
    mean_gap: np.ndarray
    mean_gap_se: np.ndarray
    cov_ratio: np.ndarray
    cov_ratio_se: np.ndarray
    n_paths: int
    fit: LogLogFit | None

    def case(self) -> Case:
        if self.fit is None:
            return case(paper=1.0, measured=0.0, se=0.0, band=WEAK_BAND,
                        quantity="slope of H in η",
                        caveat="H was not positive at enough step sizes to fit a slope")
        return case(paper=1.0, measured=self.fit.slope, se=self.fit.widened_se(LOF_ALPHA),
                    dof=self.fit.dof_interval, band=WEAK_BAND,
                    quantity="slope of the energy coefficient H in η")


def weak_comparison(problem: Problem, name: str, *, etas, horizon: float, n_paths: int,
                    batch_size: int, sigma2: float, n_directions: int = 16, n_groups: int = 20,
                    seed: int = 0, progress: bool = False) -> WeakComparison:
    """Run (a) and (b) with independent randomness on ``n_paths`` paths each, per ``eta``
    (streams from the seed tree under ``child_seed(seed, 2, ...)``)."""
    n_paths = check_int("n_paths", n_paths, minimum=2 * n_groups)
    W = random_directions(problem.dim, n_directions, child_seed(seed, 2, 0))

    def stats(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        H, naive = energy_coefficient(a, b, W)
        gap = np.linalg.norm(a.mean(0) - b.mean(0)) / np.sqrt(np.trace(np.cov(b.T)))
        return np.array([H, naive, gap, np.trace(np.cov(a.T)) / np.trace(np.cov(b.T))])

    x0 = problem.theta0.expand(n_paths, -1).clone()
    rows = []
    it = enumerate(etas)
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(list(it), desc=f"{name}: SGD vs Eq. (17)")
    for j, eta in it:
        K = grid_steps(horizon, eta, name="eta")
        kw = dict(eta=eta, steps=K, batch_size=batch_size)
        a = sgd_label_noise(problem, x0, noise=sigma2, seed=child_seed(seed, 2, 1, j), **kw)
        b = dsm_iteration(problem, x0, sigma2=sigma2, seed=child_seed(seed, 2, 2, j), **kw)
        est, se = group_jackknife(stats, a.cpu().numpy(), b.cpu().numpy(), n_groups=n_groups,
                                  seed=child_seed(seed, 2, 3, j))
        rows.append((est, se))
    est, se = (np.array([r[k] for r in rows]) for k in (0, 1))
    etas = np.array(etas, dtype=float)
    return WeakComparison(name, etas, est[:, 0], se[:, 0], est[:, 1], est[:, 2], se[:, 2],
                          est[:, 3], se[:, 3], n_paths, power_fit(etas, est[:, 0], se[:, 0]))


def lack_of_fit_note(fits: dict[str, LogLogFit | None]) -> str:
    """One line per fit: its chi-square, p-value and the widening applied to its interval."""
    parts = []
    for key, f in fits.items():
        if f is None:
            parts.append(f"{key}: no fit")
            continue
        widened = f.p_value < LOF_ALPHA and f.inflation > 1
        parts.append(f"{key}: χ² = {f.chi2:.3g} on {f.dof} dof, p = {f.p_value:.2g}"
                     + (f", interval widened ×{f.inflation:.2f}" if widened else ""))
    return "Lack of fit — " + "; ".join(parts) + "."


def prop2_claims(strong: list[StrongSweep], weak: list[WeakComparison]) -> list[Claim]:
    """The three claims of the chapter (ids fixed); each note records the lack of fit."""
    main = {s.label: s.case() for s in strong if not s.fixed_diffusion}
    ctrl = {s.label: s.case() for s in strong if s.fixed_diffusion}
    lof = {flag: lack_of_fit_note({s.label: s.fit for s in strong if s.fixed_diffusion == flag})
           for flag in (False, True)}
    return [
        every_case("prop2.strong_order",
                   "The discrete doubly stochastic model (Eq. 17) is an order-1 strong "
                   "approximation of the SDE (Eq. 16): E‖Θ(kη) − θ̄ₖ‖² ≤ Cη² (Prop. 2, Eq. 18).",
                   main, scope="setting",
                   note="Slope of the mean-square error at T in η, at least 2 (band: ≥ 1.8). "
                        "Assumption A1 (bounded gradients) holds on the region the paths "
                        "visit, not on all of ℝ^d. " + lof[False]),
        every_case("prop2.fixed_diffusion_control",
                   "The η² of Eq. (18) rests on the √η inside the diffusion coefficient: held "
                   "fixed, the error falls like h (state-dependent diffusion; Euler–Maruyama's "
                   "strong order 1/2) or h² (additive noise).", ctrl, note=lof[True]),
        every_case("prop2.weak_sgd_vs_dsm",
                   "SGD with unbiased label noise follows the discrete doubly stochastic model "
                   "as η shrinks (the Remark after Prop. 2): the distance between their "
                   "distributions at T decreases with η.",
                   {w.name: w.case() for w in weak}, scope="reading",
                   note="The paper states no rate (its 'paper' value 1 is the rate that weak "
                        "order 1 gives for clouds of width √η); the band asks only for a "
                        "positive slope of the bias-free energy coefficient H. "
                        + lack_of_fit_note({w.name: w.fit for w in weak})),
    ]


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
