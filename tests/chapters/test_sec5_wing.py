"""Section 5's wing stands below its parameters (issue 68, item 3): the chapter declares its
``Parameters`` above the wing (dsmlib.chapters.parameters.sec5_distillation, which builds the
grid with the wing's grid.py), and the wing reads them through a protocol of its own,
GridParameters, importing nothing of theirs: not at the top, not in a function, not for types."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dsmlib
from dsmlib.chapters.parameters.sec5_distillation import Parameters
from dsmlib.chapters.sec5_distillation.grid import GridParameters, build_grid

PKG = Path(dsmlib.__file__).parent
WING = PKG / "chapters" / "sec5_distillation"
PARAMETERS = "dsmlib.chapters.parameters"


def imported(text: str, module: str, is_package: bool = False) -> set[str]:
    """Every module that the source ``text`` of ``module`` imports anywhere (relative imports
    resolved), and for ``from a import b`` also ``a.b``."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out |= {mod, *(f"{mod}.{a.name}" for a in node.names)}
    return out


def upward(name: str) -> list[str]:
    """What the wing's module ``name`` (a file name) imports of the chapters' parameters."""
    module = "dsmlib.chapters.sec5_distillation" + ("" if name == "__init__.py"
                                                    else "." + name.removesuffix(".py"))
    names = imported((WING / name).read_text(), module, name == "__init__.py")
    return sorted(n for n in names if n == PARAMETERS or n.startswith(PARAMETERS + "."))


@pytest.mark.parametrize("src", ["from ..parameters.sec5_distillation import Parameters",
                                 "from .. import parameters",
                                 "import dsmlib.chapters.parameters.sec5_distillation",
                                 "if TYPE_CHECKING:\n    from ..parameters import sec5_distillation",
                                 "def f():\n    from dsmlib.chapters import parameters"])
def test_the_reader_sees_an_import_of_the_parameters_however_it_is_written(src):
    names = imported(src, "dsmlib.chapters.sec5_distillation.grid")
    assert any(n == PARAMETERS or n.startswith(PARAMETERS + ".") for n in names)


@pytest.mark.parametrize("name", [p.name for p in sorted(WING.glob("*.py"))])
def test_no_module_of_the_wing_imports_the_chapters_parameters(name):
    assert not upward(name), f"chapters/sec5_distillation/{name} imports {upward(name)}"


def test_the_chapters_parameters_are_what_the_wing_reads():
    """The chapter's Parameters hold every member of GridParameters, under every shape of
    grid (full data and headroom; headroom alone), and their grid is build_grid's."""
    for P in (Parameters(), Parameters.from_dict({"full_data": False, "curve_sizes": []})):
        assert isinstance(P, GridParameters)
        assert P.grid == build_grid(P) and P.runs() == P.grid.runs


def parameters_read(tree: ast.AST) -> set[str]:
    """The members read off the chapter's parameters in a module of the wing: the wing names
    them ``grid`` (a function's argument), ``g`` (``g = res.grid``) or ``paper``, and a
    result's ``res.grid``; the parameters' own ``.grid`` is the Grid, whose members are not
    theirs."""
    def is_parameters(node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in ("grid", "g", "paper")
        return (isinstance(node, ast.Attribute) and node.attr == "grid"
                and not is_parameters(node.value))
    return {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and is_parameters(n.value)}


def test_grid_parameters_declare_what_the_wing_and_its_figures_read_and_nothing_more():
    members = set(GridParameters.__annotations__) | {k for k in vars(GridParameters)
                                                     if not k.startswith("_")}
    read: set[str] = set()
    for p in [*sorted(WING.glob("*.py")), PKG / "figures" / "sec5_distillation.py"]:
        read |= parameters_read(ast.parse(p.read_text()))
    assert read == members, (f"read, not declared: {sorted(read - members)}; "
                             f"declared, not read: {sorted(members - read)}")
