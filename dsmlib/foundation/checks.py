"""Argument checks shared by every layer (foundation).

Every public function validates its inputs up front so that bad input produces a
``ValueError`` naming the parameter and what is allowed, never a traceback from deep
inside numpy or torch.
"""
from __future__ import annotations

import types
import typing
from typing import Any, Iterable

import numpy as np


def check_real(name: str, value: Any) -> float:
    """Return ``value`` as a finite float, or raise naming ``name``."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if not np.isfinite(out):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return out


def check_positive(name: str, value: Any) -> float:
    """A finite real number > 0."""
    out = check_real(name, value)
    if out <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return out


def check_nonnegative(name: str, value: Any) -> float:
    """A finite real number >= 0."""
    out = check_real(name, value)
    if out < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return out


def check_probability(name: str, value: Any) -> float:
    """A real number in [0, 1]."""
    out = check_real(name, value)
    if not 0.0 <= out <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return out


def check_int(name: str, value: Any, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """An integer (bools rejected) within optional bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer, got {value!r}")
    out = int(value)
    if minimum is not None and out < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {out}")
    if maximum is not None and out > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {out}")
    return out


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """One of ``allowed``."""
    allowed = list(allowed)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def check_psd(name: str, matrix: Any, *, dim: int | None = None,
              tol: float = 1e-10) -> np.ndarray:
    """A finite, symmetric, positive semi-definite square matrix."""
    try:
        m = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a square matrix of real numbers") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {m.shape}")
    if dim is not None and m.shape[0] != dim:
        raise ValueError(f"{name} must be {dim}x{dim}, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ValueError(f"{name} must contain only finite numbers")
    scale = max(1.0, float(np.abs(m).max()))
    if not np.allclose(m, m.T, atol=tol * scale, rtol=0):
        raise ValueError(f"{name} must be symmetric")
    if np.linalg.eigvalsh(m).min() < -tol * scale:
        raise ValueError(f"{name} must be positive semi-definite "
                         f"(smallest eigenvalue {np.linalg.eigvalsh(m).min():.3g})")
    return m


def type_words(hint: Any) -> str:
    """What a type annotation admits, in words: ``int | None`` -> "an integer or None"."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_words(a) for a in typing.get_args(hint))
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {_PLURAL.get(args[0], 'values')}"
        return "a list (" + ", ".join(type_words(a) for a in args) + ")"
    return _SINGULAR.get(hint, getattr(hint, "__name__", str(hint)))


_SINGULAR = {int: "an integer", float: "a number", bool: "true or false", str: "a string",
             type(None): "None"}
_PLURAL = {int: "integers", float: "numbers", bool: "booleans", str: "strings"}


def _admits(hint: Any, value: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_admits(a, value) for a in typing.get_args(hint))
    if origin is tuple:       # tuple[T, ...]: a list of T; tuple[A, B]: a list (a, b)
        args = typing.get_args(hint)
        if not isinstance(value, (list, tuple)):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_admits(args[0], v) for v in value)
        return len(value) == len(args) and all(_admits(a, v) for a, v in zip(args, value))
    if hint is type(None):
        return value is None
    if hint is float:         # a number: an integer too, never a bool
        return isinstance(value, (int, float, np.integer, np.floating)) and \
            not isinstance(value, (bool, np.bool_))
    if hint is int:
        return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if hint is Any:
        return True
    return isinstance(value, hint)


def check_type(name: str, value: Any, hint: Any) -> Any:
    """``value`` as its annotation ``hint`` admits (int, float: an integer too, bool, str,
    ``tuple[T, ...]``: a list of T, unions with None), else a one-line error naming ``name``."""
    if not _admits(hint, value):
        raise ValueError(f"{name} must be {type_words(hint)}, got {value!r}")
    return value
