"""Helpers shared by the test modules (importable because pytest puts tests/ on sys.path)."""
from __future__ import annotations

import re
import shutil
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK_FILES = ["_config.yml", "_toc.yml", "CITATION.cff", "notebooks", "book", "reference",
              "benchmarks/gpu_runs"]


def load_script(relative: str):
    """A script of the repository (e.g. ``benchmarks/run.py``) imported as a module, without
    running its ``__main__`` block."""
    import importlib.util
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def copy_book(dest: Path) -> Path:
    """Copy the book's sources (not its build products) into ``dest``, with its committed
    reference executions (``reference/``) if any."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in BOOK_FILES:
        src = ROOT / name
        if not src.exists():
            continue
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns(
                "chapters", "_static", "_generated", "ledger.md", "errata.md",
                ".ipynb_checkpoints"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def missing_axis_titles(fig) -> list[str]:
    """Names of the axes of ``fig`` that are shown but have no title in the figure's layout.

    Walks every ``xaxis*`` / ``yaxis*`` entry of ``fig.layout`` and every axis a trace is drawn
    on (``x``, ``x2``, ...); an axis counts as shown unless ``visible`` is False. Every axis
    carries its own title (issue 63: Prop. 2's upper panels showed tick labels of their own
    under no title, and at 390 px nothing tied them to the title at the figure's bottom). The
    one exception is an axis that is not one of its own: an untitled x axis that shows no tick
    labels (``showticklabels`` False) and ``matches`` a titled x axis lying under it in the
    same column (the same horizontal domain), as ``make_subplots(shared_xaxes=True)`` builds
    them: it has that axis's range, and its ticks and title are that axis's. The browser's
    check (tests/book/test_browser.py, ``FIGURES_JS``) applies the same rule to the drawn page.
    """
    layout = fig.layout.to_plotly_json()
    names = {k for k in layout if k.startswith(("xaxis", "yaxis"))}
    for tr in fig.data:
        for attr in ("xaxis", "yaxis"):
            if attr in tr:                      # cartesian traces only
                ref = tr[attr] or attr[0]       # "x", "x2", ...
                names.add(attr + ref[1:])
    return [name for name in sorted(names)
            if layout.get(name, {}).get("visible") is not False and not _titled(layout, name)
            and not (name.startswith("xaxis") and _shared_from_below(layout, name))]


def _titled(layout: dict, name: str) -> bool:
    """Whether the axis ``name`` of a figure's ``layout`` (a plain dict) has a title that is
    not blank."""
    title = layout.get(name, {}).get("title")
    text = title.get("text") if isinstance(title, dict) else title
    return bool(text and str(text).strip())


def _place(layout: dict, name: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """An x axis's horizontal domain and its anchor's vertical domain."""
    axis = layout.get(name, {})
    anchor = axis.get("anchor") if axis.get("anchor") not in (None, "free") else "y"
    y = layout.get("yaxis" + anchor[1:], {})
    return (tuple(round(v, 3) for v in axis.get("domain", (0, 1))),
            tuple(y.get("domain", (0, 1))))


def _shared_from_below(layout: dict, name: str) -> bool:
    """Whether the untitled x axis ``name`` is a shared one: no tick labels of its own, and
    ``matches`` a titled x axis under it in its column."""
    axis = layout.get(name, {})
    if axis.get("showticklabels") is not False or not axis.get("matches"):
        return False
    other = "xaxis" + axis["matches"][1:]
    if not _titled(layout, other):
        return False
    (cols, rows), (o_cols, o_rows) = _place(layout, name), _place(layout, other)
    return o_cols == cols and o_rows[1] <= rows[0] + 1e-9


def figure_functions() -> list[str]:
    """``module.function`` for every public function of dsmlib.figures.* (except the tables)
    annotated to return a plotly Figure."""
    import importlib
    import inspect
    import pkgutil

    import dsmlib.figures
    out = []
    for info in pkgutil.iter_modules(dsmlib.figures.__path__):
        if info.name == "tables":
            continue
        mod = importlib.import_module(f"dsmlib.figures.{info.name}")
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.isfunction(obj) and str(inspect.signature(obj).return_annotation) in (
                    "go.Figure", "<class 'plotly.graph_objs._figure.Figure'>"):
                out.append(f"{info.name}.{name}")
    return out


# --------------------------------------------------------------------------- torch test cases
# Small float64 networks, each with inputs of a given shape and L outputs, for the tests of
# the theory layer. Built on the CPU from fixed seeds, then moved to the test's device.

def _mlp_vector(device):
    from dsmlib.models.networks import tanh_mlp
    import torch
    return tanh_mlp(3, 5, 3, seed=11, dtype=torch.float64, device=device)


def _mlp_scalar(device):
    from dsmlib.models.networks import tanh_mlp
    import torch
    return tanh_mlp(4, 6, 1, seed=12, dtype=torch.float64, device=device)


def _mlp_frozen(device):
    from dsmlib.models.networks import tanh_mlp
    import torch
    m = tanh_mlp(3, 4, 2, seed=13, dtype=torch.float64, device=device)
    m.fc1.bias.requires_grad_(False)
    return m


def _cnn_bn(device, n_out: int = 3):
    """Small CNN with BatchNorm in eval mode and non-trivial running statistics."""
    from dsmlib.models.networks import small_cnn
    import torch
    dt = torch.float64
    m = small_cnn(2, n_out, width=3, batchnorm=True, seed=14, dtype=dt, device=device)
    g = torch.Generator().manual_seed(15)
    with torch.no_grad():                       # copy_ moves the CPU draws to the device
        for bn in (m.bn1, m.bn2):
            bn.running_mean.copy_(torch.randn(bn.num_features, generator=g, dtype=dt))
            bn.running_var.copy_(0.5 + torch.rand(bn.num_features, generator=g, dtype=dt))
            bn.weight.copy_(1 + 0.3 * torch.randn(bn.num_features, generator=g, dtype=dt))
            bn.bias.copy_(0.3 * torch.randn(bn.num_features, generator=g, dtype=dt))
    return m.eval()


#: name -> (builder(device), input shape, outputs per sample)
TORCH_CASES = {
    "mlp_vector": (_mlp_vector, (9, 3), 3),
    "mlp_scalar": (_mlp_scalar, (8, 4), 1),
    "mlp_frozen": (_mlp_frozen, (7, 3), 2),
    "cnn_bn_eval": (_cnn_bn, (6, 2, 6, 6), 3),
}


def case_data(shape: tuple[int, ...], n_out: int, device, seed: int = 0):
    """Inputs ``X`` of ``shape`` and labels ``y`` (``(N,)`` for one output), float64, on
    ``device`` (drawn on the CPU, so every device sees the same numbers)."""
    import torch
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(shape, generator=g, dtype=torch.float64)
    y = torch.randn(shape[0], n_out, generator=g, dtype=torch.float64)
    return X.to(device), (y[:, 0] if n_out == 1 else y).to(device)


def brute_force(model, X, y):
    """Per-sample autograd loops: Jacobians ``(N, L, d)`` and loss gradients ``(N, d)``."""
    import torch
    params = [p for p in model.parameters() if p.requires_grad]
    jac, lg = [], []
    for i in range(X.shape[0]):
        out = model(X[i:i + 1]).reshape(-1)
        rows = [torch.cat([g.reshape(-1) for g in torch.autograd.grad(out[l], params,
                                                                      retain_graph=True)])
                for l in range(out.numel())]
        jac.append(torch.stack(rows))
        loss = 0.5 * (out - y[i].reshape(-1)).pow(2).sum()
        lg.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, params)]))
    return torch.stack(jac), torch.stack(lg)


@contextmanager
def one_thread():
    """Run torch on one intra-op thread inside the block, then restore the thread count.

    For loops over many tiny tensors (replicate simulations) a second thread only adds
    synchronisation, and on cores shared with other jobs it costs up to 10x."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def on_device(setting, device):
    """A copy of a :class:`dsmlib.models.settings.Setting` with its model and tensors on
    ``device`` (the settings are built on the CPU)."""
    import copy
    from dsmlib.models.settings import Setting
    return Setting(setting.name, copy.deepcopy(setting.model).to(device), setting.X.to(device),
                   setting.y_clean.to(device))


def barrier_sweep(*, steps: int, n_runs: int, seed: int):
    """The small seeded escape sweep of the barrier tests (chapter and figures): two values of
    each of eta, sigma^2 and B around the reference (0.01, 2, 1)."""
    from dsmlib.chapters import remark3_barrier
    from dsmlib.theory import barrier
    return remark3_barrier.escape_sweep(
        barrier.barrier_problem(16, seed=0), etas=[0.01, 0.02], sigma2s=[2.0, 4.0],
        batch_sizes=[1, 2], reference=(0.01, 2.0, 1), steps=steps, n_runs=n_runs, seed=seed)


# ------------------------------------------------------------------------- one-chapter books
#: The package of a test book's chapter modules, at its root (profiles.yml's ``chapters:``).
TEST_CHAPTERS = "test_chapters"


def chapter_module(root: Path, name: str, fields: str = "") -> Path:
    """``root/test_chapters/<name>.py``: a chapter module whose ``Parameters``, with ``fields``
    (dataclass field lines, e.g. ``x: float = param(1.0, "x")``), are declared in
    ``test_chapters/parameters/<name>.py`` as every chapter's are, for a test book whose
    profiles.yml names the package (``chapters: test_chapters``). A process that imports it
    needs ``root`` on its path (:func:`book_env`; a kernel works from the root)."""
    import textwrap
    path = root / TEST_CHAPTERS / f"{name}.py"
    (path.parent / "parameters").mkdir(parents=True, exist_ok=True)
    (path.parent / "parameters" / f"{name}.py").write_text(
        "from dataclasses import dataclass\n\n"
        "from dsmlib.foundation.parameters import ChapterParameters, param\n\n\n"
        "@dataclass(frozen=True)\nclass Parameters(ChapterParameters):\n"
        f"    notebook = {name!r}\n"
        + textwrap.indent(textwrap.dedent(fields), "    ") + "\n")
    path.write_text(f"from {TEST_CHAPTERS}.parameters.{name} import Parameters  # noqa: F401\n")
    return path


def book_env(root: Path) -> dict[str, str]:
    """The environment of a process (and of the kernels it starts) that imports the chapter
    modules of the test book at ``root``."""
    import os
    paths = [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


# ------------------------------------------------------------------------------ results files
def chapter_parameters(notebook: str, **values):
    """A chapter's ``Parameters`` object with these fields and values, for tests that write
    results without a chapter module."""
    import dataclasses
    from dsmlib.foundation.parameters import ChapterParameters
    cls = dataclasses.make_dataclass(
        "Parameters", [(k, type(v), dataclasses.field(default=v)) for k, v in values.items()],
        bases=(ChapterParameters,), frozen=True, namespace={"notebook": notebook})
    return cls()


def write_profile_results(claims, notebook: str, profile: str, results_dir: Path,
                          **values) -> Path:
    """``results_dir/<profile>/<notebook>.json`` as the runner's sealed run writes it."""
    from dsmlib.foundation.handoff import run_values, write_results
    parameters = chapter_parameters(notebook, **values)
    dest = Path(results_dir) / profile / f"{notebook}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    seal = {"profile": profile, "parameters": run_values(parameters, profile), "key": "k",
            "stage": str(dest)}
    return write_results(claims, parameters, profile=profile, seal=seal)


# --------------------------------------------------------------------------- reference fixtures
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def install_fixture_reference(root: Path, profile: str = "gpu",
                              name: str = "sec5_distillation") -> tuple[Path, Path]:
    """Copy the committed fixture reference ``tests/fixtures/reference/<profile>/<name>.*``
    into ``root/reference/<profile>/`` and stamp it with the content key the code under test
    gives (it was made by ``tests/fixtures/make_gpu_fixture.py`` with other settings), so that
    a build treats it as fresh: this tests how a fresh reference is shown, not whether it is
    fresh (tests/book/test_references.py covers staleness)."""
    import json
    from dsmlib.book.profiles import load_specs
    from dsmlib.book.execute.runner import plan
    key = plan(root, load_specs(root / "notebooks")[name], profile, {}).key
    dest = root / "reference" / profile
    dest.mkdir(parents=True, exist_ok=True)
    nb = json.loads((FIXTURES / "reference" / profile / f"{name}.ipynb").read_text())
    res = json.loads((FIXTURES / "reference" / profile / f"{name}.json").read_text())
    nb["metadata"]["dsmlib"]["key"] = key
    res["run"]["key"] = key
    (dest / f"{name}.ipynb").write_text(json.dumps(nb))
    (dest / f"{name}.json").write_text(json.dumps(res))
    return dest / f"{name}.ipynb", dest / f"{name}.json"


@contextmanager
def deterministic_fp32(monkeypatch):
    """True float32 (no TF32) and deterministic kernels, restored afterwards."""
    import torch
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")   # read at every cuBLAS call
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.backends.cudnn.benchmark, torch.are_deterministic_algorithms_enabled())
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
         torch.backends.cudnn.benchmark) = saved[:3]
        torch.use_deterministic_algorithms(saved[3])


def files_using(root: Path, fixture: str) -> set[str]:
    """The test files under ``root/tests`` whose text names ``fixture``, as node-id paths."""
    return {p.relative_to(root).as_posix() for p in (root / "tests").rglob("test_*.py")
            if re.search(rf"\b{re.escape(fixture)}\b", p.read_text())}


#: The file whose tests first ask for the session's smoke book (they build it).
BOOK_BUILDER = "tests/book/test_book.py"
#: Seconds of work a file that reads the book should find ahead of it in the queue before it is
#: handed out: the book's build (95 s in a `make test` on a loaded 2-core Intel Xeon) runs on
#: one worker while the other works through the files ahead; a reader handed out earlier waits
#: for the book, its core idle.
BOOK_SECONDS = 120
#: Seconds each test file of 4 s or more took in a `CI=true make test` on a 2-core Intel Xeon
#: (2026-11-28, machine factor 1.3, with other work beside it; the builder's include the book).
#: The files are handed out longest first, so that a long file does not end the run alone
#: while the other worker idles (JupyterLab's, 47 s, handed out last once, ended 34 s after
#: the other worker's last file); a file not named here goes after them, in xdist's order.
FILE_SECONDS = {
    "tests/book/test_book.py": 218, "tests/book/test_browser.py": 175,
    "tests/book/test_reexecution.py": 133, "tests/models/test_lockstep.py": 77,
    "tests/book/test_grid.py": 74, "tests/book/test_gpu_check.py": 72,
    "tests/models/test_graph.py": 55, "tests/book/test_browser_explorers.py": 50,
    "tests/book/test_jupyterlab.py": 47, "tests/test_reduced_simd.py": 41,
    "tests/book/test_cli.py": 40, "tests/chapters/test_ols_exact.py": 40,
    "tests/book/test_references.py": 33, "tests/book/test_rederive.py": 31,
    "tests/book/test_grid_files.py": 25, "tests/chapters/test_sec5_distillation.py": 24,
    "tests/book/test_sec5_notebook.py": 24, "tests/foundation/test_power.py": 23,
    "tests/book/test_browser_sec5.py": 21, "tests/theory/test_least_squares.py": 20,
    "tests/chapters/test_prop2_convergence.py": 18, "tests/theory/test_sde.py": 18,
    "tests/book/test_site_favicon.py": 16, "tests/foundation/test_coverage_both_sides.py": 15,
    "tests/foundation/test_verdict_rules.py": 15, "tests/chapters/test_ols.py": 11,
    "tests/book/test_profile_table.py": 9, "tests/chapters/test_prop1_noise.py": 7,
    "tests/book/test_gpu_cifar10.py": 24, "tests/theory/test_gradient_norm.py": 5, "tests/chapters/test_sec5_gains.py": 5,
    "tests/figures/test_prop2_convergence.py": 5, "tests/figures/test_sec5_distillation.py": 4,
    "tests/foundation/test_fits_and_joint_claims.py": 4, "tests/models/test_loop.py": 4}


def work_order(units: list[str], readers: set[str]) -> list[str]:
    """The order in which pytest-xdist hands out the work units (test files) ``units``, given
    in xdist's order (most tests first): the smoke book's builder first; then every other file
    longest first (:data:`FILE_SECONDS`; the files it does not name after them, as given),
    except that a file that reads the book (``readers``) is held back until the files before
    it hold :data:`BOOK_SECONDS` of work (not counting the builder's), so that it seldom
    waits for the book; held readers go in as soon as there is, longest first."""
    first = [u for u in (BOOK_BUILDER,) if u in units]
    rest = sorted((u for u in units if u not in first), key=lambda u: -FILE_SECONDS.get(u, 0))
    order, held, ahead = list(first), [], 0.0
    for u in rest:
        if first and u in readers and ahead < BOOK_SECONDS:
            held.append(u)
            continue
        order.append(u)
        ahead += FILE_SECONDS.get(u, 0)
        if held and ahead >= BOOK_SECONDS:
            order += held
            held = []
    return order + held


# --------------------------------------------------------------------------- headless Chromium
@contextmanager
def served(html: Path):
    """The folder ``html`` on a quiet local HTTP server, for the duration of the block: yields
    its base URL."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                          functools.partial(Quiet, directory=str(html)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/"
    finally:
        srv.shutdown()


def open_page(browser, base: str, path: str, width: int = 1400):
    """A page that aborts (and records) every request leaving ``base``."""
    page = browser.new_page(viewport={"width": width, "height": 1000})
    blocked, errors = [], []

    def route(r):
        if r.request.url.startswith(base) or r.request.url.startswith("data:"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.goto(base + path, wait_until="load")
    if page.evaluate("document.querySelectorAll('script.dsm-plotly-data').length"):
        page.wait_for_function("document.documentElement.getAttribute('data-dsm-plotly')"
                               " === 'ready'", timeout=30_000)
    wait_for_math(page)
    return page, blocked, errors


#: Whether a page's formulas are typeset and fitted more than ``n`` times (the root element's
#: marks, book/_assets/dsm-fit-math.js), or the page does not fit formulas at all.
MATH_FITTED_JS = """n => { const root = document.documentElement;
  return !document.querySelector('script[src*="dsm-fit-math"]')
    || (root.dataset.dsmMath === 'fitted' && Number(root.dataset.dsmMathFits || 0) > n); }"""


def math_fits(page) -> int:
    """How many times the page's formulas have been fitted (a resize refits them)."""
    return page.evaluate("Number(document.documentElement.dataset.dsmMathFits || 0)")


def wait_for_math(page, after: int = 0) -> None:
    """Wait until MathJax has typeset the page and dsm-fit-math.js has fitted its formulas
    (and put the "scroll sideways" bars above those still too wide) more than ``after``
    times: the event itself, where a fixed 800 ms wait was too short on a loaded machine."""
    page.wait_for_function(MATH_FITTED_JS, arg=after, timeout=30_000)


def chromium_launcher(chromium: str, folder: Path) -> str:
    """An executable for playwright that starts ``chromium`` at the niceness of the tests.

    Run as root, Chromium raises its own priority: under ``nice -n 15`` its threads ran at
    nice -8, 0 and 5, ahead of the work the tests were niced below.
    ``setpriv`` takes CAP_SYS_NICE out of its bounding and inheritable sets, so it cannot
    (``chromium`` itself where setpriv is missing or the tests do not run as root)."""
    import os
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        return chromium
    path = folder / "chromium"
    path.write_text(f'#!/bin/sh\nexec {setpriv} --bounding-set -sys_nice --inh-caps -sys_nice '
                    f'{chromium} "$@"\n')
    path.chmod(0o755)
    return str(path)


def descendant_thread_nices() -> dict[int, list[int]]:
    """The niceness of every thread of every process started (directly or not) by this one."""
    import os
    parent, nices = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        parent[int(stat.parent.name)] = int(text[text.rindex(")") + 2:].split()[1])
    me = os.getpid()
    for pid in parent:
        up = pid
        while up > 1 and up != me:
            up = parent.get(up, 1)
        if up != me or pid == me:
            continue
        for stat in Path(f"/proc/{pid}/task").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:
                continue
            nices.setdefault(pid, []).append(int(text[text.rindex(")") + 2:].split()[16]))
    return nices
