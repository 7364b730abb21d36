"""Chapter ``prop1_noise``: the two noise terms of label-noisy SGD (Proposition 1), sampled
from real minibatch steps, and the Section 5.2 check of the symmetric logit swap.

Every draw uses the book's one sampler (:func:`dsmlib.theory.minibatch.draw_minibatches`) and
a label-noise model of :mod:`dsmlib.theory.label_noise`, so the symmetric swap noise plugs in
where the Gaussian noise does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from ..foundation.checks import check_choice, check_int, check_nonnegative, check_positive
from ..foundation.claims import Case, Claim, case, every_case
from ..foundation.rng import as_generator, as_torch_generator, child_seed
from ..foundation.stats import covariance, thin
from ..models.settings import Setting, least_squares_setting
from ..theory import diffusion, jacobians
from ..theory.label_noise import (FixedLabelNoise, GaussianNoise, LabelNoise, SymmetricSwapNoise,
                                  swap_expectation_matrix, symmetric_swap_expectation)
from ..theory.minibatch import draw_minibatches, prop1_covariance_factors
from .parameters.prop1_noise import Parameters

__all__ = ["Parameters", "NoiseSamples", "PAPER_BATCHES", "predicted_moments", "sample_noise_terms",
           "paper_batch_samples", "noise_explorer_states", "swap_expectation_claims"]

#: The paper's own (N, b) where minibatches are b-subsets: Section 6 (N = 100, B = 5), and
#: Section 5 (batch 64 on the 80 % training split of CIFAR-10/100, N = 40,000).
PAPER_BATCHES = {"Section 6": (100, 5), "Section 5": (40_000, 64)}


@dataclass
class NoiseSamples:
    """Monte-Carlo draws of ``xi*_k`` and ``xi^ULN_k`` (Eq. 13) from real decomposed steps."""

    setting: str
    sigma2: float
    batch_size: int
    eta: float
    replacement: bool
    noise_mode: str
    xi_star: np.ndarray        # (n_samples, d)
    xi_uln: np.ndarray         # (n_samples, d)
    predicted: dict = field(default_factory=dict)
    n: int | None = None       # N, the data points the minibatches are drawn from


def predicted_moments(s: Setting, *, sigma2: float, batch_size: int, eta: float,
                      replacement: bool, noise_mode: str, noise: LabelNoise | None = None,
                      fixed_noise: torch.Tensor | None = None,
                      jacobians_: torch.Tensor | None = None,
                      gradients_: torch.Tensor | None = None) -> dict[str, np.ndarray]:
    """Proposition 1's covariances, the exact scheme factors, and the fixed-noise drift.

    ``cov_star_paper = (eta/b) Sigma^SGD`` and ``cov_uln_paper = (eta sigma^2 / b) Sigma^ULN``
    are the paper's formulas (Eq. 14); for a non-Gaussian ``noise`` the label covariance
    ``C_i`` replaces ``sigma^2 I``. ``cov_star`` and ``cov_uln`` multiply them by the exact
    factors of :func:`dsmlib.theory.minibatch.prop1_covariance_factors`. With labels drawn once
    (``fixed_noise``), ``mean_uln = -sqrt(eta) (1/N) sum_i J_i^T eps_i`` is the batch mean of
    ``xi^ULN`` conditional on that draw. ``jacobians_`` (``J_i``) and ``gradients_`` (the
    per-sample loss gradients at ``E[y~]``), if given, save recomputing them.
    """
    c_sgd, c_uln = prop1_covariance_factors(s.n, batch_size, replacement=replacement,
                                            noise_mode=noise_mode)
    y0 = s.y_clean if noise is None else noise.mean(s.y_clean)
    if gradients_ is None:
        s_sgd = diffusion.sigma_sgd(s.model, s.X, y0).cpu().numpy()
    else:
        s_sgd = covariance(gradients_.cpu().numpy())              # Eq. (15), normalised by N
    if (noise is None or isinstance(noise, GaussianNoise)) and jacobians_ is not None:
        J = jacobians_.cpu().numpy()
        uln = sigma2 * np.einsum("nld,nle->de", J, J) / s.n       # (1/N) sum_i J_i^T J_i
    elif noise is None or isinstance(noise, GaussianNoise):
        uln = sigma2 * diffusion.sigma_uln(s.model, s.X).cpu().numpy()
    else:
        uln = diffusion.sigma_uln(s.model, s.X, label_cov=noise.covariance(s.y_clean)).cpu().numpy()
    out = dict(cov_star_paper=eta / batch_size * s_sgd,
               cov_uln_paper=eta / batch_size * uln,
               c_sgd=c_sgd, c_uln=c_uln)
    out["cov_star"] = c_sgd * out["cov_star_paper"]
    out["cov_uln"] = c_uln * out["cov_uln_paper"]
    if fixed_noise is not None:
        J = jacobians.per_sample_jacobians(s.model, s.X) if jacobians_ is None else jacobians_
        eps = fixed_noise.reshape(s.n, -1).to(J)
        v = torch.einsum("nl,nld->nd", eps, J).cpu().numpy()         # v_i = J_i^T eps_i
        out["mean_uln"] = -np.sqrt(eta) * v.mean(axis=0)
        # Conditional on the one table: the minibatch mean of the fixed vectors -sqrt(eta) v_j.
        out["cov_uln_given_table"] = eta / batch_size * c_sgd * covariance(v)
    return out


def sample_noise_terms(s: Setting, *, sigma2: float, batch_size: int, eta: float,
                       n_samples: int, replacement: bool = True, noise_mode: str = "fresh",
                       noise: LabelNoise | None = None, seed: Any = 0,
                       n_real_steps: int | None = None, chunk: int = 4096,
                       progress: bool = False) -> NoiseSamples:
    """Monte-Carlo draws of the two noise terms of Eq. (12) at the setting's ``theta``.

    Each draw picks a minibatch (``replacement`` selects the scheme) and label noise from
    ``noise`` (default :class:`~dsmlib.theory.label_noise.GaussianNoise` of variance
    ``sigma2``; ``noise_mode="fresh"``: redrawn every step; ``"fixed"``: one table drawn before
    training). The clean label is ``E[y~]`` (the paper's reading for a biased noise such as
    the swap). By Eq. (13) the terms are linear in the per-sample loss gradients ``g_i`` and
    Jacobians ``J_i``: ``xi* = sqrt(eta) (mean_{j in B} g_j - g_bar)`` and
    ``xi^ULN = -(sqrt(eta)/b) sum_{j in B} J_j^T eps_j``, so draws are vectorised over those.
    The first ``n_real_steps`` draws (default ``min(100, n_samples)``) are also taken as real
    SGD steps and split by :func:`dsmlib.theory.diffusion.decompose_step`;
    ``predicted["real_step_deviation"]`` is the largest relative difference between the two
    computations (it must be at rounding level).
    """
    sigma2 = check_nonnegative("sigma2", sigma2)
    eta = check_positive("eta", eta)
    n_samples = check_int("n_samples", n_samples, minimum=2)
    if n_real_steps is None:
        n_real_steps = min(100, n_samples)
    n_real_steps = check_int("n_real_steps", n_real_steps, minimum=0, maximum=n_samples)
    batch_size = check_int("batch_size", batch_size, minimum=1,
                           maximum=None if replacement else s.n)
    noise_mode = check_choice("noise_mode", noise_mode, ["fresh", "fixed"])
    model_noise = GaussianNoise(sigma2) if noise is None else noise
    rng = as_generator(seed)
    device = jacobians.model_device(s.model)
    gen = as_torch_generator(rng, device)
    y0 = model_noise.mean(s.y_clean)                                    # E[y~]
    g = jacobians.per_sample_loss_gradients(s.model, s.X, y0, chunk_size=chunk)   # (N, d)
    J = jacobians.per_sample_jacobians(s.model, s.X, chunk_size=chunk)            # (N, L, d)
    g_bar = g.mean(dim=0)
    idx_all = torch.as_tensor(draw_minibatches(s.n, batch_size, n_samples, replace=replacement,
                                               seed=rng), device=device)
    table = None
    if noise_mode == "fixed":
        source = FixedLabelNoise(model_noise, s.y_clean, gen)
        table = (source.y_noisy - y0).reshape(s.n, -1)
        eps_all = table[idx_all]                                        # (n, b, L)
    else:
        # eps = y~ - E[y~]: the noise acts on the clean labels, E[y~] is subtracted.
        eps_all = model_noise.residuals(s.y_clean.reshape(s.n, -1)[idx_all], gen)
    xs, xu = [], []
    root = np.sqrt(eta)
    for start in range(0, n_samples, chunk):
        idx, eps = idx_all[start:start + chunk], eps_all[start:start + chunk].to(J)
        xs.append((root * (g[idx].mean(dim=1) - g_bar)).cpu().numpy())
        xu.append((-root / batch_size * torch.einsum("mbl,mbld->md", eps, J[idx])).cpu().numpy())
    xi_star, xi_uln = np.concatenate(xs), np.concatenate(xu)

    deviation = 0.0
    g_full = jacobians.loss_gradient(s.model, s.X, y0)
    it = range(n_real_steps)
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(it, desc=f"{s.name}: real decomposed steps")
    for k in it:
        idx = idx_all[k]
        y_noisy = y0[idx] + eps_all[k].reshape(y0[idx].shape).to(y0)
        dec = diffusion.decompose_step(s.model, s.X, y0, y_noisy, idx, eta,
                                       full_gradient=g_full)
        for real, vec in ((dec.xi_star.cpu().numpy(), xi_star[k]),
                          (dec.xi_uln.cpu().numpy(), xi_uln[k])):
            scale = max(np.abs(real).max(), 1e-300)
            deviation = max(deviation, float(np.abs(real - vec).max() / scale))
    pred = predicted_moments(s, sigma2=sigma2, batch_size=batch_size, eta=eta,
                             replacement=replacement, noise_mode=noise_mode, noise=noise,
                             fixed_noise=table, jacobians_=J, gradients_=g)
    pred["real_step_deviation"] = deviation
    return NoiseSamples(s.name, sigma2, batch_size, eta, replacement, noise_mode,
                        xi_star, xi_uln, pred, n=s.n)


def paper_batch_samples(draws: Sequence[int], *, sigma2: float, eta: float,
                        seed: int = 0) -> dict[str, NoiseSamples]:
    """Draws of the noise terms without replacement, fresh noise, at each of
    :data:`PAPER_BATCHES` (``draws[k]`` for the ``k``-th), on least squares with that many
    points: what Proposition 1 gives where the paper itself runs SGD on subsets. The
    finite-population factor does not depend on the model."""
    draws = list(draws)
    if len(draws) != len(PAPER_BATCHES):
        raise ValueError(f"draws must give one count per paper batch setting "
                         f"({', '.join(PAPER_BATCHES)}), got {draws!r}")
    out = {}
    for k, (label, (n, b)) in enumerate(PAPER_BATCHES.items()):
        n_samples = check_int("draws", draws[k], minimum=2)
        out[label] = sample_noise_terms(
            least_squares_setting(n=n, seed=seed), sigma2=sigma2, batch_size=b, eta=eta,
            n_samples=n_samples, replacement=False, n_real_steps=0,
            seed=child_seed(seed, 7, k), chunk=max(4096, 2 ** 19 // b))
    return out


def noise_explorer_states(s: Setting, *, sigma2s, batch_sizes, eta: float, n_samples: int,
                          max_points: int = 800, replacement: bool = True,
                          seed: int = 0) -> list[dict]:
    """States for :func:`dsmlib.figures.prop1_noise.noise_explorer` (two-parameter models),
    σ²-major. Each holds at most ``max_points`` of the ``n_samples`` draws."""
    if s.d != 2:
        raise ValueError(f"the noise explorer needs a two-parameter model, got d = {s.d}")
    states = []
    for j, s2 in enumerate(sigma2s):
        for i, b in enumerate(batch_sizes):
            r = sample_noise_terms(s, sigma2=s2, batch_size=b, eta=eta, n_samples=n_samples,
                                   replacement=replacement, n_real_steps=0,
                                   seed=child_seed(seed, j, i))
            states.append(dict(xi_star=thin(r.xi_star, max_points),
                               xi_uln=thin(r.xi_uln, max_points),
                               cov_star=r.predicted["cov_star"], cov_uln=r.predicted["cov_uln"]))
    return states


# ----------------------------------------------------------------------------------------------
# Section 5.2: the expectation of the symmetric logit swap
#: The realised shift of E[ỹ] within 5 % of the paper's.
SWAP_BAND = (0.95, 1 / 0.95)
# ----------------------------------------------------------------------------------------------


def swap_expectation_claims(y: torch.Tensor, *, ps, n_draws: int, seed: int = 0) -> list[Claim]:
    """Does swapping logits give the paper's ``E[y~]``? Measured for each variant of
    :class:`dsmlib.SymmetricSwapNoise` on the label vectors ``y`` (N, L).

    Quantity: the fraction of the paper's predicted shift that the swapped labels realise,
    ``t = <mean(y~) - y, paper - y> / ||paper - y||^2`` (the paper says 1; band 1 +- 5 %).
    ``t`` is linear in the draws, so its standard error (from ``n_draws`` independent draws)
    carries no bias.
    """
    n_draws = check_int("n_draws", n_draws, minimum=2)
    y = torch.as_tensor(y, dtype=torch.float64)
    cases: dict[str, dict[str, Case]] = {v: {} for v in SymmetricSwapNoise.VARIANTS}
    for k, p in enumerate(ps):
        shift = symmetric_swap_expectation(y, p) - y
        for j, variant in enumerate(SymmetricSwapNoise.VARIANTS):
            model = SymmetricSwapNoise(p, variant)
            t = np.array([float(((model.draw(y, seed=int(ss.generate_state(1)[0])) - y) * shift).sum()
                                / shift.pow(2).sum())
                          for ss in child_seed(seed, k, j).spawn(n_draws)])
            exact = float(((y @ swap_expectation_matrix(y.shape[-1], p, variant).to(y).T - y)
                           * shift).sum() / shift.pow(2).sum())
            cases[variant][f"p={p:g}"] = case(
                paper=1.0, measured=float(t.mean()),
                se=float(t.std(ddof=1) / np.sqrt(n_draws)), band=SWAP_BAND, exact=exact,
                quantity="realised / predicted shift of $\\mathbb{E}[\\tilde y]$",
                source="paper" if variant == "literal" else "book")
    return [
        every_case("sec5.swap_expectation",
                   "Swapping each logit, with probability p, with a uniformly chosen other logit "
                   "gives $\\mathbb{E}[\\tilde y_l] = (1-p)\\,y_l + p\\sum_{m\\neq l} y_m/(L-1)$ "
                   "(Section 5.2, Eq. 24).",
                   cases["literal"],
                   note="A transposition also moves $y_l$ into dimension $m$, and later dimensions "
                        "may swap again, so the literal procedure's shift differs from the "
                        "paper's (per-p values in the details; for L = 2 and p = 1 it swaps "
                        "twice and returns $y$).",
                   scope="reading",
                   condition="Holds if 'swap' means copying a random other logit's value, or "
                             "permuting all logits by a random derangement."),
        every_case("sec5.swap_expectation_copy",
                   "Letting each logit, with probability p, copy a uniformly chosen other "
                   "logit's original value gives the paper's $\\mathbb{E}[\\tilde y]$.", cases["copy"],
                   kind="identity"),
        every_case("sec5.swap_expectation_derangement",
                   "Permuting all logits by a uniform derangement with probability p gives the "
                   "paper's $\\mathbb{E}[\\tilde y]$.", cases["derangement"], kind="identity"),
    ]
