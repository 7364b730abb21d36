"""``G(theta)`` of every member of a group (models layer): the gradient norm of Eq. (22) on a
fixed subsample of the training images, with its standard error, estimated by Rademacher probes
pulled back through each member's parameters -- every member in one pass of per-sample probes
(:mod:`dsmlib.theory.gradient_norm`). The probes after epoch ``e`` are drawn from
``child_seed(seed, GRADNORM, e)`` (:mod:`dsmlib.models.sec5_distillation.seeds`).
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor, nn

from ...foundation.rng import as_torch_generator, child_seed
from ...theory.gradient_norm import (ProbeEstimate, member_probe_estimates, member_probe_sq_norms,
                                    member_probes)
from .seeds import STREAM_GRADNORM

__all__ = ["GradNormMeter"]


class GradNormMeter:
    """``G`` of every member of ``model`` on (its own copy of) ``X`` by ``n_probes`` Rademacher
    probes per image, in one pass of per-sample probes; the probes of epoch ``e`` drawn from
    ``child_seed(seed, GRADNORM, e)``. Several lanes (``lanes``: each member's lane): ``X`` is
    ``(N, L, C, H, W)`` and ``seed`` holds each lane's seed; a member gets its lane's probes."""

    def __init__(self, model: nn.Module, X: Tensor, members: int, *, seed: int | Sequence[int],
                 n_probes: int, chunk_size: int, lanes: Sequence[int] | None = None) -> None:
        self.model, self.members, self.seed, self.lanes = model, members, seed, lanes
        self.X = X.to(next(model.parameters()).dtype, copy=True)
        self.n_probes, self.chunk_size = n_probes, chunk_size

    def probes(self, epoch: int) -> Tensor:
        """Epoch ``epoch``'s probes, ``(N, n_probes, K * L)``."""
        def gen(seed: int) -> torch.Generator:
            return as_torch_generator(child_seed(seed, STREAM_GRADNORM, epoch), self.X.device)
        if self.lanes is None:
            return member_probes(self.model, self.X, self.members, self.n_probes, "rademacher",
                                 gen(self.seed))
        return member_probes(self.model, self.X, self.members, self.n_probes, "rademacher",
                             [gen(s) for s in self.seed], self.lanes)

    def sq_norms(self, U: Tensor) -> Tensor:
        """The probes ``U`` pulled back through each member's parameters, squared norms
        ``(N, n_probes, K)``."""
        return member_probe_sq_norms(self.model, self.X, U, self.members, self.chunk_size)

    def estimates(self, U: Tensor, q: Tensor) -> list[ProbeEstimate]:
        """Each member's estimate of ``G`` from its probes ``U`` and squared norms ``q``."""
        return member_probe_estimates(q, "rademacher", U.shape[-1] // self.members)

    def __call__(self, epoch: int) -> list[ProbeEstimate]:
        U = self.probes(epoch)
        return self.estimates(U, self.sq_norms(U))
