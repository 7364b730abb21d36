"""The gradient norm of Prop. 3 (theory): ``G(theta) = (1/N) sum_i ||grad_theta f(x_i, theta)||^2``
(Eq. 22), exactly or by random probes with a standard error.

For vector outputs ``||grad_theta f||^2`` is the squared Frobenius norm of the ``L x d``
per-sample Jacobian. The exact value needs ``L`` backward passes per sample; the probe
estimators need ``n_probes`` (see :func:`gradient_norm_probe`).
"""
from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple, Sequence

import torch
from torch import Tensor, nn
from torch.func import functional_call, jvp, vjp, vmap

from ..foundation.checks import check_choice, check_int
from ..foundation.rng import as_torch_generator
from ..foundation.stats import t_quantile
from .jacobians import (as_inputs, check_chunk, model_constants, model_device, model_dtype,
                        n_outputs, per_sample_fn, per_sample_jacobian_sq_norms, sample_chunks,
                        trainable_parameters, tree_sq_norms)

__all__ = ["ProbeEstimate", "gradient_norm", "gradient_norm_probe", "gradient_norm_probe_members",
           "member_probes", "member_probe_sq_norms", "member_probe_estimates",
           "welch_satterthwaite_dof"]


class ProbeEstimate(NamedTuple):
    """An unbiased Monte Carlo estimate, its standard error and the degrees of freedom of that
    error: ``estimate +- t_dof * standard_error`` is the interval (see :meth:`interval`);
    ``dof`` is infinite when the estimate is exact (``standard_error == 0``)."""
    estimate: float
    standard_error: float
    n_probes: int
    dof: float = math.inf

    def interval(self, level: float = 0.99) -> tuple[float, float]:
        """Two-sided Student-t interval at ``level`` with :attr:`dof` degrees of freedom."""
        half = t_quantile(level, self.dof if math.isfinite(self.dof) else 1e9) * self.standard_error
        return self.estimate - half, self.estimate + half


def gradient_norm(model: nn.Module, X: Any, *, chunk_size: int = 32,
                  progress: bool = False) -> float:
    """Exact ``G(theta) = (1/N) sum_i ||grad_theta f(x_i, theta)||^2`` (Eq. (22); squared
    Frobenius norm of the ``L x d`` Jacobian for vector outputs), via ``vmap(jacrev)``."""
    return float(per_sample_jacobian_sq_norms(model, X, chunk_size=chunk_size,
                                              progress=progress).mean())


def _probes(shape: tuple[int, ...], probe: str, generator: torch.Generator,
            dtype: torch.dtype) -> Tensor:
    if probe == "rademacher":
        return torch.randint(0, 2, shape, generator=generator,
                             device=generator.device).to(dtype) * 2 - 1
    return torch.randn(shape, generator=generator, dtype=dtype, device=generator.device)


def welch_satterthwaite_dof(variances: Tensor, dof_each: float) -> float:
    """Effective degrees of freedom of ``sum_i variances_i`` when each term is an independent
    variance estimate with ``dof_each`` degrees of freedom (Welch-Satterthwaite):
    ``(sum_i s_i^2)^2 / sum_i (s_i^4 / dof_each)``, clipped to ``[dof_each, n * dof_each]``;
    infinite when every term is zero."""
    total = float(variances.sum())
    if total == 0.0:
        return math.inf
    nu = total ** 2 * dof_each / float(variances.pow(2).sum())
    return min(max(nu, dof_each), dof_each * variances.numel())


def gradient_norm_probe(model: nn.Module, X: Any, *, n_probes: int = 2, seed: Any = 0,
                        method: str = "vjp", probe: str = "rademacher",
                        chunk_size: int = 32, progress: bool = False) -> ProbeEstimate:
    """Unbiased random-probe estimate of ``G(theta)`` (Eq. (22)) with its standard error.

    ``method="vjp"`` (default): for every sample ``i`` and probe ``k`` an independent
    output-space probe ``u_ik`` in R^L gives ``q_ik = ||J_i^T u_ik||^2`` with
    ``E q_ik = trace(J_i J_i^T) = ||J_i||_F^2``; the estimate is ``mean_ik q_ik`` and the
    standard error ``sqrt(sum_i s_i^2 / n_probes) / N`` from the per-sample variances
    ``s_i^2`` over probes (needs ``n_probes >= 2``).  Cost: ``n_probes`` per-sample VJPs
    against ``L`` for the exact Jacobian.  Each ``s_i^2`` has only ``n_probes - 1`` degrees of
    freedom and a few samples often dominate the sum, so a normal quantile undercovers (2
    probes, 9 samples, 3 outputs: 6 % of nominal 99 % intervals missed, over 1,000 seeds).
    ``dof`` is therefore the Welch-Satterthwaite effective degrees of freedom of the sum
    (:func:`welch_satterthwaite_dof`) and the interval is Student-t
    (:meth:`ProbeEstimate.interval`). Simulated coverage of the 99 % interval (tanh MLPs,
    Rademacher probes, 16-32 samples, 4-6 outputs): 99.3-99.6 % at 2 probes (conservative:
    the plug-in degrees of freedom are biased low), 98.7-99.2 % at 3-8 probes. With as few
    as 9 samples it can fall to about 98.3 % at 3-4 probes: the estimate, a sum of a few
    skewed per-sample terms, is then itself not yet normal.
    Rademacher probes on scalar outputs are exact: ``standard_error = 0``, ``dof = inf``.

    ``method="jvp"``: ``n_probes`` parameter-space probes ``v_k`` in R^d shared by all
    samples, ``e_k = (1/N) sum_i ||J_i v_k||^2`` by batched forward-mode AD (cheap: about
    one forward pass per probe), standard error ``sd(e_k)/sqrt(n_probes)`` with
    ``n_probes - 1`` degrees of freedom (the ``e_k`` are independent replicates).

    Why ``vjp`` is the default: both are Hutchinson estimators, but the jvp one is
    Hutchinson on ``A = (1/N) sum_i J_i^T J_i`` with one probe for all samples, relative
    variance ``~ 2 ||A||_F^2 / trace(A)^2 = 2 / (effective rank)``, which does not shrink
    with N and is large for networks (their NTK spectrum is dominated by a few
    directions).  The vjp probes are independent across samples, so the variance is
    ``(1/N^2) sum_i Var(q_i)`` and shrinks like ``1/N``; with Rademacher probes
    ``Var(q_i) = 2 (||J_i J_i^T||_F^2 - sum_l (J_i J_i^T)_ll^2)``, which is zero for
    scalar outputs (``L = 1``: the estimate is then exact).  ``benchmarks/bench_gradnorm.py``
    measures both.
    """
    n_probes = check_int("n_probes", n_probes, minimum=2)
    method = check_choice("method", method, ["vjp", "jvp"])
    probe = check_choice("probe", probe, ["rademacher", "gaussian"])
    chunk_size = check_chunk(chunk_size)
    X = as_inputs(model, X)
    generator = as_torch_generator(seed, model_device(model))
    if method == "vjp":
        return _vjp_estimates(model, X, 1, n_probes, probe, generator, chunk_size, progress)[0]

    params = trainable_parameters(model)
    dtype = model_dtype(model)
    n = X.shape[0]
    consts = model_constants(model)
    V = _probes((n_probes, sum(p.numel() for p in params.values())), probe, generator, dtype)
    e = torch.zeros(n_probes, dtype=dtype, device=X.device)
    with warnings.catch_warnings():
        # torch's forward-AD decompositions are scripted on first use (torch-internal notice)
        warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)
        _jvp_probe_sums(model, X, params, consts, V, e, chunk_size, progress)
    e /= n
    return ProbeEstimate(float(e.mean()), float(e.std(unbiased=True) / math.sqrt(n_probes)),
                         n_probes, float(n_probes - 1))


def _jvp_probe_sums(model: nn.Module, X: Tensor, params: dict[str, Tensor],
                    consts: dict[str, Tensor], V: Tensor, e: Tensor, chunk_size: int,
                    progress: bool) -> None:
    """``e[k] = sum_i ||J_i v_k||^2`` by batched forward-mode AD, chunk by chunk."""
    names = list(params)
    sizes = [params[k].numel() for k in names]
    n = X.shape[0]
    for k in range(V.shape[0]):
        v = dict(zip(names, (t.reshape(params[nm].shape)
                             for t, nm in zip(torch.split(V[k], sizes), names))))
        for sl in sample_chunks(n, chunk_size, progress and k == 0, "JVP probes"):
            _, tangent = jvp(lambda p: functional_call(model, (p, consts), (X[sl],)),
                             (params,), (v,))
            e[k] += tangent.pow(2).sum()


def gradient_norm_probe_members(model: nn.Module, X: Any, members: int, *, n_probes: int = 2,
                                seed: Any = 0, probe: str = "rademacher", chunk_size: int = 32,
                                progress: bool = False) -> list[ProbeEstimate]:
    """:func:`gradient_norm_probe` (``method="vjp"``) for each of the ``members`` networks held
    in one grouped module (every parameter the members' stacked along its first axis, outputs
    ``(K, L)`` per sample; see :func:`dsmlib.models.sec5_distillation.lockstep.stack_states`), in one pass.

    Member ``k``'s parameters reach only its own outputs, so its Jacobian is a block of the
    module's and ``||J_i^T u_i||^2`` splits into the members' terms by parameter block. Every
    member gets the probes a separate run with the same ``seed`` would draw, so each estimate
    equals that run's (and keeps its unbiasedness and its interval's coverage)."""
    members = check_int("members", members, minimum=1)
    n_probes = check_int("n_probes", n_probes, minimum=2)
    probe = check_choice("probe", probe, ["rademacher", "gaussian"])
    X = as_inputs(model, X)
    return _vjp_estimates(model, X, members, n_probes, probe,
                          as_torch_generator(seed, model_device(model)), check_chunk(chunk_size),
                          progress)


def _vjp_estimates(model: nn.Module, X: Tensor, members: int, n_probes: int, probe: str,
                   generator: torch.Generator, chunk_size: int, progress: bool
                   ) -> list[ProbeEstimate]:
    U = member_probes(model, X, members, n_probes, probe, generator)
    q = member_probe_sq_norms(model, X, U, members, chunk_size, progress)
    return member_probe_estimates(q, probe, U.shape[-1] // members)


def member_probes(model: nn.Module, X: Tensor, members: int, n_probes: int, probe: str,
                  generator: torch.Generator | Sequence[torch.Generator],
                  lanes: Sequence[int] | None = None) -> Tensor:
    """The probes of :func:`gradient_norm_probe_members`, ``(N, n_probes, K * L)``: each
    member gets the ``(N, n_probes, L)`` draws a separate run with ``generator`` would make.
    Members of different seeds: ``generator`` holds one generator per lane and member ``k``
    gets the draws of ``generator[lanes[k]]``."""
    n_out = n_outputs(model, X)
    if n_out % members:
        raise ValueError(f"the model's {n_out} outputs per sample do not split into {members} members")
    shape = (X.shape[0], n_probes, n_out // members)
    if lanes is None:
        return _probes(shape, probe, generator, model_dtype(model)).repeat(1, 1, members)
    if len(lanes) != members:
        raise ValueError(f"lanes must give each of the {members} members a lane, got {list(lanes)}")
    drawn = [_probes(shape, probe, g, model_dtype(model)) for g in generator]
    return torch.cat([drawn[lane] for lane in lanes], dim=-1)


def member_probe_sq_norms(model: nn.Module, X: Tensor, U: Tensor, members: int,
                          chunk_size: int = 32, progress: bool = False) -> Tensor:
    """``q[i, k, m] = ||J_{i,m}^T u_{i,k}||^2``, ``(N, n_probes, K)``: sample ``i``'s
    probe ``k`` pulled back through member ``m``'s parameters (a block of the grouped module's
    Jacobian). Deterministic given ``U``, with no host synchronisation: it can be captured."""
    params, f = trainable_parameters(model), per_sample_fn(model)
    n_probes = U.shape[1]

    def sample_q(p: dict[str, Tensor], x: Tensor, u: Tensor) -> Tensor:
        _, pullback = vjp(lambda q: f(q, x), p)
        (g,) = vmap(pullback)(u)                      # dict of (n_probes, *shape)
        return sum(t.reshape(n_probes, members, -1).pow(2).sum(-1) for t in g.values())
    qfn = vmap(sample_q, in_dims=(None, 0, 0))
    return torch.cat([qfn(params, X[sl], U[sl])
                      for sl in sample_chunks(X.shape[0], chunk_size, progress, "VJP probes")])


def member_probe_estimates(q: Tensor, probe: str, per: int) -> list[ProbeEstimate]:
    """Each member's :class:`ProbeEstimate` of ``G`` from :func:`member_probe_sq_norms`
    (``per``: outputs per member; one Rademacher output is exact)."""
    n, n_probes, members = q.shape
    out = []
    for k in range(members):
        qk = q[..., k]
        est = float(qk.mean())
        s2 = qk.var(dim=1, unbiased=True)                                    # (N,)
        se = float(torch.sqrt(s2.sum() / n_probes) / n)
        if per == 1 and probe == "rademacher":
            out.append(ProbeEstimate(est, 0.0, n_probes, math.inf))         # exact: u = +-1
            continue
        dof = welch_satterthwaite_dof(s2, n_probes - 1)
        # All probes agreeing in every sample is chance here, not exactness: keep the
        # smallest degrees of freedom rather than claim an exact value.
        out.append(ProbeEstimate(est, se, n_probes, dof if se > 0 else float(n_probes - 1)))
    return out
