"""The notebook's ``parameters`` cell (book layer), written from the chapter's ``Parameters``:
in the source papermill executes, with the declaration's defaults, and in the executed
notebook, with the values the execution ran with. Nothing reads values back from it: it is
for papermill (``-p``, ``--help-notebook``) and for a person who re-runs a notebook by hand.

- :func:`declare_in_cell`: the source's cell assigns only the book's own names (``profile``,
  ``live_widgets``); the chapter's are appended with their ``quick`` defaults. A source cell
  that assigns one of them itself declares it twice and is refused. A notebook with no chapter
  module (the tests' one-cell books) keeps its own cell.
- :func:`carry_parameters`: papermill, re-running a notebook (``papermill executed.ipynb
  out.ipynb -p seed 1``), replaces the cell it injected the first time, which held the
  runner's values: a re-run used to fall back to the ``quick`` defaults. So the executed
  notebook's cell is rewritten with every value of the execution (its profile included, the
  live widgets off) and the injected cell is dropped: a plain papermill re-run with one ``-p``
  runs the execution's profile with that one change (and writes, being no runner's run, to
  ``results/custom/``; see :mod:`dsmlib.foundation.handoff`). The cell goes first, before the
  title, so that the provenance cell under the title runs after it and can say what a hand
  run is (:mod:`dsmlib.book.execute.rerun`).
"""
from __future__ import annotations

import ast
from typing import Any

from ...foundation.parameters import ChapterParameters, literal
from .cells import cell_tags
from ..profiles import NotebookSpec, parameters_class

__all__ = ["PARAMETERS_TAG", "declare_in_cell", "carry_parameters"]

PARAMETERS_TAG, INJECTED_TAG = "parameters", "injected-parameters"
#: The first line of an executed notebook's parameters cell.
HEADER = ("# The values this execution ran with (profile {profile!r}); "
          "`papermill THIS.ipynb OUT.ipynb -p NAME VALUE` changes one.")


def _assigned(src: str) -> list[str]:
    try:
        body = ast.parse(src).body
    except SyntaxError:
        return []
    return [t.id for s in body if isinstance(s, ast.Assign) for t in s.targets
            if isinstance(t, ast.Name)]


def declare_in_cell(spec: NotebookSpec, source: str) -> str:
    """The source of ``spec``'s parameters cell with its chapter's parameters appended, with
    their defaults. A name the source cell assigns that the chapter's ``Parameters`` also
    declares is refused: it would be declared twice."""
    cls = parameters_class(spec)
    twice = [n for n in _assigned(source) if n in cls.names()]
    if twice:
        raise ValueError(f"parameter(s) {twice} of {spec.name} are declared twice: in "
                         f"{spec.parameters_module}.Parameters and in notebooks/{spec.name}.md's "
                         "parameters cell; declare them in Parameters only")
    return "\n".join([source.rstrip(), *cls().cell_lines()])


def carry_parameters(nb: dict[str, Any], parameters: ChapterParameters,
                     profile: str) -> dict[str, Any]:
    """Rewrite ``nb``'s parameters cell with ``parameters`` and ``profile`` (the execution's),
    the live widgets off, move it first, and drop the cell papermill injected. Modifies and
    returns ``nb``."""
    cells = nb["cells"]
    at = next((i for i, c in enumerate(cells) if PARAMETERS_TAG in cell_tags(c)), None)
    if at is None:
        raise ValueError("the notebook has no cell tagged 'parameters'")
    lines = [HEADER.format(profile=profile),
             f"{f'profile = {literal(profile)}':<26} # smoke | quick | paper | gpu",
             f"{'live_widgets = False':<26} # True: live widgets and progress bars (Jupyter)",
             *parameters.cell_lines()]
    cell = {**cells[at], "source": "\n".join(lines) + "\n"}
    cells[:] = [cell] + [c for i, c in enumerate(cells)
                         if i != at and INJECTED_TAG not in cell_tags(c)]
    return nb
