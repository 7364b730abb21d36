"""Fresh or stale (book layer): a committed reference is *fresh* when its content key (its
*analysis key*) is the one the current code and profile give (:func:`dsmlib.book.execute.provenance.code_key`,
through the runner's :func:`dsmlib.book.execute.runner.plan`, with the parameters a re-derivation ran
with, if it was one), else *stale*; a stale one says why, in a reader's words: what changed
since the commit it was executed at, among the things its content key covers (the notebook,
its parameters and the ``dsmlib`` code its kernel imports), and whether that is code the run
went through to compute its numbers or only code that draws them.

For a chapter that trains (Section 5), a stale reference also says what refreshes it
(:mod:`dsmlib.book.references.records`): when its committed run records cover every run the
profile now asks for (the *training key*), only the analysis changed and it is re-derived on
a CPU (``--rederive``); when some are missing (``RECIPE``, a ``RunConfig`` field or a run
parameter changed, or no records were committed), it needs a GPU run."""
from __future__ import annotations

import html
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ..execute.provenance import kernel_code
from ...foundation.handoff import same_parameters
from ..execute.runner import plan
from .records import (load_manifest, missing_records, profile_runs, rederive_command,
                      records_dir)
from .stored import Reference, load_references

__all__ = ["current_references", "judged", "changed_files", "stale_reason", "training_reason"]


def current_references(root: Path, profile: str, specs: dict) -> list[Reference]:
    """The committed references of the book's chapters (other than ``profile``'s), each
    checked against its notebook and marked fresh or stale against the current code; a stale
    one says what changed since and what refreshes it (:func:`judged`)."""
    plans: dict[tuple[str, str, str], Any] = {}

    def planned(prof: str, name: str, overrides: dict[str, Any]) -> Any:
        at = (prof, name, json.dumps(overrides, sort_keys=True))
        if at not in plans:
            plans[at] = plan(root, specs[name], prof, overrides)
        return plans[at]
    refs = load_references(root, specs, lambda prof, name, over: planned(prof, name, over).key,
                           exclude=profile)
    return [r if r.fresh else judged(root, r, specs[r.name],
                                     planned(r.profile, r.name, r.overrides).values)
            for r in refs]


def judged(root: Path, ref: Reference, spec, runs_with: dict[str, Any]) -> Reference:
    """The stale reference ``ref`` of chapter ``spec`` with why (:func:`stale_reason`, led,
    for a chapter that trains, by :func:`training_reason`), what refreshes it
    (``Reference.refresh``) and the command that does (``Reference.hint``); ``runs_with``:
    the values the current profile executes it with."""
    name, prof = html.escape(ref.name), html.escape(ref.profile)
    why = stale_reason(root, ref.commit, kernel_code(spec.source), spec.source,
                       ref.provenance.get("parameters") or {}, runs_with)
    configs = profile_runs(spec, ref.profile)
    if configs is None:
        return replace(ref, reason=why, refresh="execute",
                       hint=f"<code>python -m dsmlib reference {name} --profile {prof}</code> "
                            "where its hardware is")
    lead, refresh = training_reason(root, ref.profile, ref.name, configs, spec.source)
    hint = (f"<code>{html.escape(rederive_command(ref.name, ref.profile))}</code> on any "
            "machine (a CPU suffices: it reads the committed run records and trains nothing)"
            if refresh == "rederive" else
            f"<code>python -m dsmlib reference {name} --profile {prof}</code> where a GPU is "
            "(it trains the runs again and commits their records)")
    return replace(ref, reason=f"{lead} {why}", refresh=refresh, hint=hint)


def training_reason(root: Path, profile: str, name: str, configs: Sequence,
                    source: Path) -> tuple[str, str]:
    """(HTML sentence, "rederive" | "gpu"): whether the committed run records of chapter
    ``name`` under ``profile`` cover every run it asks for now (``configs``)."""
    where = html.escape(records_dir(root, profile).relative_to(root).as_posix())
    manifest = load_manifest(root, profile, name)
    if manifest is None:
        return ("<strong>No run records:</strong> no record of its training runs was committed "
                f"with this reference (<code>{where}/</code>), so it cannot be analysed again "
                "without training: it needs a GPU run.", "gpu")
    trained = manifest.get("trained") or {}
    sha = str(trained.get("commit", "unknown")).removesuffix("-dirty")
    missing = missing_records(root, profile, configs)
    if missing:
        n, m = len(dict.fromkeys(c.key() for c in configs)), len(missing)
        shown = ", ".join(f"<code>{html.escape(k)}</code>" for k in missing[:3])
        return (f"<strong>Training changed:</strong> {m} of the {n} runs the profile asks for "
                f"now have no record in <code>{where}/</code> (e.g. {shown}): <code>RECIPE</code>, "
                "a <code>RunConfig</code> field or a parameter that decides a run changed since "
                f"they were trained at commit <code>{html.escape(sha)}</code>. It needs a GPU "
                "run.", "gpu")
    models = [p for p in kernel_code(source) if p.parent.name == "models"]
    moved = changed_files(root, sha, models) or []
    note = (f" The models layer's {_names(moved)} changed since they were trained; "
            "<code>RECIPE</code> did not, which declares that training computes the same "
            "numbers (bump it when a change moves them)." if moved else "")
    return ("<strong>Only the analysis changed:</strong> the committed run records (trained at "
            f"commit <code>{html.escape(sha)}</code>) cover every run the profile asks for, so "
            "it can be re-derived on a CPU with "
            f"<code>{html.escape(rederive_command(name, profile))}</code>.{note}", "rederive")


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
