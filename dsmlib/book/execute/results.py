"""Results files, the book's side (book layer; it runs outside the kernel): the results a
chapter's notebook wrote read back, and what a hand run changed.

A notebook writes its claims with :func:`dsmlib.foundation.handoff.write_results`, below the
chapters, so that no page imports the book: ``results/<profile>/<notebook>.json`` for the
runner's sealed run, ``results/custom/<notebook>-<hash>.json`` for every other (that module
says how the two meet in the kernel). Here the book reads them back (:func:`load_results`,
checking each verdict) and says which values of a hand run differ from its profile's
(:func:`changed_values`, from ``notebooks/profiles.yml``, which only the book reads).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...foundation.claims import VERDICTS
from ...foundation.handoff import same_parameters
from ...foundation.parameters import ChapterParameters
from ..profiles import load_specs, resolve

__all__ = ["load_results", "changed_values"]


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
