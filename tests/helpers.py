"""Helpers shared by the test modules (importable because pytest puts tests/ on sys.path)."""
from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK_FILES = ["_config.yml", "_toc.yml", "notebooks", "book"]


def copy_book(dest: Path) -> Path:
    """Copy the book's sources (not its build products) into ``dest``."""
    for name in BOOK_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns(
                "chapters", "_static", "_generated", "ledger.md", ".ipynb_checkpoints"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def missing_axis_titles(fig) -> list[str]:
    """Names of the axes of ``fig`` that are shown but have no title.

    Walks every ``xaxis*`` / ``yaxis*`` entry of ``fig.layout`` and every axis a trace is drawn
    on (``x``, ``x2``, ...); an axis counts as shown unless ``visible`` is False.
    """
    layout = fig.layout.to_plotly_json()
    names = {k for k in layout if k.startswith(("xaxis", "yaxis"))}
    for tr in fig.data:
        for attr in ("xaxis", "yaxis"):
            if attr in tr:                      # cartesian traces only
                ref = tr[attr] or attr[0]       # "x", "x2", ...
                names.add(attr + ref[1:])
    missing = []
    for name in sorted(names):
        axis = fig.layout[name]
        if axis.visible is False:
            continue
        if not (axis.title and axis.title.text and str(axis.title.text).strip()):
            missing.append(name)
    return missing
