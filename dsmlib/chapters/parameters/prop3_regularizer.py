"""Chapter ``prop3_regularizer``'s parameters: the implicit regularizer's strength
(Proposition 3, Remark 2)."""
from __future__ import annotations

from dataclasses import dataclass

from ...foundation.parameters import ChapterParameters, param
from ...models.data import DIGITS_SIZE

__all__ = ["Parameters"]


@dataclass(frozen=True)
class Parameters(ChapterParameters):
    """The chapter's parameters (defaults: the ``quick`` profile)."""
    notebook = "prop3_regularizer"

    sigma2s: tuple[float, ...] = param([0.5, 2.0], "label-noise variances of the grid")
    batch_sizes: tuple[int, ...] = param([4, 16], "batch sizes of the grid")
    etas: tuple[float, ...] = param([0.01, 0.1], "learning rates of the grid")
    n_samples: int = param(20_000, "Monte-Carlo draws of xi^ULN per grid cell")
    n_mlp: int = param(128, "inputs of the tanh MLP")
    n_cnn: int = param(256, "digits images seen by the small CNN")
    scales: tuple[float, ...] = param([1e-4, 1e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0],
                                      "perturbation sizes for Remark 2")
    n_draws: int = param(2000, "random perturbations per size")
    n_real_steps: int = param(3000, "actual minibatch steps per model for the real-step check")
    seed: int = param(0, "seed of every draw (children per model)")

    def check(self) -> None:
        """Types, then the ranges every run of the chapter needs (a value no run accepts fails
        here, before any kernel starts)."""
        super().check()
        self.positive("sigma2s", "etas", "scales")
        self.counts("batch_sizes")
        self.counts("n_mlp", minimum=2, why="inputs of the tanh MLP")
        self.counts("n_cnn", minimum=2, maximum=DIGITS_SIZE,
                    why=f"images of scikit-learn's digits, which holds {DIGITS_SIZE:,}")
        self.counts("n_real_steps", minimum=2, why="the real steps' standard error")
        self.counts("n_samples", "n_draws", minimum=2)
        self.counts("seed", minimum=0)
        self.nonempty("sigma2s", "batch_sizes", "etas", "scales")
        for b in self.batch_sizes:
            if b > min(self.n_mlp, self.n_cnn):
                raise ValueError(f"{self.where('batch_sizes')} must be <= n_mlp and n_cnn "
                                 f"({min(self.n_mlp, self.n_cnn)}), got {b}")
