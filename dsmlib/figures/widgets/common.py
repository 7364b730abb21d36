"""What every live explorer shares: wiring its controls and laying them out (book layer)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["assemble", "show", "refuse", "offline_notice"]


def show(out: Any, fig: Any) -> None:
    """Replace whatever ``out`` shows with the plotly figure ``fig``, in one step.

    Setting ``out.outputs`` works in a kernel and outside one (tests), unlike ``with out:
    display(fig)``, which captures nothing without a kernel and, with ``clear_output(wait=True)``,
    leaves the old figure standing when nothing new is displayed."""
    data = fig._repr_mimebundle_()      # the default renderer's bundle (the book's, after setup)
    data.setdefault("text/plain", repr(fig.layout.title.text or "plotly figure"))
    out.outputs = ({"output_type": "display_data", "data": data, "metadata": {}},)


def refuse(out: Any, status: Any, err: Exception) -> None:
    """Refused input: the message alone, with no figure left from an earlier setting."""
    import html

    out.outputs = ()
    status.value = f"<b style='color:#d62728'>{html.escape(str(err))}</b>"


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


def offline_notice(chapter: str, explorer: str) -> Any:
    """What the static page shows where a chapter's live explorer would be, as Markdown (a
    printed line would show its commands' backticks in a grey code block)."""
    from IPython.display import Markdown

    return Markdown(f"The live explorer (`{explorer}`) needs a running Jupyter kernel: open "
                    f"this chapter live with `make lab NB={chapter}` (or `python -m dsmlib lab "
                    f"{chapter}`) to use it.")
