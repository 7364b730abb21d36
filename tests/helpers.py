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
                "chapters", "_static", "_generated", "ledger.md", "errata.md",
                ".ipynb_checkpoints"))
        else:
            shutil.copy2(src, dest / name)
    return dest
