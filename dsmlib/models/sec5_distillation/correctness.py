"""Per-image correctness as a run's record stores it (models layer): which test images a model
classified right, one bit an image, packed (``np.packbits``, big-endian within a byte) and
written as ``"b64:<n>:<base64>"`` -- 1,676 characters for CIFAR-10's 10,000 test images,
against 10,000 for the string of ``0``s and ``1``s that the records made before
2026-12-02 hold (and :func:`unpack_flags` still reads)."""
from __future__ import annotations

import base64
from typing import Sequence

import numpy as np

__all__ = ["PACKED_PREFIX", "pack_flags", "unpack_flags"]

PACKED_PREFIX = "b64:"


def pack_flags(flags: Sequence[bool] | np.ndarray) -> str:
    """``flags`` (one truth value an image) as ``"b64:<n>:<base64 of the packed bits>"``."""
    bits = np.asarray(flags, dtype=bool).ravel()
    return f"{PACKED_PREFIX}{bits.size}:{base64.b64encode(np.packbits(bits)).decode('ascii')}"


def unpack_flags(text: str) -> np.ndarray:
    """The flags :func:`pack_flags` packed, or an older record's string of ``0``s and ``1``s,
    as a uint8 array of 0s and 1s; a string of neither form is a one-line error."""
    if text.startswith(PACKED_PREFIX):
        try:
            n_text, body = text[len(PACKED_PREFIX):].split(":", 1)
            n = int(n_text)
            bits = np.unpackbits(np.frombuffer(base64.b64decode(body, validate=True),
                                               dtype=np.uint8))
        except ValueError as err:
            raise ValueError(f"test_correct is not a packed record ({err})") from None
        if not 0 <= n <= bits.size or bits.size - n >= 8:
            raise ValueError(f"test_correct says {n} images but packs {bits.size} bits")
        return bits[:n].copy()
    flags = np.frombuffer(text.encode("ascii"), dtype=np.uint8) - ord("0")
    if flags.size and flags.max() > 1:
        raise ValueError("test_correct must be packed (b64:...) or a string of 0s and 1s")
    return flags
