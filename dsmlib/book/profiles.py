"""Profiles: named sets of papermill parameters per notebook (``notebooks/profiles.yml``).

The parameters cell of each notebook holds the defaults (the ``quick`` profile); a profile adds
overrides, and the user may override any single parameter on top. Every name is checked against
the notebook's parameters cell, so a typo is an error that lists the valid names.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def parse_value(text: str) -> Any:
    """Parse a command-line parameter value as YAML (numbers, booleans, lists)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ValueError(f"cannot parse parameter value {text!r}: {err}") from None


def resolve(spec: NotebookSpec, profile: str, overrides: dict[str, Any],
            declared: dict[str, Any]) -> dict[str, Any]:
    """Profile parameters plus overrides, each name checked against the parameters cell.

    ``declared`` maps the names in the notebook's parameters cell to their defaults.
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
    return params
