"""Shared fixtures: a throw-away copy of the book, executed and built under the smoke profile."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def smoke_book(tmp_path_factory) -> Path:
    """A copy of the book executed with papermill and built, exactly as `make book` does."""
    root = copy_book(tmp_path_factory.mktemp("book"))
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), "book",
                           "--profile", "smoke", "--no-progress"],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"smoke book failed:\n{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}"
    return root
