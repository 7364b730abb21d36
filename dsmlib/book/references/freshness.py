"""Fresh or stale (book layer): a committed reference is *fresh* when its content key is the one
the current code and profile give (:func:`dsmlib.book.provenance.code_key`, through the
runner's :func:`dsmlib.book.runner.plan`), else *stale*; a stale one says why, in a reader's
words: what changed since the commit it was executed at, among the things its content key
covers (the notebook, its parameters and the ``dsmlib`` code its kernel imports), and whether
that is code the run went through to compute its numbers or only code that draws them."""
from __future__ import annotations

import html
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ..provenance import kernel_code
from ..results import same_parameters
from ..runner import plan
from .stored import Reference, load_references

__all__ = ["current_references", "changed_files", "stale_reason"]


def current_references(root: Path, profile: str, specs: dict) -> list[Reference]:
    """The committed references of the book's chapters (other than ``profile``'s), each
    checked against its notebook and marked fresh or stale against the current code; a stale
    one says what changed since (:func:`stale_reason`)."""
    plans: dict[tuple[str, str], Any] = {}

    def planned(prof: str, name: str) -> Any:
        if (prof, name) not in plans:
            plans[prof, name] = plan(root, specs[name], prof, {})
        return plans[prof, name]
    refs = load_references(root, specs, lambda prof, name: planned(prof, name).key,
                           exclude=profile)
    return [r if r.fresh else replace(r, reason=stale_reason(
        root, r.commit, kernel_code(specs[r.name].source), specs[r.name].source,
        r.provenance.get("parameters") or {}, planned(r.profile, r.name).values))
        for r in refs]


#: Shown by name at most; the rest are counted.
SHOWN = 8


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


def changed_files(root: Path, commit: str, paths: Sequence[Path]) -> list[str] | None:
    """Which of ``paths`` differ between ``commit`` and the working tree (root-relative, sorted);
    None when git or that commit is not available here."""
    rel = sorted({p.resolve().relative_to(root.resolve()).as_posix() for p in paths
                  if p.resolve().is_relative_to(root.resolve())})
    try:
        if _git(root, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
            return None
        proc = _git(root, "diff", "--name-only", commit, "--", *rel)
    except OSError:
        return None
    return sorted(proc.stdout.split()) if proc.returncode == 0 else None


def _names(files: Sequence[str]) -> str:
    shown = ", ".join(f"<code>{html.escape(f)}</code>" for f in files[:SHOWN])
    return shown + (f" and {len(files) - SHOWN} more" if len(files) > SHOWN else "")


def stale_reason(root: Path, commit: str, code: Sequence[Path], source: Path,
                 ran_with: dict[str, Any], runs_with: dict[str, Any]) -> str:
    """One paragraph (HTML) on what changed since a reference ran at ``commit``: its notebook
    ``source``, its parameters (``ran_with`` against the current profile's ``runs_with``) and
    the ``code`` its kernel imports, split into code that computes (the run's path) and code
    that only draws (``dsmlib/figures/``)."""
    sha = commit.removesuffix("-dirty")
    dirty = (" It was executed with uncommitted changes (<code>-dirty</code>), so that commit "
             "alone does not reproduce it; references refuse a dirty tree unless forced."
             if commit.endswith("-dirty") else "")
    params = ("" if same_parameters(ran_with, runs_with) else
              " The profile's parameters have changed too.")
    files = changed_files(root, sha, [*code, source])
    if files is None:
        return (f"What changed since commit <code>{html.escape(sha)}</code> cannot be listed "
                f"here (no git history with that commit).{params}{dirty}")
    src = source.resolve().relative_to(root.resolve()).as_posix() \
        if source.resolve().is_relative_to(root.resolve()) else ""
    drawing = [f for f in files if "/figures/" in f]
    computing = [f for f in files if f not in drawing and f != src]
    parts = []
    if computing:
        n = len(computing)
        parts.append(f"{n} file{'s' if n != 1 else ''} of the code the run went through to "
                     f"compute and record its numbers changed: {_names(computing)}")
    if drawing:
        n = len(drawing)
        parts.append(f"{n} file{'s' if n != 1 else ''} that only draw them changed: "
                     f"{_names(drawing)}")
    if src in files:
        parts.append("the notebook itself changed")
    if not parts:
        parts.append("none of the files its content key covers differ from that commit "
                     "(the key changed with the parameters, or with the uncommitted changes it "
                     "ran with)")
    only_drawing = drawing and not computing and src not in files and not params
    verdict = (" Only how the numbers are drawn changed, not how they are computed."
               if only_drawing else "")
    return (f"Since commit <code>{html.escape(sha)}</code>, " + "; ".join(parts) + "."
            + verdict + params + dirty)
