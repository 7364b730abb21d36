"""The grid launcher: two local submitit workers give exactly the results of one process;
launching again submits nothing; status, collect and the command line."""
from __future__ import annotations

import subprocess
import sys

import pytest

from dsmlib.book.commands.cli import main
from dsmlib.book.commands.grid import profile_grid
from dsmlib.chapters.sec5_distillation.launch import (GridJob, balance, collect, group_cost,
                                                  launch, status)
from dsmlib.chapters.parameters.sec5_distillation import Parameters
from dsmlib.chapters.sec5_distillation.grid import grid_runs
from dsmlib.models.sec5_distillation.runs import run_many
from helpers import ROOT

NO_EXTRAS = dict(headroom_size=None, headroom_sigma2s=None, headroom_seeds=None, headroom_passes=1, curve_sizes=[], curve_seeds=[], n_train_eval=None)
TIMING = ("train_s", "eval_s", "gradnorm_s")
# the grid's own values (Parameters' defaults are the quick profile's: no headroom, no curve here)
PARAMS = dict(NO_EXTRAS, datasets=["digits"], depth=8, teacher_epochs=2, student_epochs=2, sigma2s=[4.0],
              ps=[0.3], seeds=[0, 1], train_limit=96, batch_size=32, n_gradnorm=4)


def strip(history):
    return [{k: v for k, v in row.items() if k not in TIMING} for row in history]


def test_two_local_workers_match_one_process(tmp_path):
    runs = grid_runs(Parameters.from_dict(PARAMS))
    jobs = launch(runs, tmp_path / "workers", cluster="local", workers=2, threads=1)
    assert len(jobs) == 4                                    # 2 teacher jobs, 2 student jobs
    one = run_many(runs, tmp_path / "one", threads=1)
    two = collect(runs, tmp_path / "workers")
    assert [r.config for r in two] == runs
    for a, b in zip(one, two):
        assert b.done and strip(a.history) == strip(b.history), a.config.label()
    assert launch(runs, tmp_path / "workers", cluster="local", workers=2) == []
    assert status(runs, tmp_path / "workers")["done"] == len(runs)


def test_two_local_workers_train_groups_across_seeds(tmp_path):
    """``members``: the teachers of both seeds train as one group, and the students of both
    teachers as one group (K = 10), each run with the record of its separate run (float64: to
    the lockstep tolerance) and its group's size; the device policy groups nothing across seeds
    on the CPU, ``measure`` measures there; a bad ``--members`` is one line."""
    from dsmlib.chapters.sec5_distillation.launch import group_limits
    from dsmlib.models.sec5_distillation.lockstep import across_seeds_key
    runs = grid_runs(Parameters.from_dict({**PARAMS, "precision": "fp64"}))
    launch(runs, tmp_path / "grouped", cluster="local", workers=2, threads=1, members=10)
    grouped = collect(runs, tmp_path / "grouped")
    alone = run_many(runs, tmp_path / "alone", threads=1)
    for a, b in zip(alone, grouped):
        assert b.history[-1]["lockstep"] == (2 if a.config.role == "teacher" else 10)
        for ra, rb in zip(strip(a.history), strip(b.history)):
            for k, v in ra.items():
                if k == "lockstep" or v is None or isinstance(v, str):
                    continue
                assert rb[k] == pytest.approx(v, rel=1e-12, abs=1e-15), (a.config.label(), k)
    assert group_limits(runs, "auto", cluster="local", threads=1, options={}) == 1
    measured = group_limits(runs, "measure", cluster="local", threads=1, options={})
    assert set(measured) == {across_seeds_key(c) for c in runs}     # each kind, seeds 0 and 1
    assert all(m >= 1 for m in measured.values())
    assert main(["--root", str(ROOT), "grid", "launch", "--profile", "smoke", "--members",
                 "many", "-p", "runs_dir", str(tmp_path / "none")]) == 2
    assert not (tmp_path / "none").exists()


def test_debug_cluster_status_and_collect(tmp_path):
    runs = grid_runs(Parameters.from_dict(PARAMS))
    assert status(runs, tmp_path) == {"done": 0, "partial": 0, "new": len(runs), "partial_runs": []}
    with pytest.raises(ValueError, match="are not finished.*grid launch --profile smoke`"):
        collect(runs, tmp_path, profile="smoke")              # the command, to copy as it is
    launch(runs[:2], tmp_path, cluster="debug")              # the two teachers, in-process
    st = status(runs, tmp_path)
    assert st["done"] == 2 and st["new"] == len(runs) - 2
    assert len(collect(runs, tmp_path, allow_missing=True)) == 2
    out = tmp_path / "c.json"
    collect(runs[:2], tmp_path, out=out)
    assert out.exists()
    with pytest.raises(ValueError, match="cluster must be one of"):
        launch(runs, tmp_path, cluster="kubernetes")
    with pytest.raises(ValueError, match="unknown run option"):
        launch(runs, tmp_path, cluster="debug", nonsense=1)


def test_the_grids_parameters_follow_the_notebook():
    smoke, _ = profile_grid(ROOT, "smoke")
    quick, _ = profile_grid(ROOT, "quick")
    assert smoke.teacher_epochs < quick.teacher_epochs and quick.datasets == ("digits",)
    assert quick.image_size is None and smoke.cluster == "debug"
    grid, runs_dir = profile_grid(ROOT, "paper")
    assert grid.depth == 56 and set(grid.datasets) == {"cifar10", "cifar100", "svhn"}
    assert grid.teacher_epochs == grid.epochs_of_students == 200 and not grid.headroom_size
    assert runs_dir == ROOT / "results" / "runs"
    assert profile_grid(ROOT, "gpu")[0].image_size == 32


def test_grid_command_line(tmp_path, capsys):
    runs_dir = str(tmp_path / "runs")
    assert main(["--root", str(ROOT), "grid", "status", "--profile", "smoke",
                 "-p", "runs_dir", runs_dir]) == 0
    # smoke: per seed a teacher and 5 students, 2 full-data and 3 headroom seeds; 2 curve teachers
    assert "smoke: 0 done, 0 partial, 32 new (of 32)" in capsys.readouterr().out
    assert main(["--root", str(ROOT), "grid", "launch", "--profile", "smoke",
                 "--cluster", "nowhere"]) == 2
    assert "cluster must be one of" in capsys.readouterr().err
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(ROOT), "grid", "collect",
                           "--profile", "smoke", "-p", "runs_dir", runs_dir],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "grid launch" in proc.stderr


class FakeJob:
    def __init__(self, job_id):
        self.job_id = job_id


class FakeExecutor:
    """Stands in for submitit's SLURM executor: records parameters and arrays, submits nothing."""
    calls: list = []

    def __init__(self, folder, cluster):
        FakeExecutor.calls = [("init", cluster)]
        self.params, self.array = {}, 100

    def update_parameters(self, **kw):
        self.params.update(kw)
        FakeExecutor.calls.append(("params", dict(kw)))

    def map_array(self, fn, *lists):
        self.array += 1
        FakeExecutor.calls.append(("array", [c[0].role for c in lists[0]], dict(self.params)))
        FakeExecutor.calls.append(("groups", list(lists[0])))
        return [FakeJob(f"{self.array}_{i}") for i in range(len(lists[0]))]


def test_slurm_launch_is_two_arrays_students_after_teachers(tmp_path, monkeypatch):
    import submitit
    monkeypatch.setattr(submitit, "AutoExecutor", FakeExecutor)
    runs = grid_runs(Parameters.from_dict(PARAMS))
    jobs = launch(runs, tmp_path, cluster="slurm", workers=3,
                  slurm={"slurm_partition": "gpu"}, data_dir="data")
    teachers = [c for c in runs if c.role == "teacher"]
    assert len(jobs) == 2 * len(teachers)   # one job per teacher, then one per teacher's students
    arrays = [c for c in FakeExecutor.calls if c[0] == "array"]
    assert arrays[0][1] == ["teacher"] * 2 and set(arrays[1][1]) == {"student"}
    groups = [c for c in FakeExecutor.calls if c[0] == "groups"]
    assert [len(g) for g in groups[-1][1]] == [len(runs) // 2 - 1] * 2   # lockstep, whole
    first, second = arrays[0][2], arrays[1][2]
    assert first["gpus_per_node"] == 1 and first["slurm_partition"] == "gpu"
    assert first["slurm_array_parallelism"] == 3 and "slurm_additional_parameters" not in first
    assert second["slurm_additional_parameters"] == {"dependency": "afterok:101"}
    # a timed-out or preempted job is requeued as the same call (runs resume from checkpoints)
    requeued = GridJob().checkpoint([runs[0]], str(tmp_path), None, {})
    assert isinstance(requeued.function, GridJob) and requeued.args[0] == [runs[0]]


@pytest.mark.parametrize("name", ["cluster", "workers"])
def test_grid_refuses_the_notebooks_own_cluster_and_workers(capsys, name):
    assert main(["--root", str(ROOT), "grid", "status", "--profile", "smoke",
                 "-p", name, "2"]) == 2
    assert f"grid takes --{name} as options, not as -p parameters" in capsys.readouterr().err


def test_a_failed_job_is_reported_by_its_exception_not_its_log_path():
    """submitit's message: the worker's trace, then the paths of its logs."""
    from dsmlib.chapters.sec5_distillation.launch import failure_line
    message = ("Job (task=0) failed during processing with trace:\n----------------------\n"
               "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
               "ValueError: batch_size must be <= the 256 training images, got 100000\n"
               "----------------------\nYou can check full logs with 'job.stderr(0)' and "
               "'job.stdout(0)'or at paths:\n  - /runs/submitit/1_0_log.err\n"
               "  - /runs/submitit/1_0_log.out\n")
    assert failure_line(RuntimeError(message)) == ("ValueError: batch_size must be <= the 256 "
                                                   "training images, got 100000")
    assert failure_line(RuntimeError("no trace here\n  - /a/log.out")) == "- /a/log.out"
    assert failure_line(RuntimeError("")) == "RuntimeError"


def test_balance_deals_the_costliest_groups_first_to_the_least_loaded_worker():
    """Five big groups and ten small ones on two workers: round robin would give one worker
    three big groups; the balanced deal leaves the two within one small group's cost, keeps
    every group whole and loses no run."""
    grid = Parameters.from_dict({**PARAMS, "seeds": list(range(5)), "train_limit": 512,
                                 "headroom_size": 64, "headroom_seeds": list(range(10))})
    runs = [r for r in grid_runs(grid) if r.role == "student"]
    from dsmlib.models.sec5_distillation.runs import lockstep_groups
    groups = lockstep_groups(runs)
    chunks = balance(groups, 2)
    assert sorted(r.key() for c in chunks for g in c for r in g) == sorted(r.key() for r in runs)
    loads = [sum(group_cost(g) for g in c) for c in chunks]
    small = min(group_cost(g) for g in groups)
    assert abs(loads[0] - loads[1]) <= small
    for c in chunks:                                  # whole groups, in one chunk each
        for g in c:
            assert g in groups
    assert balance(groups[:1], 3) == [[groups[0]]]     # no empty chunks
