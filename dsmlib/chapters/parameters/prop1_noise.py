"""Chapter ``prop1_noise``'s parameters: the decomposition of SGD's noise (Proposition 1)."""
from __future__ import annotations

from dataclasses import dataclass

from ...foundation.parameters import ChapterParameters, param

__all__ = ["Parameters"]


@dataclass(frozen=True)
class Parameters(ChapterParameters):
    """The chapter's parameters (defaults: the ``quick`` profile)."""
    notebook = "prop1_noise"

    eta: float = param(0.1, "learning rate")
    batch_size: int = param(16, "b")
    sigma2: float = param(0.5, "label-noise variance")
    n_samples: int = param(100_000, "Monte-Carlo draws of the noise terms per scheme")
    n_real_steps: int = param(200, "of which are also taken as real SGD steps and decomposed")
    seed: int = param(0, "seed of every draw (children per setting and scheme)")
    explorer_samples: int = param(4000, "draws per state of the interactive figure")
    swap_ps: tuple[float, ...] = param([0.1, 0.5, 0.9], "swap probabilities for the Section 5.2 "
                                                        "check")
    swap_draws: int = param(2000, "independent draws of the swapped labels per probability")
    paper_batch_draws: tuple[int, ...] = param([4_000_000, 100_000], "draws at the paper's "
                                                                     "(N, b): Sec. 6, Sec. 5")

    def check(self) -> None:
        super().check()
        self.positive("eta", "sigma2")
        self.counts("batch_size", "n_real_steps", "explorer_samples")
        self.counts("n_samples", "swap_draws", "paper_batch_draws", minimum=2)
        self.counts("seed", minimum=0)
        self.probabilities("swap_ps")
        self.nonempty("swap_ps")
        if self.n_real_steps > self.n_samples:
            raise ValueError(f"{self.where('n_real_steps')} must be <= n_samples "
                             f"({self.n_samples}), got {self.n_real_steps}")
        if len(self.paper_batch_draws) != 2:
            raise ValueError(f"{self.where('paper_batch_draws')} must hold 2 counts (Sec. 6's "
                             f"setting, Sec. 5's), got {list(self.paper_batch_draws)}")
