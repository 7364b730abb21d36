"""Chapter ``prop3_regularizer``: the strength of the label-noise term (Proposition 3,
Eq. 22) and the gradient norm as a stability measure (Remark 2)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..foundation.checks import check_int, check_nonnegative, check_positive
from ..foundation.claims import slope_claim
from ..foundation.claims import Claim, case, every_case, ratio_case
from ..foundation.rng import as_generator, as_torch_generator, child_seed
from ..models.settings import Setting
from ..theory import gradient_norm as gn
from ..theory import jacobians
from ..theory.label_noise import GaussianNoise
from ..theory.minibatch import draw_minibatches
from ..theory.perturbation import PerturbationCurve, perturbation_curve
from .parameters.prop3_regularizer import Parameters

__all__ = ["Parameters", "STRENGTH_BAND", "SLOPE_BAND", "uln_sq_norm_samples", "StrengthCase",
           "prop3_strength", "real_step_strength", "prop3_claims", "PerturbationCurve",
           "perturbation_curve", "remark2_claims"]

# Tolerance bands, fixed before measuring.
STRENGTH_BAND = (0.95, 1 / 0.95)   # E||xi^ULN||^2 within 5 % of Eq. (22)
SLOPE_BAND = (0.98, 1.02)          # the log-log slope within 0.02 of 1
REMARK2_TOLERANCE = 0.1            # E||Δf||² / (s² G) within 10 % of 1 at the smallest s


# ----------------------------------------------------------------------------------------------
# Proposition 3: the strength of the label-noise term
# ----------------------------------------------------------------------------------------------


def uln_sq_norm_samples(J: torch.Tensor, *, sigma2: float, batch_size: int, eta: float,
                        n_samples: int, seed: Any = 0, replacement: bool = True,
                        chunk: int = 256) -> np.ndarray:
    """Draws of ``||xi^ULN_k||^2`` from its definition, Eq. (13), with fresh Gaussian noise.

    ``xi^ULN_k = -(sqrt(eta)/b) sum_{j in B_k} J_j^T eps_j`` is linear in the per-sample
    Jacobians ``J`` (N, L, d), so ``||xi^ULN_k||^2 = (eta/b^2) sum_{j,k} eps_j^T K_{i_j i_k}
    eps_k`` with the Gram blocks ``K_{ik} = J_i J_k^T``: one (N L) x (N L) matrix serves every
    draw, whatever ``d`` is. :func:`dsmlib.theory.diffusion.decompose_step` checks the linear form
    against real steps.
    """
    sigma2 = check_nonnegative("sigma2", sigma2)
    eta = check_positive("eta", eta)
    n_samples = check_int("n_samples", n_samples, minimum=1)
    n, L, _ = J.shape
    batch_size = check_int("batch_size", batch_size, minimum=1,
                           maximum=None if replacement else n)
    flat = J.reshape(n * L, -1)
    K = (flat @ flat.T).reshape(n, L, n, L).permute(0, 2, 1, 3)        # K[i, k] = J_i J_k^T
    rng = as_generator(seed)
    gen = as_torch_generator(rng, J.device)
    noise = GaussianNoise(sigma2)
    out = []
    for start in range(0, n_samples, chunk):
        m = min(chunk, n_samples - start)
        idx = torch.as_tensor(draw_minibatches(n, batch_size, m, replace=replacement, seed=rng),
                              device=J.device)
        eps = noise.residuals(torch.zeros(m, batch_size, L, dtype=J.dtype, device=J.device), gen)
        blocks = K[idx[:, :, None], idx[:, None, :]]                     # (m, b, b, L, L)
        out.append(eta / batch_size ** 2 * torch.einsum("mjl,mjklp,mkp->m", eps, blocks, eps))
    return torch.cat(out).cpu().numpy()


@dataclass
class StrengthCase:
    setting: str
    sigma2: float
    batch_size: int
    eta: float
    measured: float
    se: float
    predicted: float           # eta sigma^2 / (b N) sum_i ||grad f(x_i)||^2


def prop3_strength(s: Setting, *, sigma2s, batch_sizes, etas, n_samples: int,
                   seed: int = 0) -> list[StrengthCase]:
    """``E||xi^ULN||^2`` by Monte Carlo against Eq. (22) over a grid of (sigma^2, b, eta)."""
    J = jacobians.per_sample_jacobians(s.model, s.X)
    G = float(J.pow(2).sum(dim=(1, 2)).mean())
    cases = []
    for k, (s2, b, eta) in enumerate((a, b, c) for a in sigma2s for b in batch_sizes
                                     for c in etas):
        draws = uln_sq_norm_samples(J, sigma2=s2, batch_size=b, eta=eta, n_samples=n_samples,
                                    seed=child_seed(seed, k))
        cases.append(StrengthCase(s.name, float(s2), int(b), float(eta), float(draws.mean()),
                                  float(draws.std(ddof=1) / np.sqrt(draws.size)),
                                  eta * s2 / b * G))
    return cases


def real_step_strength(s: Setting, *, sigma2: float, batch_size: int, eta: float,
                       n_steps: int, seed: Any = 0) -> StrengthCase:
    """``E||xi^ULN||^2`` measured on actual minibatch steps: two real gradients of the batch
    loss, with the noisy labels and with the clean ones (two backward passes, nothing from the
    per-sample Jacobians), ``xi^ULN = (g_noisy - g_clean) sqrt(eta)`` by Eq. (12)-(13)."""
    sigma2 = check_nonnegative("sigma2", sigma2)
    eta = check_positive("eta", eta)
    n_steps = check_int("n_steps", n_steps, minimum=2)
    rng = as_generator(seed)
    gen = as_torch_generator(rng, jacobians.model_device(s.model))
    noise = GaussianNoise(sigma2)
    params = [p for p in s.model.parameters() if p.requires_grad]
    X, Y = jacobians.as_inputs(s.model, s.X), jacobians.as_labels(s.model, s.X, s.y_clean)
    idx_all = draw_minibatches(s.n, batch_size, n_steps, replace=True, seed=rng)

    def grad_of(loss: torch.Tensor) -> torch.Tensor:
        return torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, params)])

    sq = np.empty(n_steps)
    for k, idx in enumerate(idx_all):
        xb, yb = X[torch.as_tensor(idx)], Y[torch.as_tensor(idx)]
        y_noisy = noise.draw(yb, gen)
        out = s.model(xb).reshape(batch_size, -1)
        g_noisy = grad_of(0.5 * (out - y_noisy).pow(2).sum() / batch_size)
        out = s.model(xb).reshape(batch_size, -1)
        g_clean = grad_of(0.5 * (out - yb).pow(2).sum() / batch_size)
        sq[k] = float(eta * (g_noisy - g_clean).pow(2).sum())   # ||sqrt(eta)(g~ - g*)||^2
    G = gn.gradient_norm(s.model, s.X)
    return StrengthCase(s.name, sigma2, int(batch_size), eta, float(sq.mean()),
                        float(sq.std(ddof=1) / np.sqrt(n_steps)), eta * sigma2 / batch_size * G)


def _strength_cases(cases: list[StrengthCase], quantity: str) -> dict:
    return {f"{c.setting}, σ²={c.sigma2:g}, b={c.batch_size}, η={c.eta:g}": ratio_case(
        c.measured, c.se, c.predicted, band=STRENGTH_BAND, exact=1.0, quantity=quantity)
        for c in cases}


def prop3_claims(cases: list[StrengthCase],
                 real_steps: list[StrengthCase] | None = None) -> list[Claim]:
    """Eq. (22) in every grid cell; its log-log slope; and, if given, on actual SGD steps."""
    exactness = ("Exact for fresh noise with any sampling and for a fixed table without "
                 "replacement; a fixed table with replacement multiplies it by 1 + (b − 1)/N.")
    claims = [
        every_case("prop3.strength",
                   "$\\mathbb{E}\\|\\xi^{\\mathrm{ULN}}_k\\|^2 = \\frac{\\eta\\sigma^2}{bN}\\sum_i"
                   "\\|\\nabla_\\theta f(x_i,\\theta)\\|^2$ (Prop. 3, Eq. 22), in every cell of "
                   "the $(\\sigma^2, b, \\eta)$ grid, minibatches drawn with replacement.",
                   _strength_cases(cases, "$\\mathbb{E}\\|\\xi^{\\mathrm{ULN}}\\|^2$ (Monte Carlo) / Eq. 22"),
                   note="Exact, not approximate: the trace of Prop. 1's covariance. Without "
                        "replacement it holds too for fresh noise; with a fixed noise table "
                        "and replacement it gains the factor 1 + (b − 1)/N.",
                   scope="assumptions", condition=exactness, kind="identity"),
        slope_claim("prop3.strength_scaling",
                    "$\\mathbb{E}\\|\\xi^{\\mathrm{ULN}}_k\\|^2$ scales linearly in "
                    "$\\frac{\\eta\\sigma^2}{b}G(\\theta)$ across the grid (log-log slope 1).",
                    [c.predicted for c in cases], [c.measured for c in cases],
                    [c.se for c in cases], paper=1.0, band=SLOPE_BAND, exact=1.0,
                    quantity="log-log slope of measured on predicted strength",
                    scope="assumptions", condition=exactness, kind="identity"),
    ]
    if real_steps:
        claims.append(every_case(
            "prop3.strength_real_steps",
            "Eq. 22 on actual SGD steps: the squared norm of the difference between the noisy "
            "and the clean minibatch gradient, times $\\eta$, averages to "
            "$\\frac{\\eta\\sigma^2}{bN}\\sum_i\\|\\nabla_\\theta f(x_i,\\theta)\\|^2$.",
            _strength_cases(real_steps, "mean of $\\eta\\|\\tilde g_k - g^*_k\\|^2$ over real steps / Eq. 22"),
            note="Two backward passes per step, nothing shared with the per-sample arrays.",
            scope="assumptions", condition=exactness, kind="identity"))
    return claims


# ----------------------------------------------------------------------------------------------
# Remark 2: the gradient norm as sensitivity to parameter perturbations
# ----------------------------------------------------------------------------------------------


def remark2_claims(curves: list[PerturbationCurve], *,
                   tolerance: float = REMARK2_TOLERANCE) -> list[Claim]:
    """At the smallest perturbation the sensitivity equals the gradient norm (ratio 1).

    Remark 2 is a first-order statement, so its band is ``1 +- tolerance``; the note records
    the first scale at which each curve leaves that band.
    """
    cases, notes = {}, []
    for c in curves:
        cases[c.setting] = case(paper=1.0, measured=float(c.ratio[0]), se=float(c.se[0]),
                                band=(1 - tolerance, 1 + tolerance), dof=c.n_draws - 1,
                                quantity=f"E‖Δf‖² / (s² G(θ)) at s = {c.scales[0]:g}")
        off = np.flatnonzero(np.abs(c.ratio - 1) > tolerance)
        notes.append(f"{c.setting}: " + (f"ratio leaves 1 ± {tolerance:g} at s = "
                                         f"{c.scales[off[0]]:g}" if off.size else
                                         "within tolerance at every scale tried"))
    return [every_case(
        "remark2.perturbation_stability",
        "The gradient norm $G(\\theta)=\\frac1N\\sum_i\\|\\nabla_\\theta f(x_i,\\theta)\\|^2$ "
        "measures the outputs' sensitivity to small random parameter perturbations "
        "(Remark 2): $\\mathbb{E}\\|f(x,\\theta+\\delta)-f(x,\\theta)\\|^2 = s^2 G(\\theta)$ "
        "as $s\\to0$.",
        cases, note="; ".join(notes), scope="assumptions",
        condition="Remark 2 is a first-order statement: it holds only for perturbations "
                  "smaller than the scale where the curve bends.", kind="identity")]
