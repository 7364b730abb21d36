"""The notebooks' sources against the chapter contract (notebooks/README.md), read with
jupytext, without executing anything: the table of contents, the parameters cell, and a
caption and a name on every figure."""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
import yaml

from dsmlib.book.profiles import load_specs
from helpers import ROOT

NOTEBOOKS = ROOT / "notebooks"


def _cells(path: Path):
    import jupytext
    return jupytext.read(path).cells


def test_toc_lists_every_notebook_in_book_order():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    chapters = [f.split("/")[-1] for f in files if f.startswith("book/chapters/")]
    assert chapters == list(load_specs(NOTEBOOKS))


def test_sources_have_parameters_cells_and_no_outputs():
    for spec in load_specs(NOTEBOOKS).values():
        cells = _cells(spec.source)
        tagged = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, spec.name
        assert all(not c.get("outputs") for c in cells if c.cell_type == "code")


# -- figures: caption and name ---------------------------------------------------------------

def _figure_names(cells) -> dict[str, str]:
    """Local name -> dotted path, for every name a notebook imports from ``dsmlib.figures``."""
    names = {}
    for cell in cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dsmlib.figures"):
                for a in node.names:
                    names[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("dsmlib.figures"):
                        names[a.asname or a.name] = a.name
    return names


def _dotted(func: ast.expr) -> str | None:
    """``a.b.c`` for a call's function, following a method chain to its first call."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        base = func.value
        if isinstance(base, ast.Call):                  # figs.f(x).update_layout(...)
            return _dotted(base.func)
        inner = _dotted(base)
        return None if inner is None else f"{inner}.{func.attr}"
    return None


def _resolve(dotted: str) -> object | None:
    """The object a dotted path names (module attributes followed), or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def _is_figure_function(obj: object, path: str) -> bool:
    """A function of dsmlib.figures (not the tables) that returns a plotly Figure."""
    if not inspect.isfunction(obj) or path.startswith("dsmlib.figures.tables"):
        return False
    return str(inspect.signature(obj).return_annotation) in (
        "go.Figure", "<class 'plotly.graph_objs._figure.Figure'>")


def figure_cells() -> list[tuple[str, int, object]]:
    """(notebook, cell index, cell) for every code cell whose last statement calls a figure
    function."""
    out = []
    for spec in load_specs(NOTEBOOKS).values():
        cells = _cells(spec.source)
        names = _figure_names(cells)
        for k, cell in enumerate(cells):
            if cell.cell_type != "code" or not cell.source.strip():
                continue
            body = ast.parse(cell.source).body
            if not body or not isinstance(body[-1], ast.Expr) or not isinstance(body[-1].value, ast.Call):
                continue
            dotted = _dotted(body[-1].value.func)
            if dotted is None:
                continue
            head, _, rest = dotted.partition(".")
            if head not in names:
                continue
            path = names[head] + (f".{rest}" if rest else "")
            if _is_figure_function(_resolve(path), path):
                out.append((spec.name, k, cell))
    return out


def _caption_problems(cell) -> list[str]:
    fig = cell.metadata.get("mystnb", {}).get("figure", {})
    problems = []
    if not str(fig.get("caption", "")).strip():
        problems.append("no mystnb figure caption")
    if not str(fig.get("name", "")).startswith("fig-"):
        problems.append("no mystnb figure name 'fig-...'")
    if "hide-input" not in cell.metadata.get("tags", []):
        problems.append("input not hidden (tag hide-input)")
    return problems


def test_figure_cells_are_found():
    """The detector finds the figure cells of every chapter, including Figure 3's, which
    follows the contract."""
    found = figure_cells()
    assert {nb for nb, _, _ in found} == set(load_specs(NOTEBOOKS))
    fig3 = [c for nb, _, c in found if nb == "ols" and "figs.figure3(results)" in c.source]
    assert len(fig3) == 1 and _caption_problems(fig3[0]) == []


def test_every_figure_has_a_caption_and_a_name():
    """Every code cell that ends by calling a figure function (anything from dsmlib.figures
    except the tables) carries a mystnb figure caption and a ``fig-`` name and hides its
    input (notebooks/README.md, item 4); names are unique across the book."""
    found = figure_cells()
    problems = [f"{nb} cell {k} ({c.source.splitlines()[-1].strip()}): {', '.join(p)}"
                for nb, k, c in found if (p := _caption_problems(c))]
    assert problems == [], "\n".join(problems)
    names = [c.metadata["mystnb"]["figure"]["name"] for _, _, c in found]
    assert len(names) == len(set(names)), names
