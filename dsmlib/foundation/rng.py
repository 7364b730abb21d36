"""Randomness and devices (foundation): one seed tree feeding numpy and torch.

Every random function of ``dsmlib`` takes its randomness as an argument: an ``int`` seed, a
``numpy.random.SeedSequence`` (a node of a seed tree), a ``numpy.random.Generator`` or, for torch
code, a ``torch.Generator``. Nothing touches numpy's or torch's global random state.

- :func:`child_seed` names a node of the seed tree, ``SeedSequence([seed, *path])``;
- :func:`as_generator` / :func:`as_torch_generator` turn any of the above into a generator,
  the torch one created on the device where the work happens;
- :func:`chain_streams` gives independent (minibatch, noise) streams per chain;
- :func:`resolve_device` chooses the device: ``"auto"`` is CUDA when present, else the CPU.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["child_seed", "as_generator", "as_torch_generator", "chain_streams",
           "resolve_device", "cuda_available"]


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def child_seed(seed: Any, *path: int) -> np.random.SeedSequence:
    """The node ``SeedSequence([seed, *path])`` of the seed tree rooted at an int ``seed``."""
    if not _is_int(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    for p in path:
        if not _is_int(p) or p < 0:
            raise ValueError(f"seed path entries must be non-negative integers, got {path!r}")
    return np.random.SeedSequence([int(seed), *map(int, path)])


def as_generator(seed: Any) -> np.random.Generator:
    """Accept an int seed, a SeedSequence or a Generator; never touch global state."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (np.random.SeedSequence, int, np.integer)) and not isinstance(seed, bool):
        return np.random.default_rng(seed)
    raise ValueError(f"seed must be an int, a numpy SeedSequence or a numpy Generator, got {seed!r}")


def as_torch_generator(seed: Any, device: Any = None):
    """A ``torch.Generator`` on ``device`` (default CPU) from an int seed, a ``SeedSequence``,
    a numpy ``Generator`` (one integer is drawn from it) or a ``torch.Generator`` (returned
    as is, after checking that it lives on ``device``). Never touches the global RNG."""
    import torch
    dev = torch.device("cpu") if device is None else torch.device(device)
    if isinstance(seed, torch.Generator):
        if device is not None and seed.device.type != dev.type:
            raise ValueError(f"seed is a torch.Generator on {seed.device}, but the work runs on "
                             f"{dev}: create the generator on {dev}")
        return seed
    if isinstance(seed, np.random.Generator):
        value = int(seed.integers(0, 2**63 - 1))
    elif isinstance(seed, np.random.SeedSequence):
        value = int(seed.generate_state(2, dtype=np.uint64)[0] >> np.uint64(1))
    elif _is_int(seed):
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        value = int(seed)
    else:
        raise ValueError("seed must be an int, a numpy SeedSequence, a numpy Generator or a "
                         f"torch.Generator, got {seed!r}")
    return torch.Generator(device=dev).manual_seed(value)


def chain_streams(seed: Any, n_chains: int) -> list[tuple[np.random.Generator, np.random.Generator]]:
    """Independent (minibatch, fresh-noise) generator pairs, one pair per chain."""
    if isinstance(seed, np.random.Generator):
        children = seed.spawn(n_chains)
        return [tuple(g.spawn(2)) for g in children]
    if _is_int(seed):
        seed = np.random.SeedSequence(int(seed))
    if not isinstance(seed, np.random.SeedSequence):
        raise ValueError(f"seed must be an int, a numpy SeedSequence or a numpy Generator, got {seed!r}")
    return [tuple(np.random.default_rng(s) for s in child.spawn(2)) for child in seed.spawn(n_chains)]


def cuda_available() -> bool:
    """Whether torch sees a CUDA device (False when torch is CPU-only)."""
    import torch
    return bool(torch.cuda.is_available())


def resolve_device(device: Any = "auto"):
    """``"auto"`` -> CUDA when present, else CPU; otherwise a checked ``torch.device``."""
    import torch
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if cuda_available() else "cpu")
    try:
        dev = torch.device(device)
    except (TypeError, RuntimeError):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}") from None
    if dev.type == "cuda" and not cuda_available():
        raise ValueError(f"device {device!r} was requested but torch sees no CUDA device; "
                         "use device='auto' or 'cpu'")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    return dev
