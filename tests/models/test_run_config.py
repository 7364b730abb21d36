"""A run's configuration (dsmlib.models.run_config): its key and round trip, clear errors for
bad fields and noise levels, a student that must match its teacher, integral floats stored as
integers."""
from __future__ import annotations

import pytest

from dsmlib.models.run_config import RunConfig, student_of
from tiny_runs import tiny_teacher as tiny


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
    (dict(recipe=1), "recipe must be >= 2"),
    (dict(passes=0), "passes must be >= 1"),
    (dict(n_train_eval=0), "n_train_eval must be >= 1"),
    (dict(role="student"), "a student needs teacher"),
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
        RunConfig(depth=14, role="student", teacher=tiny(), epochs=2, n_gradnorm=4)


def test_integral_floats_are_stored_as_integers():
    """2.0 epochs is 2 epochs (stored as an int: a float would break range() in training)."""
    c = tiny(epochs=2.0, n_gradnorm=4.0, train_limit=96.0)
    assert (c.epochs, c.n_gradnorm, c.train_limit) == (2, 4, 96)
    assert all(type(v) is int for v in (c.epochs, c.n_gradnorm, c.train_limit, c.depth))
    assert c.key() == tiny().key()
