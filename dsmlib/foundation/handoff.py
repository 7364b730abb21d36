"""How a chapter's notebook hands its claims to the book (foundation; it runs in the kernel).

A notebook hands its claims over in one line, with the parameters it ran with (the chapter's
``Parameters`` object, never its code or cells)::

    from dsmlib.foundation.handoff import write_results
    write_results(claims, P, profile=profile, extra={...})

This module is the whole of what a page needs for that, and it lies below the chapters, so that
no page imports the book (the book's side, reading results back, is
:mod:`dsmlib.book.execute.results`). The book and the page meet in the kernel's namespace, under
two names that the book puts there and this module reads:

- :data:`SEAL` (``dsmlib_run``): the runner's seal, a hidden parameter that ``python -m dsmlib
  execute`` injects (the profile, every parameter value, the content key and a staging file).
  A run with exactly the sealed values writes to the staging file, and the runner moves it to
  ``results/<profile>/<notebook>.json`` only when the whole notebook succeeded.
- :data:`HAND_RUN` (``dsmlib_hand_run``): the record of a *hand run*, which the book puts there
  where it knows one: the cell under an executed chapter's title when a person re-runs it with
  papermill or in Jupyter (:func:`dsmlib.book.execute.rerun.announce_rerun`), and the first cell
  of a chapter that ``python -m dsmlib lab`` opens. It says where the run's results go (the
  book's ``results/custom/<notebook>-<hash>.json``) and which values differ from the profile's
  (``changed``), which only the book can say (its ``notebooks/profiles.yml``).

A run with neither (a notebook run straight from its source, library code, a record of other
values) writes to ``results/custom/<notebook>-<hash>.json`` of :func:`hand_run_root` (the book
around the working directory, else the one this ``dsmlib`` belongs to, else the working
directory), with ``changed`` None: what differs from the profile cannot be said here. Every
run outside the runner prints where its results went, on the notebook's output and on the
terminal that started its kernel.

Every file records ``run``: the profile, every parameter value, the content key (``None``
outside the runner), whether the run was custom, the values that differ from the profile's
(a run outside the runner) and the environment (Python, numpy, torch, the CUDA device if any),
so that the book's ledger can refuse results that do not match its chapters.
"""
from __future__ import annotations

import hashlib
import json
import platform
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from .claims import KINDS, SCOPES, Claim
from .files import atomic_write_text
from .parameters import ChapterParameters

__all__ = ["SEAL", "HAND_RUN", "find_root", "hand_run_root", "run_values", "same_parameters",
           "parameters_hash", "custom_results_path", "environment", "check_claims",
           "write_results"]

#: The hidden parameter through which the runner seals a run (see the module docstring).
SEAL = "dsmlib_run"
#: The kernel name under which the book records a hand run (see the module docstring).
HAND_RUN = "dsmlib_hand_run"


def find_root(start: str | Path | None = None) -> Path:
    """The book root: the nearest directory (upwards) holding ``_config.yml`` and ``notebooks/``."""
    here = Path(start or Path.cwd()).resolve()
    for d in [here, *here.parents]:
        if (d / "_config.yml").exists() and (d / "notebooks").is_dir():
            return d
    raise ValueError(f"no book root (a directory with _config.yml and notebooks/) above {here}")


def hand_run_root() -> Path:
    """The book a run outside the runner (papermill by hand, Jupyter) belongs to: the one
    around the working directory, else the one this ``dsmlib`` is installed from, else (a
    ``dsmlib`` installed elsewhere, run outside any book) the working directory."""
    package = Path(sys.modules[__name__.partition(".")[0]].__file__).resolve().parent
    for start in (Path.cwd(), package.parent):
        try:
            return find_root(start)
        except ValueError:
            continue
    return Path.cwd()


def run_values(parameters: ChapterParameters, profile: str) -> dict[str, Any]:
    """Every value a run computes with, as JSON holds it (lists for tuples): the profile,
    then each of the chapter's parameters in declaration order. What papermill injects, the
    content key covers, and the provenance and the results file record."""
    return json.loads(json.dumps({"profile": profile, **parameters.as_dict()},
                                 default=_jsonable))


def _normal(values: Mapping[str, Any]) -> dict[str, Any]:
    """JSON-normalised values (tuples become lists, ...)."""
    return json.loads(json.dumps(values, sort_keys=True, default=_jsonable))


def same_parameters(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two sets of values are equal once normalised, types included: ``256.0`` is not
    ``256`` and ``1`` is not ``True`` (as in the content key), so a run given such a value is
    never mistaken for the profile's own."""
    return json.dumps(_normal(a), sort_keys=True) == json.dumps(_normal(b), sort_keys=True)


def parameters_hash(values: Mapping[str, Any]) -> str:
    """A short hash of a run's values: the custom results key."""
    text = json.dumps(_normal(values), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def custom_results_path(root: str | Path, notebook: str, values: Mapping[str, Any]) -> Path:
    """``<root>/results/custom/<notebook>-<hash>.json``: where a run that is not exactly a
    profile's writes."""
    return Path(root) / "results" / "custom" / f"{notebook}-{parameters_hash(values)}.json"


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


def check_claims(claims: Sequence[Claim]) -> None:
    """A notebook's claims as the book takes them: unique ids, a kind from :data:`KINDS`, a
    scope from :data:`SCOPES` on every claim of the paper and a condition on every refutation
    of one; else a ``ValueError`` naming the claim."""
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


def _kernel_value(name: str) -> dict[str, Any]:
    """The dict the book put under ``name`` in this notebook kernel's namespace ({} outside a
    kernel, or where the book put none)."""
    ip = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    value = ip.user_ns.get(name) if ip is not None else None
    return dict(value) if isinstance(value, Mapping) else {}


def write_results(claims: Sequence[Claim], parameters: ChapterParameters, *, profile: str,
                  extra: dict[str, Any] | None = None, seal: Mapping[str, Any] | None = None,
                  hand_run: Mapping[str, Any] | None = None,
                  root: str | Path | None = None) -> Path:
    """Write the claims of ``parameters``' chapter as ``{"notebook", "profile", "claims",
    "run"}`` (atomically, after :func:`check_claims`) and return the path:

    - the runner's staging file when ``seal`` (default: :data:`SEAL` in this kernel's
      namespace) is the runner's for exactly these values and this profile;
    - else, when ``hand_run`` (default: :data:`HAND_RUN` in this kernel's namespace) records
      this notebook, profile and values, the path it names, recording its ``changed``;
    - else ``<root>/results/custom/<notebook>-<hash>.json`` (``root``: default
      :func:`hand_run_root`), with ``changed`` None.

    A run outside the runner says where its results went in one printed line."""
    check_claims(claims)
    notebook = parameters.notebook
    values = run_values(parameters, profile)
    seal = _kernel_value(SEAL) if seal is None else dict(seal)
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
        record = _kernel_value(HAND_RUN) if hand_run is None else dict(hand_run)
        recorded = (bool(record.get("results")) and record.get("notebook") == notebook
                    and record.get("profile") == profile
                    and same_parameters(values, record.get("parameters", {})))
        if recorded:
            path, changed = Path(record["results"]), record.get("changed")
        else:
            root = Path(root) if root is not None else hand_run_root()
            path, changed = custom_results_path(root, notebook, values), None
        doc["run"]["changed"] = changed
    atomic_write_text(path, json.dumps(doc, indent=2, default=_jsonable))
    if not sealed:
        _say_where(path, profile, doc["run"]["changed"])
    return path


def _say_where(path: Path, profile: str, changed: dict[str, Any] | None) -> None:
    """The one line a run outside the runner prints about its results, on the notebook's
    output and on the terminal (:func:`_tell_terminal`)."""
    what = (f"the {profile!r} profile's, with "
            + ", ".join(f"{k}={v!r}" for k, v in changed.items()) if changed
            else f"exactly the {profile!r} profile's" if changed is not None
            else f"under the {profile!r} profile")
    line = (f"[dsmlib] Hand run ({what}, not run by `python -m dsmlib execute`): the "
            f"results were written to {path.resolve()} (results/{profile}/ is left "
            "untouched).")
    print(line, flush=True)
    _tell_terminal(line)


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
