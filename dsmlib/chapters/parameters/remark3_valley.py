"""Chapter ``remark3_valley``'s parameters: drift along valleys of minima and escape over a
barrier (Remarks 3 and 4)."""
from __future__ import annotations

from dataclasses import dataclass

from ...foundation.parameters import ChapterParameters, param

__all__ = ["Parameters"]


@dataclass(frozen=True)
class Parameters(ChapterParameters):
    """The chapter's parameters (defaults: the ``quick`` profile). Triples ``(η, σ², B)`` are
    written as lists."""
    notebook = "remark3_valley"

    seed: int = param(0, "seed of the scalar model's data and of every run")
    n_runs: int = param(128, "independent runs (seeds) per group")
    record_every: int = param(50, "steps between recorded iterates")
    n_scalar: int = param(64, "samples of the scalar product model f(x; θ) ≡ θ₁θ₂x, y ≡ βx")
    beta: float = param(1.0, "its β")
    start_stretch: float = param(3.0, "the start θ₀ is (3, 1/3), where θ₁θ₂ is β")
    eta: float = param(0.02, "its learning rate")
    sigma2: float = param(2.0, "its label-noise variance")
    batch_size: int = param(4, "its batch size")
    steps: int = param(15_000, "its steps")
    n_diag: int = param(3, "samples of the diagonal network f(x) ≡ Σ_j u_j v_j x_j, N < d")
    d_diag: int = param(6, "its dimension d")
    diag_seed: int = param(1, "its data seed")
    diag_eta: float = param(0.1, "its learning rate")
    diag_sigma2: float = param(0.25, "its label-noise variance")
    diag_batch_size: int = param(1, "its batch size")
    diag_steps: int = param(20_000, "its steps")
    sweep_stretch: float = param(2.0, "Remark 4: one-factor sweeps of the drift speed from "
                                      "this start")
    sweep_reference: tuple[float, float, int] = param([0.01, 1.0, 4], "around (η, σ², B)")
    sweep_etas: tuple[float, ...] = param([0.0025, 0.005, 0.01, 0.02, 0.04], "the η sweep")
    sweep_sigma2s: tuple[float, ...] = param([0.25, 0.5, 1.0, 2.0, 4.0], "the σ² sweep")
    sweep_batch_sizes: tuple[int, ...] = param([1, 2, 4, 8, 16], "the B sweep")
    sweep_steps: int = param(2000, "steps per sweep run")
    sweep_runs: int = param(64, "runs per sweep setting")
    scales: tuple[float, ...] = param([1e-3, 1e-2, 0.1, 0.3, 1.0], "Remark 2: the "
                                      "parameter-perturbation probe of the Proposition 3 chapter")
    n_draws: int = param(1000, "random perturbations per size")
    barrier_n: int = param(32, "escape over a barrier (a sharp and a flat global minimum): "
                               "samples, second moment exactly the identity")
    barrier_seed: int = param(0, "its data seed")
    barrier_reference: tuple[float, float, int] = param([0.01, 2.0, 1], "(η, σ², B)")
    barrier_etas: tuple[float, ...] = param([0.005, 0.01, 0.02], "its η sweep")
    barrier_sigma2s: tuple[float, ...] = param([1.0, 2.0, 4.0], "its σ² sweep")
    barrier_batch_sizes: tuple[int, ...] = param([1, 2, 4], "its B sweep")
    barrier_steps: int = param(5000, "the horizon: runs stop at their first crossing or here")
    barrier_runs: int = param(200, "runs per configuration and start")
    barrier_constant_levels: tuple[float, ...] = param([0.25, 0.5, 0.75, 1.0],
                                                       "θ-independent noise, / σ²G(sharp)/B")
    explorer_stretches: tuple[float, ...] = param([2.0, 4.0], "the explorer's precomputed grid: "
                                                              "starts")
    explorer_batch_sizes: tuple[int, ...] = param([1, 16], "its batch sizes")
    explorer_etas: tuple[float, ...] = param([0.005, 0.02], "its learning rates")
    explorer_sigma2s: tuple[float, ...] = param([0.0, 0.5, 1.0, 2.0], "its label-noise "
                                                                     "variances")
    explorer_steps: int = param(10_000, "its steps")
    explorer_seeds: int = param(3, "its runs per state")

    def check(self) -> None:
        super().check()
        self.positive("beta", "start_stretch", "eta", "sigma2", "diag_eta", "diag_sigma2",
                      "sweep_stretch", "sweep_etas", "sweep_sigma2s", "scales", "barrier_etas",
                      "barrier_sigma2s", "barrier_constant_levels", "explorer_stretches",
                      "explorer_etas")
        self.nonnegative("explorer_sigma2s")
        self.counts("record_every", "n_scalar", "batch_size", "steps", "n_diag", "d_diag",
                    "diag_batch_size", "diag_steps", "sweep_batch_sizes", "sweep_steps",
                    "barrier_batch_sizes", "barrier_steps", "explorer_batch_sizes",
                    "explorer_steps", "explorer_seeds")
        self.counts("barrier_n", minimum=2, why="samples of the barrier model")
        self.counts("n_runs", "sweep_runs", "n_draws", "barrier_runs", minimum=2)
        self.counts("seed", "diag_seed", "barrier_seed", minimum=0)
        self.nonempty("sweep_etas", "sweep_sigma2s", "sweep_batch_sizes", "scales",
                      "barrier_etas", "barrier_sigma2s", "barrier_batch_sizes",
                      "barrier_constant_levels", "explorer_stretches", "explorer_batch_sizes",
                      "explorer_etas", "explorer_sigma2s")
        for name in ("sweep_reference", "barrier_reference"):
            eta, sigma2, b = getattr(self, name)
            if eta <= 0 or sigma2 <= 0 or b < 1:
                raise ValueError(f"{self.where(name)} must be (η > 0, σ² > 0, B >= 1), got "
                                 f"{list(getattr(self, name))}")
        self._check_sweeps()

    def _check_sweeps(self) -> None:
        """The drift speed's law is a slope along each one-factor sweep around
        ``sweep_reference``, whose points are the sweep's values and, at most, the
        reference's: each sweep needs a value other than the reference's."""
        for k, (name, symbol) in enumerate((("sweep_etas", "η"), ("sweep_sigma2s", "σ²"),
                                            ("sweep_batch_sizes", "B"))):
            values = getattr(self, name)
            if len(set(values) | {self.sweep_reference[k]}) < 2:
                raise ValueError(f"{self.where(name)} must hold a value other than "
                                 f"sweep_reference's {symbol} ({self.sweep_reference[k]:g}): "
                                 f"the drift speed's law is a slope over at least two values, "
                                 f"got {list(values)}")
