"""Mutation testing of the modules listed in mutation/targets.cfg, with mutmut 3.

Each module is mutated in its own scratch copy of the working tree (_build/mutants/<module>/,
where mutmut wants its setup.cfg and its mutants/ folder), against only the tests listed for
it. Per module, a JSON line {"module", "mutants", "killed", "survived", "other", "kill_rate"}
is printed and the survivors' diffs are written to _build/mutants/<module>/survivors.diff.
Mutants in code that no listed test reaches count as survivors.

    python mutation/run.py [--only NAME[,NAME...]] [--targets FILE] [--max-children N]

A developer's tool, far too slow for CI: `make mutants` runs it.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTMUT = [sys.executable, "-c", "from mutmut.__main__ import cli; cli()"]


def read_targets(path: Path) -> list[tuple[str, list[str]]]:
    rows = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            module, *tests = line.split()
            rows.append((module, tests))
    return rows


def scratch_copy(dest: Path) -> None:
    """The tracked and untracked-but-not-ignored files of the working tree."""
    if dest.exists():
        shutil.rmtree(dest)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)


def run_module(module: str, tests: list[str], work: Path, max_children: int) -> dict:
    tests = [t for t in tests if (ROOT / t).exists()]
    scratch_copy(work)
    (work / "setup.cfg").write_text(
        "[mutmut]\nsource_paths=dsmlib\nonly_mutate=" + module + "\n"
        + "pytest_add_cli_args_test_selection=\n    " + "\n    ".join(tests) + "\n"
        + "pytest_add_cli_args=\n    -p\n    no:cacheprovider\n")
    log = work / "mutmut.log"
    with log.open("w") as fh:
        subprocess.run(MUTMUT + ["run", "--max-children", str(max_children)], cwd=work,
                       stdout=fh, stderr=subprocess.STDOUT, check=False)
    out = subprocess.run(MUTMUT + ["results", "--all", "true"], cwd=work, capture_output=True,
                         text=True).stdout
    status = dict(line.strip().rsplit(": ", 1) for line in out.splitlines() if ": " in line)
    # a mutant no selected test reaches ("no tests") is as alive as one that survives them
    survived = sorted(k for k, v in status.items() if v in ("survived", "no tests"))
    show = ("import sys\nfrom mutmut.__main__ import find_mutant, get_diff_for_mutant\n"
            "for k in sys.argv[1:]:\n"
            "    print('# ' + k); print(get_diff_for_mutant(k, path=find_mutant(k).path))\n")
    with (work / "survivors.diff").open("w") as fh:   # one process: `mutmut show` is slow
        subprocess.run([sys.executable, "-c", show, *survived], cwd=work, stdout=fh,
                       stderr=subprocess.DEVNULL, check=False)
    killed = sum(v in ("killed", "timeout") for v in status.values())
    tested = killed + len(survived)
    return {"module": module, "mutants": len(status), "killed": killed,
            "survived": len(survived), "other": len(status) - tested,
            "kill_rate": round(killed / tested, 4) if tested else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated substrings of module paths")
    ap.add_argument("--targets", default=str(ROOT / "mutation" / "targets.cfg"))
    ap.add_argument("--max-children", type=int, default=2)
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    for module, tests in read_targets(Path(args.targets)):
        if only and not any(s in module for s in only):
            continue
        work = ROOT / "_build" / "mutants" / Path(module).stem
        print(json.dumps(run_module(module, tests, work, args.max_children)), flush=True)


if __name__ == "__main__":
    main()
