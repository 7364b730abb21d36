"""Results files (foundation): each notebook's claims in ``results/<profile>/<notebook>.json``,
checked on the way out (unique ids, a scope on every claim of the paper, a condition on every
refutation) and on the way in (known verdicts)."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from .claims import SCOPES, VERDICTS, Claim

__all__ = ["write_results", "load_results"]


def write_results(claims: Sequence[Claim], *, notebook: str, profile: str,
                  results_dir: str | Path = "results", extra: dict[str, Any] | None = None) -> Path:
    """Write ``results/<profile>/<notebook>.json`` as ``{"notebook", "profile", "claims"}``."""
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"claim ids must be unique within a notebook, got {ids}")
    for c in claims:
        if c.source == "paper" and c.scope not in SCOPES:
            raise ValueError(f"claim {c.id!r} is the paper's: its scope must be one of {SCOPES}")
        if c.source == "paper" and c.verdict == "refuted" and not c.condition:
            raise ValueError(f"claim {c.id!r} is refuted: give the condition that would make "
                             "it hold")
    path = Path(results_dir) / profile / f"{notebook}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"notebook": notebook, "profile": profile, "claims": [asdict(c) for c in claims]}
    if extra:
        doc["extra"] = extra
    path.write_text(json.dumps(doc, indent=2, default=_jsonable))
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
