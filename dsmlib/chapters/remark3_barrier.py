"""Chapter ``remark3_valley``, escape over a barrier (helper module of the same chapter).

Label-noisy SGD starts at one of the two isolated global minima of
:mod:`dsmlib.theory.barrier`, the sharp (high-G) or the flat (low-G) one, and runs until it first
crosses the barrier top or ``steps`` steps have passed (:mod:`dsmlib.theory.barrier_sgd`).
Measured, against ``eta``, ``sigma^2`` and ``B``: the escape probability within ``steps`` (exact
Clopper-Pearson intervals) and the escape rate per unit time ``t = k eta`` (censored runs
included: the exposure is each run's steps until it escaped or stopped; exact Poisson intervals),
and the same without label noise (the control). The prediction, fixed before measuring, is the
diffusion approximation's mean first-passage time (:func:`dsmlib.theory.barrier.escape_time_diffusion`)
and the bands below.

Two controls: without label noise (nothing moves at an interpolating minimum: true by
construction), and with a gradient noise that does not depend on ``theta``, of variance
``q = level * sigma^2 G(sharp) / B`` (``level = 1``: the label noise's own strength at the sharp
minimum), which isolates the cause: if it escapes the flat minimum too, the selectivity of
label noise comes from ``G``'s dependence on ``theta``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ..foundation.checks import check_int
from ..foundation.claims import CONFIDENCE, Case, Claim, every_case, interval_case
from ..foundation.rng import child_seed
from ..theory import barrier as BR
from ..theory.barrier_sgd import run_barrier_sgd

__all__ = ["STARTS", "SHARP_ESCAPE_BAND", "FLAT_ESCAPE_BAND", "CONTROL_BAND", "TIME_RATIO_BAND",
           "UNSELECTIVE_FLAT_BAND", "clopper_pearson", "poisson_rate_interval",
           "rate_ratio_interval", "EscapeSweep", "escape_sweep", "escape_rows",
           "constant_noise_rows", "barrier_claims"]

SHARP_ESCAPE_BAND = (0.9, None)    # P(escape within K steps) from the sharp minimum
FLAT_ESCAPE_BAND = (None, 0.2)     # ... from the flat minimum
CONTROL_BAND = (None, 0.05)        # ... without label noise, from either
TIME_RATIO_BAND = (0.5, 2.0)       # measured / diffusion-predicted mean escape time
#: theta-independent noise does not select: it escapes the flat minimum too, outside the band
#: that label noise meets there.
UNSELECTIVE_FLAT_BAND = (FLAT_ESCAPE_BAND[1], None)
STARTS = {"sharp": BR.SHARP, "flat": BR.FLAT}


def clopper_pearson(k: int, n: int, level: float = CONFIDENCE) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval for a binomial probability: coverage >= ``level``."""
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=0, maximum=n)
    a = 1.0 - level
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


def poisson_rate_interval(k: int, exposure: float, level: float = CONFIDENCE) -> tuple[float, float]:
    """Exact (Garwood) interval for a constant rate from ``k`` events in ``exposure``."""
    k = check_int("k", k, minimum=0)
    if not exposure > 0:
        raise ValueError(f"exposure must be > 0, got {exposure}")
    a = 1.0 - level
    lo = 0.0 if k == 0 else float(stats.chi2.ppf(a / 2, 2 * k)) / (2 * exposure)
    return lo, float(stats.chi2.ppf(1 - a / 2, 2 * k + 2)) / (2 * exposure)


def rate_ratio_interval(k1: int, e1: float, k2: int, e2: float,
                        level: float = CONFIDENCE) -> tuple[float, float]:
    """Exact interval for ``rate2 / rate1``: given ``k1 + k2`` events, ``k2`` is binomial with
    ``p = r2 e2 / (r1 e1 + r2 e2)``; its Clopper-Pearson interval maps to the ratio."""
    if k1 + k2 == 0:
        return 0.0, math.inf
    lo, hi = clopper_pearson(k2, k1 + k2, level)
    odds = lambda p: math.inf if p >= 1.0 else p / (1.0 - p)   # noqa: E731
    return odds(lo) * e1 / e2, odds(hi) * e1 / e2


@dataclass
class EscapeSweep:
    """Escapes of ``n_runs`` runs per configuration ``(eta, sigma2, B)`` and start."""

    problem: BR.BarrierProblem
    configs: list[tuple[float, float, int]]
    reference: tuple[float, float, int]
    steps: int
    n_runs: int
    escaped: dict[str, np.ndarray]     # start -> (n_configs,) runs that crossed
    exposure: dict[str, np.ndarray]    # start -> total steps at risk
    predicted: dict[str, np.ndarray]   # start -> diffusion mean escape time, steps
    control: dict[str, int]            # start -> escapes without label noise (reference eta, B)
    constant_levels: tuple[float, ...] = ()   # constant-noise variances / the matched one
    matched_var: float = 0.0                  # sigma^2 G(sharp) / B at the reference
    constant: dict[str, np.ndarray] | None = None   # start -> escapes per constant level
    constant_predicted: dict[str, np.ndarray] | None = None   # start -> diffusion P(escape)

    def sweep(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Indices of the configurations of the ``eta``, ``sigma2`` or ``B`` sweep, and its x."""
        k = {"eta": 0, "sigma2": 1, "B": 2}[name]
        idx = [i for i, c in enumerate(self.configs)
               if all(c[j] == self.reference[j] for j in range(3) if j != k)]
        return np.array(idx), np.array([self.configs[i][k] for i in idx], dtype=float)

    def probability(self, start: str, i: int) -> tuple[float, float, float]:
        """Escape probability within ``steps`` and its Clopper-Pearson interval."""
        k = int(self.escaped[start][i])
        return (k / self.n_runs, *clopper_pearson(k, self.n_runs))

    def mean_time(self, start: str, i: int) -> tuple[float, float, float]:
        """Mean escape time in steps (exposure / escapes) and its exact interval."""
        k, e = int(self.escaped[start][i]), float(self.exposure[start][i])
        lo, hi = poisson_rate_interval(k, e)
        return (e / k if k else math.inf), (1 / hi), (1 / lo if lo > 0 else math.inf)


def escape_sweep(problem: BR.BarrierProblem, *, etas, sigma2s, batch_sizes,
                 reference: tuple[float, float, int], steps: int, n_runs: int,
                 seed: int = 0, constant_levels=(1.0,)) -> EscapeSweep:
    """One-factor sweeps around ``reference``, from both minima, plus the noiseless control at
    the reference ``(eta, B)``; runs sharing ``B`` (and start) are one batch. Then, without
    label noise, the constant-noise control at each of ``constant_levels`` (1 is always run:
    the label noise's variance at the sharp minimum), from both minima."""
    levels = tuple(sorted({1.0} | {float(v) for v in constant_levels}))
    if any(v <= 0 for v in levels):
        raise ValueError(f"constant_levels must be > 0, got {list(constant_levels)}")
    e0, s0, b0 = float(reference[0]), float(reference[1]), int(reference[2])
    configs = sorted({(float(e), s0, b0) for e in etas} | {(e0, float(s), b0) for s in sigma2s}
                     | {(e0, s0, int(b)) for b in batch_sizes} | {(e0, s0, b0)})
    out = {key: {s: np.zeros(len(configs)) for s in STARTS} for key in ("escaped", "exposure")}
    control = {}
    for j, (name, start) in enumerate(STARTS.items()):
        for k, b in enumerate(sorted({c[2] for c in configs})):
            idx = [i for i, c in enumerate(configs) if c[2] == b]
            eta = [configs[i][0] for i in idx] + ([e0] if b == b0 else [])
            s2 = [configs[i][1] for i in idx] + ([0.0] if b == b0 else [])
            r = run_barrier_sgd(problem, start, eta=np.repeat(eta, n_runs), sigma2=np.repeat(s2, n_runs),
                                batch_size=b, steps=steps, n_runs=len(eta) * n_runs,
                                seed=child_seed(seed, j, k))
            hit = r.hit.reshape(len(eta), n_runs)
            at_risk = np.where(hit >= 0, hit, steps).sum(axis=1)
            out["escaped"][name][idx] = (hit[:len(idx)] >= 0).sum(axis=1)
            out["exposure"][name][idx] = at_risk[:len(idx)]
            if b == b0:
                control[name] = int((hit[-1] >= 0).sum())
    predicted = {name: np.array([BR.escape_time_diffusion(problem, start, eta=c[0], sigma2=c[1],
                                                          batch_size=c[2]) for c in configs])
                 for name, start in STARTS.items()}
    matched = s0 * float(BR.gradient_norm(problem, BR.SHARP)) / b0
    q = np.repeat([v * matched for v in levels], n_runs)
    constant, constant_pred = {}, {}
    for j, (name, start) in enumerate(STARTS.items()):
        r = run_barrier_sgd(problem, start, eta=e0, sigma2=0.0, noise_var=q, batch_size=b0,
                            steps=steps, n_runs=q.size, seed=child_seed(seed, j, 100))
        constant[name] = (r.hit.reshape(len(levels), n_runs) >= 0).sum(axis=1)
        constant_pred[name] = np.array([BR.escape_probability_diffusion(
            problem, start, steps, eta=e0, sigma2=0.0, batch_size=b0, noise_var=v * matched)
            for v in levels])
    return EscapeSweep(problem, configs, (e0, s0, b0), steps, n_runs, out["escaped"],
                       out["exposure"], predicted, control, levels, matched, constant,
                       constant_pred)


def escape_rows(sw: EscapeSweep) -> list[dict[str, Any]]:
    """One row per configuration and start: escapes, probability and mean time with intervals."""
    rows = []
    for name in STARTS:
        for i, (eta, s2, b) in enumerate(sw.configs):
            T = sw.predicted[name][i]
            rows.append(dict(start=name, eta=eta, sigma2=s2, B=b, escaped=int(sw.escaped[name][i]),
                             n_runs=sw.n_runs, probability=sw.probability(name, i),
                             predicted_probability=float(-np.expm1(-sw.steps / T)),
                             mean_time=sw.mean_time(name, i), predicted_time=float(T)))
    return rows


def constant_noise_rows(sw: EscapeSweep) -> list[dict[str, Any]]:
    """One row per constant-noise level and start: the noise variance, escapes and probability
    with its interval, and the diffusion's prediction."""
    rows = []
    for name in STARTS:
        for i, v in enumerate(sw.constant_levels):
            k = int(sw.constant[name][i])
            rows.append(dict(start=name, level=v, noise_var=v * sw.matched_var, escaped=k,
                             n_runs=sw.n_runs,
                             probability=(k / sw.n_runs, *clopper_pearson(k, sw.n_runs)),
                             predicted_probability=float(sw.constant_predicted[name][i])))
    return rows


def _probability_case(sw: EscapeSweep, start: str, i: int, band, *, paper: float,
                      source: str, k: int | None = None, what: str = "") -> Case:
    k = int(sw.escaped[start][i]) if k is None else k
    return interval_case(k / sw.n_runs, lambda lev: clopper_pearson(k, sw.n_runs, lev), band,
                         paper=paper, source=source,
                         quantity=f"P(cross the barrier within {sw.steps} steps){what}, "
                                  f"{k} of {sw.n_runs} runs (Clopper-Pearson)")


def barrier_claims(sw: EscapeSweep) -> list[Claim]:
    """``remark3.barrier_escape``, ``remark3.barrier_control``, ``remark3.barrier_time`` and
    ``remark4.barrier_strength``."""
    ref = sw.configs.index(sw.reference)
    escape = {"sharp minimum, label noise": _probability_case(sw, "sharp", ref, SHARP_ESCAPE_BAND,
                                                              paper=1.0, source="paper"),
              "flat minimum, label noise": _probability_case(sw, "flat", ref, FLAT_ESCAPE_BAND,
                                                             paper=0.0, source="paper")}
    control = {f"{s} minimum, no label noise": _probability_case(
        sw, s, ref, CONTROL_BAND, paper=0.0, source="book", k=sw.control[s]) for s in STARTS}
    times = {}
    for i, (eta, s2, b) in enumerate(sw.configs):
        m = sw.mean_time("sharp", i)[0]
        k, e = int(sw.escaped["sharp"][i]), float(sw.exposure["sharp"][i])
        T = float(sw.predicted["sharp"][i])

        def ratio_interval(lev, k=k, e=e, T=T):
            lo, hi = poisson_rate_interval(k, e, lev)
            return 1 / hi / T, (1 / lo if lo > 0 else math.inf) / T
        times[f"η = {eta:g}, σ² = {s2:g}, B = {b}"] = interval_case(
            m / T, ratio_interval, TIME_RATIO_BAND, paper=1.0, source="book",
            quantity=f"mean escape time from the sharp minimum / diffusion prediction "
                     f"({T:.3g} steps); exact Poisson interval")
    strength = {}
    pairs = [(name, a, b) for name in ("sigma2", "eta", "B")
             for a, b in zip(*(lambda i: (i[:-1], i[1:]))(sw.sweep(name)[0]))]
    for name, i1, i2 in pairs:
        lo_c, hi_c = (i1, i2) if name != "B" else (i2, i1)    # weaker strength -> stronger
        k1, k2 = int(sw.escaped["sharp"][lo_c]), int(sw.escaped["sharp"][hi_c])
        e1 = float(sw.exposure["sharp"][lo_c]) * sw.configs[lo_c][0]   # per unit time t = k eta
        e2 = float(sw.exposure["sharp"][hi_c]) * sw.configs[hi_c][0]
        est = (k2 / e2) / (k1 / e1) if k1 and k2 else (math.inf if k2 else 0.0)
        c1, c2 = sw.configs[lo_c], sw.configs[hi_c]
        strength[f"{name}: ησ²/B {c1[0] * c1[1] / c1[2]:g} → {c2[0] * c2[1] / c2[2]:g}"] = interval_case(
            est, lambda lev, a=(k1, e1, k2, e2): rate_ratio_interval(*a, lev), (1.0, None),
            paper=1.0, source="paper",
            quantity="escape rate per unit time t = kη at the larger ησ²/B over the smaller "
                     "(exact conditional interval)")
    matched = sw.constant_levels.index(1.0)
    unselective = {"flat minimum, θ-independent noise": _probability_case(
        sw, "flat", matched, UNSELECTIVE_FLAT_BAND, paper=1.0, source="book",
        k=int(sw.constant["flat"][matched]),
        what=f" with noise of variance {sw.matched_var:.3g} and no label noise")}
    k_sharp = int(sw.constant["sharp"][matched])
    return [
        every_case("remark3.barrier_escape", "SGD with label noise escapes over a barrier from a "
                   "sharp minimum with a high gradient norm G, and stays at a flat one with a low "
                   "G (Remark 3).", escape, scope="assumptions",
                   condition="Needs enough steps for the sharp minimum and few enough for the flat "
                             "one: both escape times grow like exp(const · B/(ησ²)).",
                   note="Both minima are global (loss 0); G(sharp)/G(flat) = "
                        f"{float(BR.gradient_norm(sw.problem, BR.SHARP)):.3g}. Bands fixed from the "
                        "diffusion prediction before measuring."),
        every_case("remark3.barrier_control", "Control, not evidence: without label noise SGD "
                   "never leaves either minimum (every residual, so every step, is zero there).",
                   control, note="True by construction at an interpolating minimum; it shows that "
                                 "the escapes above come from the label noise.",
                   kind="identity"),
        every_case("remark3.barrier_constant_noise", "Control that isolates the cause: a "
                   "gradient noise that does not depend on θ, as strong as the label noise at the "
                   "sharp minimum (variance σ²G(sharp)/B), also escapes the flat minimum "
                   "(probability above 0.2, outside the band that label noise meets there), so "
                   "it does not select: the selectivity of Remark 3 comes from G's dependence "
                   "on θ.", unselective,
                   note=f"Runs at the reference (η, B) = ({sw.reference[0]:g}, {sw.reference[2]}) "
                        f"without label noise, adding η·√q·z to each step with q = σ²G(sharp)/B "
                        f"= {sw.matched_var:.3g}. At the flat minimum the label noise's variance "
                        f"is G(sharp)/G(flat) = "
                        f"{float(BR.gradient_norm(sw.problem, BR.SHARP) / BR.gradient_norm(sw.problem, BR.FLAT)):.3g} "
                        f"times smaller; this noise is not. From the sharp minimum it escapes in "
                        f"{k_sharp} of {sw.n_runs} runs (label noise: "
                        f"{int(sw.escaped['sharp'][sw.configs.index(sw.reference)])}); the other "
                        "levels, and the diffusion's prediction that no constant level meets both "
                        "bands, are in the chapter's table."),
        every_case("remark3.barrier_time", "The diffusion approximation (Eq. 16 with the noise of "
                   "Prop. 3) predicts the mean escape time from the sharp minimum within a factor "
                   "of 2, across σ², η and B.", times,
                   note="Prediction: the mean first-passage time of dθ = −L′dt + √(η(σ²G+V)/B) dW "
                        "over the barrier top (V: the clean residuals' minibatch variance)."),
        every_case("remark4.barrier_strength", "A larger ησ²/B makes SGD escape the sharp "
                   "minimum faster (Remark 4): the escape rate per unit time rises with σ² and η "
                   "and falls with B.", strength, scope="reading",
                   condition="Per unit time t = kη; per step the η dependence is stronger still."),
    ]
