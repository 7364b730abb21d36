"""What every live explorer shares: wiring its controls and laying them out (book layer)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["assemble"]


def assemble(controls: dict[str, Any], rows: Sequence[Sequence[str]], status: Any, out: Any,
             update: Callable[..., None]) -> Any:
    """Wire every control to ``update``, lay the controls out in ``rows`` (by name) above the
    status line and the output, and draw once.

    The box exposes ``update``, ``controls``, ``status`` and ``output`` so tests (and papermill
    runs) can drive it without a browser.
    """
    import ipywidgets as W

    placed = [name for row in rows for name in row]
    if sorted(placed) != sorted(controls):
        raise ValueError(f"rows must place every control exactly once: controls "
                         f"{sorted(controls)}, rows {placed}")
    for w in controls.values():
        w.observe(update, names="value")
    box = W.VBox([W.HBox([controls[name] for name in row]) for row in rows] + [status, out])
    box.update = update
    box.controls = controls
    box.status = status
    box.output = out
    update()
    return box
