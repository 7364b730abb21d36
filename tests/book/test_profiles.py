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
