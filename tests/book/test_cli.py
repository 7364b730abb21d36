"""The command line: clear errors for bad names, loud failures for failing notebooks."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from dsmlib.book.cli import main
from helpers import ROOT, copy_book


def run_cli(*args, root=ROOT):
    return subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=600)


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


@pytest.mark.slow
def test_failing_notebook_fails_loudly_with_the_cells_error(tmp_path):
    root = copy_book(tmp_path)
    (root / "notebooks" / "profiles.yml").write_text(
        "notebooks:\n  broken:\n    title: Broken\n    profiles: {}\n")
    (root / "notebooks" / "broken.md").write_text(textwrap.dedent("""\
        ---
        jupytext:
          text_representation: {extension: .md, format_name: myst}
        kernelspec: {display_name: Python 3, language: python, name: python3}
        ---
        # Broken

        ```{code-cell} ipython3
        :tags: [parameters]
        profile = "quick"
        results_dir = "results"
        live_widgets = True
        ```

        ```{code-cell} ipython3
        denominator = 0
        ratio = 1 / denominator
        ```
        """))
    proc = run_cli("execute", "--profile", "smoke", "--no-progress", root=root)
    assert proc.returncode == 1
    assert "notebook 'broken' failed in cell" in proc.stderr
    assert "ZeroDivisionError" in proc.stderr and "ratio = 1 / denominator" in proc.stderr


@pytest.mark.parametrize("name", ["results_dir", "profile", "live_widgets"])
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


def test_lab_prepares_the_chapter_with_results_where_the_runner_puts_them(tmp_path):
    """`python -m dsmlib lab ols` opens _build/lab/ols.ipynb: the profile's parameters
    injected, live widgets on, the kernel in the book root and results under results/."""
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
    assert f"results_dir = {str(root / 'results')!r}" in src.replace('"', "'")
    assert "live_widgets = True" in src and "steps = 20000" in src and "eta = 0.005" in src
    assert f"os.chdir({str(root)!r})" in "".join(nb["cells"][0]["source"])
    assert run_cli("lab", "ols", "-p", "results_dir", "x", "--prepare-only",
                   root=root).returncode == 2


def test_a_busy_book_is_a_clear_error(tmp_path, capsys):
    """While one process holds the book's lock, a second execute says who, and exits 3."""
    import os
    from dsmlib.book.store import book_lock
    root = copy_book(tmp_path)
    with book_lock(root, "execute"):
        assert main(["--root", str(root), "execute", "ols", "--profile", "smoke"]) == 3
    err = capsys.readouterr().err
    assert "this book is busy" in err and f"pid {os.getpid()}" in err
    assert "run `python -m dsmlib execute` again" in err
