"""Label noise drawn once or fresh (theory): how a noise model of
:mod:`dsmlib.theory.label_noise` meets the training loop.

A model is used either drawn ONCE before training (:class:`FixedLabelNoise`, the setting of
Sec. 6 and of the paper's Prop. 1 with noise "drawn before training steps") or FRESH at every
iteration (:class:`FreshLabelNoise`, the self-distillation setting of Sec. 5). Both expose
``batch(batch_idx, seed)`` returning the noisy labels of one minibatch (one row per batch
slot).
"""
from __future__ import annotations

from typing import Any

from torch import Tensor

from ..foundation.checks import check_choice
from .label_noise import LabelNoise, as_label_tensor
from .minibatch import check_indices

__all__ = ["FixedLabelNoise", "FreshLabelNoise", "label_noise_source"]


class FixedLabelNoise:
    """Noise drawn ONCE per sample index before training (Sec. 6; the paper's case (1)
    below Eq. (1)): ``batch(idx)`` returns the cached ``y~[idx]``, so a sample drawn twice
    (also twice in one with-replacement batch) always carries the same noise."""

    def __init__(self, noise: LabelNoise, y: Any, seed: Any) -> None:
        self.noise = noise
        self.y = as_label_tensor(y)
        self.y_noisy = noise.draw(self.y, seed)

    @property
    def y_clean(self) -> Tensor:
        """``E[y~]``: the labels the noise is unbiased around."""
        return self.noise.mean(self.y)

    def batch(self, batch_idx: Any, seed: Any = None) -> Tensor:
        """Noisy labels of the batch, one row per slot; ``seed`` is ignored (kept for a
        common signature with :class:`FreshLabelNoise`)."""
        return self.y_noisy[check_indices(batch_idx, self.y.shape[0]).to(self.y.device)]


class FreshLabelNoise:
    """Noise drawn FRESH at every iteration (Sec. 5, noisy self-distillation): each call
    of ``batch(idx, seed)`` draws new noise, independently for every batch slot."""

    def __init__(self, noise: LabelNoise, y: Any) -> None:
        self.noise = noise
        self.y = as_label_tensor(y)

    @property
    def y_clean(self) -> Tensor:
        return self.noise.mean(self.y)

    def batch(self, batch_idx: Any, seed: Any) -> Tensor:
        idx = check_indices(batch_idx, self.y.shape[0]).to(self.y.device)
        return self.noise.draw(self.y[idx], seed)


def label_noise_source(noise: LabelNoise, y: Any, mode: str, seed: Any = None
                       ) -> FixedLabelNoise | FreshLabelNoise:
    """``mode="fixed"`` -> :class:`FixedLabelNoise` (needs ``seed``), ``"fresh"`` ->
    :class:`FreshLabelNoise`."""
    mode = check_choice("mode", mode, ["fixed", "fresh"])
    if mode == "fixed":
        if seed is None:
            raise ValueError("seed is required for mode='fixed' (the one draw before training)")
        return FixedLabelNoise(noise, y, seed)
    return FreshLabelNoise(noise, y)
