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


def demo_spec(**smoke) -> profiles.NotebookSpec:
    """A chapter whose parameters are tests/foundation's Demo-like ols ones (a real module)."""
    return profiles.NotebookSpec("ols", "OLS", ROOT / "notebooks" / "ols.md",
                                 {p: {} for p in profiles.PROFILES} | {"smoke": smoke},
                                 module="dsmlib.chapters.ols")


def test_resolve_is_defaults_then_profile_then_overrides_checked_once():
    from dsmlib.chapters.ols import Parameters
    spec = demo_spec(steps=1000, seed=4)
    got = profiles.resolve(spec, "smoke", {"seed": 3})
    assert isinstance(got, Parameters)
    assert (got.steps, got.seed, got.eta) == (1000, 3, Parameters().eta)   # -p over the profile
    assert profiles.resolve(spec, "quick") == Parameters()                # the declaration
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['stpes'\]") as err:
        profiles.resolve(spec, "smoke", {"stpes": 1})
    assert "profile" not in str(err.value).split("valid parameters:")[1]  # not the runner's
    with pytest.raises(ValueError, match="unknown profile 'turbo'"):
        profiles.resolve(spec, "turbo")
    for name in profiles.RUNNER_PARAMETERS:                                # -p or profiles.yml
        with pytest.raises(ValueError, match=rf"\['{name}'\] are set by the runner"):
            profiles.resolve(spec, "smoke", {name: "x"})
        with pytest.raises(ValueError, match=rf"\['{name}'\] are set by the runner"):
            profiles.resolve(demo_spec(**{name: "x"}), "smoke")
    # the annotation is the one type check, for profiles.yml as for -p
    with pytest.raises(ValueError, match="parameter 'steps' of ols must be an integer, got 7.5"):
        profiles.resolve(demo_spec(steps=7.5), "smoke")
    assert profiles.parse_value("[1, 2]") == [1, 2]
    assert profiles.parse_value("0.001") == 0.001 and profiles.parse_value("false") is False
    with pytest.raises(ValueError, match="cannot parse"):
        profiles.parse_value("[1, 2")


def test_a_notebook_without_a_chapter_module_has_no_parameters(tmp_path):
    spec = profiles.NotebookSpec("tiny", "Tiny", tmp_path / "tiny.md",
                                 {p: {} for p in profiles.PROFILES}, module="dsmlib.chapters.tiny")
    none = profiles.resolve(spec, "smoke")
    assert none.as_dict() == {} and none.notebook == "tiny"
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['x'\] for tiny"):
        profiles.resolve(spec, "smoke", {"x": 1})
    lost = profiles.NotebookSpec("tiny", "Tiny", tmp_path / "tiny.md", spec.profiles,
                                 module="no_such_package.tiny")
    with pytest.raises(ValueError, match="no_such_package, cannot be imported"):
        profiles.resolve(lost, "smoke")


def test_the_book_root_of_a_hand_run(tmp_path, monkeypatch):
    """Inside a book, its root; outside any, the book this dsmlib is installed from (issue 46:
    a hand run from another folder wrote its results under that folder)."""
    from dsmlib.foundation.handoff import hand_run_root
    from helpers import copy_book
    book = copy_book(tmp_path / "copy")
    (book / "notebooks" / "deep").mkdir()
    monkeypatch.chdir(book / "notebooks" / "deep")
    assert hand_run_root() == book.resolve()
    monkeypatch.chdir(tmp_path)
    assert hand_run_root() == ROOT.resolve()


def test_unknown_profile_in_yml_is_rejected(tmp_path):
    (tmp_path / "a.md").write_text("# A\n")
    (tmp_path / "profiles.yml").write_text("notebooks:\n  a:\n    profiles: {turbo: {}}\n")
    with pytest.raises(ValueError, match="unknown profiles"):
        profiles.load_specs(tmp_path)
    (tmp_path / "profiles.yml").write_text("notebooks:\n  b: {}\n")
    with pytest.raises(ValueError, match="no source file"):
        profiles.load_specs(tmp_path)


def test_every_profiles_values_pass_their_declaration():
    """What profiles.yml sets passes the check it is held to (resolve runs it)."""
    for spec in profiles.load_specs(ROOT / "notebooks").values():
        for prof in profiles.PROFILES:
            profiles.resolve(spec, prof)


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
    full one wherever one is asked for, none under paper (its data sets leave room), and the
    data-limited setting alone under gpu-cifar10, cpu-cifar10 and cpu-cifar10-fit (issues 51,
    61 and 67)."""
    from dsmlib.book.commands.grid import profile_grid
    for profile in profiles.PROFILES:
        grid, _ = profile_grid(ROOT, profile)
        assert grid.student_epochs is None, profile
        assert grid.epochs_of_students == grid.teacher_epochs, profile
        if profile == "paper":
            assert [s.headroom for s in grid.settings] == [False] * 3
        elif profile in (profiles.GPU_CIFAR10, profiles.CPU_CIFAR10, profiles.CPU_CIFAR10_FIT):
            assert [(s.headroom, s.dataset) for s in grid.settings] == [(True, "cifar10")]
        else:
            assert [s.headroom for s in grid.settings] == [False, True], profile


def test_a_bad_cluster_fails_at_resolve_in_one_line():
    """``-p cluster`` is checked with the chapter's parameters, before any kernel starts: one
    line naming the parameter and the allowed values."""
    spec = profiles.load_specs(ROOT / "notebooks")["sec5_distillation"]
    with pytest.raises(ValueError, match=r"^cluster must be one of \['local', 'debug', "
                                         r"'slurm'\], got 'clsuter'$") as err:
        profiles.resolve(spec, "quick", {"cluster": "clsuter"})
    assert "\n" not in str(err.value)
    assert profiles.resolve(spec, "quick", {"cluster": "debug"}).cluster == "debug"


def test_section5_training_hyperparameters_are_chapter_parameters_that_reach_every_run():
    """Every hyperparameter that shapes training is declared once, as a chapter parameter, and
    every run of the grid takes it from there: the learning rate and its schedule, momentum,
    weight decay, batch, epochs and precision."""
    from dsmlib.book.commands.grid import profile_grid
    over = dict(lr=0.05, lr_drops=[0.25, 0.5], lr_drop_factor=0.2, momentum=0.8,
                weight_decay=5e-4, precision="fp32", batch_size=48, teacher_epochs=3)
    grid, _ = profile_grid(ROOT, "smoke", over)
    for c in grid.runs():
        assert (c.lr, c.lr_drops, c.lr_drop_factor, c.momentum, c.weight_decay,
                c.precision, c.epochs) == (0.05, (0.25, 0.5), 0.2, 0.8, 5e-4, "fp32", 3)
        assert c.batch_size == (48 if c.train_limit == grid.train_limit else
                                grid.headroom_batch)
    assert {"lr", "lr_drops", "lr_drop_factor", "momentum", "weight_decay", "batch_size",
            "teacher_epochs", "precision"} <= set(grid.grid_values())


def test_papermill_reads_every_name_of_every_parameters_cell():
    """A parameters line papermill cannot parse (a comment holding '=' did, in ols.md) is not
    declared: papermill would neither list nor inject it, while the notebook still runs on its
    default. papermill must see the book's names and every one of the chapter's."""
    import papermill
    from dsmlib.book.execute.runner import source_notebook
    for spec in profiles.load_specs(ROOT / "notebooks").values():
        seen = set(papermill.inspect_notebook(str(source_notebook(spec, ROOT))))
        want = set(profiles.RUNNER_PARAMETERS) | set(profiles.parameters_class(spec).names())
        assert seen == want, (spec.name, sorted(seen ^ want))
