"""A notebook's cells as the JSON of an ``.ipynb`` holds them (book layer): a cell's source
text (a string, or the list of lines nbformat may write) and its tags."""
from __future__ import annotations

from typing import Any

__all__ = ["cell_source", "cell_tags"]


def cell_source(cell: dict[str, Any]) -> str:
    """The cell's source as one string."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def cell_tags(cell: dict[str, Any]) -> list[str]:
    """The cell's tags ([] when it has none)."""
    return cell.get("metadata", {}).get("tags", [])
