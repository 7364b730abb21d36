"""Provenance of executed chapters (book layer): what made a chapter's numbers.

- ``key``: a content hash of what determines its outputs: the notebook source, the resolved
  parameters, the profile, and every ``dsmlib`` module the notebook imports, directly or not
  (:func:`code_key`). ``make book`` re-executes a notebook only when its key changed
  (:func:`dsmlib.book.execute.store.is_fresh`).
- ``provenance``: profile, parameters, wall time, hardware (CPU model and count, GPU model if
  any), Python and key package versions, and the git commit (with ``-dirty`` when the working
  tree differs from it) (:func:`provenance`).

Both go into an executed notebook's ``metadata["dsmlib"]``; what a reader sees of them is
:mod:`dsmlib.book.execute.provenance_html`.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "OUTSIDE_KERNEL", "package_dir", "code_key", "kernel_code", "hardware",
           "gpu_name", "dirty_files", "git_commit", "versions", "provenance"]

PACKAGES = ("numpy", "scipy", "numba", "torch", "plotly", "papermill", "jupyter-book")


def _sha(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()


#: Modules that run outside the notebook kernel: changing them cannot change a notebook's
#: outputs, so they are left out of the content key (a site-only change rebuilds in seconds).
#: That is the whole book layer: no page imports it (a page hands its claims over through
#: :mod:`dsmlib.foundation.handoff`, which is in every content key); the cell the runner puts
#: under an executed chapter's title runs only in a hand re-run, never in the book's execution.
OUTSIDE_KERNEL = ("__main__.py", "book/__init__.py", "book/profiles.py",
                  *(f"book/commands/{m}.py" for m in ("__init__", "cli", "data", "grid", "lab")),
                  *(f"book/execute/{m}.py" for m in ("__init__", "cells", "closure", "kernel",
                                                     "parameters_cell", "provenance",
                                                     "provenance_html", "rerun", "results",
                                                     "runner", "store")),
                  *(f"book/references/{m}.py" for m in ("__init__", "contrast", "freshness",
                                                        "inline_markup", "lead", "records",
                                                        "regimes", "run",
                                                        "scales", "section", "stored")),
                  *(f"book/site/{m}.py" for m in ("__init__", "answer", "assets", "build",
                                                  "citation", "downloads",
                                                  "ledger", "mystnb_plugin",
                                                  "pages", "paper_numbers", "profile_table",
                                                  "sphinx_ext",
                                                  "subpages")))


def package_dir() -> Path:
    """The folder of the installed ``dsmlib`` package, read from the package's own module, not
    from this module's depth in it (which a move of this module would silently change)."""
    top = sys.modules[__name__.partition(".")[0]]    # imported before any of its modules
    return Path(top.__file__).resolve().parent


def code_key(root: Path, source: Path, params: dict[str, Any], profile: str, *,
             pkg_dir: Path | None = None) -> str:
    """Content hash of a notebook's source, parameters, profile and the ``dsmlib`` code its
    kernel can run: the import closure of its code cells
    (:func:`dsmlib.book.execute.closure.import_closure`, under ``pkg_dir``, default wherever the
    package is installed), less :data:`OUTSIDE_KERNEL`. Not of the machine, and not of code
    that only other chapters use, so that a change to one chapter's code leaves the others'
    executions and references current."""
    pkg_dir = pkg_dir or package_dir()
    pkg = kernel_code(source, pkg_dir)
    return _sha(source.read_bytes(), json.dumps(params, sort_keys=True, default=str).encode(),
                profile.encode(), *(p.relative_to(pkg_dir).as_posix().encode() + p.read_bytes()
                                    for p in pkg))


def kernel_code(source: Path, pkg_dir: Path | None = None) -> list[Path]:
    """The ``dsmlib`` files a notebook's kernel can run (its import closure, less
    :data:`OUTSIDE_KERNEL`): the code its content key covers."""
    from .closure import import_closure
    pkg_dir = pkg_dir or package_dir()
    return [p for p in import_closure(source, pkg_dir)
            if p.relative_to(pkg_dir).as_posix() not in OUTSIDE_KERNEL]


def hardware() -> dict[str, Any]:
    """CPU model and count, and the GPU (if torch sees one)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cpu_count": os.cpu_count(), "gpu": gpu_name()}


def gpu_name() -> str | None:
    """The first GPU CUDA shows this process (None without one). Torch is asked only if this
    process has imported it already; otherwise the driver's ``nvidia-smi`` is, since importing
    torch takes 1.5-2 s, which every notebook the command line executed paid for this one
    line. ``CUDA_VISIBLE_DEVICES`` is honoured as CUDA honours it (empty or -1: no GPU; else
    its first entry)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    first = visible.split(",")[0].strip() if visible is not None else "0"
    smi = shutil.which("nvidia-smi")
    if not first or first == "-1" or smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader", "-i", first],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = out.stdout.strip().splitlines() if out.returncode == 0 else []
    return names[0].strip() if names else None


def dirty_files(root: Path) -> list[str]:
    """Tracked files that differ from the commit, outside ``reference/`` ([] if not a git
    checkout: nothing to compare against)."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                              ".", ":(exclude)reference"], cwd=root, text=True,
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return [line[3:] for line in out.splitlines() if line.strip()]


def git_commit(root: Path) -> str:
    """The commit of ``root``'s checkout (``-dirty`` if tracked files other than the stored
    references of ``reference/`` differ, :func:`dirty_files`), or "unknown"."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, text=True,
                             capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("-dirty" if dirty_files(root) else "")


def versions() -> dict[str, str]:
    """Python and the key packages' versions."""
    from importlib import metadata
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def provenance(root: Path, profile: str, values: dict[str, Any], wall_s: float,
               set_by: dict[str, str] | None = None) -> dict[str, Any]:
    """Everything a reader needs to say where a chapter's numbers came from: ``values`` are
    every value the chapter ran with (:func:`dsmlib.foundation.handoff.run_values`), ``set_by``
    names those that differ from the chapter's defaults and what set them ("profile smoke",
    "command line")."""
    return {"profile": profile, "parameters": dict(values), "set_by": dict(set_by or {}),
            "wall_s": round(wall_s, 1),
            "hardware": hardware(), "versions": versions(), "commit": git_commit(root),
            "executable": sys.executable and Path(sys.executable).name}
