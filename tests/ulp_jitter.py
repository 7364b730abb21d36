"""Elementary functions that round differently, as another CPU's do (issue 44).

No setting of this machine's libraries changes how ``exp``, ``log`` or ``tanh`` round: numpy's
float64 loops run the C library's scalar code on an AVX2 CPU at every dispatch level, and
torch's vectorised ones keep their bits when its dispatch is lowered. On an AVX-512 CPU numpy
runs its own AVX512F / SVML loops and torch its AVX-512 ones, which round some results to the
neighbouring float. This module does the same here: :func:`install` wraps numpy's and torch's
transcendental functions so that about half of their finite, non-zero float32 / float64 results
move by one unit in the last place, chosen by a hash of the result's bits (the same input gives
the same output, as from a real kernel). Gradients pass through unchanged. Square roots,
arithmetic and reductions are left alone (IEEE rounds the first two the same everywhere; the
other knobs of ``tests/reduced_simd.py`` move the third).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

#: The functions wrapped: numpy ufuncs, and torch functions and Tensor methods of these names.
NAMES = ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "tanh", "sinh",
         "cosh", "arctan", "arcsin", "arccos", "arctanh", "arcsinh", "power")
TORCH_NAMES = ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "tanh",
               "sinh", "cosh", "atan", "asin", "acos", "atanh", "asinh", "sigmoid", "erf",
               "erfc", "pow")
_MIX = 0x9E3779B97F4A7C15   # Fibonacci hashing: the top bit of bits * _MIX decides


def _flip_numpy(y: Any) -> Any:
    arr = np.asarray(y)
    if arr.dtype == np.float64:
        bits_t = np.uint64
    elif arr.dtype == np.float32:
        bits_t = np.uint32
    else:
        return y
    mix = np.array(_MIX if bits_t is np.uint64 else _MIX >> 32, dtype=bits_t)
    shift = bits_t(63 if bits_t is np.uint64 else 31)
    bits = arr.view(bits_t)
    with np.errstate(over="ignore"):
        flip = ((bits * mix) >> shift) & bits_t(1)
    flip = np.where(np.isfinite(arr) & (arr != 0), flip, bits_t(0)).astype(bits_t)
    out = (bits ^ flip).view(arr.dtype)
    return out if isinstance(y, np.ndarray) else out[()]


def _numpy_wrapper(ufunc: np.ufunc) -> Callable[..., Any]:
    def jittered(*args: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        y = ufunc(*args, **kwargs)
        if out is not None:
            target = out[0] if isinstance(out, tuple) else out
            target[...] = _flip_numpy(target)
            return y
        return _flip_numpy(y)
    jittered.__name__ = ufunc.__name__
    jittered.__wrapped__ = ufunc     # type: ignore[attr-defined]
    return jittered


def _flip_torch(y: Any) -> Any:
    import torch
    if not isinstance(y, torch.Tensor) or y.dtype not in (torch.float32, torch.float64):
        return y
    int_t, shift = (torch.int64, 63) if y.dtype == torch.float64 else (torch.int32, 31)
    with torch.no_grad():
        v = y.detach()
        bits = v.view(int_t)
        mix = _MIX if int_t == torch.int64 else _MIX >> 32
        mix = mix - (1 << (shift + 1)) if mix >= 1 << shift else mix     # as a signed integer
        flip = torch.bitwise_right_shift(bits * mix, shift) & 1          # wraps around, as C does
        flip = torch.where(torch.isfinite(v) & (v != 0), flip, torch.zeros_like(flip))
        moved = torch.bitwise_xor(bits, flip).view(y.dtype)
    # the rounding as a constant added to the result: reverse- and forward-mode derivatives
    # (torch.func's jacrev, jacfwd) pass through unchanged
    return y + (moved - v)


def _torch_wrapper(fn: Callable[..., Any]) -> Callable[..., Any]:
    def jittered(*args: Any, **kwargs: Any) -> Any:
        return _flip_torch(fn(*args, **kwargs))
    jittered.__name__ = getattr(fn, "__name__", "jittered")
    jittered.__wrapped__ = fn     # type: ignore[attr-defined]
    return jittered


def install() -> Callable[[], None]:
    """Wrap the functions (numpy's, and torch's if it is importable); returns the undo.

    Two compilers read these names and must see the originals: numba (its kernels are
    compiled with the originals in place; as on any CPU they call the C library) and
    TorchScript (torch scripts its forward-mode decompositions on first use: imported first)."""
    swaps: list[tuple[Any, str, Any, Any]] = []
    for name in NAMES:
        f = getattr(np, name)
        swaps.append((np, name, f, _numpy_wrapper(f)))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torch._decomp.decompositions_for_jvp  # noqa: F401
        for name in TORCH_NAMES:
            for owner in (torch, torch.Tensor):
                f = getattr(owner, name, None)
                if f is not None:
                    swaps.append((owner, name, f, _torch_wrapper(f)))

    def put(jittered: bool) -> None:
        for owner, name, f, w in swaps:
            setattr(owner, name, w if jittered else f)
    put(True)
    undo_numba = _compile_numba_with_originals(put)

    def restore() -> None:
        undo_numba()
        put(False)
    return restore


def _compile_numba_with_originals(put: Callable[[bool], None]) -> Callable[[], None]:
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:
        return lambda: None
    compile_ = Dispatcher.compile

    def compile_with_originals(self: Any, sig: Any) -> Any:
        put(False)
        try:
            return compile_(self, sig)
        finally:
            put(True)
    Dispatcher.compile = compile_with_originals

    def undo() -> None:
        Dispatcher.compile = compile_
    return undo
