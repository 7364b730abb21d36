"""Build the static site with Jupyter Book 1 from a profile's executed chapters, with the
committed reference executions beside them (book layer)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from ...foundation.files import atomic_write_text
from .assets import copy_assets
from .pages import write_generated_pages
from ..profiles import check_profile, load_specs
from ..references.freshness import current_references
from ..references.contrast import contrast_html, scales_of
from ..references.regimes import opening_html
from ..references.section import (contrast_cell, first_screen_cell, reference_summary,
                                  summary_cells, with_reference_sections)
from ..references.stored import Reference
from ..execute.store import book_lock, executed_path, stage_site_copy
from .subpages import (check_pages, progress_markdown, subpage_doc, subpage_path, subpage_text,
                       toc_subpages, training_progress)

__all__ = ["SHOWN_PROFILES", "shown_references", "site_chapter", "site_subpages", "build"]

#: Reference profiles whose executions a GPU chapter shows, each on a page of its own
#: (figures and verdicts; a stale one under a notice saying so) with a short block on the
#: chapter's page (:mod:`.subpages`); every reference's verdicts are in the ledger.
SHOWN_PROFILES = ("cpu-cifar10", "cpu-cifar10-fit", "gpu", "gpu-cifar10", "paper")


def shown_references(spec, refs: list[Reference]) -> list[Reference]:
    """The references of chapter ``spec`` that the site shows (:data:`SHOWN_PROFILES`, GPU
    chapters only)."""
    return [r for r in refs if r.name == spec.name and spec.gpu and r.profile in SHOWN_PROFILES]


def _summary(root: Path, spec, profile: str, page: str,
             shown: dict[str, Reference]) -> list[dict]:
    """The block of the ``page`` reference on chapter ``spec``'s page: its heading, execution
    line and finding and a link to its page, or, where it is not committed, what its page says
    of it (how far it has trained)."""
    doc = subpage_doc(spec.name, page)
    if page in shown:
        ref = shown[page]
        return reference_summary(json.loads(ref.notebook.read_text()), ref, doc)
    if page == profile:
        return []
    return summary_cells(f"## The `{page}` reference execution (not committed)",
                         progress_markdown(page, training_progress(root, spec, page)), doc, page,
                         link="It has {page}, which will show its figures and verdicts once it is "
                         "committed.")


def site_chapter(root: Path, spec, profile: str, refs: list[Reference],
                 pages: Sequence[str] = ()) -> str:
    """The site's copy of a chapter: its execution under ``profile``, its claims beside every
    reference's where its results name claims to contrast (:mod:`.references.contrast`), and for
    a GPU chapter a short block per reference page ``pages`` lists (``_toc.yml``'s,
    :func:`.subpages.toc_subpages`): its heading, execution line and finding and a link to its
    page (:func:`site_subpages`). A shown reference without a page is a ValueError."""
    text = executed_path(root, profile, spec.name).read_text()
    mine = [r for r in refs if r.name == spec.name]
    shown = {r.profile: r for r in shown_references(spec, refs)}
    check_pages(spec.name, list(shown), pages, SHOWN_PROFILES)
    built = root / "results" / profile / f"{spec.name}.json"
    scales = scales_of(json.loads(built.read_text()), mine, profile) if mine and \
        built.exists() else []
    lead = contrast_cell(contrast_html(scales)) if scales else []
    first = first_screen_cell(opening_html(scales)) if scales else []
    sections = [s for s in (_summary(root, spec, profile, p, shown) for p in pages) if s]
    if not sections and not lead and not first:
        return text
    nb = with_reference_sections(json.loads(text), sections, lead, first)
    return json.dumps(nb, indent=1, ensure_ascii=False)


def site_subpages(root: Path, spec, profile: str, refs: list[Reference],
                  pages: Sequence[str]) -> dict[str, str]:
    """The site's copy of each of chapter ``spec``'s reference pages ``pages``, by profile
    (:func:`.subpages.subpage_text`): the reference's outputs where it is committed, else a
    page saying that it is not and how far it has trained."""
    shown = {r.profile: r for r in shown_references(spec, refs)}
    meta = json.loads(executed_path(root, profile, spec.name).read_text()).get("metadata", {})
    return {p: subpage_text(root, spec, profile, p, shown.get(p), meta) for p in pages}


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
        toc = toc_subpages(root)
        unknown = sorted(set(toc) - set(specs))
        if unknown:
            raise ValueError(f"_toc.yml lists reference pages of {', '.join(unknown)}, which "
                             "notebooks/profiles.yml does not declare")
        for name, spec in specs.items():
            pages = toc.get(name, [])
            staged = {root / "book" / "chapters" / f"{name}.ipynb": atomic_write_text(
                stage / f"{name}.ipynb", site_chapter(root, spec, profile, refs, pages))}
            for page, text in site_subpages(root, spec, profile, refs, pages).items():
                staged[subpage_path(root, name, page)] = atomic_write_text(
                    stage / name / f"{page}.ipynb", text)
            for dest, src in staged.items():
                stage_site_copy(src, dest)
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
