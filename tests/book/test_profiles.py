"""Notebook specs and profiles (dsmlib.book.profiles)."""
from __future__ import annotations

import pytest

from dsmlib.book import profiles
from helpers import ROOT


def test_specs_follow_profiles_yml():
    specs = profiles.load_specs(ROOT / "notebooks")
    assert list(specs)[:4] == ["ols", "prop1_noise", "prop2_convergence", "prop3_regularizer"]
    ols = specs["ols"]
    assert ols.source == ROOT / "notebooks" / "ols.md" and set(ols.profiles) == set(profiles.PROFILES)
    assert profiles.select(specs, None) == list(specs.values())
    assert profiles.select(specs, ["ols"]) == [ols]
    with pytest.raises(ValueError, match="unknown notebook"):
        profiles.select(specs, ["nope"])


def test_resolve_checks_every_name_against_the_parameters_cell():
    spec = profiles.NotebookSpec("nb", "NB", ROOT / "notebooks" / "ols.md",
                                 {p: {} for p in profiles.PROFILES} | {"smoke": {"steps": 10}})
    declared = {"steps": 100, "seed": 0} | {k: None for k in profiles.RUNNER_PARAMETERS}
    assert profiles.resolve(spec, "smoke", {"seed": 3}, declared) == {"steps": 10, "seed": 3}
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['stpes'\]") as err:
        profiles.resolve(spec, "smoke", {"stpes": 1}, declared)
    assert str(err.value).endswith("valid parameters: seed, steps")   # not the runner's
    with pytest.raises(ValueError, match="must declare"):
        profiles.resolve(spec, "smoke", {}, {"steps": 1, "seed": 0})
    with pytest.raises(ValueError, match="unknown profile 'turbo'"):
        profiles.resolve(spec, "turbo", {}, declared)
    assert profiles.parse_value("[1, 2]") == [1, 2]
    assert profiles.parse_value("0.001") == 0.001 and profiles.parse_value("false") is False
    with pytest.raises(ValueError, match="cannot parse"):
        profiles.parse_value("[1, 2")


def test_unknown_profile_in_yml_is_rejected(tmp_path):
    (tmp_path / "a.md").write_text("# A\n")
    (tmp_path / "profiles.yml").write_text("notebooks:\n  a:\n    profiles: {turbo: {}}\n")
    with pytest.raises(ValueError, match="unknown profiles"):
        profiles.load_specs(tmp_path)
    (tmp_path / "profiles.yml").write_text("notebooks:\n  b: {}\n")
    with pytest.raises(ValueError, match="no source file"):
        profiles.load_specs(tmp_path)


@pytest.mark.parametrize("default, good, bad, words", [
    (8, [56, 0], [7.5, True, "8", None], "an integer"),
    (0.1, [1, 0.5], ["0.1", False, [0.1]], "a number"),
    (True, [False], [1, "yes"], "true or false"),
    ("cpu", ["auto"], [1, ["cpu"]], "a string"),
    ([0, 1, 2], [[3], [], (4, 5)], ["abc", 3, [1.0], [True]], "a list of integers"),
    ([1.0, 4.0], [[1, 2.5], []], [4.0, ["a"]], "a list of numbers"),
    ([0.01, 1.0, 4], [[0.1, 2, 8], [1, 1.0, 2]], [[0.1, 2.0], [0.1, 2.0, 4.5], 5],
     "a list of 3 values typed like the default"),
    (None, [1, "x", [2.5]], [], "")])
def test_values_must_have_their_defaults_type(default, good, bad, words):
    for v in good:
        profiles.check_type("nb", "x", v, default)
    for v in bad:
        with pytest.raises(ValueError, match=rf"parameter 'x' of nb must be {words}"):
            profiles.check_type("nb", "x", v, default)


def test_every_profiles_values_have_their_defaults_types():
    """What profiles.yml sets passes the check it is held to (resolve runs it)."""
    from dsmlib.book.runner import declared_parameters, source_notebook
    for spec in profiles.load_specs(ROOT / "notebooks").values():
        declared = declared_parameters(source_notebook(spec, ROOT))
        for prof in profiles.PROFILES:
            profiles.resolve(spec, prof, {}, declared)
    spec = profiles.load_specs(ROOT / "notebooks")["ols"]
    with pytest.raises(ValueError, match="parameter 'steps' of ols must be an integer"):
        profiles.resolve(spec, "smoke", {"steps": 1e3},
                         declared_parameters(source_notebook(spec, ROOT)))


def test_parse_value_reads_exponents_and_names_the_parameter():
    assert profiles.parse_value("1e-3") == 0.001 and profiles.parse_value("-2E4") == -20000.0
    assert profiles.parse_value("[1e-3, 2, x]") == [0.001, 2, "x"]
    assert profiles.parse_value("e5") == "e5"
    with pytest.raises(ValueError, match=r"^parameter 'steps': cannot parse the value '\[1,' as "
                                         r"YAML \([^\n]*\); write numbers as 0.1"):
        profiles.parse_value("[1,", "steps")


def test_section5_students_train_as_long_as_their_teachers_in_every_profile():
    """Issue 35: no profile shortens the students (student_epochs stays None, the teacher's
    length), and every profile's grid builds with its settings: a headroom setting below the
    full one wherever one is asked for, none under paper (its data sets leave room)."""
    from dsmlib.book.grid import profile_grid
    for profile in profiles.PROFILES:
        grid, _ = profile_grid(ROOT, profile)
        assert grid.student_epochs is None, profile
        assert grid.epochs_of_students == grid.teacher_epochs, profile
        if profile == "paper":
            assert [s.headroom for s in grid.settings] == [False] * 3
        else:
            assert [s.headroom for s in grid.settings] == [False, True], profile


def test_papermill_reads_every_name_of_every_parameters_cell():
    """A parameters line papermill cannot parse (a comment holding '=' did, in ols.md) is not
    declared: `-p` would refuse it and papermill would not inject it, while the notebook still
    runs on its default. Every literal of every parameters cell must be declared."""
    from dsmlib.book.runner import declared_parameters, notebook_defaults, source_notebook
    for spec in profiles.load_specs(ROOT / "notebooks").values():
        src = source_notebook(spec, ROOT)
        missing = set(notebook_defaults(src)) - set(declared_parameters(src))
        assert not missing, (spec.name, sorted(missing))
