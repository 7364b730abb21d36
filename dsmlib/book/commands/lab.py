"""``python -m dsmlib lab NAME``: one chapter, live, in JupyterLab (book layer).

The MyST source ``notebooks/NAME.md`` is converted to ``_build/lab/NAME.ipynb`` with the
profile's parameters (and any ``-p`` overrides) injected, the live widgets on, and the
kernel set to work from the book root, as the runner's do, and JupyterLab opens it. The
parameters are the runner's (:func:`dsmlib.book.profiles.resolve`). A live run is not one of
the runner's profile runs, so its results go to ``results/custom/NAME-<hash>.json`` (the
notebook prints the path) and never touch ``results/<profile>/``: the first cell records it as
a hand run (:func:`dsmlib.book.execute.rerun.hand_run_record`, under
:data:`dsmlib.foundation.handoff.HAND_RUN`), so that the chapter's ``write_results`` records
which values differ from the profile's. Edits in the prepared notebook are not written back
to ``notebooks/NAME.md``.

JupyterLab starts the notebook's one kernel (``python3``, its kernelspec) without asking once it
has loaded the notebook; a cell run before that (the toolbar still reads "No Kernel") makes it
ask for a kernel, and a kernel chosen then replaces the one it starts (issue 71, item 10).
"""
from __future__ import annotations

import pprint
import subprocess
import sys
from pathlib import Path
from typing import Any

from ...foundation.handoff import HAND_RUN, run_values
from ..execute.rerun import hand_run_record
from ..profiles import load_specs, resolve

__all__ = ["prepare_lab", "lab_command", "launch_lab"]


def prepare_lab(root: Path, name: str, profile: str, overrides: dict[str, Any]) -> Path:
    """Write ``_build/lab/<name>.ipynb``: the chapter parameterised for a live session."""
    import nbformat
    import papermill
    from ..execute.runner import source_notebook
    specs = load_specs(root / "notebooks")
    if name not in specs:      # 'all' included: JupyterLab opens one chapter
        raise ValueError(f"unknown notebook {name!r} for `lab`, which opens one chapter: "
                         f"{', '.join(specs)}")
    spec = specs[name]
    parameters = resolve(spec, profile, overrides)
    values = run_values(parameters, profile)
    out = root / "_build" / "lab" / f"{name}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(source_notebook(spec, root)), str(out), prepare_only=True,
                               kernel_name="python3",
                               parameters={**values, "live_widgets": True})
    nb = nbformat.read(out, as_version=4)
    record = pprint.pformat(hand_run_record(root, parameters, profile), sort_dicts=False)
    cd = nbformat.v4.new_code_cell(
        f"import os\nos.chdir({str(root)!r})  # work from the book root, as the runner does\n"
        f"# this live run, for write_results: where its results go, what differs from {profile}\n"
        f"{HAND_RUN} = {record}")
    cd.metadata["tags"] = ["dsmlib-lab"]
    nb.cells.insert(0, cd)
    nbformat.write(nb, out)
    return out


def lab_command(root: Path, notebook: Path, *, port: int | None = None,
                options: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The JupyterLab command line of :func:`launch_lab` (run in ``root``), with ``options``
    added (the live test adds its headless server's)."""
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={root}",
           str(notebook.relative_to(root))]
    if port:
        cmd.append(f"--port={port}")
    return cmd + list(options)


def launch_lab(root: Path, notebook: Path, *, port: int | None = None) -> int:
    """Start JupyterLab on the book root with ``notebook`` open; return its exit status."""
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        raise RuntimeError("JupyterLab is not installed: run `make lab NB=<name>` (it installs "
                           "requirements-lab.txt) or `pip install -r requirements-lab.txt`"
                           ) from None
    cmd = lab_command(root, notebook, port=port)
    print("[dsmlib] " + " ".join(cmd), file=sys.stderr, flush=True)
    print("[dsmlib] JupyterLab starts the notebook's kernel when it has loaded it: run the "
          "cells once the toolbar names the kernel (Python 3) and shows it idle",
          file=sys.stderr, flush=True)
    return subprocess.run(cmd, cwd=root).returncode
