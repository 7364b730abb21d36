"""Run every benchmark (benchmarks/bench_*.py); each prints JSON lines
{"name", "ours_s", "baseline_s", "ratio"}.

``--load`` measures fairness under load: every benchmark runs twice, idle and beside a second
process that keeps two threads busy, and one JSON line per measurement compares the two,
``{"name": "<name>@load", "ours_s": loaded, "baseline_s": idle, "ratio": idle / loaded,
"slowdown": loaded / idle, "fair": slowdown <= 3}``. The goal (issue 15): every ``ours_s`` is
at most 3x its idle value, i.e. a chapter costs at most its fair share of a busy machine.

Usage: ``python benchmarks/run.py [--load] [--only sde,ols] [script args]`` (or ``make bench
ARGS=--load``); arguments this runner does not know go to every script.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

FAIR_SLOWDOWN = 3.0
#: A process with two threads that hash 1 MiB buffers forever (hashlib releases the GIL).
BUSY = ("import hashlib, threading\n"
        "buf = bytes(1 << 20)\n"
        "def spin():\n"
        "    while True:\n"
        "        hashlib.sha256(buf).digest()\n"
        "ts = [threading.Thread(target=spin, daemon=True) for _ in range(2)]\n"
        "[t.start() for t in ts]\n"
        "[t.join() for t in ts]\n")


def run_script(script: Path, extra: list[str]) -> tuple[int, dict[str, float]]:
    """Run one benchmark, echo its output, and return its status and ``{name: ours_s}``."""
    proc = subprocess.run([sys.executable, str(script), *extra], stdout=subprocess.PIPE,
                          text=True)
    timings = {}
    for line in proc.stdout.splitlines():
        print(line, flush=True)
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        # rows without a time (a page's bytes, a path that failed) are reported, not compared
        if isinstance(doc, dict) and "name" in doc and doc.get("ours_s") is not None:
            timings[doc["name"]] = float(doc["ours_s"])
    return proc.returncode, timings


def under_load(script: Path, extra: list[str]) -> tuple[int, dict[str, float]]:
    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        return run_script(script, extra)
    finally:
        busy.kill()
        busy.wait()


def load_report(name: str, idle: float, loaded: float) -> dict:
    slowdown = loaded / idle if idle > 0 else float("inf")
    return {"name": f"{name}@load", "ours_s": loaded, "baseline_s": idle,
            "ratio": idle / loaded if loaded > 0 else float("inf"), "slowdown": slowdown,
            "fair": slowdown <= FAIR_SLOWDOWN}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--load", action="store_true",
                    help="run each benchmark idle and beside a busy 2-thread process")
    ap.add_argument("--only", default="", help="comma-separated benchmark names, e.g. sde,ols")
    args, unknown = ap.parse_known_args(argv[:argv.index("--")] if "--" in argv else argv)
    extra = unknown + extra
    here = Path(__file__).resolve().parent
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    scripts = [s for s in sorted(here.glob("bench_*.py"))
               if not only or s.stem.removeprefix("bench_") in only]
    if only and len(scripts) != len(only):
        valid = [s.stem.removeprefix("bench_") for s in here.glob("bench_*.py")]
        raise SystemExit(f"--only: unknown benchmark(s); valid: {', '.join(sorted(valid))}")
    status, unfair = 0, []
    for script in scripts:
        print(f"# {script.name}" + (" (idle)" if args.load else ""), file=sys.stderr, flush=True)
        rc, idle = run_script(script, extra)
        status = status or rc
        if not args.load:
            continue
        print(f"# {script.name} (beside a busy 2-thread process)", file=sys.stderr, flush=True)
        rc, loaded = under_load(script, extra)
        status = status or rc
        for name in idle.keys() & loaded.keys():
            report = load_report(name, idle[name], loaded[name])
            print(json.dumps(report), flush=True)
            if not report["fair"]:
                unfair.append(f"{name} ({report['slowdown']:.1f}x)")
    if unfair:
        print(f"# slower than {FAIR_SLOWDOWN:g}x under load: {', '.join(unfair)}",
              file=sys.stderr, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
