"""Results files (foundation): each notebook's claims, checked on the way out (unique ids, a
scope on every claim of the paper, a condition on every refutation) and on the way in (known
verdicts), and stamped with the run that produced them.

Where a notebook's results go depends on who ran it and with what:

- ``results/<profile>/<notebook>.json`` only when the book's runner (``python -m dsmlib
  execute``) ran it with exactly the profile's parameters. The runner passes a *seal*, the
  hidden parameter ``dsmlib_run`` (the profile, every parameter value, the content key and a
  staging file); the results go to the staging file and the runner moves them into place
  only when the whole notebook succeeded.
- ``results/custom/<notebook>-<hash>.json`` for every other run: papermill by hand, a notebook
  edited and run in Jupyter, ``execute`` with ``-p`` overrides. The hash is that of the
  parameters (:func:`parameters_hash`), and the notebook prints where its results went.

Every file records ``run``: the profile, every parameter value, the content key (``None``
outside the runner), whether the run was custom, and the environment (Python, numpy, torch,
the CUDA device if any), so that a ledger can refuse results that do not match its chapters.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from .claims import KINDS, SCOPES, VERDICTS, Claim

__all__ = ["SEAL", "RUN_ONLY", "UnknownParameter", "write_results", "load_results",
           "atomic_write_text", "parameters_hash", "same_parameters", "custom_results_path",
           "notebook_parameters", "injected_parameters", "check_parameters"]

#: The hidden parameter through which the runner seals a run (see the module docstring).
SEAL = "dsmlib_run"
#: Parameters that say where a run writes or how it displays, not what it computes.
RUN_ONLY = ("results_dir", "live_widgets", SEAL)


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same directory and an atomic
    rename: a reader (or a killed writer) never sees a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _normal(params: dict[str, Any]) -> dict[str, Any]:
    """JSON-normalised parameters without the run-only ones (tuples become lists, ...)."""
    return json.loads(json.dumps({k: v for k, v in params.items() if k not in RUN_ONLY},
                                 sort_keys=True, default=_jsonable))


def same_parameters(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two parameter sets are equal once normalised (run-only names ignored), types
    included: ``256.0`` is not ``256`` and ``1`` is not ``True`` (as in the content key), so a
    run given such a value is never mistaken for the profile's own."""
    return (json.dumps(_normal(a), sort_keys=True) == json.dumps(_normal(b), sort_keys=True))


def parameters_hash(params: dict[str, Any]) -> str:
    """A short hash of a run's parameters (run-only names ignored): the custom results key."""
    text = json.dumps(_normal(params), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def custom_results_path(results_dir: str | Path, notebook: str, params: dict[str, Any]) -> Path:
    """``<results_dir>/custom/<notebook>-<hash>.json``: where a non-profile run writes."""
    return Path(results_dir) / "custom" / f"{notebook}-{parameters_hash(params)}.json"


def _literal(node: ast.expr, namespace: dict[str, Any], name: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return namespace.get(name)


def _assignments(src: str) -> list[tuple[str, ast.expr]]:
    """(name, value) of a cell's top-level ``name = value`` statements ([] if not Python)."""
    try:
        body = ast.parse(src).body
    except SyntaxError:
        return []
    return [(t.id, s.value) for s in body if isinstance(s, ast.Assign)
            for t in s.targets if isinstance(t, ast.Name)]


def _injected(src: str) -> bool:
    """Whether a cell is one papermill injected (its ``# Parameters`` comment)."""
    return src.lstrip().startswith("# Parameters")


def notebook_parameters(namespace: dict[str, Any], history: Sequence[str]) -> dict[str, Any]:
    """The parameter values a notebook kernel ran with, read from its executed cells.

    A parameters cell is one that assigns ``results_dir`` (every chapter's ``parameters``
    cell does) or one papermill injected (it starts with ``# Parameters``); later cells
    override earlier ones, as in the kernel. Values are the cells' literals (a notebook may
    rebind a parameter later, e.g. ``device``), else the namespace's."""
    out: dict[str, Any] = {}
    for src in history:
        names = _assignments(src)
        if _injected(src) or "results_dir" in {n for n, _ in names}:
            out.update({n: _literal(v, namespace, n) for n, v in names})
    return out


def injected_parameters(namespace: dict[str, Any], history: Sequence[str]) -> dict[str, Any]:
    """The values papermill injected over the notebook's parameters cell (its ``-p``), the
    runner's own (:data:`RUN_ONLY`) left out: what a hand re-run changed."""
    out: dict[str, Any] = {}
    for src in history:
        if _injected(src):
            out.update({n: _literal(v, namespace, n) for n, v in _assignments(src)})
    return {k: v for k, v in out.items() if k not in RUN_ONLY}


class UnknownParameter(ValueError):
    """A parameter papermill injected that the notebook's parameters cell does not declare."""

    def _render_traceback_(self) -> list[str]:
        # IPython prints this instead of a traceback: the error is one line in the notebook
        return [f"{type(self).__name__}: {self}"]


def check_parameters(history: Sequence[str] | None = None) -> None:
    """Inside a notebook kernel, refuse a parameter that papermill injected (``-p NAME``) but
    the notebook's parameters cell does not declare, in one line: papermill itself only warns,
    then runs the defaults. ``history``: the executed cells (default: the kernel's). Outside
    a kernel, or in a notebook without a parameters cell (one assigning ``results_dir``),
    nothing is checked."""
    if history is None:
        state = _kernel_state()
        if state is None:
            return
        history = state[1]
    declared: set[str] = set()
    injected: list[str] = []
    for src in history:
        names = [n for n, _ in _assignments(src)]
        if _injected(src):
            injected += names
        elif "results_dir" in names:
            declared |= set(names)
    unknown = sorted(set(injected) - declared - {SEAL})
    if declared and unknown:
        raise UnknownParameter(
            f"unknown parameter(s) {unknown}: this notebook's parameters are "
            f"{', '.join(sorted(declared - set(RUN_ONLY)))} (papermill -p NAME VALUE)")


def _kernel_state() -> tuple[dict[str, Any], list[str]] | None:
    """The IPython namespace and executed cells, or None outside a kernel."""
    ip = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    if ip is None:
        return None
    return ip.user_ns, list(ip.user_ns.get("In") or [])


def environment() -> dict[str, Any]:
    """Python, numpy and torch versions, and the CUDA device torch sees (if imported)."""
    env: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine()}
    for mod in ("numpy", "torch"):
        m = sys.modules.get(mod)
        env[mod] = getattr(m, "__version__", None) if m else None
    torch = sys.modules.get("torch")
    try:
        env["cuda"] = torch.cuda.get_device_name(0) if torch and torch.cuda.is_available() else None
    except Exception:           # a broken driver must not lose the results
        env["cuda"] = None
    return env


def _check(claims: Sequence[Claim]) -> None:
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"claim ids must be unique within a notebook, got {ids}")
    for c in claims:
        if c.source == "paper" and c.scope not in SCOPES:
            raise ValueError(f"claim {c.id!r} is the paper's: its scope must be one of {SCOPES}")
        if c.kind not in KINDS:
            raise ValueError(f"claim {c.id!r}: kind must be one of {KINDS}, got {c.kind!r}")
        if c.source == "paper" and c.verdict == "refuted" and not c.condition:
            raise ValueError(f"claim {c.id!r} is refuted: give the condition that would make "
                             "it hold")


def write_results(claims: Sequence[Claim], *, notebook: str, profile: str,
                  results_dir: str | Path = "results", extra: dict[str, Any] | None = None,
                  parameters: dict[str, Any] | None = None) -> Path:
    """Write the claims as ``{"notebook", "profile", "claims", "run"}`` (atomically) and
    return the path: see the module docstring for which path.

    Inside a notebook kernel the parameters are read from the executed cells; elsewhere
    (library code, tests) they are ``parameters`` and the file goes to
    ``<results_dir>/<profile>/<notebook>.json`` as before, with no content key."""
    _check(claims)
    state = _kernel_state()
    seal: dict[str, Any] = {}
    custom = False
    injected: dict[str, Any] | None = None
    if state is not None:
        namespace, history = state
        seal = namespace.get(SEAL) or {}
        injected = injected_parameters(namespace, history)
        parameters = notebook_parameters(namespace, history) if parameters is None else parameters
        sealed = (bool(seal) and Path(seal.get("stage", "")).parent.is_dir()
                  and seal.get("profile") == profile
                  and same_parameters(parameters, seal.get("parameters", {})))
        custom = not sealed
        if not sealed:
            seal = {}
    params = {k: v for k, v in (parameters or {}).items() if k not in RUN_ONLY}
    if custom:
        path = custom_results_path(results_dir, notebook, params)
    elif seal:
        path = Path(seal["stage"])
    else:
        path = Path(results_dir) / profile / f"{notebook}.json"
    doc: dict[str, Any] = {"notebook": notebook, "profile": profile,
                           "claims": [asdict(c) for c in claims]}
    if extra:
        doc["extra"] = extra
    doc["run"] = {"profile": profile, "parameters": params, "key": seal.get("key"),
                  "custom": custom or bool(seal.get("custom")), "hash": parameters_hash(params),
                  "environment": environment()}
    if injected is not None:
        doc["run"]["injected"] = injected
    atomic_write_text(path, json.dumps(doc, indent=2, default=_jsonable))
    if custom:
        changed = ", ".join(f"{k}={v!r}" for k, v in (injected or {}).items() if k != "profile")
        print(f"[dsmlib] These parameters (the {profile!r} profile's"
              f"{f', with {changed}' if changed else ''}) are not exactly those of a profile run "
              f"by `python -m dsmlib execute`, so the results were written to {path.resolve()} "
              f"(results/{profile}/ is left untouched).", flush=True)
    return path


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def load_results(results_dir: str | Path, profile: str) -> list[dict[str, Any]]:
    """All notebooks' result documents for a profile, sorted by notebook name."""
    root = Path(results_dir) / profile
    docs = []
    for p in sorted(root.glob("*.json")):
        doc = json.loads(p.read_text())
        for key in ("notebook", "profile", "claims"):
            if key not in doc:
                raise ValueError(f"{p} is not a results file: missing {key!r}")
        for c in doc["claims"]:
            if c.get("verdict") not in VERDICTS:
                raise ValueError(f"{p}: claim {c.get('id')!r} has verdict {c.get('verdict')!r}")
        docs.append(doc)
    return docs
