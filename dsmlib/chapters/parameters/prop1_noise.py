"""Chapter ``prop1_noise``'s parameters: the decomposition of SGD's noise (Proposition 1)."""
from __future__ import annotations

from dataclasses import dataclass

from ...foundation.parameters import ChapterParameters, param

__all__ = ["Parameters", "N_BATCHES", "DRAWS_PER_BLOCK", "LEAST_SQUARES_N"]

#: Blocks of the batch-means standard errors of every Monte-Carlo claim of the chapter
#: (:mod:`dsmlib.chapters.prop1_claims`): each needs at least two draws.
N_BATCHES = 50
#: The fewest draws per block at ``n_samples``: a block of a few draws of one-point minibatches
#: (b = 1) repeats one sample with a fair chance, has no variance, and its standardised mean
#: is infinite (at b = 1 and two draws a block, a run fails more often than not).
DRAWS_PER_BLOCK = 10
#: N of the chapter's smaller model, least squares (the notebook builds
#: :func:`dsmlib.models.settings.least_squares_setting` with its default N): a minibatch
#: drawn from it without replacement holds at most N - 1 points, else it is the whole data
#: set and has no minibatch noise (xi* is zero, its covariance claims divide by zero).
LEAST_SQUARES_N = 64


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
        """Types, then the ranges every run of the chapter needs (a value no run accepts fails
        here, before any kernel starts)."""
        super().check()
        self.positive("eta", "sigma2")
        self.counts("batch_size", maximum=LEAST_SQUARES_N - 1,
                    why=f"the least-squares model's N = {LEAST_SQUARES_N} points are also "
                        "sampled without replacement, and a minibatch of all of them has no "
                        "noise")
        self.counts("n_real_steps")
        self.counts("explorer_samples", "swap_draws", minimum=2)
        self.counts("n_samples", minimum=DRAWS_PER_BLOCK * N_BATCHES,
                    why=f"{DRAWS_PER_BLOCK} draws in each of the {N_BATCHES} blocks of the "
                        "standard errors, whatever the batch size")
        self.counts("paper_batch_draws", minimum=2 * N_BATCHES,
                    why=f"two draws in each of the {N_BATCHES} blocks of the standard errors")
        self.counts("seed", minimum=0)
        self.probabilities("swap_ps")
        self.nonempty("swap_ps")
        if 0.0 in self.swap_ps:
            raise ValueError(f"{self.where('swap_ps')} must lie in (0, 1]: p = 0 swaps nothing, "
                             f"and the check measures the shift a swap makes, got "
                             f"{list(self.swap_ps)}")
        if self.n_real_steps > self.n_samples:
            raise ValueError(f"{self.where('n_real_steps')} must be <= n_samples "
                             f"({self.n_samples}), got {self.n_real_steps}")
        if len(self.paper_batch_draws) != 2:
            raise ValueError(f"{self.where('paper_batch_draws')} must hold 2 counts (Sec. 6's "
                             f"setting, Sec. 5's), got {list(self.paper_batch_draws)}")
