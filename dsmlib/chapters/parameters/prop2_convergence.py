"""Chapter ``prop2_convergence``'s parameters: the SDE's approximation of SGD (Proposition 2)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...foundation.parameters import ChapterParameters, param

__all__ = ["Parameters", "DEVICES", "whole_steps"]

#: What ``device`` may name (:func:`dsmlib.foundation.rng.resolve_device`).
DEVICES = re.compile(r"auto|cpu|cuda(:\d+)?")


def whole_steps(horizon: float, step: float) -> bool:
    """Whether ``step`` divides ``horizon`` into a whole number of steps, up to a relative
    1e-9, as the paths' time grid requires (:func:`dsmlib.theory.brownian.grid_steps`)."""
    ratio = horizon / step
    return round(ratio) >= 1 and abs(ratio - round(ratio)) <= 1e-9 * ratio


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
        """Types, then the ranges every run of the chapter needs (a value no run accepts fails
        here, before any kernel starts)."""
        super().check()
        self.positive("horizon", "eta_max", "sigma2", "sigma2s", "explorer_etas")
        self.nonnegative("explorer_sigma2s")
        self.counts("halvings", minimum=2, why="a slope between the two smallest of at least "
                                                "3 step sizes")
        self.counts("refine", "batch_size", "explorer_paths")
        self.counts("n_samples", minimum=2, why="data points of each model")
        self.counts("weak_mlp_levels", minimum=2, why="the weak rate is fitted to at least 2 "
                                                      "step sizes")
        self.counts("n_directions")
        self.counts("n_paths", "sigma2_paths", minimum=3, why="the peak error's covariance "
                                                              "across step sizes")
        self.counts("jackknife_groups", minimum=2)
        self.counts("weak_paths", minimum=2 * self.jackknife_groups,
                    why=f"two paths in each of the {self.jackknife_groups} jackknife groups")
        self.counts("seed", minimum=0)
        self.nonempty("sigma2s", "explorer_etas", "explorer_sigma2s")
        if not DEVICES.fullmatch(self.device):
            raise ValueError(f"{self.where('device')} must be 'auto', 'cpu', 'cuda' or "
                             f"'cuda:N', got {self.device!r}")
        if self.eta_max > self.horizon:
            raise ValueError(f"{self.where('eta_max')} must be <= horizon ({self.horizon:g}): "
                             f"a path takes at least one step, got {self.eta_max:g}")
        for name, steps in (("eta_max", (self.eta_max,)), ("explorer_etas", self.explorer_etas)):
            for eta in steps:
                if not whole_steps(self.horizon, eta):
                    raise ValueError(f"{self.where(name)} must divide horizon "
                                     f"({self.horizon:g}) into whole steps, got {eta:g} "
                                     f"(horizon / {eta:g} = {self.horizon / eta:.6g})")
