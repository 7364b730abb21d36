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
