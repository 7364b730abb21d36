"""Every figure a test of this folder builds titles every axis it draws on (issue 53: on a
phone, Section 5's Figure 1 stacked its two columns, and the right column's panels had no
y title, so its validation panel could not be told from its test panel).

Each figure function of ``dsmlib.figures`` (:func:`helpers.figure_functions`) is wrapped, once,
when this folder's tests are collected, so that the figures it returns during a test are
recorded; after the test, :func:`helpers.missing_axis_titles` must find none untitled (an x axis
may share the title of the x axis under it in its column). The shared builders of
:data:`UNTITLED_BUILDERS` (the explorers) leave the titles to the chapter's function that calls
them, which titles the same figure before returning it. The wrapper only records, and only
while a test of this folder runs."""
from __future__ import annotations

import functools
import importlib
from typing import Any, Callable

import pytest

from helpers import figure_functions, missing_axis_titles

_built: list[tuple[str, Any]] | None = None     # the figures the running test built
#: Modules of shared figure builders whose callers title the axes.
UNTITLED_BUILDERS = ("common", "explorers")


def _recording(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def built(*args: Any, **kwargs: Any) -> Any:
        fig = fn(*args, **kwargs)
        if _built is not None and name.split(".")[0] not in UNTITLED_BUILDERS:
            _built.append((name, fig))
        return fig
    built.records_figures = True
    return built


for _name in figure_functions():
    _mod, _fn = _name.split(".")
    _module = importlib.import_module(f"dsmlib.figures.{_mod}")
    if not getattr(getattr(_module, _fn), "records_figures", False):
        setattr(_module, _fn, _recording(_name, getattr(_module, _fn)))


@pytest.fixture(autouse=True)
def every_figure_titles_its_axes():
    """Fails the test (at its teardown) when a figure it built has an untitled axis."""
    global _built
    _built = built = []
    yield built
    _built = None
    untitled = {name: missing_axis_titles(fig) for name, fig in built}
    assert {k: v for k, v in untitled.items() if v} == {}, \
        "axes a trace draws on with no title in the figure's layout"
