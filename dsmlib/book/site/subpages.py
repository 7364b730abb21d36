"""A chapter's reference pages (book layer): each reference execution a chapter shows has a
page of its own, a sub-page of the chapter in the site's table of contents, so that no page
carries every reference's figures (the Section 5 page weighed 640 KB with two references, and
a page may weigh 600 KB).

``_toc.yml`` lists them statically, under their chapter::

    - file: book/chapters/sec5_distillation
      sections:
        - file: book/chapters/sec5_distillation/cpu-cifar10

and the build writes a page for every one it lists (:func:`subpage_text`), so that the table
of contents never names a file the build did not write: the reference's outputs where it is
committed, and where it is not (it is still training), a page saying so, with how many of its
grid's seeds have finished and how long they trained, summed from their run records
(:func:`training_progress`). A reference the chapter shows that the table of contents does not
list is an error that names the line to add (:func:`check_pages`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import yaml

from ..profiles import PROFILE_USES
from ..references.records import profile_runs, records_dir, records_seconds
from ..references.section import markdown_cell, reference_page_cells
from ..references.stored import Reference
from ..execute.provenance_html import duration_text

__all__ = ["CHAPTERS", "toc_subpages", "subpage_doc", "subpage_path", "check_pages", "Progress",
           "training_progress", "progress_markdown", "placeholder_cells", "subpage_text"]

#: Where the site's chapter pages are, relative to the book's root.
CHAPTERS = "book/chapters"


def toc_subpages(root: Path) -> dict[str, list[str]]:
    """Per chapter, the profiles whose reference pages ``_toc.yml`` lists under it (``- file:
    book/chapters/<chapter>/<profile>`` in its ``sections``), in their order. Any other
    section of a chapter is a ValueError: the build writes reference pages only."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    out: dict[str, list[str]] = {}
    for part in toc.get("parts", []):
        for entry in part.get("chapters", []):
            file = str(entry.get("file", ""))
            if not file.startswith(f"{CHAPTERS}/") or not entry.get("sections"):
                continue
            name = file.rsplit("/", 1)[-1]
            for section in entry["sections"]:
                sub = str(section.get("file", ""))
                if set(section) != {"file"} or not sub.startswith(f"{file}/"):
                    raise ValueError(f"_toc.yml: {sub or section} under {file} is not a reference "
                                     f"page ({file}/<profile>), the only sections a chapter has")
                out.setdefault(name, []).append(sub[len(file) + 1:])
    return out


def subpage_doc(name: str, profile: str) -> str:
    """The ``{doc}`` target of chapter ``name``'s page of ``profile``, from the chapter's page."""
    return f"{name}/{profile}"


def subpage_path(root: Path, name: str, profile: str) -> Path:
    """Where the build writes chapter ``name``'s page of the ``profile`` reference."""
    return root / CHAPTERS / name / f"{profile}.ipynb"


def check_pages(name: str, shown: Sequence[str], pages: Sequence[str],
                allowed: Sequence[str]) -> None:
    """A ValueError unless every profile in ``shown`` (chapter ``name``'s references that its
    page shows) has a page in ``pages`` (``_toc.yml``'s, :func:`toc_subpages`), and every one
    of ``pages`` is a profile whose reference a page may show (``allowed``)."""
    missing = [p for p in shown if p not in pages]
    if missing:
        lines = "; ".join(f"- file: {CHAPTERS}/{name}/{p}" for p in missing)
        raise ValueError(f"the {', '.join(missing)} reference of {name} has no page in _toc.yml: "
                         f"add, under `- file: {CHAPTERS}/{name}`, `sections:` with {lines}")
    other = [p for p in pages if p not in allowed]
    if other:
        raise ValueError(f"_toc.yml lists a page of {name} for {', '.join(other)}, whose "
                         f"references no page shows (shown: {', '.join(allowed)})")


@dataclass(frozen=True)
class Progress:
    """How far a reference still training has got, from the run records stored so far."""
    seeds: tuple[int, ...]          # the seeds of its grid
    finished: tuple[int, ...]       # the seeds whose teacher's record is stored
    runs: int                       # the runs of its grid
    done: int                       # the runs whose record is stored
    seconds: float                  # their training time, summed from those records


def training_progress(root: Path, spec: Any, profile: str) -> Progress | None:
    """How far chapter ``spec``'s grid under ``profile`` has trained: the records
    (``done.json``) stored so far under ``reference/<profile>/runs/``, their teachers' seeds
    and their training time (:func:`dsmlib.book.references.records.records_seconds`); None for
    a chapter without runs."""
    configs = profile_runs(spec, profile)
    if configs is None:
        return None
    base = records_dir(root, profile)
    keys = {c.key(): c for c in configs}
    done = [k for k in keys if (base / k / "done.json").is_file()]
    teachers = [c for c in keys.values() if c.role == "teacher"]
    return Progress(seeds=tuple(sorted({c.seed for c in teachers})),
                    finished=tuple(sorted({keys[k].seed for k in done
                                           if keys[k].role == "teacher"})),
                    runs=len(keys), done=len(done), seconds=records_seconds(base, done))


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def progress_markdown(profile: str, progress: Progress | None) -> str:
    """What a reader is told of a reference that is not committed (Markdown): that it is not,
    so that there is nothing to show yet, and for one with a grid how far it has trained
    (:func:`training_progress`)."""
    if progress is None:
        return (f"The `{profile}` reference of this chapter is not committed yet, so there are "
                "no figures or verdicts of it to show.")
    head = (f"The `{profile}` reference of this chapter is still training and is not committed "
            "yet, so there are no figures or verdicts of it to show.")
    n = len(progress.seeds)
    if not progress.done:
        return (f"{head} None of the {progress.runs:,} runs of its grid ({n} seeds) has "
                "finished yet.")
    seeds = ", ".join(map(str, progress.finished))
    finished = (f"{len(progress.finished)} of its {n} seeds' teachers "
                f"{'has' if len(progress.finished) == 1 else 'have'} finished training"
                + (f" (seed{'' if len(progress.finished) == 1 else 's'} {seeds})"
                   if progress.finished else ""))
    return (f"{head} So far {finished}, and {progress.done:,} of the {progress.runs:,} runs of "
            f"its grid {'has its record' if progress.done == 1 else 'have their records'} in "
            f"`reference/{profile}/runs/`: "
            f"{_training(progress.seconds)}.")


def _training(seconds: float) -> str:
    """``seconds`` of training as the provenance lines give it: "5.2 min of training (311 s,
    summed from those records)"."""
    exact = f"{seconds:,.0f} s, " if seconds >= 120 else ""
    return f"{duration_text(seconds)} of training ({exact}summed from those records)"


def placeholder_cells(name: str, chapter: str, profile: str, text: str) -> list[dict[str, Any]]:
    """The page of a reference that is not committed: its title, a line back to its chapter
    (``chapter``: a ``{doc}`` target), the profile's use and ``text``
    (:func:`progress_markdown`)."""
    use = PROFILE_USES.get(profile, "").format(goal="")
    text = (f"# The `{profile}` reference execution (not committed)\n\nOne of the reference "
            f"executions of {{doc}}`{chapter}`, under the `{profile}` profile"
            + (f": {use}" if use else "") + f".\n\n{text}\n\nIts runs train with "
            f"`python -m dsmlib grid launch --profile {profile} --by-seed --commit`, which "
            "commits each seed's records as it finishes and resumes where it stopped; once "
            f"every seed is in, `python -m dsmlib reference {name} --profile {profile}` makes "
            "the reference, and this page shows its figures and verdicts.\n")
    return [markdown_cell(text, 0, profile)]


def subpage_text(root: Path, spec: Any, profile: str, page: str, ref: Reference | None,
                 metadata: dict[str, Any]) -> str:
    """The site's copy of chapter ``spec``'s page of the ``page`` reference (``ref``, or None
    where none is committed) in a build under ``profile``: :func:`reference_page_cells`, or
    the page saying that it is not committed (:func:`placeholder_cells`); ``metadata``: the
    notebook metadata it takes from its chapter's (kernel and language)."""
    chapter = f"{spec.title} <../{spec.name}>"
    if ref is not None:
        cells = reference_page_cells(json.loads(ref.notebook.read_text()), ref, chapter)
    elif page == profile:
        cells = placeholder_cells(spec.name, chapter, page, (
            f"This site was built under the `{page}` profile itself: its execution of the "
            "chapter is the chapter's page, and a reference of it is never shown beside it."))
    else:
        cells = placeholder_cells(spec.name, chapter, page,
                                  progress_markdown(page, training_progress(root, spec, page)))
    meta = {k: metadata[k] for k in ("kernelspec", "language_info") if k in metadata}
    return json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5},
                      indent=1, ensure_ascii=False)
