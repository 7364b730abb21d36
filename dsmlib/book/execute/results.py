"""Results files (book layer): each notebook's claims, checked on the way out (unique ids, a
scope on every claim of the paper, a condition on every refutation) and on the way in (known
verdicts), and stamped with the run that produced them.

A notebook hands its claims over in one line, with the parameters it ran with (the chapter's
``Parameters`` object, never its code or cells)::

    write_results(claims, P, profile=profile, extra={...})

Where they go depends on who ran the notebook:

- ``results/<profile>/<notebook>.json`` only when the book's runner (``python -m dsmlib
  execute``) ran it with exactly the profile's parameters. The runner passes a *seal*, the
  hidden parameter ``dsmlib_run`` (the profile, every parameter value, the content key and a
  staging file); the results go to the staging file and the runner moves them into place
  only when the whole notebook succeeded.
- ``results/custom/<notebook>-<hash>.json`` of the book (:func:`dsmlib.book.profiles.hand_run_root`)
  for every other run: papermill by hand, a notebook run in Jupyter or ``lab``, ``execute``
  with ``-p`` overrides. The hash is that of the values (:func:`parameters_hash`), and the
  notebook prints where its results went.

Every file records ``run``: the profile, every parameter value, the content key (``None``
outside the runner), whether the run was custom, the values that differ from the profile's
(a run outside the runner), and the environment (Python, numpy, torch, the CUDA device if any),
so that a ledger can refuse results that do not match its chapters.
"""
from __future__ import annotations

import hashlib
import json
import platform
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from ...foundation.claims import KINDS, SCOPES, VERDICTS, Claim
from ...foundation.files import atomic_write_text
from ...foundation.parameters import ChapterParameters
from ..profiles import hand_run_root, load_specs, resolve

__all__ = ["SEAL", "run_values", "write_results", "load_results", "parameters_hash",
           "same_parameters", "custom_results_path", "changed_values", "environment"]

#: The hidden parameter through which the runner seals a run (see the module docstring).
SEAL = "dsmlib_run"


def run_values(parameters: ChapterParameters, profile: str) -> dict[str, Any]:
    """Every value a run computes with, as JSON holds it (lists for tuples): the profile,
    then each of the chapter's parameters in declaration order. What papermill injects, the
    content key covers, and the provenance and the results file record."""
    return json.loads(json.dumps({"profile": profile, **parameters.as_dict()},
                                 default=_jsonable))


def _normal(values: dict[str, Any]) -> dict[str, Any]:
    """JSON-normalised values (tuples become lists, ...)."""
    return json.loads(json.dumps(values, sort_keys=True, default=_jsonable))


def same_parameters(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two sets of values are equal once normalised, types included: ``256.0`` is not
    ``256`` and ``1`` is not ``True`` (as in the content key), so a run given such a value is
    never mistaken for the profile's own."""
    return json.dumps(_normal(a), sort_keys=True) == json.dumps(_normal(b), sort_keys=True)


def parameters_hash(values: dict[str, Any]) -> str:
    """A short hash of a run's values: the custom results key."""
    text = json.dumps(_normal(values), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def custom_results_path(root: str | Path, notebook: str, values: dict[str, Any]) -> Path:
    """``<root>/results/custom/<notebook>-<hash>.json``: where a run that is not exactly a
    profile's writes."""
    return Path(root) / "results" / "custom" / f"{notebook}-{parameters_hash(values)}.json"


def changed_values(root: Path, parameters: ChapterParameters, profile: str
                   ) -> dict[str, Any] | None:
    """The values of ``parameters`` that differ from what the book's ``profile`` gives their
    chapter (:func:`dsmlib.book.profiles.resolve`): what a hand run changed. None where the
    book at ``root`` cannot say (no such chapter or profile there)."""
    try:
        spec = load_specs(Path(root) / "notebooks").get(parameters.notebook)
        base = resolve(spec, profile) if spec is not None else None
    except (OSError, ValueError):
        return None
    if base is None:
        return None
    mine, theirs = parameters.as_dict(), base.as_dict()
    return {k: v for k, v in mine.items() if not same_parameters({k: v}, {k: theirs[k]})}


def _kernel_seal() -> dict[str, Any]:
    """The runner's seal in this notebook kernel's namespace ({} outside a kernel or a
    runner's run)."""
    ip = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return dict((ip.user_ns.get(SEAL) if ip is not None else None) or {})


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


def write_results(claims: Sequence[Claim], parameters: ChapterParameters, *, profile: str,
                  extra: dict[str, Any] | None = None, seal: dict[str, Any] | None = None,
                  root: str | Path | None = None) -> Path:
    """Write the claims of ``parameters``' chapter as ``{"notebook", "profile", "claims",
    "run"}`` (atomically) and return the path: the runner's staging file when ``seal`` (default:
    the one in this kernel's namespace) is the runner's for exactly these values, else
    ``<root>/results/custom/<notebook>-<hash>.json`` (``root``: default
    :func:`dsmlib.book.profiles.hand_run_root`), saying so in one printed line."""
    _check(claims)
    notebook = parameters.notebook
    values = run_values(parameters, profile)
    seal = _kernel_seal() if seal is None else seal
    sealed = (bool(seal) and Path(seal.get("stage", "")).parent.is_dir()
              and seal.get("profile") == profile
              and same_parameters(values, seal.get("parameters", {})))
    doc: dict[str, Any] = {"notebook": notebook, "profile": profile,
                           "claims": [asdict(c) for c in claims]}
    if extra:
        doc["extra"] = extra
    doc["run"] = {"profile": profile, "parameters": values,
                  "key": seal.get("key") if sealed else None,
                  "custom": bool(seal.get("custom")) if sealed else True,
                  "hash": parameters_hash(values), "environment": environment()}
    if sealed:
        path = Path(seal["stage"])
    else:
        root = Path(root) if root is not None else hand_run_root()
        path = custom_results_path(root, notebook, values)
        doc["run"]["changed"] = changed_values(root, parameters, profile)
    atomic_write_text(path, json.dumps(doc, indent=2, default=_jsonable))
    if not sealed:
        changed = doc["run"]["changed"]
        what = (f"the {profile!r} profile's, with "
                + ", ".join(f"{k}={v!r}" for k, v in changed.items()) if changed
                else f"exactly the {profile!r} profile's" if changed is not None
                else f"under the {profile!r} profile")
        line = (f"[dsmlib] Hand run ({what}, not run by `python -m dsmlib execute`): the "
                f"results were written to {path.resolve()} (results/{profile}/ is left "
                "untouched).")
        print(line, flush=True)
        _tell_terminal(line)
    return path


def _tell_terminal(line: str) -> None:
    """``line`` on the terminal too when this runs in a notebook kernel, whose printed output
    goes into the notebook only: plain papermill, run from outside the book, wrote into the
    book's ``results/custom/`` with nothing on its terminal (issue 53, item 7). A kernel's own
    stderr is the terminal of the papermill (or Jupyter) that started it."""
    if sys.__stderr__ is not None and sys.stdout is not sys.__stdout__:
        try:
            print(line, file=sys.__stderr__, flush=True)
        except (OSError, ValueError):      # a closed or detached stderr loses only the echo
            pass


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
