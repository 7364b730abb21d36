"""A run's configuration (dsmlib.models.sec5_distillation.run_config): its key and round trip, clear errors for
bad fields and noise levels, a student that must match its teacher, integral floats stored as
integers."""
from __future__ import annotations

import json
from dataclasses import fields

import pytest

from dsmlib.models.sec5_distillation.recipe import FIXED_IN_CODE, Recipe
from dsmlib.models.sec5_distillation.run_config import LEFT_OUT_OF_KEY, RunConfig, student_of
from helpers import ROOT
from tiny_runs import tiny_teacher as tiny

#: Every committed run's configuration (and those of a reference still training).
COMMITTED = sorted((ROOT / "reference").glob("*/runs/*/config.json"))


def test_config_key_and_roundtrip():
    t = tiny()
    s = student_of(t, "gaussian", 4, epochs=3)
    assert s.key() == RunConfig.from_dict(s.to_dict()).key()
    assert student_of(t, "none", 0).key() == student_of(t, "none", 0.0).key()
    assert len({tiny(seed=1).key(), tiny(lr=0.05).key(), tiny(epochs=3).key(), t.key(),
                s.key(), student_of(tiny(seed=1), "gaussian", 4, epochs=3).key()}) == 6
    assert s.split_seed == t.seed and "student-gaussian-4" in s.label()
    assert any("lr" in d for d in t.differences(tiny(lr=0.05)))


@pytest.mark.parametrize("kw, match", [
    (dict(dataset="imagenet"), "dataset must be one of"),
    (dict(depth=10), "depth must be of the form 6n"),
    (dict(depth=7), "depth must be of the form 6n"),
    (dict(depth=7.5), "depth must be an integer"),
    (dict(epochs=2.5), "epochs must be an integer"),
    (dict(epochs=0), "epochs must be >= 1"),
    (dict(batch_size=0), "batch_size must be >= 1"),
    (dict(precision="fp16"), "precision must be one of"),
    (dict(noise="gaussian", level=1.0), "a teacher has no teacher, no noise"),
    (dict(stream=1), "a teacher has no teacher, no noise and no student stream"),
    (dict(recipe_version=1), "recipe_version must be >= 2"),
    (dict(passes=0), "passes must be >= 1"),
    (dict(n_train_eval=0), "n_train_eval must be >= 1"),
    (dict(role="student"), "a student needs teacher"),
    (dict(lr_drops=(0.75, 0.5)), "lr_drops must be increasing fractions"),
    (dict(lr_drops=(0.0,)), "lr_drops must be increasing fractions"),
    (dict(lr_drops=(1.5,)), r"lr_drops \(fractions of the epochs\) must lie in \[0, 1\]"),
    (dict(lr_drops=0.5), "lr_drops must be a list of fractions"),
    (dict(lr_drop_factor=0.0), "lr_drop_factor .* must be > 0"),
    (dict(lr_drop_factor=2.0), r"lr_drop_factor .* must lie in \[0, 1\]"),
])
def test_bad_configurations(kw, match):
    with pytest.raises(ValueError, match=match):
        tiny(**kw)


@pytest.mark.parametrize("noise, level, match", [
    ("gaussian", -1.0, "sigma"), ("gaussian", 0.0, "sigma"), ("gaussian", 1e9, "sigma"),
    ("symmetric", 1.5, "swap probability"), ("symmetric", 0.0, "swap probability"),
    ("none", 0.5, "level must be 0"), ("uniform", 0.1, "noise must be one of")])
def test_noise_levels_out_of_range(noise, level, match):
    with pytest.raises(ValueError, match=match):
        student_of(tiny(), noise, level)


def test_student_must_match_teacher():
    with pytest.raises(ValueError, match="must match its teacher's depth"):
        RunConfig.from_dict({**tiny().to_dict(), "depth": 14, "role": "student",
                             "teacher": tiny().to_dict()})


def test_integral_floats_are_stored_as_integers():
    """2.0 epochs is 2 epochs (stored as an int: a float would break range() in training)."""
    c = tiny(epochs=2.0, n_gradnorm=4.0, train_limit=96.0)
    assert (c.epochs, c.n_gradnorm, c.train_limit) == (2, 4, 96)
    assert all(type(v) is int for v in (c.epochs, c.n_gradnorm, c.train_limit, c.depth))
    assert c.key() == tiny().key()


def test_training_hyperparameters_have_no_defaults():
    """Every hyperparameter that shapes training is stated by the configuration's maker (the
    chapter's parameters), never taken from a default here."""
    t = tiny()
    stated = {f.name: getattr(t, f.name) for f in fields(RunConfig)
              if f.name not in LEFT_OUT_OF_KEY and f.name != "teacher"}
    for name in ("epochs", "batch_size", "lr", "momentum", "weight_decay", "precision"):
        with pytest.raises(TypeError, match=name):
            RunConfig(**{k: v for k, v in stated.items() if k != name}, **FIXED_IN_CODE)
    for name in FIXED_IN_CODE:
        with pytest.raises(TypeError, match=name):
            RunConfig(**stated, **{k: v for k, v in FIXED_IN_CODE.items() if k != name})


def test_the_schedule_of_recipe_2_keeps_the_keys_of_runs_keyed_before_it_was_a_field():
    """At the schedule recipe 2 had in code (FIXED_IN_CODE) the schedule's fields are left out of
    what the key hashes, so a run's key is what it was, while its config.json records every
    field of its recipe (issue 62); another schedule is another run. The key below is the tiny
    teacher's as computed before the fields existed."""
    t = tiny()
    assert "lr_drops" not in t.key_dict() and "lr_drop_factor" not in t.key_dict()
    assert {f.name for f in fields(Recipe)} <= set(t.to_dict())
    assert t.key() == "c09ce7f4a71be759"
    assert RunConfig.from_dict(t.to_dict()) == t
    old = {k: v for k, v in t.to_dict().items() if k not in LEFT_OUT_OF_KEY}     # a record from before
    assert RunConfig.from_dict(old) == t
    other = tiny(lr_drops=[0.25, 0.5, 0.75])
    assert other.lr_drops == (0.25, 0.5, 0.75) and other.to_dict()["lr_drops"] == (0.25, 0.5, 0.75)
    assert len({t.key(), other.key(), tiny(lr_drop_factor=0.2).key()}) == 3
    assert RunConfig.from_dict(other.to_dict()) == other
    s = student_of(other, "none", 0.0)
    assert RunConfig.from_dict(s.to_dict()) == s and s.teacher.lr_drops == other.lr_drops


def test_every_committed_run_keeps_its_key_and_its_config_file():
    """Each committed run's ``config.json`` loads, hashes to its directory's name (the run's
    key), and is written back byte for byte as :mod:`dsmlib.models.sec5_distillation.runs`
    writes it: a change to the configuration's code keeps the keys and the file format of
    the runs trained before it (issue 68)."""
    assert {p.parents[2].name for p in COMMITTED} >= {"cpu-cifar10", "gpu"}
    for path in COMMITTED:
        config = RunConfig.from_dict(json.loads(path.read_text()))
        assert config.key() == path.parent.name, path
        assert json.dumps(config.to_dict(), indent=1) == path.read_text(), path
