"""Which ``dsmlib`` modules a notebook's kernel can run (book layer): the import closure of its
code cells, so that a chapter's content key (:func:`dsmlib.book.execute.provenance.code_key`) changes
when code it uses changes, and not when another chapter's code does.

The closure is conservative. Every ``import`` of every module in it counts, wherever it
stands (a function-level import too), as does every package ``__init__`` on the way, and
``from pkg import name`` counts ``pkg.name`` when that is a module. The package never
imports by computed name (a test checks it), so nothing is reached that the closure misses.
A code cell that cannot be parsed as Python puts the whole package in the closure.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

__all__ = ["PACKAGE", "notebook_code", "code_cells", "imported_names", "module_imports",
           "module_file", "import_closure"]

PACKAGE = "dsmlib"


def notebook_code(source: Path) -> list[str]:
    """The code cells of a MyST or ipynb notebook, IPython magics and shell lines dropped."""
    return list(code_cells(source.read_text(), source.suffix))


@functools.lru_cache(maxsize=64)
def code_cells(text: str, suffix: str) -> tuple[str, ...]:
    """:func:`notebook_code` of a notebook's ``text`` (its file's ``suffix`` says the format),
    remembered by the text: a build reads each chapter's source once per profile."""
    import jupytext
    # A .md source is MyST whatever its front matter says (without one, jupytext would read
    # plain Markdown and find no code at all).
    nb = jupytext.reads(text, fmt="md:myst" if suffix == ".md" else suffix.lstrip("."))
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        lines = [ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        cells.append("\n".join(lines))
    return tuple(cells)


def imported_names(tree: ast.AST, module: str = "", is_package: bool = False) -> set[str]:
    """Every ``dsmlib`` name imported anywhere in ``tree`` (relative imports resolved against
    ``module``); for ``from a import b``, both ``a`` and ``a.b``."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return {n for n in out if n == PACKAGE or n.startswith(PACKAGE + ".")}


def module_file(name: str, pkg_dir: Path) -> Path | None:
    """The file of module ``name`` (``dsmlib.x.y``) under ``pkg_dir``, or None."""
    p = pkg_dir.joinpath(*name.split(".")[1:])
    if (p / "__init__.py").exists():
        return p / "__init__.py"
    return p.with_suffix(".py") if p.with_suffix(".py").exists() else None


def import_closure(source: Path, pkg_dir: Path) -> list[Path]:
    """The files of every ``dsmlib`` module the notebook ``source`` imports, directly or not,
    sorted; every file of the package if a code cell is not Python."""
    names: set[str] = set()
    for code in notebook_code(source):
        try:
            names |= imported_names(ast.parse(code))
        except SyntaxError:
            return sorted(p for p in pkg_dir.rglob("*.py") if "__pycache__" not in p.parts)
    seen: dict[str, Path] = {}
    todo = list(names)
    while todo:
        parts = todo.pop().split(".")
        for i in range(1, len(parts) + 1):       # the packages on the way, then the module
            name = ".".join(parts[:i])
            path = module_file(name, pkg_dir)
            if path is None or name in seen:
                continue
            seen[name] = path
            todo.extend(module_imports(path.read_text(), name, path.name == "__init__.py"))
    return sorted(seen.values())


@functools.lru_cache(maxsize=1024)
def module_imports(text: str, module: str, is_package: bool) -> frozenset[str]:
    """:func:`imported_names` of a module's source ``text``, remembered by the text itself: a
    book's chapters share most of their closure, and a build computes the content keys of
    every chapter under every profile (18 closures, 8 s of parsing, measured on the 2-core
    Intel Xeon), so each file is parsed once per process; an edited file is parsed again."""
    return frozenset(imported_names(ast.parse(text), module, is_package))
