"""Each chapter's parameters are declared once, in its module's Parameters (issue 32, part 3):
the book writes them into the notebook's parameters cell, resolves and checks every chapter
with them before any kernel starts (dsmlib.book.profiles.resolve), and names no chapter."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from dsmlib.book.execute import runner
from dsmlib.book.commands.grid import grid_chapter
from dsmlib.book.execute.parameters_cell import declare_in_cell
from dsmlib.book.profiles import (PROFILES, RUNNER_PARAMETERS, chapters_with_runs, load_specs,
                                  parameters_class, resolve)
from dsmlib.foundation.parameters import ChapterParameters
from helpers import ROOT, copy_book

SPECS = load_specs(ROOT / "notebooks")


def chapter_parameters(name: str) -> type[ChapterParameters]:
    return parameters_class(SPECS[name])
# per chapter, a value of the right type that its ranges refuse
OUT_OF_RANGE = {"ols": ("steps", 0), "prop1_noise": ("n_samples", 1),
                "prop2_convergence": ("n_paths", 0), "prop3_regularizer": ("n_draws", 0),
                "remark3_valley": ("n_runs", 0), "sec5_distillation": ("passes", 0)}


def test_every_chapter_declares_its_parameters_in_its_module():
    assert set(OUT_OF_RANGE) == set(SPECS)
    for name in SPECS:
        cls = chapter_parameters(name)
        assert cls is not None and issubclass(cls, ChapterParameters), name
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, name
        assert cls.notebook == name
        assert not set(cls.names()) & set(RUNNER_PARAMETERS), name


@pytest.mark.parametrize("name", list(SPECS))
def test_every_profile_only_overrides_and_passes_the_chapters_check(name):
    cls = chapter_parameters(name)
    for profile in PROFILES:
        over = SPECS[name].profiles[profile]
        assert set(over) <= set(cls.names()), (name, profile)
        cls.from_dict(over)


def parameters_cell(name: str) -> str:
    import jupytext
    cells = [c for c in jupytext.read(ROOT / "notebooks" / f"{name}.md").cells
             if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, name
    return cells[0].source


@pytest.mark.parametrize("name", list(SPECS))
def test_a_notebooks_own_cell_declares_only_the_runners_names(name):
    """The chapter's values live in Parameters alone: the source's parameters cell assigns the
    runner's names only, and the cell papermill reads holds every field once."""
    src = parameters_cell(name)
    assigned = [t.id for s in ast.parse(src).body if isinstance(s, ast.Assign) for t in s.targets]
    assert sorted(assigned) == sorted(RUNNER_PARAMETERS), (name, assigned)
    written = declare_in_cell(SPECS[name], src)
    names = [t.id for s in ast.parse(written).body if isinstance(s, ast.Assign)
             for t in s.targets]
    assert names == [*assigned, *chapter_parameters(name).names()]


def test_a_parameter_declared_in_two_places_is_refused():
    src = parameters_cell("ols") + "\nsteps = 5   # a second declaration\n"
    with pytest.raises(ValueError, match=r"parameter\(s\) \['steps'\] of ols are declared twice"):
        declare_in_cell(SPECS["ols"], src)
    # a notebook without a chapter module (the tests' one-cell books) keeps its own cell
    mine = dataclasses.replace(SPECS["ols"], name="no_such_chapter",
                               module="dsmlib.chapters.no_such_chapter")
    assert declare_in_cell(mine, "x = 1") == "x = 1"


@pytest.fixture(scope="module")
def book(tmp_path_factory) -> Path:
    return copy_book(tmp_path_factory.mktemp("declared"))


@pytest.mark.parametrize("name", list(SPECS))
def test_a_value_out_of_range_is_refused_before_any_kernel_starts(name, book, monkeypatch):
    def started(*args, **kwargs):
        raise AssertionError(f"a kernel started for {name}")
    monkeypatch.setattr(runner, "run_notebook", started)
    param, bad = OUT_OF_RANGE[name]
    with pytest.raises(ValueError, match=rf"{param}.* must be >= ") as err:
        runner.execute(book, [name], profile="smoke", overrides={param: bad}, progress=False,
                       force=True)
    assert "\n" not in str(err.value)
    # the one road says so too, with its type check first
    with pytest.raises(ValueError, match=rf"parameter '{param}' of {name} must be an integer"):
        resolve(SPECS[name], "smoke", {param: "many"})


def book_modules() -> list[Path]:
    """The book layer's modules, its packages' too, but for the live widgets (one module per
    chapter, named after it)."""
    book = ROOT / "dsmlib" / "book"
    return sorted(p for p in book.rglob("*.py") if "widgets" not in p.relative_to(book).parts)


def code_strings(path: Path) -> list[str]:
    """The string constants and dotted import paths of a module's code, docstrings left out
    (a claim-id prefix such as ``"ols."`` is no chapter's name)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    out = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
           and isinstance(n.value, str) and id(n) not in docs]
    out += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    out += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    return out


@pytest.mark.parametrize("path", book_modules(), ids=lambda p: p.stem)
def test_the_book_layer_names_no_chapter(path):
    """dsmlib/book/*.py finds chapters through their declarations (the live widgets, one
    module per chapter under dsmlib/figures/widgets/, are the chapters' own)."""
    for text in code_strings(path):
        named = [n for n in SPECS if text == n or f"chapters.{n}" in text
                 or f"{n}.md" in text or f"{n}.ipynb" in text]
        assert not named, f"{path.name} names chapter(s) {named} in its code: {text!r}"


def test_the_grid_finds_its_chapter_by_its_runs():
    having = chapters_with_runs(SPECS)
    assert having == [n for n in SPECS if hasattr(chapter_parameters(n), "runs")]
    assert len(having) == 1 and grid_chapter(ROOT) == having[0]
    assert grid_chapter(ROOT, having[0]) == having[0]
    other = next(n for n in SPECS if n not in having)
    with pytest.raises(ValueError, match=rf"chapter '{other}' has no runs to launch"):
        grid_chapter(ROOT, other)
