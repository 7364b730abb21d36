"""A command's start: ``python -m dsmlib list`` on the book, which resolves every chapter's
parameters under every profile.

Ours: each chapter's ``Parameters`` come from ``dsmlib.chapters.parameters.<name>``, which
imports none of what the chapter computes with, and scipy.stats is imported where first used.
Baseline, in the same run: the same command in a process that first imports every chapter
module, which is what resolving a chapter cost before its parameters were declared apart
(torch, numba, scipy.stats and the theory modules). Each side is a fresh process, timed by its
wall clock, best of five. One JSON line: ``{"name", "ours_s", "baseline_s", "ratio"}``.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsmlib.book.profiles import load_specs  # noqa: E402

LIST = ("import sys; from dsmlib.book.commands.cli import main; "
        "sys.exit(main(['--root', sys.argv[1], 'list']))")


def seconds(code: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(ROOT)], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    chapters = "; ".join(f"import {s.module}" for s in load_specs(ROOT / "notebooks").values())
    seconds(LIST)                      # a warm file cache for both sides
    ours = min(seconds(LIST) for _ in range(5))
    baseline = min(seconds(f"{chapters}; {LIST}") for _ in range(5))
    print(json.dumps({"name": "cli_start_list", "ours_s": round(ours, 3),
                      "baseline_s": round(baseline, 3), "ratio": round(baseline / ours, 2)}))


if __name__ == "__main__":
    main()
