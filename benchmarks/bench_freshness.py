"""The content keys of a build: every committed reference checked for freshness under every
profile, which plans each chapter under each profile (its import closure, its source read).

Ours: each file parsed once per process (``dsmlib.book.execute.closure.module_imports`` and
``code_cells``, ``dsmlib.book.execute.runner.parsed_source`` remember a text's parse); the memo is
emptied once before each timing, as in a fresh process. Baseline, in the same run: the same
check with the memo emptied before every plan, which is the code before it remembered
anything (each plan parsed its notebook twice and every file of its closure). Imports are
done before either is timed. One JSON line: ``{"name", "ours_s", "baseline_s", "ratio"}``.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from dsmlib.book.execute import closure
from dsmlib.book.execute import runner
from dsmlib.book.profiles import PROFILES, load_specs, parameters_class
from dsmlib.book.references import freshness

ROOT = Path(__file__).resolve().parents[1]


def forget() -> None:
    closure.module_imports.cache_clear()
    closure.code_cells.cache_clear()
    runner.parsed_source.cache_clear()


def check_all(specs) -> float:
    """Seconds to check every reference's freshness under every profile, memo emptied first."""
    forget()
    t = time.perf_counter()
    for profile in PROFILES:
        freshness.current_references(ROOT, profile, specs)
    return time.perf_counter() - t


def main() -> None:
    specs = load_specs(ROOT / "notebooks")
    for spec in specs.values():        # imports first: neither side is timed with them
        parameters_class(spec)
    check_all(specs)
    ours = min(check_all(specs) for _ in range(3))
    plan = freshness.plan

    def unremembered(*args, **kwargs):
        forget()
        return plan(*args, **kwargs)
    freshness.plan = unremembered
    try:
        baseline = min(check_all(specs) for _ in range(3))
    finally:
        freshness.plan = plan
    print(json.dumps({"name": "reference_freshness_all_profiles", "ours_s": round(ours, 3),
                      "baseline_s": round(baseline, 3), "ratio": round(baseline / ours, 2)}))


if __name__ == "__main__":
    main()
