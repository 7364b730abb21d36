"""benchmarks/fit_pilot.py: one teacher of a profile's grid, trained through the library's own
execute_run, and its fit read back (issue 51's CIFAR-10 pilot). Smoke profile: seconds."""
from __future__ import annotations

from helpers import load_script


def _pilot():
    return load_script("benchmarks/fit_pilot.py")


def test_fit_pilot_trains_one_teacher_and_reads_it_back(tmp_path, capsys):
    pilot = _pilot()
    args = ["--profile", "smoke", "--seed", "1", "--runs-dir", str(tmp_path), "--history",
            "-p", "teacher_epochs", "3"]
    out = pilot.main(args)
    c = out["config"]
    assert c["role"] == "teacher" and c["seed"] == 1 and c["epochs"] == 3 and out["done"]
    assert c["train_limit"] is not None                   # the headroom setting's teacher
    assert [r["epoch"] for r in out["history"]] == [0, 1, 2, 3]
    assert out["history"][-1]["n_train"] == c["train_limit"]     # fit read on all its images
    assert out["fits"] == (out["train_acc"] >= out["fit_accuracy"] == 0.99)
    assert out["sgd_steps"] == 3 * (c["train_limit"] * c["passes"] // c["batch_size"])
    assert capsys.readouterr().out.strip().startswith('{"profile": "smoke"')
    again = pilot.main(args)                               # finished: read, not trained again
    assert again["history"] == out["history"]


def test_fit_pilot_refuses_a_seed_the_grid_lacks(tmp_path):
    import pytest
    with pytest.raises(SystemExit, match="--seed 99: no headroom teacher"):
        _pilot().main(["--profile", "smoke", "--seed", "99", "--runs-dir", str(tmp_path)])


def test_fit_pilot_names_a_bad_parameter_in_one_line(tmp_path):
    import pytest
    with pytest.raises(SystemExit, match="teacher_epochs"):
        _pilot().main(["--profile", "smoke", "-p", "teacher_epochs", "three",
                       "--runs-dir", str(tmp_path)])
