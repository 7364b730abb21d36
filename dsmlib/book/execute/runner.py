"""Execute the book's notebooks with papermill (book layer; :mod:`dsmlib.book.site.build` builds
the static site from them).

papermill is the only thing that executes notebooks (the book is built with
``execute_notebooks: off``). Sources are MyST-Markdown notebooks (jupytext) in ``notebooks/``;
executed copies go to ``book/chapters/`` and claims to ``results/<profile>/<notebook>.json``.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import re
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...foundation.files import atomic_write_text
from ...foundation.handoff import SEAL, run_values, same_parameters
from ...foundation.parameters import ChapterParameters, ParameterError
from .kernel import KernelWatch, QuietKernelManager, kernel_threads, quiet_seal
from .parameters_cell import carry_parameters, declare_in_cell
from ..profiles import DEFAULT_PROFILE, load_specs, resolve, select
from .provenance import code_key, provenance
from .rerun import ParameterRefused, UnknownParameter
from .provenance_html import decorate
from .store import (book_lock, clear_stage, custom_paths, executed_path, failed_path, is_fresh,
                    keep_failed, publish, results_mismatch, results_path, stage_dir)

__all__ = ["NotebookFailed", "NotebookRefused", "RunInterrupted", "REFUSALS", "MEMORY_ERRORS",
           "source_notebook", "parsed_source", "Run", "plan", "default_jobs", "execute",
           "out_of_memory", "memory_message", "run_notebook"]

CELL_TIMEOUT_S = 1800
#: The errors of a cell that are one line (status 2): the library's for a value it does not
#: accept, and the book's for a parameter the notebook refuses (plain ``ValueError``s and
#: :class:`~dsmlib.foundation.parameters.ParameterError` with its hand-run kinds).
REFUSALS = ("ValueError", ParameterError.__name__, ParameterRefused.__name__,
            UnknownParameter.__name__)
#: The errors of a cell that ran out of memory: Python's, numpy's (``_ArrayMemoryError``)
#: and torch's (``torch.OutOfMemoryError``); torch's CPU allocator raises a ``RuntimeError``
#: that says "can't allocate memory".
MEMORY_ERRORS = ("MemoryError", "_ArrayMemoryError", "OutOfMemoryError")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class NotebookFailed(RuntimeError):
    """A notebook cell raised; the message carries the cell's error and traceback."""


class NotebookRefused(NotebookFailed):
    """A notebook cell raised ``ValueError``, the library's error for a value it does not
    accept: the message is that one line (the traceback stays in the failed notebook)."""


class RunInterrupted(KeyboardInterrupt):
    """The reader stopped an ``execute`` (Ctrl-C); ``failed`` are the partial notebooks of the
    chapters that were running (``book/chapters/failed/``)."""

    def __init__(self, failed: list[Path]):
        super().__init__()
        self.failed = failed


def source_notebook(spec, root: Path) -> Path:
    """The MyST source converted to ``_build/sources/<name>.ipynb`` (what papermill reads),
    its parameters cell holding the chapter's parameters (:func:`declare_in_cell`)."""
    import jupytext
    path = root / "_build" / "sources" / f"{spec.name}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = copy.deepcopy(parsed_source(spec.source.read_text(), spec.source.suffix))
    for cell in nb.cells:     # the chapter's own parameters, declared once in its module
        if "parameters" in cell.metadata.get("tags", []):
            cell.source = declare_in_cell(spec, cell.source)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    text = jupytext.writes(nb, fmt="ipynb").rstrip("\n") + "\n"     # as jupytext.write
    if not path.exists() or path.read_text() != text:
        atomic_write_text(path, text)
    return path


@functools.lru_cache(maxsize=64)
def parsed_source(text: str, suffix: str) -> Any:
    """A chapter's source ``text`` read as a notebook (jupytext; ``suffix`` is its file's),
    remembered by the text: a build plans every chapter under every profile (18 reads of
    six sources). Callers change a copy."""
    import jupytext
    return jupytext.reads(text, fmt=suffix.lstrip("."))


@dataclass
class Run:
    """One planned execution: the chapter's parameters, what it is keyed by, where it lands."""
    spec: Any
    src: Path
    parameters: ChapterParameters   # the one road's answer (dsmlib.book.profiles.resolve)
    set_by: dict[str, str]          # name -> "profile <p>", "command line" or "--profile"
    key: str
    custom: bool
    out: Path
    results: Path
    profile: str = DEFAULT_PROFILE

    @property
    def values(self) -> dict[str, Any]:
        """Every value the chapter runs with, the profile first (:func:`run_values`)."""
        return run_values(self.parameters, self.profile)

    def inject(self) -> dict[str, Any]:
        """What papermill injects over the notebook's parameters cell: every value, live
        widgets off."""
        return {**self.values, "live_widgets": False}


def plan(root: Path, spec, profile: str, overrides: dict[str, Any]) -> Run:
    """A notebook's run under ``profile`` plus ``overrides``: its parameters
    (:func:`dsmlib.book.profiles.resolve`), its content key, and whether the run is exactly
    the profile's (else it is *custom*)."""
    parameters = resolve(spec, profile, overrides)
    profiles = resolve(spec, profile)
    defaults = type(parameters)()
    values, profiles_values = run_values(parameters, profile), run_values(profiles, profile)
    custom = not same_parameters(values, profiles_values)
    set_by = {k: f"profile {profile}" for k in spec.profiles[profile]
              if getattr(profiles, k) != getattr(defaults, k)}
    set_by |= {k: "command line" for k in overrides}
    if profile != DEFAULT_PROFILE:
        set_by["profile"] = "--profile"
    src = source_notebook(spec, root)
    key = code_key(root, spec.source, values, profile)
    out, res = (custom_paths(root, spec.name, values) if custom else
                (executed_path(root, profile, spec.name), results_path(root, profile, spec.name)))
    return Run(spec, src, parameters, set_by, key, custom, out, res, profile)


def is_up_to_date(run: Run) -> bool:
    return is_fresh(run.out, run.key) and not results_mismatch(
        run.results, run.key, run.values, run.profile, custom=run.custom)


def ensure_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def notice_results(nb: dict[str, Any], results: Path) -> None:
    """Say, at the top of a custom run's executed notebook, where its results went."""
    nb["cells"].insert(0, {"cell_type": "markdown", "id": "dsmlib-custom-run",
                           "metadata": {"tags": ["dsmlib-custom-run"]},
                           "source": f"**Custom run.** These parameters are not exactly a "
                                     f"profile's: the results are in `{results}`, and the "
                                     "profile's own results and chapter are unchanged."})


def default_jobs(cores: int, todo: int, jobs: int | None = None) -> int:
    """How many notebooks ``execute`` runs at once: ``jobs``, else one per two cores (on 2
    cores, one at a time: the README says so), never more than there are to run."""
    return max(1, min(jobs or max(1, cores // 2), todo or 1))


def execute(root: Path, names: list[str] | None = None, *, profile: str = "quick",
            overrides: dict[str, Any] | None = None, timeout: int = CELL_TIMEOUT_S,
            progress: bool = True, threads: int | None = None, jobs: int | None = None,
            force: bool = False) -> list[Path]:
    """Execute notebooks under a profile; raise :class:`NotebookFailed` on the first error.

    A notebook whose content key (:func:`dsmlib.book.execute.provenance.code_key`: source, every
    parameter value, profile, the ``dsmlib`` code) matches its executed copy and its results
    is skipped unless ``force``. Runs with exactly the profile's parameters land in
    ``book/chapters/<profile>/`` and ``results/<profile>/``; any other run (``overrides``
    that change a value) in ``book/chapters/custom/`` and ``results/custom/`` (see
    :mod:`dsmlib.book.execute.store`). Each run executes into ``_build/stage/`` and is moved into
    place only when it succeeded. Independent notebooks run ``jobs`` at a time (default: one
    per two cores); notebooks marked ``gpu: true`` never run two at once. Each kernel gets
    ``threads`` threads (default: the cores divided among the jobs).
    """
    if timeout < 1:
        raise ValueError(f"timeout must be >= 1 second, got {timeout}")
    overrides = dict(overrides or {})
    specs = load_specs(root / "notebooks")
    chosen = select(specs, names)
    with book_lock(root, "execute"):
        runs = [plan(root, spec, profile, overrides) for spec in chosen]  # check all first
        todo = []
        for run in runs:
            if not force and is_up_to_date(run):
                print(f"[dsmlib] {run.spec.name}: up to date (profile {profile}), not "
                      "re-executed", file=sys.stderr, flush=True)
                continue
            todo.append(run)
        cores = os.cpu_count() or 1
        jobs = default_jobs(cores, len(todo), jobs)
        threads = threads or max(1, cores // jobs)
        gpu_lock, stop, watch = threading.Lock(), threading.Event(), KernelWatch()

        def one(run: Run) -> Path:
            with gpu_lock if run.spec.gpu else contextlib.nullcontext(), \
                    watch.running(run.spec.name):
                return run_notebook(root, run, timeout, progress and jobs == 1, stop,
                                    watch.manager_class(run.spec.name))

        with kernel_threads(threads), quiet_seal():
            pool = ThreadPoolExecutor(max_workers=jobs)
            futures = [pool.submit(one, run) for run in todo]
            try:
                return [f.result() for f in futures]
            except KeyboardInterrupt:
                # a notebook still running must not be published once the reader stopped it
                stop.set()
                running = watch.names()
                watch.interrupt(futures)
                raise RunInterrupted([failed_path(root, n) for n in running
                                      if failed_path(root, n).exists()]) from None
            finally:
                pool.shutdown(wait=False, cancel_futures=True)


def out_of_memory(ename: str, evalue: str) -> bool:
    """Whether a cell's error (its class name and message) says it ran out of memory."""
    return ename in MEMORY_ERRORS or (ename == "RuntimeError"
                                      and "can't allocate memory" in evalue)


def memory_message(run: Run, cell: int | None, ename: str, evalue: str) -> str:
    """One line for a notebook that ran out of memory in ``cell``: the error's first line,
    and the values this run set (from the command line, else the profile's), the sizes to
    lower."""
    mine = [k for k, how in run.set_by.items() if how == "command line"] or \
        [k for k, how in run.set_by.items() if how.startswith("profile ")]
    values = ", ".join(f"{k}={run.values[k]!r}" for k in mine if k in run.values)
    lower = (f"lower the sizes among the values this run sets ({values})" if values else
             "this machine cannot hold the chapter's default sizes")
    first = (evalue.strip().splitlines() or [""])[0]
    return (f"notebook {run.spec.name!r} ran out of memory in cell {cell} ({ename}: {first}): "
            f"{lower}")


def _unchanged(run: Run, where: Path) -> str:
    """What a failed run left as it was (a custom run's chapter may never have existed)."""
    return (f"{where} and its results are unchanged" if run.out.exists() else
            "nothing was published")


def _shown(path: Path | None, root: Path) -> str:
    return "nowhere: the kernel wrote nothing" if path is None else str(path.relative_to(root))


def run_notebook(root: Path, run: Run, timeout: int, progress: bool,
                 stop: threading.Event | None = None,
                 manager: type = QuietKernelManager) -> Path:
    """Execute one notebook into the staging folder, decorate it with its provenance, and
    move it and its results into place; on failure keep the partial notebook in
    ``book/chapters/failed/`` and raise :class:`NotebookFailed` with the failing cell's
    source and traceback (:class:`NotebookRefused`, one line, for a ``ValueError``; a cell
    that ran out of memory, a cell past ``timeout`` or a dead kernel, one line too). Nothing
    in place is touched unless the run succeeded, and nothing once ``stop`` is set (the reader
    interrupted the run)."""
    import papermill
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError
    name = run.spec.name
    stage = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=ensure_dir(stage_dir(root))))
    partial, staged_results = stage / f"{name}.ipynb", stage / f"{name}.json"
    profile = run.profile
    seal = {"profile": profile, "parameters": run.values, "key": run.key, "custom": run.custom,
            "stage": str(staged_results)}
    where = run.out.relative_to(root)
    print(f"[dsmlib] executing {name} (profile {profile}"
          f"{', custom parameters' if run.custom else ''}) -> {where}", file=sys.stderr,
          flush=True)
    start = time.perf_counter()
    try:
        try:
            papermill.execute_notebook(
                str(run.src), str(partial), parameters={**run.inject(), SEAL: seal},
                kernel_name="python3", execution_timeout=timeout, progress_bar=progress,
                cwd=str(root), log_output=False, kernel_manager_class=manager)
        except PapermillExecutionError as err:
            failed = keep_failed(partial, root, name)
            unchanged = _unchanged(run, where)
            if err.ename in REFUSALS:
                raise NotebookRefused(
                    f"notebook {name!r} stopped in cell {err.exec_count}: {err.ename}: "
                    f"{err.evalue} (traceback in {_shown(failed, root)}; "
                    f"{unchanged})") from None
            if out_of_memory(err.ename, err.evalue):
                raise NotebookFailed(
                    f"{memory_message(run, err.exec_count, err.ename, err.evalue)} (traceback "
                    f"in {_shown(failed, root)}; {unchanged})") from None
            tb = _ANSI.sub("", "\n".join(err.traceback or []))
            raise NotebookFailed(
                f"notebook {name!r} failed in cell {err.exec_count} "
                f"(index {err.cell_index}): {err.ename}: {err.evalue}\n"
                f"--- cell source ---\n{err.source}\n--- traceback ---\n{tb}\n"
                f"(the partly executed notebook is at {failed}; {unchanged})") from None
        except (CellTimeoutError, DeadKernelError) as err:
            failed = keep_failed(partial, root, name)
            why = (f"a cell ran past --timeout {timeout} s" if isinstance(err, CellTimeoutError)
                   else "its kernel died (out of memory?)")
            raise NotebookFailed(f"notebook {name!r}: {why} (the partly executed notebook is "
                                 f"at {_shown(failed, root)}; {_unchanged(run, where)})") from None
        except BaseException:
            keep_failed(partial, root, name)
            raise
        if not staged_results.exists():
            failed = keep_failed(partial, root, name)
            raise NotebookFailed(f"notebook {name!r} ran but wrote no results through "
                                 f"write_results (the executed notebook is at {failed})")
        if stop is not None and stop.is_set():
            failed = keep_failed(partial, root, name)
            raise NotebookFailed(f"notebook {name!r} finished after the run was interrupted: "
                                 f"not published (it is at {_shown(failed, root)})")
        nb = json.loads(partial.read_text())
        decorate(nb, provenance(root, profile, run.values, time.perf_counter() - start,
                                run.set_by), run.key, run.spec.gpu_notice, name)
        carry_parameters(nb, run.parameters, profile)   # a papermill re-run keeps them
        if run.custom:
            notice_results(nb, run.results.relative_to(root))
        atomic_write_text(partial, json.dumps(nb, indent=1, ensure_ascii=False))
        publish(staged_results, run.results)   # results first: a chapter is fresh only
        publish(partial, run.out)              # when its results match it
    finally:
        clear_stage(stage)
    if run.custom:
        print(f"[dsmlib] {name}: parameters differ from profile {profile!r} "
              f"({', '.join(f'{k}={run.values[k]!r}' for k in run.set_by if run.set_by[k] == 'command line')}): "
              f"executed notebook {where}, results {run.results.relative_to(root)}",
              file=sys.stderr, flush=True)
    return run.out
