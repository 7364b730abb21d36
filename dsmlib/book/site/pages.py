"""The generated pages of a profile's site (book layer): the ledger, the errata, the
introduction's summary and coverage statement, and the reproducibility table, from
``results/<profile>/`` checked against ``book/chapters/<profile>/`` (the files the site
serves beside them are :mod:`dsmlib.book.site.assets`)."""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Sequence

from ...figures.tables import data_table
from ...foundation.files import atomic_write_text
from .answer import parts
from .citation import citation_markdown, load_citation
from .downloads import claim_rows, claims_csv, claims_json, downloads_markdown
from .ledger import coverage_markdown, errata_markdown, ledger_markdown, summary_markdown
from ..execute.provenance import git_commit
from .profile_table import grid_runs_sentence, profiles_html
from ..profiles import PROFILE_USES, QUICK_GOAL_S, chapters_with_runs, load_specs, resolve
from ..execute.provenance_html import duration_text, provenance_table, training_text
from ..references.stored import Reference, references_by_chapter
from ..execute.results import load_results
from ..execute.store import executed_path, rerun_by_hand, results_mismatch, results_path, runner_metadata

__all__ = ["checked_results", "chapter_links", "write_generated_pages", "references_markdown",
           "cost_markdown", "profile_list_markdown"]


def checked_results(root: Path, profile: str, specs: dict) -> list[dict[str, Any]]:
    """``results/<profile>/*.json`` for the book's notebooks, each checked against its
    executed chapter (``book/chapters/<profile>/``): same profile, parameters and content key.
    Anything else is a ValueError naming the file and the command that fixes it."""
    docs = {d["notebook"]: d for d in load_results(root / "results", profile)}
    for name in specs:
        nb = executed_path(root, profile, name)
        fix = f"run `python -m dsmlib execute {name} --profile {profile} --force`"
        if not nb.exists():
            raise ValueError(f"{nb.relative_to(root)} is missing: run `python -m dsmlib "
                             f"execute --profile {profile}` first")
        whole = json.loads(nb.read_text()).get("metadata", {})
        if rerun_by_hand(whole):
            raise ValueError(f"{nb.relative_to(root)} was re-executed by hand (plain papermill), "
                             f"not by the book's runner: {fix}")
        meta = runner_metadata(whole)
        prov = meta.get("provenance") or {}
        if prov.get("profile") != profile:
            raise ValueError(f"{nb.relative_to(root)} was executed under profile "
                             f"{prov.get('profile')!r}, not {profile!r}: {fix}")
        res = results_path(root, profile, name)
        if name not in docs:
            raise ValueError(f"no results for notebook {name!r} under profile {profile!r} "
                             f"({res.relative_to(root)} is missing): {fix}")
        why = results_mismatch(res, meta.get("key", ""), prov.get("parameters", {}), profile)
        if why:
            raise ValueError(f"{res.relative_to(root)} does not match the executed chapter "
                             f"{nb.relative_to(root)}: {why}; {fix}")
    return [docs[n] for n in specs]


def references_markdown(refs: list[Reference], paths: dict[str, str]) -> str:
    """The reproducibility page's section on the committed reference executions ("" with
    none, so that a book without references is unchanged)."""
    if not refs:
        return ""
    lines = ["## Reference executions", "",
             "Chapters executed once under another profile, where the hardware is, and "
             "committed in `reference/<profile>/` with their provenance (`python -m dsmlib "
             "reference --profile paper`). The ledger shows their verdicts beside this "
             "build's. *Stale*: the code has changed since; shown with the commit it was "
             "measured at, never as current.", "",
             "```{raw} html"]
    rows = []
    for r in refs:
        link = (f"<a href='{html.escape(paths[r.name])}.html'>{html.escape(r.name)}</a>"
                if r.name in paths else html.escape(r.name))
        state = "fresh" if r.fresh else "<strong>stale</strong>"
        if r.fixture:
            state += " (test fixture)"
        trained = r.provenance.get("trained")
        wall = duration_text(float(r.provenance.get("wall_s", 0)))
        if trained:      # training from its run records, the analysis apart (issue 71)
            wall = f"analysis {wall}; {html.escape(training_text(trained))}"
        rows.append([link, f"<code>{html.escape(r.profile)}</code>", html.escape(str(r.device)),
                     wall, f"<code>{html.escape(str(r.commit))}</code>", state])
    lines += [data_table(["Chapter", "Profile", "Device", "Wall time", "Commit", "State"], rows,
                         table_class="cases cards references-table"), "```"]
    return "\n".join(lines) + "\n"


def cost_markdown(rows: Sequence[dict[str, Any]], seeds: int | None) -> str:
    """A sentence on the cheapest measured way to run the grid and a table of every row;
    ``seeds``: how many the ``paper`` profile trains (None: not said)."""
    if not rows:
        return ("No GPU session has measured the paper's grid yet (`benchmarks/gpu_check.sh` "
                "does, and its outputs are committed under `benchmarks/gpu_runs/`).\n")
    best = min(rows, key=lambda r: r["gpu_hours_per_seed"])
    total = (f", so the `paper` profile's {seeds} seeds of that grid take about "
             f"{best['gpu_hours_per_seed'] * seeds:.0f} GPU-hours" if seeds else "")
    lines = [f"At the rates measured on one {best['device']} ({best['date']}), the paper's "
             "Figure 1 grid as the bench counts it (SVHN, CIFAR-10 and CIFAR-100; a ResNet-56 "
             f"teacher and {best.get('students_per_group', '?')} students each, fewer than the "
             "`paper` profile's, whose CIFAR-10 part is costed below; 200 epochs) costs "
             f"**{best['gpu_hours_per_seed']:.2f} GPU-hours per seed** with the "
             f"`{best['step']}` step{total}; every run alone at the eager teacher's rate would "
             f"take {best['baseline_gpu_hours_per_seed']:.1f} GPU-hours per seed (the bench's "
             f"note: {best.get('note', 'none')}).", ""]
    table = data_table(
        ["Measured", "Card", "Step", "GPU-hours per seed", "Every run alone", "Raw output"],
        [[html.escape(r["date"]), html.escape(r["device"]), f"<code>{html.escape(r['step'])}</code>",
          f"{r['gpu_hours_per_seed']:.2f}", f"{r['baseline_gpu_hours_per_seed']:.1f}",
          f"<code>{html.escape(r['call'])}/bench.jsonl</code>"] for r in rows],
        table_class="cases gpu-cost cards")
    return "\n".join(lines + ["```{raw} html", table, "```"]) + "\n"


def profile_list_markdown() -> str:
    """The reproducibility page's list of profiles, from the book's own declaration
    (:data:`dsmlib.book.profiles.PROFILE_USES`), every profile the book knows."""
    goal = f"{QUICK_GOAL_S // 60} minutes"
    return "\n".join(f"- `{name}`: {use.format(goal=goal)};" for name, use in
                     PROFILE_USES.items()).rstrip(";") + ".\n"


def chapter_links(specs: dict) -> dict[str, str]:
    """Each chapter's ``{doc}`` target with its title (``Title <chapters/name>``), for the
    ledger's and errata's headings: a bare ``{doc}`chapters/ols``` shows the title in the page,
    but the page's "Contents" sidebar showed the path."""
    return {n: f"{spec.title} <chapters/{n}>" for n, spec in specs.items()}


def write_generated_pages(root: Path, profile: str,
                          references: list[Reference] | None = None) -> None:
    """The ledger (with every claim as JSON and CSV), the errata, and the introduction's
    summary, coverage statement and citation (from ``results/<profile>``, checked against the
    executed chapters, with the committed ``references`` beside them, and ``CITATION.cff``),
    and the reproducibility page's tables (from the executed notebooks, the references and
    the committed GPU benchmarks)."""
    specs = load_specs(root / "notebooks")
    docs = checked_results(root, profile, specs)
    paths = {n: f"chapters/{n}" for n in specs}
    titled = chapter_links(specs)
    refs = list(references or [])
    by_chapter = references_by_chapter(refs)
    gen = root / "book" / "_generated"
    runs = {n: json.loads(executed_path(root, profile, n).read_text())
            .get("metadata", {}).get("dsmlib", {}).get("provenance") for n in specs}
    rows = claim_rows(docs, {n: str((p or {}).get("commit", "unknown")) for n, p in runs.items()},
                      profile, refs)
    atomic_write_text(gen / "claims.json", claims_json(rows))
    atomic_write_text(gen / "claims.csv", claims_csv(rows))
    ledger = ledger_markdown(docs, chapter_paths=titled, profile=profile, references=by_chapter)
    title, intro, rest = ledger.split("\n\n", 2)     # the downloads open the page
    atomic_write_text(root / "book" / "ledger.md", "\n\n".join([
        title, intro, downloads_markdown("_generated/claims.json", "_generated/claims.csv",
                                         len(rows)), rest]))
    atomic_write_text(root / "book" / "errata.md",
                      errata_markdown(docs, chapter_paths=titled, profile=profile,
                                      references=by_chapter))
    atomic_write_text(gen / "summary.md", summary_markdown(
        docs, profile=profile, references=by_chapter,
        declared=parts(load_specs(root / "notebooks"))))
    atomic_write_text(gen / "coverage.md", coverage_markdown(docs, profile=profile))
    atomic_write_text(gen / "provenance.md", provenance_table(runs, paths))
    atomic_write_text(gen / "references.md", references_markdown(refs, paths))
    atomic_write_text(gen / "profiles.md", profiles_html(specs, paths))
    atomic_write_text(gen / "profile_list.md", profile_list_markdown())
    atomic_write_text(gen / "grid_runs.md", grid_runs_sentence(specs))
    atomic_write_text(gen / "citation.md", citation_markdown(load_citation(root),
                                                                 git_commit(root)))
    with_runs = chapters_with_runs(specs)      # the chapter whose runs the GPU cost is of
    seeds = ((specs[with_runs[0]].profiles.get("paper") or {}).get("seeds")
             if len(with_runs) == 1 else None)
    paper = resolve(specs[with_runs[0]], "paper") if len(with_runs) == 1 else None
    tools = paper.machinery() if paper is not None else None
    cost = cost_markdown(tools.gpu_cost.cost_rows(root) if tools else [],
                         len(seeds) if seeds else None)
    if tools and "cifar10" in paper.datasets:
        cost += "\n" + tools.gpu_cost.paper_cifar10_cost(root, paper) + "\n"
    atomic_write_text(gen / "gpu_cost.md", cost)
