"""Chapter ``prop2_convergence``'s parameters: the SDE's approximation of SGD (Proposition 2)."""
from __future__ import annotations

from dataclasses import dataclass

from ...foundation.parameters import ChapterParameters, param

__all__ = ["Parameters"]


@dataclass(frozen=True)
class Parameters(ChapterParameters):
    """The chapter's parameters (defaults: the ``quick`` profile)."""
    notebook = "prop2_convergence"

    horizon: float = param(0.5, "T")
    eta_max: float = param(0.125, "the largest step; the others halve it")
    halvings: int = param(4, "number of halvings of eta (5 step sizes)")
    refine: int = param(8, "the SDE reference uses step eta / refine on the same Brownian path")
    n_paths: int = param(400, "paths per step size for the strong error")
    batch_size: int = param(1, "b")
    sigma2: float = param(1.0, "label-noise variance")
    sigma2s: tuple[float, ...] = param([0.25, 1.0, 4.0, 16.0], "label-noise variances for C "
                                                               "against sigma^2 (least squares)")
    sigma2_paths: int = param(200, "paths per step size for C against sigma^2")
    n_samples: int = param(16, "N, data points of each model")
    weak_paths: int = param(10_000, "paths of SGD and of Eq. (17) each, per step size")
    weak_mlp_levels: int = param(3, "the MLP's weak comparison uses the largest step sizes only "
                                    "(cost)")
    n_directions: int = param(16, "random projections of the sliced energy distance")
    jackknife_groups: int = param(20, "groups of the jackknife standard errors")
    seed: int = param(0, "seed of every path (children per model and step size)")
    device: str = param("cpu", "\"auto\": CUDA when present (worth it for the paper profile)")
    explorer_etas: tuple[float, ...] = param([0.125, 0.0625, 0.03125], "slider of the path "
                                                                       "explorer")
    explorer_sigma2s: tuple[float, ...] = param([0.25, 1.0, 4.0], "drop-down of the path "
                                                                  "explorer")
    explorer_paths: int = param(3, "sample paths per process in each explorer state")

    def check(self) -> None:
        super().check()
        self.positive("horizon", "eta_max", "sigma2", "sigma2s", "explorer_etas")
        self.nonnegative("explorer_sigma2s")
        self.counts("halvings", "refine", "batch_size", "n_samples", "weak_mlp_levels",
                    "n_directions", "explorer_paths")
        self.counts("n_paths", "sigma2_paths", "weak_paths", "jackknife_groups", minimum=2)
        self.counts("seed", minimum=0)
        self.nonempty("sigma2s", "explorer_etas", "explorer_sigma2s")
        if self.eta_max > self.horizon:
            raise ValueError(f"{self.where('eta_max')} must be <= horizon ({self.horizon:g}): "
                             f"a path takes at least one step, got {self.eta_max:g}")
