"""How to cite the book and the paper (book layer): BibTeX made from the repository's
``CITATION.cff``, the one source, for the site's "How to cite" section and the README."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

__all__ = ["CITATION_FILE", "load_citation", "arxiv_id", "known_commit", "bibtex",
           "citation_markdown"]

CITATION_FILE = "CITATION.cff"


def load_citation(root: Path) -> dict[str, Any]:
    """``CITATION.cff`` of the book at ``root``; ValueError naming what is missing."""
    path = root / CITATION_FILE
    try:
        cff = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"{path} cannot be read: {err}") from None
    for key in ("title", "authors", "version", "date-released", "references"):
        if not cff.get(key):
            raise ValueError(f"{path} has no {key!r}")
    return cff


def arxiv_id(ref: dict[str, Any]) -> str | None:
    """The arXiv identifier of a CFF reference (``2304.00320``), if it has one."""
    for ident in ref.get("identifiers") or []:
        m = re.fullmatch(r"arXiv:(\d{4}\.\d{4,5})(v\d+)?", str(ident.get("value", "")))
        if m:
            return m.group(1)
    return None


def _person(a: dict[str, Any]) -> str:
    if "name" in a:
        return "{" + a["name"] + "}"          # an entity: braces keep it one name
    return f"{a['family-names']}, {a['given-names']}"


def _entry(kind: str, key: str, fields: list[tuple[str, str]]) -> str:
    body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields if v)
    return f"@{kind}{{{key},\n{body}\n}}"


def known_commit(commit: str | None) -> str | None:
    """A commit worth citing: None for "unknown" and for a dirty checkout's (no commit holds
    what such a build showed)."""
    return commit if commit and commit != "unknown" and not commit.endswith("-dirty") else None


def bibtex(cff: dict[str, Any], commit: str | None = None) -> str:
    """BibTeX for the book (its repository, and the ``commit`` built, where known), then for
    each article it reproduces (with its arXiv id)."""
    year = str(cff["date-released"])[:4]
    commit = known_commit(commit)
    entries = [_entry("misc", f"dsmlib_book_{year}", [
        ("author", " and ".join(_person(a) for a in cff["authors"])),
        ("title", cff["title"]), ("year", year), ("version", str(cff["version"])),
        ("url", str(cff.get("repository-code") or "")),
        ("note", "Executable Jupyter Book, backed by the tested library dsmlib"
                 + (f"; commit {commit}" if commit else "")
                 + "".join(f"; reproduces arXiv:{arxiv_id(r)}" for r in cff["references"]
                           if arxiv_id(r)))])]
    for ref in cff["references"]:
        ident = arxiv_id(ref)
        first = (ref.get("authors") or [{}])[0].get("family-names", "paper").lower()
        word = re.sub(r"[^a-z]", "", ref["title"].split()[0].lower())
        note = next((str(i.get("description", "")).strip() for i in ref.get("identifiers") or []
                     if ident and str(i.get("value", "")).startswith(f"arXiv:{ident}")), "")
        entries.append(_entry("misc", f"{first}{ref.get('year', '')}{word}", [
            ("author", " and ".join(_person(a) for a in ref["authors"])),
            ("title", ref["title"]), ("year", str(ref.get("year", ""))),
            ("eprint", ident or ""), ("archivePrefix", "arXiv" if ident else ""),
            ("url", ref.get("url", "")), ("note", note)]))
    return "\n\n".join(entries) + "\n"


def citation_markdown(cff: dict[str, Any], commit: str | None = None) -> str:
    """The site's "How to cite" section body (Markdown): where its source is, the commit it
    was built from (where known), and the BibTeX."""
    url = cff.get("repository-code")
    built = known_commit(commit)
    where = f"its source, {url}" if url else "its source repository"
    source = (f"This site was built from commit `{built}` of {where}." if built else
              f"Its source: {url}." if url else "")
    lead = f"{source} " if source else ""
    return (f"{lead}Cite the book (and the paper it reproduces) with this BibTeX, made "
            f"from the repository's `{CITATION_FILE}`:\n\n```bibtex\n{bibtex(cff, commit)}```\n")
