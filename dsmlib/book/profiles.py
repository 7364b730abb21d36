"""Profiles: named sets of papermill parameters per notebook (``notebooks/profiles.yml``).

Each chapter declares its parameters once, in ``dsmlib.chapters.<name>.Parameters``, whose
defaults are the ``quick`` profile and which the runner writes into the notebook's parameters
cell (:mod:`dsmlib.book.declarations`); a profile adds overrides, and the user may override any
single parameter on top. Every name is checked against the notebook's parameters cell, so a typo
is an error that lists the valid names, and every value
against the type of its default (:func:`check_type`), so ``-p depth 7.5`` or ``-p seeds 3`` is a
one-line error before any kernel starts; each chapter's ``Parameters`` checks the ranges, also
before any kernel starts.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ast
import re

import yaml

# gpu: minutes on one GPU without downloads (chapters without a GPU setting run as quick).
PROFILES = ("smoke", "quick", "paper", "gpu")
DEFAULT_PROFILE = "quick"
# Parameters every notebook declares and the runner always sets.
RUNNER_PARAMETERS = ("profile", "results_dir", "live_widgets")


@dataclass(frozen=True)
class NotebookSpec:
    """One chapter: its source, title, per-profile parameters, and whether it needs a GPU
    (``gpu: true``: never executed two at once; ``gpu_notice`` opens its page)."""
    name: str
    title: str
    source: Path
    profiles: dict[str, dict[str, Any]]
    gpu: bool = False
    gpu_notice: str = ""


def load_specs(notebooks_dir: str | Path) -> dict[str, NotebookSpec]:
    """Read ``profiles.yml``; the order of the file is the order of the book."""
    notebooks_dir = Path(notebooks_dir)
    path = notebooks_dir / "profiles.yml"
    doc = yaml.safe_load(path.read_text())
    specs: dict[str, NotebookSpec] = {}
    for name, entry in (doc.get("notebooks") or {}).items():
        source = notebooks_dir / f"{name}.md"
        if not source.exists():
            raise ValueError(f"{path}: notebook {name!r} has no source file {source}")
        profiles = entry.get("profiles") or {}
        unknown = set(profiles) - set(PROFILES)
        if unknown:
            raise ValueError(f"{path}: notebook {name!r} has unknown profiles {sorted(unknown)}; "
                             f"allowed: {list(PROFILES)}")
        specs[name] = NotebookSpec(name=name, title=entry.get("title", name), source=source,
                                   profiles={p: dict(profiles.get(p) or {}) for p in PROFILES},
                                   gpu=bool(entry.get("gpu", False)),
                                   gpu_notice=str(entry.get("gpu_notice", "")))
    return specs


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid profiles: {', '.join(PROFILES)}")
    return profile


def select(specs: dict[str, NotebookSpec], names: list[str] | None) -> list[NotebookSpec]:
    """The notebooks to run: all of them in book order, or the named ones."""
    if not names or names == ["all"]:
        return list(specs.values())
    bad = [n for n in names if n not in specs]
    if bad:
        raise ValueError(f"unknown notebook(s) {bad}; valid notebooks: {', '.join(specs)} (or 'all')")
    return [specs[n] for n in names]


_EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _numbers(v: Any) -> Any:
    """YAML 1.1 reads ``1e-3`` (no dot) as a string: such strings become floats."""
    if isinstance(v, list):
        return [_numbers(x) for x in v]
    return float(v) if isinstance(v, str) and _EXPONENT.fullmatch(v) else v


def parse_value(text: str, name: str = "") -> Any:
    """Parse a command-line parameter value as YAML (numbers, booleans, lists; ``1e-3``
    is a number)."""
    try:
        return _numbers(yaml.safe_load(text))
    except yaml.YAMLError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        what = f"parameter {name!r}: " if name else ""
        raise ValueError(f"{what}cannot parse the value {text!r} as YAML ({first}); write "
                         "numbers as 0.1, lists as [1, 2], strings as they are") from None


def default_value(text: Any) -> Any:
    """A parameters-cell default (papermill gives its source text) as a Python value."""
    try:
        return ast.literal_eval(text) if isinstance(text, str) else text
    except (ValueError, SyntaxError):
        return text


def _scalar(v: Any) -> str | None:
    """The type class a scalar default admits: bool, int, float (ints too) or str."""
    for kind in (bool, int, float, str):
        if isinstance(v, kind):
            return kind.__name__
    return None


_WORDS = {"bool": ("true or false", "booleans"), "int": ("an integer", "integers"),
          "float": ("a number", "numbers"), "str": ("a string", "strings")}


def _fits(kind: str, v: Any) -> bool:
    if kind == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    return _scalar(v) == kind


def check_type(notebook: str, name: str, value: Any, default: Any) -> None:
    """``value`` must have the type of the parameters cell's ``default``: an integer where the
    default is one, a number (an integer too) where it is a float, a list where it is a list
    (of its element type; a default mixing floats and integers, such as ``(eta, sigma2, B)``,
    fixes the length and each position's type). A default of None admits anything."""
    if default is None:
        return
    if isinstance(default, (list, tuple)):
        kinds = [_scalar(d) for d in default]
        positional = len(set(kinds)) > 1
        if isinstance(value, (list, tuple)) and not positional:
            ok = not default or kinds[0] is None or all(_fits(kinds[0], v) for v in value)
        else:
            ok = (isinstance(value, (list, tuple)) and len(value) == len(default)
                  and all(k is None or _fits(k, v) for k, v in zip(kinds, value)))
        what = ("a list" + (f" of {_WORDS[kinds[0]][1]}" if kinds and kinds[0] else "")
                if not positional else f"a list of {len(default)} values typed like the default")
    else:
        kind = _scalar(default)
        ok = kind is None or _fits(kind, value)
        what = _WORDS[kind][0] if kind else "a value like the default"
    if not ok:
        raise ValueError(f"parameter {name!r} of {notebook} must be {what} (default: "
                         f"{default!r}), got {value!r}")


def resolve(spec: NotebookSpec, profile: str, overrides: dict[str, Any],
            declared: dict[str, Any]) -> dict[str, Any]:
    """Profile parameters plus overrides, each name checked against the parameters cell.

    ``declared`` maps the names in the notebook's parameters cell to their defaults (papermill
    gives their source text); every value must have its default's type (:func:`check_type`).
    """
    check_profile(profile)
    params = dict(spec.profiles[profile])
    params.update(overrides)
    bad = [k for k in params if k not in declared]
    if bad:
        valid = sorted(k for k in declared if k not in RUNNER_PARAMETERS)
        raise ValueError(f"unknown parameter(s) {bad} for notebook {spec.name!r}; valid "
                         f"parameters: {', '.join(valid)}")
    missing = [k for k in RUNNER_PARAMETERS if k not in declared]
    if missing:
        raise ValueError(f"notebook {spec.name!r} must declare {missing} in its parameters cell")
    for k, v in params.items():
        check_type(spec.name, k, v, default_value(declared[k]))
    return params
