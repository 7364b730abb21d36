"""Execute the book's notebooks with papermill, and build the static site with Jupyter Book 1
(book layer).

papermill is the only thing that executes notebooks (the book is built with
``execute_notebooks: off``). Sources are MyST-Markdown notebooks (jupytext) in ``notebooks/``;
executed copies go to ``book/chapters/`` and claims to ``results/<profile>/<notebook>.json``.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

from ..foundation.results import load_results
from .ledger import coverage_markdown, errata_markdown, ledger_markdown, summary_markdown
from .profiles import RUNNER_PARAMETERS, check_profile, load_specs, resolve, select
from .provenance import code_key, decorate, is_fresh, provenance, provenance_table

CELL_TIMEOUT_S = 1800
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class NotebookFailed(RuntimeError):
    """A notebook cell raised; the message carries the cell's error and traceback."""


def find_root(start: str | Path | None = None) -> Path:
    """The book root: the nearest directory (upwards) holding ``_config.yml`` and ``notebooks/``."""
    here = Path(start or Path.cwd()).resolve()
    for d in [here, *here.parents]:
        if (d / "_config.yml").exists() and (d / "notebooks").is_dir():
            return d
    raise ValueError(f"no book root (a directory with _config.yml and notebooks/) above {here}")


def source_notebook(spec, root: Path) -> Path:
    """The MyST source converted to ``_build/sources/<name>.ipynb`` (what papermill reads)."""
    import jupytext
    path = root / "_build" / "sources" / f"{spec.name}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = jupytext.read(spec.source)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    jupytext.write(nb, path)
    return path


def declared_parameters(source_ipynb: Path) -> dict[str, Any]:
    """Names and defaults of the notebook's ``parameters`` cell."""
    import papermill
    info = papermill.inspect_notebook(str(source_ipynb))
    return {k: v.get("default") for k, v in info.items()}


def execute(root: Path, names: list[str] | None = None, *, profile: str = "quick",
            overrides: dict[str, Any] | None = None, timeout: int = CELL_TIMEOUT_S,
            progress: bool = True, threads: int | None = None, jobs: int | None = None,
            force: bool = False) -> list[Path]:
    """Execute notebooks under a profile; raise :class:`NotebookFailed` on the first error.

    A notebook whose content key (:func:`dsmlib.book.provenance.code_key`: source,
    parameters, profile, the ``dsmlib`` code) matches its executed copy is skipped unless
    ``force``. Independent notebooks run ``jobs`` at a time (default: one per two cores, at
    most the number of notebooks); notebooks marked ``gpu: true`` in ``profiles.yml`` never run
    two at once. Each kernel gets ``threads`` threads (default: the cores divided among the
    jobs); nothing in a notebook or in the library sets threads.
    """
    check_profile(profile)
    if timeout < 1:
        raise ValueError(f"timeout must be >= 1 second, got {timeout}")
    overrides = dict(overrides or {})
    owned = [k for k in overrides if k in RUNNER_PARAMETERS]
    if owned:
        raise ValueError(f"parameter(s) {owned} are set by the runner and cannot be overridden: "
                         "profile comes from --profile, results go to results/<profile>/ under "
                         "the book root (use --root for another root), and live widgets are off "
                         "in executed notebooks")
    specs = load_specs(root / "notebooks")
    chosen = select(specs, names)
    todo = []
    for spec in chosen:  # validate everything before running anything
        src = source_notebook(spec, root)
        p = resolve(spec, profile, overrides, declared_parameters(src))
        p.update(profile=profile, results_dir=str(root / "results"), live_widgets=False)
        key = code_key(root, spec.source, {k: v for k, v in p.items() if k != "results_dir"},
                       profile)
        out = root / "book" / "chapters" / f"{spec.name}.ipynb"
        if not force and is_fresh(out, key) and (root / "results" / profile /
                                                  f"{spec.name}.json").exists():
            print(f"[dsmlib] {spec.name}: up to date (profile {profile}), not re-executed",
                  file=sys.stderr, flush=True)
            continue
        todo.append((spec, src, p, key))
    cores = os.cpu_count() or 1
    jobs = max(1, min(jobs or max(1, cores // 2), len(todo) or 1))
    threads = threads or max(1, cores // jobs)
    gpu_lock = threading.Lock()

    def one(item) -> Path:
        spec, src, p, key = item
        with gpu_lock if spec.gpu else contextlib.nullcontext():
            return run_notebook(root, spec, src, p, profile, timeout, progress and jobs == 1, key)

    with kernel_threads(threads), ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(one, item) for item in todo]
        return [f.result() for f in futures]


@contextlib.contextmanager
def kernel_threads(threads: int | None) -> Iterator[None]:
    """Set the thread count of the kernels started inside (OMP/MKL env), then restore it."""
    keys = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
    old = {k: os.environ.get(k) for k in keys}
    os.environ.update({k: str(threads or os.cpu_count() or 1) for k in keys})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_notebook(root: Path, spec, src: Path, params: dict[str, Any], profile: str,
                 timeout: int, progress: bool, key: str = "") -> Path:
    """Execute one notebook into ``book/chapters/`` and decorate it with its provenance;
    raise :class:`NotebookFailed` with the failing cell's source and traceback."""
    import papermill
    from papermill.exceptions import PapermillExecutionError
    out = root / "book" / "chapters" / f"{spec.name}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"[dsmlib] executing {spec.name} (profile {profile}) -> {out.relative_to(root)}",
          file=sys.stderr, flush=True)
    start = time.perf_counter()
    try:
        papermill.execute_notebook(str(src), str(out), parameters=params, kernel_name="python3",
                                   execution_timeout=timeout, progress_bar=progress,
                                   cwd=str(root), log_output=False)
    except PapermillExecutionError as err:
        tb = _ANSI.sub("", "\n".join(err.traceback or []))
        raise NotebookFailed(
            f"notebook {spec.name!r} failed in cell {err.exec_count} "
            f"(index {err.cell_index}): {err.ename}: {err.evalue}\n"
            f"--- cell source ---\n{err.source}\n--- traceback ---\n{tb}\n"
            f"(the partly executed notebook is at {out})") from None
    nb = json.loads(out.read_text())
    decorate(nb, provenance(root, profile, params, time.perf_counter() - start), key,
             spec.gpu_notice)
    out.write_text(json.dumps(nb, indent=1, ensure_ascii=False))
    return out


def _executed_profile(path: Path) -> str | None:
    nb = json.loads(path.read_text())
    return nb.get("metadata", {}).get("papermill", {}).get("parameters", {}).get("profile")


def write_generated_pages(root: Path, profile: str) -> None:
    """The ledger, the errata, and the introduction's summary and coverage statement (from
    ``results/<profile>``), and the reproducibility page's table (from the executed notebooks)."""
    specs = load_specs(root / "notebooks")
    docs = load_results(root / "results", profile)
    missing = [n for n in specs if n not in {d["notebook"] for d in docs}]
    if missing:
        raise ValueError(f"no results for notebook(s) {missing} under profile {profile!r}: "
                         f"run `python -m dsmlib execute --profile {profile}` first")
    order = list(specs)
    docs = sorted((d for d in docs if d["notebook"] in specs), key=lambda d: order.index(d["notebook"]))
    paths = {n: f"chapters/{n}" for n in specs}
    (root / "book" / "ledger.md").write_text(
        ledger_markdown(docs, chapter_paths=paths, profile=profile))
    (root / "book" / "errata.md").write_text(
        errata_markdown(docs, chapter_paths=paths, profile=profile))
    gen = root / "book" / "_generated"
    gen.mkdir(parents=True, exist_ok=True)
    (gen / "summary.md").write_text(summary_markdown(docs, profile=profile))
    (gen / "coverage.md").write_text(coverage_markdown(docs, profile=profile))
    runs = {n: json.loads((root / "book" / "chapters" / f"{n}.ipynb").read_text())
            .get("metadata", {}).get("dsmlib", {}).get("provenance") for n in specs}
    (gen / "provenance.md").write_text(provenance_table(runs, paths))


def copy_assets(root: Path) -> None:
    """Serve plotly.js and MathJax from the site itself, matching the installed versions."""
    import mathjax  # django-static-mathjax
    import plotly
    static = root / "book" / "_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js",
                 static / "plotly.min.js")
    src = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    dst = static / "mathjax"
    if not (dst / "tex-mml-chtml.js").exists():
        shutil.copytree(src, dst, dirs_exist_ok=True)


def build(root: Path, *, profile: str = "quick") -> Path:
    """Build ``_build/html`` from executed notebooks; warnings and broken links fail it."""
    check_profile(profile)
    specs = load_specs(root / "notebooks")
    for name in specs:
        nb = root / "book" / "chapters" / f"{name}.ipynb"
        if not nb.exists():
            raise ValueError(f"{nb.relative_to(root)} is missing: run `python -m dsmlib execute "
                             f"--profile {profile}` first")
        got = _executed_profile(nb)
        if got != profile:
            raise ValueError(f"{nb.relative_to(root)} was executed under profile {got!r}, not "
                             f"{profile!r}: re-run `python -m dsmlib execute --profile {profile}`")
    write_generated_pages(root, profile)
    copy_assets(root)
    jb = Path(sys.executable).with_name("jupyter-book")
    if not jb.exists():
        raise RuntimeError(f"jupyter-book is not installed next to {sys.executable}")
    cmd = [str(jb), "build", str(root), "--builder", "html", "-W", "-n", "--keep-going"]
    print("[dsmlib] " + " ".join(cmd), file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, cwd=root)
    if proc.returncode != 0:
        raise RuntimeError(f"jupyter-book build failed (exit {proc.returncode}); see the "
                           "warnings above")
    return root / "_build" / "html" / "index.html"
