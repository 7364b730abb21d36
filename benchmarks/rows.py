"""A benchmark's rows out: one JSON line each on stdout, and appended to a file of the
repository (``benchmarks/cpu_runs/<date>_<name>.jsonl``) when one is named, so that the rows a
run prints are the rows it commits."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parents[1]


def write_rows(rows: Iterable[dict], out: str | None) -> None:
    """Print each of ``rows`` as one JSON line and, when ``out`` is given, append them to
    ``ROOT / out``."""
    rows = list(rows)
    for r in rows:
        print(json.dumps(r), flush=True)
    if out:
        with open(ROOT / out, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
