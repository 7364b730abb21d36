"""Execute the book's notebooks with papermill (book layer; :mod:`dsmlib.book.site` builds
the static site from them).

papermill is the only thing that executes notebooks (the book is built with
``execute_notebooks: off``). Sources are MyST-Markdown notebooks (jupytext) in ``notebooks/``;
executed copies go to ``book/chapters/`` and claims to ``results/<profile>/<notebook>.json``.
"""
from __future__ import annotations

import contextlib
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

from ..foundation.results import (RUN_ONLY, SEAL, atomic_write_text, notebook_parameters,
                                  same_parameters)
from .declarations import check_chapter, declare_in_cell
from .kernel import KernelWatch, QuietKernelManager, kernel_threads, quiet_seal
from .profiles import RUNNER_PARAMETERS, check_profile, load_specs, resolve, select
from .provenance import code_key, decorate, is_fresh, provenance
from .rerun import carry_parameters
from .store import (book_lock, clear_stage, custom_paths, executed_path, failed_path,
                    keep_failed, publish, results_mismatch, results_path, stage_dir)

__all__ = ["NotebookFailed", "NotebookRefused", "RunInterrupted", "find_root", "source_notebook",
           "declared_parameters", "plan", "check_ranges", "execute"]

CELL_TIMEOUT_S = 1800
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


def find_root(start: str | Path | None = None) -> Path:
    """The book root: the nearest directory (upwards) holding ``_config.yml`` and ``notebooks/``."""
    here = Path(start or Path.cwd()).resolve()
    for d in [here, *here.parents]:
        if (d / "_config.yml").exists() and (d / "notebooks").is_dir():
            return d
    raise ValueError(f"no book root (a directory with _config.yml and notebooks/) above {here}")


def source_notebook(spec, root: Path) -> Path:
    """The MyST source converted to ``_build/sources/<name>.ipynb`` (what papermill reads),
    its parameters cell holding the chapter's parameters (:func:`declare_in_cell`)."""
    import jupytext
    path = root / "_build" / "sources" / f"{spec.name}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = jupytext.read(spec.source)
    for cell in nb.cells:     # the chapter's own parameters, declared once in its module
        if "parameters" in cell.metadata.get("tags", []):
            cell.source = declare_in_cell(spec.name, cell.source)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    jupytext.write(nb, path)
    return path


def declared_parameters(source_ipynb: Path) -> dict[str, Any]:
    """Names and defaults of the notebook's ``parameters`` cell."""
    import papermill
    info = papermill.inspect_notebook(str(source_ipynb))
    return {k: v.get("default") for k, v in info.items()}


def notebook_defaults(source_ipynb: Path) -> dict[str, Any]:
    """The values of the notebook's ``parameters`` cell (its literals), read the same way the
    kernel reads them (:func:`dsmlib.foundation.results.notebook_parameters`)."""
    import nbformat
    nb = nbformat.read(source_ipynb, as_version=4)
    cells = [c.source for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    return {k: v for k, v in notebook_parameters({}, cells).items() if k not in RUN_ONLY}


@dataclass
class Run:
    """One planned execution: what papermill gets, what it is keyed by, where it lands."""
    spec: Any
    src: Path
    inject: dict[str, Any]          # what papermill injects (overrides and runner parameters)
    params: dict[str, Any]          # every value the chapter runs with
    set_by: dict[str, str]          # name -> "profile <p>" or "command line", for overrides
    key: str
    custom: bool
    out: Path
    results: Path


def plan(root: Path, spec, profile: str, overrides: dict[str, Any]) -> Run:
    """Resolve a notebook's parameters under ``profile`` plus ``overrides`` (names checked),
    its content key, and whether the run is exactly the profile's (else it is *custom*)."""
    src = source_notebook(spec, root)
    declared = declared_parameters(src)
    defaults = notebook_defaults(src)
    prof = resolve(spec, profile, {}, declared)
    mine = resolve(spec, profile, overrides, declared)
    params = {**defaults, **mine, "profile": profile}
    custom = not same_parameters(params, {**defaults, **prof, "profile": profile})
    set_by = {k: f"profile {profile}" for k in prof if prof[k] != defaults.get(k)}
    set_by |= {k: "command line" for k in overrides}
    if profile != defaults.get("profile"):
        set_by["profile"] = "--profile"
    key = code_key(root, spec.source, params, profile)
    out, res = (custom_paths(root, spec.name, params) if custom else
                (executed_path(root, profile, spec.name), results_path(root, profile, spec.name)))
    inject = {**mine, "profile": profile, "results_dir": str(root / "results"),
              "live_widgets": False}
    return Run(spec, src, inject, params, set_by, key, custom, out, res)


def check_ranges(name: str, params: dict[str, Any]) -> None:
    """Every chapter's values, types and ranges, checked by its own ``Parameters`` before any
    kernel starts (:func:`dsmlib.book.declarations.check_chapter`)."""
    check_chapter(name, params)


def is_up_to_date(run: Run, profile: str) -> bool:
    return is_fresh(run.out, run.key) and not results_mismatch(
        run.results, run.key, run.params, profile, custom=run.custom)


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


def execute(root: Path, names: list[str] | None = None, *, profile: str = "quick",
            overrides: dict[str, Any] | None = None, timeout: int = CELL_TIMEOUT_S,
            progress: bool = True, threads: int | None = None, jobs: int | None = None,
            force: bool = False) -> list[Path]:
    """Execute notebooks under a profile; raise :class:`NotebookFailed` on the first error.

    A notebook whose content key (:func:`dsmlib.book.provenance.code_key`: source, every
    parameter value, profile, the ``dsmlib`` code) matches its executed copy and its results
    is skipped unless ``force``. Runs with exactly the profile's parameters land in
    ``book/chapters/<profile>/`` and ``results/<profile>/``; any other run (``overrides``
    that change a value) in ``book/chapters/custom/`` and ``results/custom/`` (see
    :mod:`dsmlib.book.store`). Each run executes into ``_build/stage/`` and is moved into
    place only when it succeeded. Independent notebooks run ``jobs`` at a time (default: one
    per two cores); notebooks marked ``gpu: true`` never run two at once. Each kernel gets
    ``threads`` threads (default: the cores divided among the jobs).
    """
    check_profile(profile)
    if timeout < 1:
        raise ValueError(f"timeout must be >= 1 second, got {timeout}")
    overrides = dict(overrides or {})
    owned = [k for k in overrides if k in RUNNER_PARAMETERS or k == SEAL]
    if owned:
        raise ValueError(f"parameter(s) {owned} are set by the runner and cannot be overridden: "
                         "profile comes from --profile, results go to results/<profile>/ under "
                         "the book root (use --root for another root), and live widgets are off "
                         "in executed notebooks")
    specs = load_specs(root / "notebooks")
    chosen = select(specs, names)
    with book_lock(root, "execute"):
        runs = [plan(root, spec, profile, overrides) for spec in chosen]  # validate all first
        for run in runs:
            check_ranges(run.spec.name, run.params)
        todo = []
        for run in runs:
            if not force and is_up_to_date(run, profile):
                print(f"[dsmlib] {run.spec.name}: up to date (profile {profile}), not "
                      "re-executed", file=sys.stderr, flush=True)
                continue
            todo.append(run)
        cores = os.cpu_count() or 1
        jobs = max(1, min(jobs or max(1, cores // 2), len(todo) or 1))
        threads = threads or max(1, cores // jobs)
        gpu_lock, stop, watch = threading.Lock(), threading.Event(), KernelWatch()

        def one(run: Run) -> Path:
            with gpu_lock if run.spec.gpu else contextlib.nullcontext(), \
                    watch.running(run.spec.name):
                return run_notebook(root, run, profile, timeout, progress and jobs == 1, stop,
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


def _unchanged(run: Run, where: Path) -> str:
    """What a failed run left as it was (a custom run's chapter may never have existed)."""
    return (f"{where} and its results are unchanged" if run.out.exists() else
            "nothing was published")


def _shown(path: Path | None, root: Path) -> str:
    return "nowhere: the kernel wrote nothing" if path is None else str(path.relative_to(root))


def run_notebook(root: Path, run: Run, profile: str, timeout: int, progress: bool,
                 stop: threading.Event | None = None,
                 manager: type = QuietKernelManager) -> Path:
    """Execute one notebook into the staging folder, decorate it with its provenance, and
    move it and its results into place; on failure keep the partial notebook in
    ``book/chapters/failed/`` and raise :class:`NotebookFailed` with the failing cell's
    source and traceback (:class:`NotebookRefused`, one line, for a ``ValueError``; a cell
    past ``timeout`` or a dead kernel, one line too). Nothing in place is touched unless the
    run succeeded, and nothing once ``stop`` is set (the reader interrupted the run)."""
    import papermill
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError
    name = run.spec.name
    stage = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=ensure_dir(stage_dir(root))))
    partial, staged_results = stage / f"{name}.ipynb", stage / f"{name}.json"
    seal = {"profile": profile, "parameters": run.params, "key": run.key, "custom": run.custom,
            "stage": str(staged_results)}
    where = run.out.relative_to(root)
    print(f"[dsmlib] executing {name} (profile {profile}"
          f"{', custom parameters' if run.custom else ''}) -> {where}", file=sys.stderr,
          flush=True)
    start = time.perf_counter()
    try:
        try:
            papermill.execute_notebook(
                str(run.src), str(partial), parameters={**run.inject, SEAL: seal},
                kernel_name="python3", execution_timeout=timeout, progress_bar=progress,
                cwd=str(root), log_output=False, kernel_manager_class=manager)
        except PapermillExecutionError as err:
            failed = keep_failed(partial, root, name)
            unchanged = _unchanged(run, where)
            if err.ename in ("ValueError", "UnknownParameter"):
                raise NotebookRefused(
                    f"notebook {name!r} stopped in cell {err.exec_count}: {err.ename}: "
                    f"{err.evalue} (traceback in {_shown(failed, root)}; "
                    f"{unchanged})") from None
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
        decorate(nb, provenance(root, profile, run.params, time.perf_counter() - start,
                                run.set_by), run.key, run.spec.gpu_notice)
        carry_parameters(nb)        # a plain papermill re-run keeps this run's values
        if run.custom:
            notice_results(nb, run.results.relative_to(root))
        atomic_write_text(partial, json.dumps(nb, indent=1, ensure_ascii=False))
        publish(staged_results, run.results)   # results first: a chapter is fresh only
        publish(partial, run.out)              # when its results match it
    finally:
        clear_stage(stage)
    if run.custom:
        print(f"[dsmlib] {name}: parameters differ from profile {profile!r} "
              f"({', '.join(f'{k}={run.params[k]!r}' for k in run.set_by if run.set_by[k] == 'command line')}): "
              f"executed notebook {where}, results {run.results.relative_to(root)}",
              file=sys.stderr, flush=True)
    return run.out
