"""What each profile changes, for the reproducibility page (book layer): every parameter a
profile of ``notebooks/profiles.yml`` sets, with its value under every profile, read from the
chapters' ``Parameters`` (:func:`dsmlib.book.profiles.resolve`), so that the page cannot say
"12 epochs of 2 passes" where the chapter runs 1 pass; and the training runs the chapter with
runs launches under ``paper`` (what ``python -m dsmlib grid status --profile paper`` counts)."""
from __future__ import annotations

import dataclasses
import html
import re

from ...figures.tables import data_table
from ...foundation.parameters import literal
from ..profiles import (ON_REQUEST, PROFILES, NotebookSpec, chapters_with_runs,
                       parameters_class, resolve)

__all__ = ["changed_parameters", "help_html", "profiles_html", "grid_runs_sentence"]


def help_html(text: str) -> str:
    """A parameter's help as HTML: escaped, its Markdown code spans (```passes```) as code
    (the page printed the backticks: issue 53, item 10)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def changed_parameters(spec: NotebookSpec) -> list[str]:
    """The parameters some profile of ``spec`` sets, in the order its ``Parameters`` declares
    them (the profile-independent ``cluster`` and ``workers`` of a grid included)."""
    named = {k for values in spec.profiles.values() for k in values}
    return [f.name for f in dataclasses.fields(parameters_class(spec)) if f.name in named]


def _profiles_of(spec: NotebookSpec) -> list[str]:
    """The profiles worth a column: smoke, quick, paper, and gpu (or gpu-cifar10) where the
    chapter sets it."""
    return [p for p in PROFILES if p not in ON_REQUEST or spec.profiles.get(p)]


def profiles_html(specs: dict[str, NotebookSpec], paths: dict[str, str]) -> str:
    """One folded table per chapter (Markdown with raw HTML): each parameter a profile sets,
    its meaning (the ``Parameters`` help), and its value under each profile; on a phone each
    row is a card."""
    blocks = []
    for name, spec in specs.items():
        keys = changed_parameters(spec)
        if not keys:
            continue
        profs = _profiles_of(spec)
        values = {p: resolve(spec, p).as_dict() for p in profs}
        helps = {f.name: f.metadata.get("help", "")
                 for f in dataclasses.fields(parameters_class(spec))}
        # the meaning under the name, not a column of its own: a chapter with six profiles
        # (Section 5) fits the 1,280 px page
        rows = [[f"<code>{html.escape(k)}</code><br><span class='meaning'>"
                 f"{help_html(helps[k])}</span>"]
                + [f"<code>{html.escape(literal(values[p][k]))}</code>" for p in profs]
                for k in keys]
        head = ["Parameter and its meaning"] + [f"<code>{p}</code>" for p in profs]
        table = data_table(head, rows, table_class="cases cards profile-table")
        blocks.append(f"<details class='profile-table'><summary><a href='{paths[name]}.html'>"
                      f"{html.escape(spec.title)}</a>: {len(keys)} parameter"
                      f"{'s' if len(keys) != 1 else ''} differ between profiles</summary>\n"
                      f"{table}</details>")
    return "```{raw} html\n" + "\n".join(blocks) + "\n```\n" if blocks else ""


def grid_runs_sentence(specs: dict[str, NotebookSpec], profile: str = "paper") -> str:
    """How many training runs each chapter with runs launches under ``profile`` (the count
    ``python -m dsmlib grid status --profile paper`` prints), as a sentence; "" with none."""
    parts = []
    for name in chapters_with_runs(specs):
        runs = resolve(specs[name], profile).runs()
        parts.append(f"{specs[name].title} trains **{len(runs)} runs** under `{profile}` "
                     f"(`python -m dsmlib grid status --profile {profile}` lists them as done, "
                     "partial or new)")
    return ("; ".join(parts) + ".\n") if parts else ""
