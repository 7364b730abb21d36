"""What the book learns of a chapter from its own module (book layer), naming none.

A chapter ``NAME`` (``notebooks/NAME.md``) declares its parameters once, in
``dsmlib.chapters.NAME.Parameters`` (:class:`dsmlib.foundation.parameters.ChapterParameters`).
From it the book:

- writes the notebook's ``parameters`` cell (:func:`declare_in_cell`): the runner's names
  stay in the source's cell, the chapter's are appended with their ``quick`` defaults, so
  papermill, ``profiles.yml``, ``-p``, ``list``, ``lab`` and a re-run see every name; a source
  cell that assigns one of them itself declares it twice and is refused;
- checks every chapter's values, types and ranges, before any kernel starts
  (:func:`check_chapter`);
- finds the chapters that have training runs to launch (:func:`chapters_with_runs`: their
  ``Parameters`` has ``runs()``), for ``python -m dsmlib grid``.

A notebook with no chapter module (the tests' one-cell books) keeps its own parameters cell.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
from typing import Any, Iterable

from ..foundation.results import SEAL
from .profiles import RUNNER_PARAMETERS

__all__ = ["chapter_parameters", "declare_in_cell", "check_chapter", "chapters_with_runs"]


def chapter_parameters(name: str) -> Any | None:
    """``dsmlib.chapters.<name>.Parameters``, or None where the notebook has no chapter
    module (a module without ``Parameters`` is an error: every chapter declares one)."""
    module = f"dsmlib.chapters.{name}"
    try:
        if importlib.util.find_spec(module) is None:
            return None
    except ModuleNotFoundError:
        return None
    cls = getattr(importlib.import_module(module), "Parameters", None)
    if cls is None:
        raise ValueError(f"chapter module {module} declares no Parameters: every chapter "
                         "declares its parameters there, once")
    return cls


def _assigned(src: str) -> list[str]:
    try:
        body = ast.parse(src).body
    except SyntaxError:
        return []
    return [t.id for s in body if isinstance(s, ast.Assign) for t in s.targets
            if isinstance(t, ast.Name)]


def declare_in_cell(name: str, source: str) -> str:
    """The source of notebook ``name``'s parameters cell with its chapter's parameters
    appended (unchanged where it has no chapter module). A name the source cell assigns that
    the chapter's ``Parameters`` also declares is refused: it would be declared twice."""
    cls = chapter_parameters(name)
    if cls is None:
        return source
    twice = [n for n in _assigned(source) if n in cls.names()]
    if twice:
        raise ValueError(f"parameter(s) {twice} of {name} are declared twice: in "
                         f"dsmlib.chapters.{name}.Parameters and in notebooks/{name}.md's "
                         "parameters cell; declare them in Parameters only")
    return "\n".join([source.rstrip(), *cls.cell_lines()])


def check_chapter(name: str, params: dict[str, Any]):
    """Notebook ``name``'s values checked by its chapter's ``Parameters`` (types and ranges),
    in one line naming the parameter; returns the object (None without a chapter module)."""
    cls = chapter_parameters(name)
    if cls is None:
        return None
    return cls.from_dict({k: v for k, v in params.items()
                          if k not in RUNNER_PARAMETERS and k != SEAL})


def chapters_with_runs(names: Iterable[str]) -> list[str]:
    """The chapters among ``names`` whose parameters have training runs to launch."""
    return [n for n in names
            if callable(getattr(chapter_parameters(n), "runs", None))]
