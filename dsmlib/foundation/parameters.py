"""A chapter's parameters, declared once (foundation).

Each chapter declares one frozen dataclass ``Parameters(ChapterParameters)`` in
``dsmlib.chapters.parameters.<notebook>`` (which a one-module chapter re-exports; Section 5's
wing sits below its parameters, which build its grid, and its page imports them): a field per
knob of the chapter, its default the ``quick`` profile's value, made with :func:`param`
(default and a one-line help). Everything else is derived from it:

- ``notebooks/profiles.yml`` only overrides fields;
- the book resolves a chapter's parameters under a profile and ``-p`` overrides with
  ``Parameters.from_dict`` (:func:`dsmlib.book.profiles.resolve`), before any kernel starts,
  and writes the notebook's ``parameters`` cell from an object's :meth:`~ChapterParameters.cell_lines`
  (what papermill injects over, and what a re-run carries);
- the notebook receives them in one line, ``P = chapter.Parameters.from_namespace(globals())``,
  and hands its claims to the book with ``P`` (:func:`dsmlib.foundation.handoff.write_results`).
  A value it refuses there (plain papermill, Jupyter) is a :class:`ParameterError`, which
  IPython, and so papermill's report of the cell, shows as one line, with no traceback.

Construction checks: :meth:`ChapterParameters.check` checks every field's type against its
annotation, and a chapter adds its ranges by overriding it (calling ``super().check()``
first). Errors are one line naming the parameter and what is allowed.
"""
from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any, ClassVar, Mapping

from .checks import check_int, check_nonnegative, check_positive, check_probability, check_type

__all__ = ["param", "ParameterError", "ChapterParameters", "literal"]


def param(default: Any, help: str = "") -> Any:
    """A parameter field: its ``quick`` default and the comment its notebook cell shows.
    A list default is stored as a tuple (the object is frozen)."""
    if isinstance(default, list):
        default = tuple(default)
    return dataclasses.field(default=default, metadata={"help": help})


class ParameterError(ValueError):
    """A parameter value a chapter refuses, raised in a notebook's kernel: IPython shows
    ``_render_traceback_`` instead of a traceback, so the notebook, and papermill's report of
    the failed cell, show one line naming the parameter and what is allowed."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


class ChapterParameters:
    """Base of every chapter's frozen ``Parameters`` dataclass (see the module docstring)."""

    notebook: ClassVar[str] = ""    # the chapter's notebook name, for messages

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):     # a list given for a list parameter: a tuple
            object.__setattr__(self, f.name, _tuples(getattr(self, f.name)))
        self.check()

    # -------------------------------------------------------------- construction

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]):
        """The parameters from ``values`` (missing names take their default), checked; a name
        the chapter does not declare is a one-line error listing those it does."""
        unknown = sorted(set(values) - set(cls.names()))
        if unknown:
            raise ValueError(cls.unknown_message(unknown))
        return cls(**dict(values))

    @classmethod
    def unknown_message(cls, unknown: list[str]) -> str:
        """The one line that refuses ``unknown`` names: it lists the chapter's own parameters,
        the names ``-p`` accepts (the book's ``profile`` and ``live_widgets`` are not)."""
        return (f"unknown parameter(s) {unknown} for {cls.notebook or cls.__name__}; valid "
                f"parameters: {', '.join(cls.names())}")

    @classmethod
    def from_namespace(cls, namespace: Mapping[str, Any]):
        """The parameters a notebook runs with: each field's value from ``namespace`` (the
        notebook's ``globals()``, where papermill injected them), else its default. A value
        the chapter refuses is a :class:`ParameterError` (one line in a notebook), raised
        without the chain of checks that refused it."""
        try:
            return cls(**{n: namespace[n] for n in cls.names() if n in namespace})
        except (TypeError, ValueError) as err:
            raise ParameterError(str(err)) from None

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    # -------------------------------------------------------------- checks

    def check(self) -> None:
        """Every field's type against its annotation; chapters add their ranges."""
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            check_type(self.where(f.name), getattr(self, f.name), hints[f.name])

    def _each(self, names: tuple[str, ...]):
        for name in names:
            value = getattr(self, name)
            for v in (value if isinstance(value, tuple) else (value,)):
                if v is not None:
                    yield self.where(name), v

    def counts(self, *names: str, minimum: int = 1, maximum: int | None = None,
               why: str = "") -> None:
        """Each named integer (or each element of a list) is >= ``minimum`` (and <=
        ``maximum``); ``why``, if given, says in the error why the range is what it is."""
        for where, v in self._each(names):
            try:
                check_int(where, v, minimum=minimum, maximum=maximum)
            except ValueError as err:
                raise ValueError(f"{err} ({why})" if why else str(err)) from None

    def positive(self, *names: str) -> None:
        """Each named number (or each element of a list) is finite and > 0."""
        for where, v in self._each(names):
            check_positive(where, v)

    def nonnegative(self, *names: str) -> None:
        for where, v in self._each(names):
            check_nonnegative(where, v)

    def probabilities(self, *names: str) -> None:
        for where, v in self._each(names):
            check_probability(where, v)

    def nonempty(self, *names: str) -> None:
        """Each named list holds at least one value."""
        for name in names:
            if not getattr(self, name):
                raise ValueError(f"{self.where(name)} must not be empty")

    def where(self, name: str) -> str:
        """How messages name a parameter: ``parameter 'depth' of sec5_distillation``."""
        return f"parameter {name!r}" + (f" of {self.notebook}" if self.notebook else "")

    # -------------------------------------------------------------- the notebook's cell

    def cell_lines(self) -> list[str]:
        """``name = value  # help`` for every field, with this object's values (lists written
        as lists): the lines the book writes into the notebook's ``parameters`` cell, the
        defaults' (``Parameters().cell_lines()``) in the source, an execution's in the
        executed notebook."""
        out = []
        for f in dataclasses.fields(self):
            text = f"{f.name} = {literal(getattr(self, f.name))}"
            help_ = f.metadata.get("help", "")
            if "=" in help_:      # papermill would not parse the line, nor declare the name
                raise ValueError(f"the help of parameter {f.name!r} must not hold '='")
            out.append(f"{text:<26} # {help_}" if help_ else text)
        return out


def literal(value: Any) -> str:
    """``value`` as the Python source a reader would write: lists for tuples, ``1_000_000``
    for large integers, strings quoted."""
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"{value:_}"        # 1_000_000, as a reader writes it
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)
