"""An executed chapter re-run by hand says so (book layer; it runs in the kernel).

A person re-runs an executed chapter with plain papermill (``papermill ols.ipynb out.ipynb -p
seed 1``) or in Jupyter. Its parameters cell carries the execution's values
(:mod:`dsmlib.book.execute.parameters_cell`), and it stands first, so that the cell under the title,
the provenance the runner showed, runs next: :func:`announce_rerun` replaces what it shows
with the truth of this run (a *hand run*, its profile, every value it runs with, those that
differ from the profile marked, and where its results will go: the book's
``results/custom/``, whatever the working directory, never ``results/<profile>/``), and
refuses, in one line, a name papermill injected that the chapter does not declare (papermill
itself only warns, then runs the defaults). It leaves the run's record in the kernel (under
:data:`~dsmlib.foundation.handoff.HAND_RUN`): the chapter's
:func:`~dsmlib.foundation.handoff.write_results`, which lies below the chapters and cannot ask
the book, reads there where its results go and what the run changed. As the kernel exits, it
says again on papermill's terminal (or Jupyter's log) where its results are
(:func:`results_said`), under the finished progress bar: the line the chapter prints as it
writes them lands in the middle of the bar.

It reads the kernel's namespace, as the notebook's own ``Parameters.from_namespace`` does:
at that cell it holds the parameters cell's names, papermill's and IPython's own, nothing else.
"""
from __future__ import annotations

import atexit
import html
import json
import sys
import time
from pathlib import Path
from typing import Any, Mapping, MutableMapping

from ...foundation.handoff import (HAND_RUN, SEAL, custom_results_path, environment,
                                   hand_run_root, run_values)
from ...foundation.parameters import ChapterParameters, ParameterError
from ..profiles import (CHAPTERS, PROFILES, RUNNER_PARAMETERS, NotebookSpec, load_specs,
                        parameters_class)
from .provenance_html import parameters_html
from .results import changed_values

__all__ = ["HAND_RUN_MIME", "ParameterRefused", "UnknownParameter", "undeclared",
           "hand_run_record", "announce_rerun", "rerun_html", "HandRun", "results_said",
           "say_where_at_exit"]

#: The output type under which the cell under a hand run's title records that run: its profile,
#: values, what changed, where its results go, and ``key`` None (no runner's content key).
HAND_RUN_MIME = "application/vnd.dsmlib.hand-run+json"


class ParameterRefused(ParameterError):
    """A value papermill injected that the chapter refuses (``-p steps -5``): one line in the
    notebook and in papermill's report of the failed cell (IPython shows
    :meth:`~dsmlib.foundation.parameters.ParameterError._render_traceback_`)."""


class UnknownParameter(ParameterRefused):
    """A parameter papermill injected that the notebook's parameters cell does not declare."""


def _literal(value: Any) -> bool:
    """Whether ``value`` is one papermill could have injected (a JSON-like literal)."""
    try:
        return json.loads(json.dumps(value)) == value or isinstance(value, tuple)
    except (TypeError, ValueError):
        return False


def undeclared(namespace: Mapping[str, Any], declared: set[str],
               hidden: set[str] = frozenset()) -> list[str]:
    """The names in ``namespace`` holding a literal that are not ``declared`` (IPython's own,
    ``hidden``, ``_``-names and the book's own two, the runner's seal and a hand run's record,
    aside): what papermill injected beyond the parameters cell."""
    return sorted(n for n, v in namespace.items()
                  if not n.startswith("_") and n not in declared and n not in hidden
                  and n not in (SEAL, HAND_RUN) and _literal(v))


def _ipython_hidden() -> set[str]:
    try:
        from IPython import get_ipython
    except ImportError:
        return set()
    ip = get_ipython()
    return set(getattr(ip, "user_ns_hidden", {}) or {}) if ip is not None else set()


def rerun_html(values: dict[str, Any], set_by: dict[str, str], results: str,
               changed: dict[str, Any] | None) -> str:
    """What a hand run shows under the title (HTML)."""
    profile = values["profile"]
    what = (f"with {len(changed)} value{'s' if len(changed) != 1 else ''} changed from the "
            f"profile's ({', '.join(f'<code>{html.escape(k)}</code>' for k in changed)})"
            if changed else "with exactly the profile's values" if changed is not None
            else "(what differs from the profile cannot be said here: no book's "
                 "<code>notebooks/profiles.yml</code> was found)")
    return (f"<div class='provenance hand-run'><strong>Hand run.</strong> Re-executed outside "
            f"the book's runner (by papermill or in Jupyter), under the "
            f"<code>{html.escape(profile)}</code> profile {what}: not the book's execution of "
            f"this chapter. Its results go to <code>{html.escape(results)}</code>; "
            f"<code>results/{html.escape(profile)}/</code> and the book's chapter are left as "
            f"they were.\n{parameters_html(values, set_by)}</div>\n")


class HandRun:
    """What the cell under a hand run's title shows (HTML) and records (JSON under
    :data:`HAND_RUN_MIME`: the notebook's metadata still holds the runner's provenance, which
    papermill copies and no kernel can rewrite; :func:`dsmlib.book.execute.store.runner_metadata`)."""

    def __init__(self, html_text: str, record: dict[str, Any]):
        self.html, self.record = html_text, record

    @property
    def data(self) -> str:
        return self.html

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        return {"text/html": self.html, HAND_RUN_MIME: self.record}


def results_said(path: Path, since: float) -> str:
    """What a hand run says on the terminal as its kernel exits: where its results are, when
    ``path`` was written at or after ``since`` (a file an earlier run with the same values
    wrote is no result of this one), else that it stopped before writing them."""
    try:
        written = path.stat().st_mtime >= since
    except OSError:
        written = False
    return (f"[dsmlib] This hand run's results are in {path}" if written else
            f"[dsmlib] This hand run wrote no results: it stopped before writing {path}")


def _say_at_exit(path: Path, since: float) -> None:
    try:     # the kernel's own stderr: papermill's terminal, or Jupyter's log
        print("\n" + results_said(path, since), file=sys.__stderr__, flush=True)
    except (AttributeError, OSError, ValueError):      # no stderr left: only the echo is lost
        pass


def say_where_at_exit(path: Path) -> None:
    """Have this kernel say, as it exits, where the hand run's results went
    (:func:`results_said`): papermill shuts the kernel down after the last cell, so the line
    comes under its finished progress bar. A notebook re-run in the same kernel (Jupyter)
    replaces the line, never adds one."""
    atexit.unregister(_say_at_exit)
    atexit.register(_say_at_exit, path, time.time() - 1.0)   # 1 s: a coarse file clock


def hand_run_record(root: Path, parameters: ChapterParameters, profile: str
                    ) -> dict[str, Any]:
    """What the book knows of a run outside its runner with ``parameters`` under ``profile``:
    its chapter, profile and values, those that differ from the profile's (``changed``, None
    where the book at ``root`` cannot say) and where its results go (``results``: ``root``'s
    ``results/custom/``). Put into the kernel under :data:`~dsmlib.foundation.handoff.HAND_RUN`,
    it is what the chapter's :func:`~dsmlib.foundation.handoff.write_results` reads."""
    values = run_values(parameters, profile)
    return {"notebook": parameters.notebook, "hand_run": True, "key": None, "profile": profile,
            "parameters": values, "changed": changed_values(root, parameters, profile),
            "results": str(custom_results_path(root, parameters.notebook, values))}


def announce_rerun(notebook: str, namespace: MutableMapping[str, Any]):
    """What the provenance cell of notebook ``notebook`` shows when a person re-runs it: that
    it is a hand run, with the values it runs with (read from ``namespace``, the kernel's
    ``globals()``), as an HTML display; a name papermill injected that its parameters cell
    does not declare is refused. The run's record (:func:`hand_run_record`) goes into
    ``namespace`` under :data:`~dsmlib.foundation.handoff.HAND_RUN`, where the chapter's
    ``write_results`` finds where its results go and what it changed. None under the runner's
    seal (the runner never executes this cell)."""
    if namespace.get(SEAL):
        return None
    root = hand_run_root()
    try:
        spec = load_specs(root / "notebooks").get(notebook)
    except (OSError, ValueError):
        spec = None
    cls = parameters_class(spec or NotebookSpec(      # a book without it: the package's own
        notebook, notebook, root, {p: {} for p in PROFILES}, module=f"{CHAPTERS}.{notebook}"))
    declared = set(RUNNER_PARAMETERS) | set(cls.names())
    unknown = undeclared(namespace, declared, _ipython_hidden())
    if unknown:
        raise UnknownParameter(f"{cls.unknown_message(unknown)} (papermill -p NAME VALUE)")
    try:
        mine = cls.from_namespace(namespace)
    except (TypeError, ValueError) as err:
        raise ParameterRefused(f"{err} (papermill -p NAME VALUE)") from None
    profile = str(namespace.get("profile"))
    record = {**hand_run_record(root, mine, profile), "environment": environment()}
    changed, results = record["changed"], record["results"]
    set_by = {k: f"profile {profile}" for k in (spec.profiles.get(profile) or {} if spec else {})}
    set_by |= {k: "this hand run" for k in changed or {}}
    say_where_at_exit(Path(results).resolve())
    namespace[HAND_RUN] = record
    return HandRun(rerun_html(record["parameters"], set_by, results, changed), record)
