"""Provenance and caching of executed chapters (book layer).

Every executed notebook carries, in ``metadata["dsmlib"]``:

- ``key``: a content hash of what determines its outputs: the notebook source, the resolved
  parameters, the profile, and every ``dsmlib`` module the notebook imports, directly or not.
  ``make book`` re-executes a notebook only when its key changed (:func:`is_fresh`).
- ``provenance``: profile, parameters, wall time, hardware (CPU model and count, GPU model if
  any), Python and key package versions, and the git commit (with ``-dirty`` when the working
  tree differs from it).

:func:`decorate` turns that into what a reader sees under the chapter's title: one provenance
line and a folded "parameters used" table, and hides the parameters cells (which would
expose the executing machine's paths).
"""
from __future__ import annotations

import hashlib
import html
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "code_key", "kernel_code", "hardware", "git_commit", "versions", "provenance",
           "is_fresh", "decorate", "provenance_line", "parameters_html", "provenance_table"]

PACKAGES = ("numpy", "scipy", "numba", "torch", "plotly", "papermill", "jupyter-book")


def _sha(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()


#: Modules that run outside the notebook kernel: changing them cannot change a notebook's
#: outputs, so they are left out of the content key (a site-only change rebuilds in seconds).
OUTSIDE_KERNEL = ("__main__.py", "book/cli.py", "book/runner.py", "book/ledger.py",
                  "book/provenance.py", "book/profiles.py", "book/sphinx_ext.py",
                  "book/mystnb_plugin.py", "book/store.py", "book/pages.py", "book/kernel.py",
                  "book/lab.py", "book/references.py", "book/reference_run.py",
                  "book/reference_section.py", "book/scales.py", "book/site.py",
                  "book/closure.py", "book/parameters_cell.py", "book/citation.py",
                  "book/downloads.py", "book/gpu_cost.py", "book/staleness.py",
                  "book/rerun.py")


def code_key(root: Path, source: Path, params: dict[str, Any], profile: str, *,
             pkg_dir: Path | None = None) -> str:
    """Content hash of a notebook's source, parameters, profile and the ``dsmlib`` code its
    kernel can run: the import closure of its code cells
    (:func:`dsmlib.book.closure.import_closure`, under ``pkg_dir``, default wherever the
    package is installed), less :data:`OUTSIDE_KERNEL`. Not of the machine, and not of code
    that only other chapters use, so that a change to one chapter's code leaves the others'
    executions and references current."""
    pkg_dir = pkg_dir or Path(__file__).resolve().parents[1]
    pkg = kernel_code(source, pkg_dir)
    return _sha(source.read_bytes(), json.dumps(params, sort_keys=True, default=str).encode(),
                profile.encode(), *(p.relative_to(pkg_dir).as_posix().encode() + p.read_bytes()
                                    for p in pkg))


def kernel_code(source: Path, pkg_dir: Path | None = None) -> list[Path]:
    """The ``dsmlib`` files a notebook's kernel can run (its import closure, less
    :data:`OUTSIDE_KERNEL`): the code its content key covers."""
    from .closure import import_closure
    pkg_dir = pkg_dir or Path(__file__).resolve().parents[1]
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
    gpu = None
    try:
        import torch
        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return {"cpu": cpu, "cpu_count": os.cpu_count(), "gpu": gpu}


def git_commit(root: Path) -> str:
    """The commit of ``root``'s checkout (``-dirty`` if tracked files other than the stored
    references of ``reference/`` differ), or "unknown"."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, text=True,
                             capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":(exclude)reference"],
                               cwd=root, text=True, capture_output=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


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
    every value the chapter ran with (:func:`dsmlib.book.results.run_values`), ``set_by``
    names those that differ from the chapter's defaults and what set them ("profile smoke",
    "command line")."""
    return {"profile": profile, "parameters": dict(values), "set_by": dict(set_by or {}),
            "wall_s": round(wall_s, 1),
            "hardware": hardware(), "versions": versions(), "commit": git_commit(root),
            "executable": sys.executable and Path(sys.executable).name}


def is_fresh(executed: Path, key: str) -> bool:
    """Whether ``executed`` exists, ran to the end and was made from the same ``key``."""
    if not executed.exists():
        return False
    try:
        meta = json.loads(executed.read_text()).get("metadata", {})
    except (OSError, ValueError):
        return False
    return meta.get("dsmlib", {}).get("key") == key and not meta.get("papermill", {}).get(
        "exception")


def provenance_line(p: dict[str, Any]) -> str:
    hw = p["hardware"]
    gpu = f", GPU {hw['gpu']}" if hw.get("gpu") else ", no GPU"
    v = p["versions"]
    dirty = (" (<code>-dirty</code>: executed with uncommitted changes, so that commit alone "
             "does not reproduce it)" if str(p["commit"]).endswith("-dirty") else "")
    return (f"Executed under the <code>{p['profile']}</code> profile in {p['wall_s']:.0f} s on "
            f"{html.escape(str(hw['cpu']))} ({hw['cpu_count']} cores{html.escape(gpu)}); "
            f"Python {v['python']}, numpy {v['numpy']}, torch {v['torch']}; commit "
            f"<code>{p['commit']}</code>{dirty}.")


def parameters_html(params: dict[str, Any], set_by: dict[str, str] | None = None) -> str:
    """Every parameter value, the overrides (of the notebook's parameters cell) marked."""
    set_by = set_by or {}

    def origin(k: str) -> str:
        return (f"<strong>{html.escape(set_by[k])}</strong>" if k in set_by
                else "notebook default")
    mark = {k: " class='override'" for k in set_by}
    rows = "".join(f"<tr{mark.get(k, '')}>"
                   f"<td><code>{html.escape(k)}</code></td>"
                   f"<td><code>{html.escape(repr(v))}</code></td><td>{origin(k)}</td></tr>"
                   for k, v in params.items())
    n = len(set_by)
    note = f", {n} overridden" if n else ""
    return (f"<details><summary>Parameters used ({len(params)} values{note})</summary>"
            "<table class='params'><thead><tr><th>name</th><th>value</th><th>set by</th>"
            f"</tr></thead><tbody>{rows}</tbody></table></details>")


#: The code of the provenance cell: it shows the runner's provenance (its saved output) until
#: a person re-executes the notebook, when it says so (:mod:`dsmlib.book.rerun`).
RERUN_SOURCE = ("# Re-executed by hand (papermill, Jupyter): this cell says so, here.\n"
                "from dsmlib.book.rerun import announce_rerun\n"
                "announce_rerun({name!r}, globals())")


def decorate(nb: dict[str, Any], p: dict[str, Any], key: str, gpu_notice: str = "",
             name: str = "") -> None:
    """Hide the parameters cells and put the provenance and parameters under the title, in
    place: a cell whose output is the runner's provenance line and parameters table, and whose
    code, when a person re-executes notebook ``name``, shows that run's instead
    (:data:`RERUN_SOURCE`)."""
    cells = nb["cells"]
    for c in cells:
        tags = c.setdefault("metadata", {}).setdefault("tags", [])
        if ("parameters" in tags or "injected-parameters" in tags) and "remove-cell" not in tags:
            tags.append("remove-cell")
    cells[:] = [c for c in cells if "dsmlib-provenance" not in c["metadata"].get("tags", [])]
    title = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                  and "".join(c["source"]).lstrip().startswith("# ")), -1)
    body = (f"<div class='provenance'>{provenance_line(p)}\n"
            f"{parameters_html(p['parameters'], p.get('set_by'))}</div>\n")
    head = [{"cell_type": "markdown", "id": "dsmlib-gpu-notice",
             "metadata": {"tags": ["dsmlib-provenance"]},
             "source": f"<div class='gpu-notice'>{gpu_notice}</div>\n"}] if gpu_notice else []
    head.append({"cell_type": "code", "id": "dsmlib-provenance", "execution_count": None,
                 "metadata": {"tags": ["dsmlib-provenance", "remove-input"]},
                 "outputs": [{"output_type": "display_data", "metadata": {},
                              "data": {"text/html": body, "text/plain": provenance_text(p)}}],
                 "source": RERUN_SOURCE.format(name=name)})
    # A title cell may hold more than the title: split it so provenance sits right below.
    if title >= 0:
        src = "".join(cells[title]["source"])
        head_line, _, rest = src.lstrip().partition("\n")
        cells[title]["source"] = head_line + "\n"
        extra = [{"cell_type": "markdown", "id": "dsmlib-title-rest",
                  "metadata": {"tags": ["dsmlib-title-rest"]}, "source": rest}] if rest.strip() else []
        cells[title + 1:title + 1] = head + extra
    else:
        cells[0:0] = head
    nb.setdefault("metadata", {})["dsmlib"] = {"key": key, "provenance": p}


def provenance_text(p: dict[str, Any]) -> str:
    """The provenance line as plain text (for a reader of the notebook file)."""
    return html.unescape(re.sub(r"<[^>]+>", "", provenance_line(p)))


def provenance_table(runs: dict[str, dict[str, Any] | None], paths: dict[str, str]) -> str:
    """The reproducibility page's table: one row per chapter (Markdown)."""
    lines = ["| Chapter | Profile | Wall time | Hardware | Python, numpy, torch | Commit |",
             "|---|---|---|---|---|---|"]
    for name, p in runs.items():
        link = f"{{doc}}`{name} <{paths[name]}>`"
        if not p:
            lines.append(f"| {link} | — | — | not recorded | — | — |")
            continue
        hw, v = p["hardware"], p["versions"]
        gpu = f"; {hw['gpu']}" if hw.get("gpu") else ""
        lines.append(f"| {link} | `{p['profile']}` | {p['wall_s']:.0f} s | "
                     f"{hw['cpu']} ×{hw['cpu_count']}{gpu} | {v['python']}, {v['numpy']}, "
                     f"{v['torch']} | `{p['commit']}` |")
    return "\n".join(lines) + "\n"
