"""Build the static site with Jupyter Book 1 from a profile's executed chapters, with the
committed reference executions beside them (book layer)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ...foundation.files import atomic_write_text
from .assets import copy_assets
from .pages import write_generated_pages
from ..profiles import check_profile, load_specs
from ..references.freshness import current_references
from ..references.contrast import contrast_html, scales_of
from ..references.regimes import opening_html
from ..references.section import contrast_cell, first_screen_cell, with_reference_sections
from ..references.stored import Reference
from ..execute.store import book_lock, executed_path, stage_site_copy

__all__ = ["SHOWN_PROFILES", "site_chapter", "build"]

#: Reference profiles whose executions a GPU chapter's page shows in full (figures and
#: verdicts; a stale one under a notice saying so); every reference's verdicts are in the
#: ledger.
SHOWN_PROFILES = ("cpu-cifar10", "gpu", "gpu-cifar10", "paper")


def site_chapter(root: Path, spec, profile: str, refs: list[Reference]) -> str:
    """The site's copy of a chapter: its execution under ``profile``, its claims beside every
    reference's where its results name claims to contrast (:mod:`.references.contrast`), and for
    a GPU chapter a section per ``gpu``/``paper`` reference (a stale one marked stale)."""
    text = executed_path(root, profile, spec.name).read_text()
    mine = [r for r in refs if r.name == spec.name]
    shown = [r for r in mine if spec.gpu and r.profile in SHOWN_PROFILES]
    built = root / "results" / profile / f"{spec.name}.json"
    scales = scales_of(json.loads(built.read_text()), mine, profile) if mine and \
        built.exists() else []
    lead = contrast_cell(contrast_html(scales)) if scales else []
    first = first_screen_cell(opening_html(scales)) if scales else []
    if not shown and not lead and not first:
        return text
    nb = with_reference_sections(json.loads(text), [(json.loads(r.notebook.read_text()), r)
                                                    for r in shown], lead, first)
    return json.dumps(nb, indent=1, ensure_ascii=False)


def build(root: Path, *, profile: str = "quick") -> Path:
    """Build ``_build/html`` from ``profile``'s executed notebooks (copied to the site's
    ``book/chapters/<name>.ipynb``) and the committed references; warnings and broken links
    fail it."""
    check_profile(profile)
    with book_lock(root, "build"):
        specs = load_specs(root / "notebooks")
        refs = current_references(root, profile, specs)
        write_generated_pages(root, profile, refs)    # checks chapters and results first
        stage = root / "_build" / "site-chapters"
        for name, spec in specs.items():
            staged = atomic_write_text(stage / f"{name}.ipynb",
                                       site_chapter(root, spec, profile, refs))
            stage_site_copy(staged, root / "book" / "chapters" / f"{name}.ipynb")
        copy_assets(root)
        jb = Path(sys.executable).with_name("jupyter-book")
        if not jb.exists():
            raise RuntimeError(f"jupyter-book is not installed next to {sys.executable}")
        cmd = [str(jb), "build", str(root), "--builder", "html", "-W", "-n", "--keep-going"]
        print("[dsmlib] " + " ".join(cmd), file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, cwd=root, env={**os.environ, "DSMLIB_PROFILE": profile})
        if proc.returncode != 0:
            raise RuntimeError(f"jupyter-book build failed (exit {proc.returncode}); see the "
                               "warnings above")
        return root / "_build" / "html" / "index.html"
