"""A chapter's parameters object (foundation.parameters): types from the annotations, ranges
from the chapter, one-line errors naming the parameter, construction from a notebook's
namespace, and the parameters cell written from the fields."""
from __future__ import annotations

import ast
from dataclasses import dataclass

import pytest

from dsmlib.foundation.checks import check_type
from dsmlib.foundation.parameters import ChapterParameters, ParameterError, param


@dataclass(frozen=True)
class Demo(ChapterParameters):
    notebook = "demo"

    eta: float = param(0.1, "learning rate")
    steps: int = param(1_000_000, "steps")
    seeds: tuple[int, ...] = param([0, 1], "seeds")
    limit: int | None = param(None, "None: all")
    reference: tuple[float, float, int] = param([0.01, 1.0, 4], "(eta, sigma2, B)")
    device: str = param("cpu", "where")
    replace: bool = param(False, "with replacement")

    def check(self) -> None:
        super().check()
        self.positive("eta")
        self.counts("steps")
        self.counts("seeds", minimum=0)


def test_defaults_lists_become_tuples_and_the_object_is_frozen():
    d = Demo()
    assert d.seeds == (0, 1) and d.reference == (0.01, 1.0, 4)
    assert Demo.from_dict({"seeds": [3, 4]}).seeds == (3, 4)
    with pytest.raises(AttributeError):
        d.eta = 1.0        # type: ignore[misc]


@pytest.mark.parametrize("change, match", [
    (dict(eta="x"), "parameter 'eta' of demo must be a number, got 'x'"),
    (dict(eta=True), "parameter 'eta' of demo must be a number, got True"),
    (dict(steps=2.0), "parameter 'steps' of demo must be an integer, got 2.0"),
    (dict(steps=True), "parameter 'steps' of demo must be an integer, got True"),
    (dict(seeds=[0.5]), "parameter 'seeds' of demo must be a list of integers"),
    (dict(seeds=3), "parameter 'seeds' of demo must be a list of integers, got 3"),
    (dict(limit=2.5), "parameter 'limit' of demo must be an integer or None, got 2.5"),
    (dict(reference=[0.01, 1.0, 4.5]), r"must be a list \(a number, a number, an integer\)"),
    (dict(reference=[0.01, 1.0]), r"must be a list \(a number, a number, an integer\)"),
    (dict(device=3), "parameter 'device' of demo must be a string, got 3"),
    (dict(replace=0), "parameter 'replace' of demo must be true or false, got 0"),
    (dict(eta=0.0), "parameter 'eta' of demo must be > 0, got 0.0"),
    (dict(steps=0), "parameter 'steps' of demo must be >= 1, got 0"),
    (dict(seeds=[0, -1]), "parameter 'seeds' of demo must be >= 0, got -1"),
    (dict(stepz=3), r"unknown parameter\(s\) \['stepz'\] for demo; valid parameters: eta, steps"),
])
def test_bad_values_are_one_line_errors_naming_the_parameter(change, match):
    with pytest.raises(ValueError, match=match) as err:
        Demo.from_dict(change)
    assert "\n" not in str(err.value)


def test_an_integer_is_a_number_and_none_is_allowed_only_where_annotated():
    assert Demo.from_dict({"eta": 1, "limit": 5}).eta == 1
    with pytest.raises(ValueError, match="'steps' of demo must be an integer, got None"):
        Demo.from_dict({"steps": None})
    check_type("x", None, int | None)
    with pytest.raises(ValueError, match="x must be an integer or None"):
        check_type("x", "3", int | None)


def test_from_namespace_takes_the_fields_it_finds_and_defaults_the_rest():
    ns = {"eta": 0.5, "profile": "smoke", "results_dir": "r", "In": [], "seeds": [7, 8]}
    d = Demo.from_namespace(ns)
    assert (d.eta, d.seeds, d.steps) == (0.5, (7, 8), 1_000_000)
    with pytest.raises(ValueError, match="'eta' of demo must be > 0"):
        Demo.from_namespace({"eta": -1.0})


def test_cell_lines_read_back_as_the_values():
    """The parameters cell the book writes declares every field with its value, in order
    (papermill reads these lines; a comment holding '=' would hide the name from it)."""
    lines = Demo().cell_lines()
    values = {}
    for line in lines:
        stmt = ast.parse(line).body[0]
        values[stmt.targets[0].id] = ast.literal_eval(stmt.value)
    assert list(values) == list(Demo.names())
    assert {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()} == \
        Demo().as_dict()
    assert lines[1].startswith("steps = 1_000_000") and lines[5].startswith('device = "cpu"')
    assert Demo(steps=20, seeds=(1, 2)).cell_lines()[1:3] == [
        f"{'steps = 20':<26} # {Demo.__dataclass_fields__['steps'].metadata['help']}",
        f"{'seeds = [1, 2]':<26} # {Demo.__dataclass_fields__['seeds'].metadata['help']}"]

    @dataclass(frozen=True)
    class Bad(ChapterParameters):
        n: int = param(3, "n = 3 draws")
    with pytest.raises(ValueError, match="help of parameter 'n' must not hold '='"):
        Bad().cell_lines()


def test_a_value_refused_in_a_notebook_is_one_line_without_a_traceback():
    """``from_namespace`` is where a notebook receives its parameters (plain papermill,
    Jupyter): a refused value is a ParameterError, a ValueError that IPython, and so papermill's
    report of the cell, shows as its one line, with no chain of the checks that refused it."""
    with pytest.raises(ParameterError) as err:
        Demo.from_namespace({"steps": -5})
    assert isinstance(err.value, ValueError)
    assert str(err.value) == "parameter 'steps' of demo must be >= 1, got -5"
    assert err.value._render_traceback_() == [f"ParameterError: {err.value}"]
    assert err.value.__cause__ is None and err.value.__suppress_context__
    with pytest.raises(ParameterError, match="'eta' of demo must be a number, got 'x'"):
        Demo.from_namespace({"eta": "x"})


def test_unknown_names_list_only_the_parameters_p_accepts():
    """The book's own names (``profile``, ``live_widgets``), which ``execute -p`` refuses, are
    never offered as valid parameters: the message lists the chapter's fields only."""
    message = Demo.unknown_message(["stepz"])
    assert message == ("unknown parameter(s) ['stepz'] for demo; valid parameters: eta, steps, "
                       "seeds, limit, reference, device, replace")
    assert "profile" not in message and "live_widgets" not in message


def test_counts_take_a_maximum_and_say_why_in_the_same_line():
    """A range with a reason reads as one line: the bound, the value, then why."""
    @dataclass(frozen=True)
    class Bounded(ChapterParameters):
        notebook = "bounded"
        b: int = param(4, "batch size")

        def check(self) -> None:
            super().check()
            self.counts("b", maximum=7, why="below N = 8")
    assert Bounded(b=7).b == 7
    with pytest.raises(ValueError) as err:
        Bounded.from_dict({"b": 8})
    assert str(err.value) == "parameter 'b' of bounded must be <= 7, got 8 (below N = 8)"
    with pytest.raises(ValueError, match=r"^parameter 'b' of bounded must be >= 1, got 0 \("):
        Bounded.from_dict({"b": 0})
