"""Chapter ``ols``'s parameters: the least-squares experiment of Section 6 (Figure 3)."""
from __future__ import annotations

from dataclasses import dataclass

from ...foundation.parameters import ChapterParameters, param

__all__ = ["Parameters", "N_BATCHES"]

#: Blocks of the batch-means standard errors of every cloud (:func:`dsmlib.chapters.ols.run_panel`):
#: a run of ``steps`` keeps at least two steps per block after its burn-in.
N_BATCHES = 50


@dataclass(frozen=True)
class Parameters(ChapterParameters):
    """The chapter's parameters (defaults: the ``quick`` profile, which is the paper's Figure 3
    setting)."""
    notebook = "ols"

    eta: float = param(0.01, "learning rate (paper: 0.01)")
    batch_size: int = param(5, "B (paper: 5)")
    steps: int = param(1_000_000, "K (paper: 1,000,000)")
    n: int = param(100, "N (paper: 100)")
    seed: int = param(0, "data seed shared by all panels; panel i uses SGD seed (seed, i)")
    replace: bool = param(False, "minibatch scheme: False draws B distinct indices per step")
    explorer_steps: int = param(200_000, "iterations per state of the interactive explorer")
    sweep_etas: tuple[float, ...] = param([0.0025, 0.005, 0.01, 0.02], "η sweep around panel "
                                                                       "(b), at batch_size")
    sweep_batch_sizes: tuple[int, ...] = param([1, 2, 5, 10, 20], "B sweep around panel (b), "
                                                                  "at eta")
    sweep_steps: int = param(500_000, "iterations per sweep setting")
    centre_draws: int = param(4000, "independent draws of the label noise for Remark 5's "
                                    "expectation")
    centre_steps: int = param(500, "iterations averaged per draw, after its burn-in")

    def check(self) -> None:
        super().check()
        self.positive("eta", "sweep_etas")
        self.counts("batch_size", "sweep_batch_sizes", "centre_steps")
        self.counts("n", minimum=2, why="data points of the two-parameter model, whose inputs "
                                        "must span the plane")
        self.counts("steps", "sweep_steps", "explorer_steps", minimum=2 * N_BATCHES + 1,
                    why=f"a burn-in of at least one step, then two steps in each of the "
                        f"{N_BATCHES} blocks of the standard errors")
        self.counts("centre_draws", minimum=2)
        self.counts("seed", minimum=0)
        self.nonempty("sweep_etas", "sweep_batch_sizes")
        if not self.replace:
            for name in ("batch_size", "sweep_batch_sizes"):
                self.counts(name, minimum=1)
                for b in (getattr(self, name) if name == "sweep_batch_sizes"
                          else (self.batch_size,)):
                    if b > self.n:
                        raise ValueError(f"{self.where(name)} must be <= n ({self.n}) when "
                                         f"replace is False, got {b}")
