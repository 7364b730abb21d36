"""Run every benchmark (benchmarks/bench_*.py); each prints JSON lines
{"name", "ours_s", "baseline_s", "ratio"}. Extra arguments are passed to every script."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    status = 0
    for script in sorted(here.glob("bench_*.py")):
        print(f"# {script.name}", file=sys.stderr, flush=True)
        proc = subprocess.run([sys.executable, str(script), *sys.argv[1:]])
        status = status or proc.returncode
    return status


if __name__ == "__main__":
    sys.exit(main())
