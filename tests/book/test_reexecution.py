"""Re-execution never corrupts the book (issue 15), on a one-chapter book that runs in
seconds: hand runs and overrides land in results/custom/, failed, killed and concurrent
executions leave the good chapter and its results as they were, profiles are kept apart,
and the ledger refuses results that do not match their chapter."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dsmlib.book.site.pages import checked_results
from dsmlib.book.profiles import load_specs
from dsmlib.book.execute.provenance import OUTSIDE_KERNEL, code_key
from dsmlib.book.execute.rerun import HAND_RUN_MIME
from dsmlib.foundation.handoff import parameters_hash
from dsmlib.book.execute.store import runner_metadata
from helpers import book_env, chapter_module, copy_book

pytestmark = pytest.mark.slow

TINY = textwrap.dedent("""\
    ---
    jupytext:
      text_representation: {extension: .md, format_name: myst}
    kernelspec: {display_name: Python 3, language: python, name: python3}
    ---
    # Tiny

    ```{code-cell} ipython3
    :tags: [parameters]
    profile = "quick"
    live_widgets = True
    ```

    ```{code-cell} ipython3
    import time
    from pathlib import Path
    from dsmlib.foundation import claims as C
    from dsmlib.foundation.handoff import write_results
    from test_chapters.tiny import Parameters
    P = Parameters.from_namespace(globals())
    claims = [C.measure("tiny.x", "x is one", paper=1.0, measured=float(P.x), se=0.01,
                        band=(0.9, 1.1), scope="setting", condition="x near one")]
    write_results(claims, P, profile=profile)
    ```

    ```{code-cell} ipython3
    import signal
    if Path("STUBBORN").exists():        # a cell that swallows Ctrl-C (and says so) until it ends
        signal.signal(signal.SIGINT, lambda *_: Path("SWALLOWED").touch())
    Path("SLEEPING").touch()             # the interrupt can land inside this cell now
    while Path("SLEEP").exists():
        time.sleep(0.1)
    assert not Path("FAIL").exists(), "asked to fail"
    ```
    """)


def tiny_book(dest: Path) -> Path:
    root = copy_book(dest)
    (root / "notebooks" / "profiles.yml").write_text(
        "chapters: test_chapters\nnotebooks:\n  tiny:\n    title: Tiny\n    profiles:\n"
        "      smoke: {x: 1.01}\n")
    (root / "notebooks" / "tiny.md").write_text(TINY)
    chapter_module(root, "tiny", 'x: float = param(1.0, "the value measured")')
    return root


@pytest.fixture
def tiny(tmp_path) -> Path:
    return tiny_book(tmp_path)


@pytest.fixture(scope="module")
def executed_tiny(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The tiny book executed once under smoke, and that execution's process."""
    root = tiny_book(tmp_path_factory.mktemp("tiny"))
    return root, cli(root, "execute", "--profile", "smoke")


@pytest.fixture
def tiny_smoke(executed_tiny, tmp_path) -> Path:
    """A copy of the tiny book as its first ``execute --profile smoke`` left it (the module's
    tests start from that state; one execution serves them all)."""
    src, proc = executed_tiny
    assert proc.returncode == 0, proc.stderr[-3000:]
    root = tmp_path / "tiny"
    shutil.copytree(src, root, ignore=shutil.ignore_patterns("_build"))
    return root


def cli(root: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(root), *args,
                           "--no-progress"], capture_output=True, text=True, timeout=600,
                          env=book_env(root), **kw)


def snapshot(root: Path) -> dict[str, bytes]:
    files = [root / "book/chapters/smoke/tiny.ipynb", root / "results/smoke/tiny.json"]
    return {str(p): p.read_bytes() for p in files}


def papermill(tiny: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """A plain papermill run by hand of the tiny book's executed chapter."""
    return subprocess.run([sys.executable, "-m", "papermill",
                           str(tiny / "book/chapters/smoke/tiny.ipynb"), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=book_env(tiny))


def shown(nb: dict, tag: str) -> str:
    """The text/html the cells tagged ``tag`` show."""
    return "".join("".join(o.get("data", {}).get("text/html", "")) for c in nb["cells"]
                   if tag in c["metadata"].get("tags", []) for o in c.get("outputs", []))


def test_hand_papermill_run_leaves_profile_results_alone(tiny_smoke, executed_tiny):
    """A plain papermill re-run, from a folder inside the book: it runs the execution's profile
    with the one change, says at the top of its notebook that it is a hand run, with its own
    values (issue 46: it still said "Executed under the smoke profile in 16 s", with the
    execution's values), and writes its results to the book's results/custom/ (issue 46: to
    results/custom/ under the working directory), leaving results/smoke/ alone."""
    tiny = tiny_smoke                                   # executed under smoke
    _, proc = executed_tiny                             # tiny's first execution
    assert "without encryption" not in proc.stderr       # the kernel's TCP warning is gone
    before = snapshot(tiny)
    proc = papermill(tiny, str(tiny / "out.ipynb"), "-p", "x", "2.0", cwd=tiny / "notebooks")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert snapshot(tiny) == before
    # the hand run ran with the execution's profile ("smoke", carried in its parameters cell)
    # and x = 2.0, and its results say so (issue 33: it fell back to the cell's "quick")
    expected = tiny / "results" / "custom" / f"tiny-{parameters_hash({'profile': 'smoke', 'x': 2.0})}.json"
    doc = json.loads(expected.read_text())
    assert doc["profile"] == "smoke" and doc["run"]["custom"]
    assert doc["run"]["parameters"] == {"profile": "smoke", "x": 2.0}
    assert doc["run"]["changed"] == {"x": 2.0}           # the smoke profile's x is 1.01
    assert doc["run"]["key"] is None and doc["claims"][0]["measured"] == 2.0
    assert not (tiny / "notebooks" / "results").exists()
    nb = json.loads((tiny / "out.ipynb").read_text())
    top = shown(nb, "dsmlib-provenance")
    assert "Hand run." in top and "Executed under the" not in top
    assert "under the <code>smoke</code> profile with 1 value changed" in top
    assert re.search(r"<tr class='override'><td><code>x</code></td><td><code>2.0</code></td>"
                     r"<td><strong>this hand run</strong>", top), top
    assert str(expected) in top                          # where its results go, at the top
    # and on papermill's terminal, where the notebook's printed line never showed (issue 53)
    assert f"the results were written to {expected.resolve()}" in proc.stderr
    # the notebook's metadata still holds the execution's key and provenance (papermill copies
    # it, no kernel can rewrite it): it is read as no execution of the book, and the hand
    # run's own record is in the cell under its title, with no key (issue 53, item 8)
    assert nb["metadata"]["dsmlib"]["key"] and runner_metadata(nb["metadata"]) == {}
    [record] = [o["data"][HAND_RUN_MIME] for c in nb["cells"] for o in c.get("outputs", [])
                if HAND_RUN_MIME in o.get("data", {})]
    assert record["key"] is None and record["hand_run"] and record["changed"] == {"x": 2.0}
    assert record["parameters"] == {"profile": "smoke", "x": 2.0}
    assert record["results"] == str(expected)
    first = [c["metadata"].get("tags", []) for c in nb["cells"]][:2]
    assert "parameters" in first[0] and "injected-parameters" in first[1]
    proc = cli(tiny, "execute", "--profile", "smoke")
    assert proc.returncode == 0 and "up to date" in proc.stderr, proc.stderr[-3000:]
    assert len(checked_results(tiny, "smoke", load_specs(tiny / "notebooks"))) == 1


def test_a_hand_run_refuses_an_undeclared_parameter_in_one_line(tiny_smoke, tmp_path):
    """papermill only warns about ``-p y 4``; the cell under the title refuses it, in one line,
    before any work, and no results are written."""
    tiny = tiny_smoke
    proc = papermill(tiny, str(tmp_path / "out.ipynb"), "-p", "y", "4", cwd=tiny)
    assert proc.returncode != 0
    nb = json.loads((tmp_path / "out.ipynb").read_text())
    [err] = [o for c in nb["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert err["ename"] == "UnknownParameter"
    assert err["traceback"] == [f"UnknownParameter: {err['evalue']}"]        # one line
    # it lists the chapter's own parameters only: the book's profile and live_widgets are
    # no knob of a hand run, and `execute -p` refuses them (issue 63, item 8)
    assert err["evalue"] == ("unknown parameter(s) ['y'] for tiny; valid parameters: x "
                             "(papermill -p NAME VALUE)")
    assert proc.stderr.rstrip().splitlines()[-1] == f"UnknownParameter: {err['evalue']}"
    assert not (tiny / "results" / "custom").exists()


def test_a_hand_run_refuses_a_bad_value_in_one_line(tiny_smoke, tmp_path):
    """``-p steps -5`` printed a whole traceback where ``-p stepz 5`` gave one line (issue 53,
    item 7): a value the chapter refuses is one line too, and nothing is written."""
    tiny = tiny_smoke
    proc = papermill(tiny, str(tmp_path / "out.ipynb"), "-p", "x", "abc", cwd=tiny)
    assert proc.returncode != 0
    nb = json.loads((tmp_path / "out.ipynb").read_text())
    [err] = [o for c in nb["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert err["ename"] == "ParameterRefused" and "'x'" in err["evalue"]
    assert err["traceback"] == [f"ParameterRefused: {err['evalue']}"]          # one line
    assert proc.stderr.rstrip().splitlines()[-1] == f"ParameterRefused: {err['evalue']}"
    assert not (tiny / "results" / "custom").exists()


def test_plain_papermill_on_a_source_refuses_a_bad_value_in_one_line(executed_tiny, tmp_path):
    """A notebook without the runner's provenance cell (the source papermill executes) gets its
    parameters from ``Parameters.from_namespace(globals())``, whose refusal papermill reported
    as a 30-line traceback through the checks (issue 63, item 8): the cell's error is its one
    line, and it is the last line papermill prints, right under "Exception encountered at"."""
    root, _ = executed_tiny
    source = root / "_build" / "sources" / "tiny.ipynb"
    proc = subprocess.run([sys.executable, "-m", "papermill", str(source),
                           str(tmp_path / "out.ipynb"), "-p", "x", "abc"], cwd=root,
                          capture_output=True, text=True, timeout=600, env=book_env(root))
    assert proc.returncode != 0
    nb = json.loads((tmp_path / "out.ipynb").read_text())
    [err] = [o for c in nb["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert err["ename"] == "ParameterError"
    assert err["evalue"] == "parameter 'x' of tiny must be a number, got 'abc'"
    assert err["traceback"] == [f"ParameterError: {err['evalue']}"]              # one line
    last = proc.stderr.rstrip().splitlines()[-2:]
    assert last[0].startswith('Exception encountered at "In [') and \
        last[1] == f"ParameterError: {err['evalue']}", proc.stderr
    assert not (root / "results" / "custom").exists()                # it stopped before any


def test_a_hand_run_written_over_the_chapter_is_no_execution_of_the_book(tiny_smoke):
    """papermill writing its output over the executed chapter left a notebook whose metadata
    still carried the execution's key: ``execute`` called it up to date and the site would
    have published the hand run as the profile's (issue 53, item 8). Now the build names it
    and ``execute`` runs the chapter again."""
    tiny = tiny_smoke
    chapter = tiny / "book/chapters/smoke/tiny.ipynb"
    proc = papermill(tiny, str(chapter), "-p", "x", "2.0", cwd=tiny)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with pytest.raises(ValueError, match="re-executed by hand"):
        checked_results(tiny, "smoke", load_specs(tiny / "notebooks"))
    proc = cli(tiny, "execute", "--profile", "smoke")
    assert proc.returncode == 0 and "up to date" not in proc.stderr, proc.stderr[-3000:]
    assert runner_metadata(json.loads(chapter.read_text())["metadata"])["key"]
    assert len(checked_results(tiny, "smoke", load_specs(tiny / "notebooks"))) == 1


def test_override_runs_are_custom_and_say_where(tiny_smoke):
    tiny = tiny_smoke                                   # executed under smoke
    before = snapshot(tiny)
    proc = cli(tiny, "execute", "tiny", "--profile", "smoke", "-p", "x", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    h = parameters_hash({"profile": "smoke", "x": 3})
    nb, res = f"book/chapters/custom/tiny-{h}.ipynb", f"results/custom/tiny-{h}.json"
    assert nb in proc.stderr and res in proc.stderr
    assert res in (tiny / nb).read_text() and (tiny / res).exists()
    assert snapshot(tiny) == before
    # an override equal to the profile's value is the profile's run
    proc = cli(tiny, "execute", "tiny", "--profile", "smoke", "-p", "x", "1.01")
    assert "up to date" in proc.stderr, proc.stderr[-3000:]


def test_failed_and_killed_executions_keep_the_good_chapter(tiny_smoke):
    tiny = tiny_smoke                                   # executed under smoke
    before = snapshot(tiny)
    (tiny / "FAIL").touch()
    proc = cli(tiny, "execute", "--profile", "smoke", "--force")
    assert proc.returncode == 1 and "asked to fail" in proc.stderr
    failed = tiny / "book" / "chapters" / "failed" / "tiny.ipynb"
    assert str(failed) in proc.stderr and failed.exists()
    assert snapshot(tiny) == before
    (tiny / "FAIL").unlink()
    (tiny / "SLEEP").touch()
    p = subprocess.Popen([sys.executable, "-m", "dsmlib", "--root", str(tiny), "execute",
                          "--profile", "smoke", "--force", "--no-progress"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, env=book_env(tiny))
    try:
        deadline = time.time() + 300
        while not (list((tiny / "_build" / "stage").glob("*/tiny.json"))
               and (tiny / "SLEEPING").exists()):   # results written
            assert time.time() < deadline and p.poll() is None
            time.sleep(0.2)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        (tiny / "SLEEP").unlink()
    assert snapshot(tiny) == before
    proc = cli(tiny, "execute", "--profile", "smoke")      # the lock died with its holder
    assert proc.returncode == 0 and "up to date" in proc.stderr, proc.stderr[-3000:]


def test_two_concurrent_executes_one_runs_the_other_is_told(tiny):
    (tiny / "SLEEP").touch()
    first = subprocess.Popen([sys.executable, "-m", "dsmlib", "--root", str(tiny), "execute",
                              "--profile", "smoke", "--no-progress"], stderr=subprocess.PIPE,
                             text=True, env=book_env(tiny))
    try:
        deadline = time.time() + 300
        while not list((tiny / "_build" / "stage").glob("*/tiny.ipynb")):
            assert time.time() < deadline and first.poll() is None
            time.sleep(0.2)
        second = cli(tiny, "execute", "--profile", "smoke")
        assert second.returncode == 3
        assert "this book is busy" in second.stderr and f"pid {first.pid}" in second.stderr
    finally:
        (tiny / "SLEEP").unlink()
    assert first.wait(300) == 0, first.stderr.read()[-3000:]
    for path in snapshot(tiny):
        json.loads(Path(path).read_text())                 # whole files, not torn ones


def test_profiles_are_kept_apart(tiny_smoke):
    tiny = tiny_smoke                                   # executed under smoke
    before = snapshot(tiny)
    assert cli(tiny, "execute", "--profile", "quick").returncode == 0
    assert (tiny / "book/chapters/quick/tiny.ipynb").exists()
    assert snapshot(tiny) == before
    proc = cli(tiny, "execute", "--profile", "smoke")
    assert "up to date" in proc.stderr
    specs = load_specs(tiny / "notebooks")
    assert checked_results(tiny, "smoke", specs)[0]["claims"][0]["measured"] == 1.01
    assert checked_results(tiny, "quick", specs)[0]["claims"][0]["measured"] == 1.0


def test_ledger_refuses_results_that_do_not_match_their_chapter(tiny_smoke):
    tiny = tiny_smoke                                   # executed under smoke
    specs = load_specs(tiny / "notebooks")
    res = tiny / "results" / "smoke" / "tiny.json"
    good = res.read_text()
    fix = "python -m dsmlib execute tiny --profile smoke --force"
    doc = json.loads(good)
    doc["run"]["parameters"]["x"] = 0.005                 # what a stray run would leave
    res.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="results/smoke/tiny.json") as err:
        checked_results(tiny, "smoke", specs)
    assert fix in str(err.value) and "x" in str(err.value)
    doc = json.loads(good)
    doc["run"]["key"] = "0" * 64
    res.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="content key"):
        checked_results(tiny, "smoke", specs)
    del doc["run"]                                      # an old results file
    res.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=fix):
        checked_results(tiny, "smoke", specs)


def test_changed_parameters_re_execute(tiny_smoke):
    tiny = tiny_smoke                                   # executed under smoke
    proc = cli(tiny, "execute", "--profile", "smoke")
    assert "up to date" in proc.stderr and "executing" not in proc.stderr
    (tiny / "notebooks" / "profiles.yml").write_text(
        "chapters: test_chapters\nnotebooks:\n  tiny:\n    title: Tiny\n    profiles:\n"
        "      smoke: {x: 1.02}\n")
    proc = cli(tiny, "execute", "--profile", "smoke")
    assert proc.returncode == 0 and "executing tiny" in proc.stderr, proc.stderr[-3000:]
    doc = json.loads((tiny / "results/smoke/tiny.json").read_text())
    assert doc["claims"][0]["measured"] == 1.02 and doc["run"]["parameters"]["x"] == 1.02


def test_code_key_follows_the_kernels_import_closure_only(tmp_path):
    """Changing a module the notebook imports, directly or through another module, changes
    the key; a module only other chapters import, or one of the runner's own, does not."""
    import shutil
    import dsmlib
    pkg = tmp_path / "dsmlib"
    shutil.copytree(Path(dsmlib.__file__).parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    src = tmp_path / "nb.md"
    src.write_text("---\njupytext:\n  text_representation:\n    format_name: myst\n---\n"
                   "# nb\n\n```{code-cell} ipython3\n%matplotlib inline\n"
                   "from dsmlib.chapters import ols as OLS\n\n"
                   "def f():\n    from dsmlib.figures import tables\n```\n")
    key = lambda **p: code_key(tmp_path, src, {"x": 1, **p}, "smoke", pkg_dir=pkg)  # noqa: E731
    k0 = key()
    assert key(x=2) != k0 and code_key(tmp_path, src, {"x": 1}, "quick", pkg_dir=pkg) != k0
    k = k0
    for used in ("chapters/ols.py", "theory/least_squares.py", "figures/tables.py",
                 "foundation/claims.py", "chapters/__init__.py", "__init__.py"):
        with open(pkg / used, "a") as f:      # direct, transitive, function-level, packages
            f.write("\n# a change\n")
        assert key() != k, used
        k = key()
    for unused in ("models/sec5_distillation/loop.py", "theory/valley.py",
                   "chapters/sec5_distillation/grid.py", *OUTSIDE_KERNEL):
        assert (pkg / unused).is_file(), unused     # a moved module is not silently created
        with open(pkg / unused, "a") as f:
            f.write("\n# a change\n")
        assert key() == k, unused
    src.write_text(src.read_text().replace("def f():", "def f(:"))   # not Python: everything
    k_all = key()
    with open(pkg / "models" / "sec5_distillation" / "loop.py", "a") as f:
        f.write("\n# another change\n")
    assert key() != k_all


def test_the_closure_sees_an_edit_made_in_the_same_process(tmp_path):
    """The closure remembers each file's imports by its text (a build computes 18 closures of
    largely the same files): an import added to a module, and a notebook that imports one
    module more, are seen by the next call in the same process, and the import removed
    again drops the module."""
    import shutil
    import dsmlib
    from dsmlib.book.execute.closure import import_closure
    pkg = tmp_path / "dsmlib"
    shutil.copytree(Path(dsmlib.__file__).parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    src = tmp_path / "nb.md"
    cell = "```{code-cell} ipython3\nfrom dsmlib.theory import brownian\n```\n"
    src.write_text("---\njupytext:\n  text_representation:\n    format_name: myst\n---\n"
                   "# nb\n\n" + cell)
    loop, valley = pkg / "models" / "networks.py", pkg / "theory" / "valley.py"
    assert loop.is_file() and valley.is_file()
    before = import_closure(src, pkg)
    assert loop not in before and valley not in before
    module = pkg / "theory" / "brownian.py"
    text = module.read_text()
    module.write_text(text + "\nfrom ..models import networks\n")
    assert loop in import_closure(src, pkg)
    src.write_text(src.read_text() + cell.replace("brownian", "valley"))
    assert {loop, valley} <= set(import_closure(src, pkg))
    module.write_text(text)
    assert loop not in import_closure(src, pkg)


def test_same_parameters_compares_types_as_the_content_key_does():
    """256.0 is not 256 and 1 is not True: a run given the one is not the profile's run of the
    other (its content key differs too), so it cannot pass for it."""
    from dsmlib.foundation.handoff import same_parameters
    base = {"train_limit": 256, "augment": True, "sigma2s": [1.0, 4.0]}
    assert same_parameters(base, {**base, "sigma2s": (1.0, 4.0)})         # tuples are lists
    assert same_parameters(base, dict(reversed(list(base.items()))))      # order ignored
    for name, other in (("train_limit", 256.0), ("augment", 1), ("sigma2s", [1, 4])):
        assert not same_parameters(base, {**base, name: other}), name


def _interruptible(tiny: Path):
    """An ``execute`` of the tiny book stuck in its SLEEP cell (its results already staged),
    and a list that fills with its stderr lines. It waits for the cell itself to run: an
    interrupt that lands while the kernel sends the previous cell's reply is swallowed there
    (that case is bounded by ``STOP_GRACE_S``, tested in ``test_a_first_ctrl_c_...``)."""
    import threading
    (tiny / "SLEEP").touch()
    # Ctrl-C's default disposition, as in a terminal: a shell without job control starts its
    # background commands with SIGINT ignored, and the ignored disposition passes to children
    # (a fresh-clone `make test` launched with `&` from a script failed both Ctrl-C tests so)
    p = subprocess.Popen([sys.executable, "-m", "dsmlib", "--root", str(tiny), "execute",
                          "--profile", "smoke", "--force", "--no-progress"],
                         stderr=subprocess.PIPE, text=True, env=book_env(tiny),
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(p.stderr), daemon=True).start()
    deadline = time.time() + 300
    while not (list((tiny / "_build" / "stage").glob("*/tiny.json"))
               and (tiny / "SLEEPING").exists()):
        assert time.time() < deadline and p.poll() is None, "".join(lines)
        time.sleep(0.2)
    return p, lines


def _wait_for(lines: list[str], text: str, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while not any(text in line for line in lines):
        assert time.time() < deadline, f"no {text!r} in {''.join(lines)}"
        time.sleep(0.1)


def _wait_for_file(path: Path, seconds: float = 60) -> None:
    """Wait until ``path`` exists (what a cell of the tiny book writes when something has
    happened to it): the event itself, where a fixed wait guessed how long it takes."""
    deadline = time.time() + seconds
    while not path.exists():
        assert time.time() < deadline, f"no {path.name} after {seconds:g} s"
        time.sleep(0.1)


def test_ctrl_c_says_it_waits_stops_the_cell_and_names_the_partial_notebook(tiny_smoke):
    """Issue 33: the first Ctrl-C said nothing and the run went on until the cell ended (the
    kernel runs in a session of its own, where a terminal's Ctrl-C never arrives). Now a line
    says at once what it waits for, the running cell is interrupted (this one would sleep
    forever), and the last line names the partial notebook."""
    tiny = tiny_smoke                                   # executed under smoke
    before = snapshot(tiny)
    p, lines = _interruptible(tiny)
    try:
        p.send_signal(signal.SIGINT)
        _wait_for(lines, "[dsmlib] waiting for tiny to stop; Ctrl-C again to abort")
        assert p.wait(120) == 130, "".join(lines)
    finally:
        (tiny / "SLEEP").unlink()
        (tiny / "SLEEPING").unlink()
        if p.poll() is None:
            p.kill()
    last = [line for line in lines if line.strip()][-1]
    assert last.startswith("error: interrupted; tiny stopped, its partial notebook is "
                           "book/chapters/failed/tiny.ipynb;"), "".join(lines)
    assert (tiny / "book" / "chapters" / "failed" / "tiny.ipynb").exists()
    assert snapshot(tiny) == before


def test_a_second_ctrl_c_aborts_a_notebook_that_does_not_stop(tiny):
    """A cell that swallows the interrupt keeps running; the second Ctrl-C kills its kernel
    and the run ends (status 130), naming the partial notebook."""
    (tiny / "STUBBORN").touch()
    p, lines = _interruptible(tiny)
    try:
        p.send_signal(signal.SIGINT)
        _wait_for(lines, "Ctrl-C again to abort")
        _wait_for_file(tiny / "SWALLOWED")              # the interrupt reached the cell
        assert p.poll() is None, "".join(lines)        # the cell swallowed it: still running
        p.send_signal(signal.SIGINT)
        assert p.wait(120) == 130, "".join(lines)
    finally:
        (tiny / "SLEEP").unlink()
        (tiny / "SLEEPING").unlink()
        if p.poll() is None:
            p.kill()
    assert any("aborting: killing the kernels" in line for line in lines)
    assert "book/chapters/failed/tiny.ipynb" in lines[-1], "".join(lines)


def test_a_first_ctrl_c_kills_kernels_that_do_not_stop_within_its_grace(capsys, monkeypatch):
    """A run whose kernel swallowed the interrupt (it landed while the kernel sent a cell's
    reply, so no reply ever comes) would wait forever: after the grace the kernels are
    killed and ``interrupt`` returns, with a line that says so. A run that ends in time is
    left alone. (The wait after the kill, ``ABORT_WAIT_S``, is cut to 1 s: this run never
    ends, so the test waited all of its 15 s.)"""
    from concurrent.futures import Future
    from dsmlib.book.execute import kernel
    from dsmlib.book.execute.kernel import KernelWatch
    monkeypatch.setattr(kernel, "ABORT_WAIT_S", 1.0)
    watch = KernelWatch()
    sent: list[int] = []
    watch.signal = sent.append                          # type: ignore[method-assign]
    stuck = Future()
    stuck.set_running_or_notify_cancel()                # running: cancel() cannot stop it
    start = time.monotonic()
    watch.interrupt([stuck], grace=0.5)
    assert 0.5 + 1 <= time.monotonic() - start < 0.5 + 1 + 1 + 5
    assert sent[0] == signal.SIGINT and sent[-1] == signal.SIGKILL
    assert "still running 0.5 s after Ctrl-C: killing the kernels" in capsys.readouterr().err
    done = Future()
    done.set_running_or_notify_cancel()
    done.set_result(None)
    sent.clear()
    watch.interrupt([done], grace=0.5)
    assert signal.SIGKILL not in sent and "killing" not in capsys.readouterr().err


def test_every_module_left_out_of_the_content_key_exists():
    """A module moved away from a name in :data:`OUTSIDE_KERNEL` would leave the list stale
    (its new path then counts in every content key): each entry names a file that exists, and
    every module of the book machinery is in it: no page imports the book (issue 68, item 1;
    the hand-off is :mod:`dsmlib.foundation.handoff`), so none runs in a book's execution."""
    import dsmlib
    pkg = Path(dsmlib.__file__).parent
    assert [p for p in OUTSIDE_KERNEL if not (pkg / p).is_file()] == []
    machinery = {p.relative_to(pkg).as_posix() for p in (pkg / "book").rglob("*.py")}
    assert machinery - set(OUTSIDE_KERNEL) == set()


def test_every_chapters_content_key_covers_its_own_code():
    """By default the closure is taken under the ``dsmlib`` package itself: every chapter's key
    covers its chapter module and the foundation it stands on. (Taken from the depth of the
    module that computes it, a move of that module into ``book/execute/`` once left every key
    covering ``book/__init__.py`` alone, so that no code change made anything stale.)"""
    import dsmlib
    from dsmlib.book.execute.provenance import kernel_code, package_dir
    from dsmlib.book.profiles import load_specs
    pkg = Path(dsmlib.__file__).resolve().parent
    assert package_dir() == pkg
    root = pkg.parent
    for name, spec in load_specs(root / "notebooks").items():
        code = {p.relative_to(pkg).as_posix() for p in kernel_code(spec.source)}
        own = {f"chapters/{name}.py", f"chapters/{name}/__init__.py"}
        assert code & own, name
        assert {"foundation/claims.py", f"figures/{name}.py"} <= code, name
        assert code_key(root, spec.source, {}, "quick") == code_key(root, spec.source, {}, "quick",
                                                                    pkg_dir=pkg)
